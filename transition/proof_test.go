package transition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

// skipping is a store whose read feed leaves out one document, once: the
// walk the issue saw skip live documents (a feed resumed by an offset that
// concurrent deletes shifted).
type skipping struct {
	store.Store
	mu      sync.Mutex
	id      string // the document left out
	skipped bool
}

// ReadChanges, RaiseFence and Fence keep the store's capabilities.
func (s *skipping) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	return s.Store.(store.ChangeFeeder).ReadChanges(ctx, l, o)
}
func (s *skipping) RaiseFence(ctx context.Context, dbLink string, epoch int64) (int64, error) {
	return s.Store.(store.Fencer).RaiseFence(ctx, dbLink, epoch)
}
func (s *skipping) Fence(ctx context.Context, dbLink string) (int64, error) {
	return s.Store.(store.Fencer).Fence(ctx, dbLink)
}

func (s *skipping) ReadFeed(ctx context.Context, l string, o *store.FeedOptions) (*store.Page, error) {
	page, err := s.Store.ReadFeed(ctx, l, o)
	if err != nil {
		return page, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.skipped {
		return page, nil
	}
	out := *page
	out.Items = nil
	for _, raw := range page.Items {
		var d doc
		if json.Unmarshal(raw, &d) == nil && d.ID == s.id {
			s.skipped = true
			continue
		}
		out.Items = append(out.Items, raw)
	}
	return &out, nil
}

// seed is one of seeded's documents whose key moves: its id and the
// collection it moves from.
type seed struct{ id, from string }

// movingSeeds returns, in order, which of seeded's first n documents
// move from one resolver to the other.
func movingSeeds(t *testing.T, n int, from, to resolver.Resolver) []seed {
	var out []seed
	for i := range n {
		key := fmt.Sprintf("u%d", i%500)
		f, err := from.ResolveForCreate(key)
		require.NoError(t, err)
		tt, err := to.ResolveForCreate(key)
		require.NoError(t, err)
		if f != tt {
			out = append(out, seed{id: fmt.Sprintf("seed-%d", i), from: f})
		}
	}
	return out
}

// TestCleanupNeedsProof: a copy walk that skipped a moving document (so
// its copy was never made) does not make the clean-up delete it: a
// missing copy alone is copied again, never taken for a delete.
func TestCleanupNeedsProof(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 300)
	moving := movingSeeds(t, 300, ring(t, 2), ring(t, 3))
	require.NotEmpty(t, moving, "a moving document")
	id := moving[0].id
	sk := &skipping{Store: st, id: id}
	_, err := transition.Reshard(ctx, sk, db, ring(t, 3), nil)
	require.NoError(t, err)
	require.True(t, sk.skipped, "the walk left %s out", id)
	checkPlaced(t, st, ring(t, 3), l)
}

// deletes counts the deletes of documents a store is asked for.
type deletes struct {
	*skipping
	n atomic.Int64
}

func (d *deletes) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	if !strings.HasSuffix(l, "/"+shardstate.CollectionID) {
		d.n.Add(1)
	}
	return d.skipping.Delete(ctx, l, id, o)
}

// idleFollower returns a router following st's database that never polls
// by itself within a test (an hour between polls): it moves to a new
// version only when refreshed, by a call or by a write the store fenced.
func idleFollower(t *testing.T, st store.Store) (*router.Client, *router.Follower) {
	c := router.New(st, nil)
	f, err := c.Follow(context.Background(), db, &router.FollowOptions{PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return c, f
}

// TestSwitchWaitsForReaders: a router that only reads and has not polled
// since the switch keeps the clean-up from deleting any source until it
// has acknowledged the switch (it polls once an hour, and is refreshed
// only once the reshard waits for it) or its lease has lapsed (a router
// gone without releasing it), even on a store that fences writes: reads
// are not fenced.
func TestSwitchWaitsForReaders(t *testing.T) {
	for _, lapses := range []bool{false, true} {
		t.Run(map[bool]string{false: "refreshes", true: "lapses"}[lapses], func(t *testing.T) {
			ctx := context.Background()
			st, _, l := seeded(t, ring(t, 2), 300)
			readerID := "gone"
			var refresh func() error
			if !lapses {
				_, f := idleFollower(t, st)
				readerID, refresh = f.RouterID(), func() error { return f.Refresh(ctx) }
			}
			wrapped := &deletes{skipping: &skipping{Store: st, skipped: true}}
			var switched, waited atomic.Bool
			var deletedBefore atomic.Int64
			_, err := transition.Reshard(ctx, wrapped, db, ring(t, 3), &transition.ReshardOptions{
				CutoverCap: time.Hour, // the wait under the freeze ends by the reader, not by the cap
				Step: func(s string) error {
					switch {
					case s == "copied" && lapses:
						// A router that read this version and stopped.
						cur, err := shardstate.Load(ctx, st, db)
						require.NoError(t, err)
						_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: readerID, Database: db,
							Version: cur.Version, Epoch: cur.Epoch, ValidFor: 50 * time.Millisecond})
						require.NoError(t, err)
					case s == "switched":
						switched.Store(true)
					}
					return nil
				},
				Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond, Margin: time.Millisecond, Pending: func(ls []*shardstate.Lease) {
					for _, l := range ls {
						if l.Router != readerID {
							continue
						}
						if switched.Load() && !waited.Load() {
							// The reader may still read by the state before
							// the switch: nothing may have been deleted yet.
							deletedBefore.Store(wrapped.n.Load())
							waited.Store(true)
						}
						if refresh != nil {
							require.NoError(t, refresh())
						}
					}
				}},
			})
			require.NoError(t, err)
			require.True(t, waited.Load(), "the reshard waited for the reader after the switch")
			assert.Zero(t, deletedBefore.Load(), "no source was deleted before the reader acknowledged the switch or lapsed")
			assert.Positive(t, wrapped.n.Load(), "the clean-up ran")
			leases, err := shardstate.Leases(ctx, st, db)
			require.NoError(t, err)
			for _, le := range leases {
				if lapses {
					assert.NotEqual(t, readerID, le.Router, "the lapsed lease was removed")
				}
			}
			checkPlaced(t, st, ring(t, 3), l)
		})
	}
}

