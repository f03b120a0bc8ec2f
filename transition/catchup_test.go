package transition_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

// outpacing is a store whose every catch-up read (a page of a change
// feed, while the keys are not frozen) first writes every moving document
// of the collection read again through a router: writes to moving keys
// that always outpace the catch-up, whatever its speed.
type outpacing struct {
	*skipping
	c      *router.Client
	l      *ledger
	moving map[string][]string // collection -> ids of its moving documents
	mu     sync.Mutex
	v      map[string]int
	writes atomic.Int64
}

func (o *outpacing) ReadChanges(ctx context.Context, l string, opts *store.ChangeFeedOptions) (*store.ChangePage, error) {
	if s, err := shardstate.Load(ctx, o.skipping.Store, db); err == nil {
		if r, err := s.Decode(); err == nil {
			if t, ok := r.(*transition.Resolver); ok && !t.Frozen() && t.ReadMode() == transition.ReadCurrent {
				for _, id := range o.moving[l] {
					o.mu.Lock()
					o.v[id]++
					v := o.v[id]
					o.mu.Unlock()
					o.l.mu.Lock()
					key := o.l.key[id]
					o.l.mu.Unlock()
					if _, err := o.c.Upsert(ctx, db, doc{ID: id, UserID: key, V: v}, nil); err != nil {
						return nil, fmt.Errorf("the writer: %w", err)
					}
					o.l.set(id, key, v)
					o.writes.Add(1)
				}
			}
		}
	}
	return o.skipping.ReadChanges(ctx, l, opts)
}

// TestCatchUpBounded: writes to moving keys that outpace the catch-up do
// not keep the reshard from finishing: after a few rounds that do not
// shrink, the moving keys are frozen and the rest is drained. Nothing is
// lost, and the progress shows the rounds and the lag.
func TestCatchUpBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, c, l := seeded(t, ring(t, 2), 300)
	o := &outpacing{skipping: &skipping{Store: st, skipped: true}, c: c, l: l, moving: map[string][]string{}, v: map[string]int{}}
	for _, m := range movingSeeds(t, 300, ring(t, 2), ring(t, 3)) {
		o.moving[m.from] = append(o.moving[m.from], m.id)
		o.v[m.id] = 1
	}
	var rounds, behind atomic.Int64
	_, err := transition.Reshard(ctx, o, db, ring(t, 3), &transition.ReshardOptions{
		Overlap: time.Millisecond, // a round reads the changes up to the second after it began
		Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond},
		Progress: func(p transition.Progress) {
			rounds.Store(int64(p.Rounds))
			if p.Behind > 0 {
				behind.Store(p.Behind)
			}
		},
	})
	require.NoError(t, err)
	assert.Positive(t, o.writes.Load(), "the writer wrote")
	assert.GreaterOrEqual(t, rounds.Load(), int64(2), "the catch-up went round, then froze")
	assert.Positive(t, behind.Load(), "the progress showed the lag")
	checkPlaced(t, st, ring(t, 3), l)
}

// TestCutoverGivesUp: a cutover that cannot finish within its cap and
// tries stops the reshard with an error that says why and what to change;
// nothing is lost, and the next run finishes.
func TestCutoverGivesUp(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 300)
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{
		CutoverCap: time.Nanosecond, CutoverTries: 2, Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "did not finish within 1ns in 2 tries")
	assert.ErrorContains(t, err, "raise CutoverCap")
	s, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	r, err := s.Decode()
	require.NoError(t, err)
	tr, ok := r.(*transition.Resolver)
	require.True(t, ok, "the reshard is still recorded")
	assert.False(t, tr.Frozen(), "the moving keys are thawed")
	assert.Equal(t, transition.ReadCurrent, tr.ReadMode())

	_, err = transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond}})
	require.NoError(t, err)
	checkPlaced(t, st, ring(t, 3), l)
}
