package router_test

import (
	"context"
	"fmt"
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

// hookStore calls afterDelete after each delete that succeeded.
type hookStore struct {
	*fenceStore
	afterDelete func(l, id string)
}

func (s *hookStore) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	err := s.fenceStore.Delete(ctx, l, id, o)
	if err == nil && s.afterDelete != nil {
		s.afterDelete(l, id)
	}
	return err
}

// movingKey returns a key that cur and next place in different collections.
func movingKey(t *testing.T, cur, next resolver.Resolver) string {
	for i := 0; ; i++ {
		k := fmt.Sprint("k", i)
		a, err := cur.ResolveForCreate(k)
		require.NoError(t, err)
		b, err := next.ResolveForCreate(k)
		require.NoError(t, err)
		if a != b {
			return k
		}
	}
}

// TestDeleteAcrossFencedRetry: during a transition the router deletes a
// moving key from both placements; when a new epoch lands between its two
// calls, the second is fenced and the router deletes again by the new
// state, where the first call already removed the document. The delete
// succeeded, and says so (it answered NotFound).
func TestDeleteAcrossFencedRetry(t *testing.T) {
	fs := newFenceStore(t)
	st := &hookStore{fenceStore: fs}
	c := router.New(st, nil)
	cur, next := ring(t, 2), ring(t, 3)
	tr, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadBoth, WriteTo: transition.WriteNext})
	require.NoError(t, err)
	f := follow(t, c, &router.FollowOptions{Seed: tr, PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	for _, l := range links(3) {
		require.NoError(t, fs.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	key := movingKey(t, cur, next)
	from, _ := cur.ResolveForCreate(key)
	to, _ := next.ResolveForCreate(key)
	// Written under the transition: it sits where the next placement
	// puts it, and nowhere else.
	_, err = c.Create(ctx, db, user{ID: "x", UserID: key}, nil)
	require.NoError(t, err)

	switched, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadNext, WriteTo: transition.WriteNext})
	require.NoError(t, err)
	var once atomic.Bool
	st.afterDelete = func(l, id string) {
		if id == "x" && once.CompareAndSwap(false, true) {
			// The switch lands between the two calls.
			s, err := shardstate.Load(ctx, fs, db)
			require.NoError(t, err)
			_, err = shardstate.Publish(ctx, fs, s, shardstate.Change{Resolver: switched, NewEpoch: true})
			require.NoError(t, err)
		}
	}
	require.NoError(t, c.Delete(ctx, db, "x", key, nil), "the document was deleted")
	assert.Equal(t, int32(1), fs.fenced.Load(), "the second call was fenced")
	assert.Equal(t, int64(2), f.Version(), "and the router moved on")
	for _, l := range []string{from, to} {
		_, err := fs.Store.Read(ctx, l, "x", &store.ReadOptions{PartitionKey: key})
		assert.ErrorIs(t, err, store.ErrNotFound, l)
	}

	// A document that is not there is still NotFound.
	require.ErrorIs(t, c.Delete(ctx, db, "x", key, nil), store.ErrNotFound)
}

// TestLapsedRouterRefusesReads: a router paused past its lease, during
// which a reshard moved a document, refuses reads (point reads, queries)
// as it refuses writes, instead of answering NotFound by the old
// placement; a renewal and a state read clear it.
func TestLapsedRouterRefusesReads(t *testing.T) {
	st := newFenceStore(t)
	c := router.New(st, nil)
	cur, next := ring(t, 2), ring(t, 3)
	f := follow(t, c, &router.FollowOptions{Seed: cur, PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	for _, l := range links(3) {
		require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	key := movingKey(t, cur, next)
	_, err := c.Create(ctx, db, user{ID: "x", UserID: key}, nil)
	require.NoError(t, err)
	_, err = c.Read(ctx, db, "x", key)
	require.NoError(t, err, "within its lease a router reads by its placement")

	// The router pauses; meanwhile a reshard moves the document and
	// publishes the next placement.
	f.Pause(3 * time.Hour)
	from, _ := cur.ResolveForCreate(key)
	to, _ := next.ResolveForCreate(key)
	d, err := st.Read(ctx, from, "x", &store.ReadOptions{PartitionKey: key})
	require.NoError(t, err)
	_, err = st.Create(ctx, to, d.Body, &store.WriteOptions{PartitionKey: key})
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, from, "x", &store.WriteOptions{PartitionKey: key}))
	publish(t, st, 3, true)

	_, err = c.Read(ctx, db, "x", key)
	require.ErrorIs(t, err, router.ErrLeaseExpired, "not NotFound by the old placement")
	var le *router.LeaseError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "read", le.Op)
	assert.Contains(t, err.Error(), "has not renewed its lease")
	assert.Contains(t, err.Error(), "may be old")
	_, err = c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.ErrorIs(t, err, router.ErrLeaseExpired, "queries too")
	_, err = c.Upsert(ctx, db, user{ID: "y", UserID: key}, nil)
	require.ErrorIs(t, err, router.ErrLeaseExpired, "and writes, as before")

	require.NoError(t, f.Refresh(ctx))
	got, err := c.Read(ctx, db, "x", key)
	require.NoError(t, err, "renewed and on the new version, it reads again")
	assert.Equal(t, "x", got.ID)
	rows, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, "1", string(rows[0]))
}

// TestDecodeDoesNotStallLease: decoding a new version's resolver (which
// costs up to resolver.MaxWork, about a second or more on a loaded host)
// runs apart from the lease's renewals: while a decode is held up, the
// router goes on renewing its lease and writing by the version in force;
// once it ends, the router switches. A Refresh waits for the decode.
func TestDecodeDoesNotStallLease(t *testing.T) {
	st := newFenceStore(t)
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 5 * time.Millisecond, LeaseDuration: time.Hour})
	for _, l := range links(3) {
		require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // before the follower closes
	f.DecodeWith(func(s *shardstate.State) (resolver.Resolver, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return s.Decode()
	})
	publish(t, st, 3, false)
	<-entered // the router is decoding version 2
	before := st.renewed.Load()
	require.Eventually(t, func() bool { return st.renewed.Load() >= before+5 }, 10*time.Second, time.Millisecond,
		"the lease is renewed while the decode is held up")
	assert.Equal(t, int64(1), f.Version(), "the router routes by version 1 until the decode ends")
	_, err := c.Upsert(ctx, db, user{ID: "a", UserID: "alice"}, nil)
	require.NoError(t, err, "and writes by it")

	refreshed := make(chan error, 1)
	go func() { refreshed <- f.Refresh(ctx) }()
	released.Do(func() { close(release) })
	require.NoError(t, <-refreshed)
	assert.Equal(t, int64(2), f.Version(), "Refresh waited for the decode and switched")
}