// TestResumeWaitsForReaders: a reshard stopped right after its switch
// (as a crash would stop it) is resumed by a run that waits for the
// reader, which has not polled, before its clean-up deletes anything.
func TestResumeWaitsForReaders(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 300)
	_, f := idleFollower(t, st)
	refresh := func(ls []*shardstate.Lease) {
		for _, l := range ls {
			if l.Router == f.RouterID() {
				require.NoError(t, f.Refresh(ctx))
			}
		}
	}
	crash := errors.New("crash")
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{
		Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond, Pending: refresh},
		Step: func(s string) error {
			if s == "switched" {
				return crash
			}
			return nil
		}})
	require.ErrorIs(t, err, crash)

	wrapped := &deletes{skipping: &skipping{Store: st, skipped: true}}
	var waited atomic.Bool
	var deletedBefore atomic.Int64
	_, err = transition.Reshard(ctx, wrapped, db, ring(t, 3), &transition.ReshardOptions{
		CutoverCap: time.Hour,
		Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond, Pending: func(ls []*shardstate.Lease) {
			for _, l := range ls {
				if l.Router == f.RouterID() && !waited.Load() {
					deletedBefore.Store(wrapped.n.Load())
					waited.Store(true)
				}
			}
			refresh(ls)
		}}})
	require.NoError(t, err)
	require.True(t, waited.Load(), "the resumed reshard waited for the reader")
	assert.Zero(t, deletedBefore.Load(), "no source was deleted before the reader acknowledged the switch")
	assert.Positive(t, wrapped.n.Load(), "the clean-up ran")
	checkPlaced(t, st, ring(t, 3), l)
}

// halfDeleted is a store on which a router's delete of one moving
// document is half done when the clean-up looks at it: its copy is
// deleted as the clean-up reads it, its source just before the clean-up
// reads that again.
type halfDeleted struct {
	*skipping
	armed          atomic.Bool
	id, source     string
	target         string
	copyGone, done atomic.Bool // the copy, the source deleted
}

func (h *halfDeleted) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	if h.armed.Load() && id == h.id {
		switch {
		case l == h.target && h.copyGone.CompareAndSwap(false, true):
			_ = h.skipping.Store.Delete(ctx, l, id, &store.WriteOptions{PartitionKey: o.PartitionKey})
		case l == h.source && h.copyGone.Load() && h.done.CompareAndSwap(false, true):
			_ = h.skipping.Store.Delete(ctx, l, id, &store.WriteOptions{PartitionKey: o.PartitionKey})
		}
	}
	return h.skipping.Read(ctx, l, id, o)
}

// TestCleanupHalfDoneDelete: a delete through a router that has removed
// the copy but not yet the source when the clean-up reads them is not
// undone: the source is read again, found gone, and nothing is copied
// back.
func TestCleanupHalfDoneDelete(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 300)
	m := movingSeeds(t, 300, ring(t, 2), ring(t, 3))[0]
	l.mu.Lock()
	key := l.key[m.id]
	l.mu.Unlock()
	target, err := ring(t, 3).ResolveForCreate(key)
	require.NoError(t, err)
	h := &halfDeleted{skipping: &skipping{Store: st, skipped: true}, id: m.id, source: m.from, target: target}
	_, err = transition.Reshard(ctx, h, db, ring(t, 3), &transition.ReshardOptions{
		Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond},
		Step: func(s string) error {
			if s == "switched" {
				h.armed.Store(true)
			}
			return nil
		}})
	require.NoError(t, err)
	require.True(t, h.done.Load(), "the delete was half done when the clean-up looked")
	l.set(m.id, key, -1) // the router's delete, acknowledged
	checkPlaced(t, st, ring(t, 3), l)
}
