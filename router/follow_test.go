package router_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

// fenceStore is a store.Fencer over any store, for the router's tests: a
// stamped write holds a read lock across its check and the write, and
// RaiseFence takes the write lock, so the check is atomic with the write
// as the embedded store's is. hold makes lease renewals fail (a router
// whose renewals are held back).
type fenceStore struct {
	store.Store
	mu      sync.RWMutex
	fences  map[string]int64
	hold    atomic.Bool
	fenced  atomic.Int32 // writes refused
	renewed atomic.Int32 // lease writes that went through
}

func newFenceStore(t testing.TB) *fenceStore {
	return &fenceStore{Store: newMem(t), fences: map[string]int64{}}
}

func (s *fenceStore) RaiseFence(_ context.Context, dbLink string, epoch int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fences[dbLink] = max(s.fences[dbLink], epoch)
	return s.fences[dbLink], nil
}

func (s *fenceStore) Fence(_ context.Context, dbLink string) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fences[dbLink], nil
}

// write runs fn under the fence check of l's database.
func (s *fenceStore) write(l, id string, doc []byte, o *store.WriteOptions, fn func() error) error {
	if strings.HasSuffix(l, "/"+shardstate.CollectionID) && (strings.HasPrefix(id, "lease.") || bytes.Contains(doc, []byte(`"kind":"lease`))) {
		if s.hold.Load() {
			return &store.Error{Kind: store.ErrUnavailable, Op: "write", Link: l, Message: "renewals held back by the test"}
		}
		s.renewed.Add(1)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, _ := link.ParseCollection(l)
	if o != nil && o.Epoch != 0 && o.Epoch < s.fences[c.DatabaseLink()] {
		s.fenced.Add(1)
		return &store.Error{Kind: store.ErrFenced, Op: "write", Link: l, ID: id}
	}
	return fn()
}

func (s *fenceStore) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (d *store.Document, err error) {
	err = s.write(l, "", doc, o, func() error { d, err = s.Store.Create(ctx, l, doc, o); return err })
	return d, err
}

func (s *fenceStore) Upsert(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (d *store.Document, err error) {
	err = s.write(l, "", doc, o, func() error { d, err = s.Store.Upsert(ctx, l, doc, o); return err })
	return d, err
}

func (s *fenceStore) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (d *store.Document, err error) {
	err = s.write(l, id, doc, o, func() error { d, err = s.Store.Replace(ctx, l, id, doc, o); return err })
	return d, err
}

func (s *fenceStore) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	return s.write(l, id, nil, o, func() error { return s.Store.Delete(ctx, l, id, o) })
}

var _ store.Fencer = (*fenceStore)(nil)

func follow(t testing.TB, c *router.Client, opts *router.FollowOptions) *router.Follower {
	f, err := c.Follow(ctx, db, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// publish makes a ring of n the next version of the state.
func publish(t testing.TB, st store.Store, n int, newEpoch bool) *shardstate.State {
	t.Helper()
	return publishChange(t, st, shardstate.Change{Resolver: ring(t, n), NewEpoch: newEpoch, By: "test"})
}

// publishChange publishes ch over the state db has now on st and returns
// the new version.
func publishChange(t testing.TB, st store.Store, ch shardstate.Change) *shardstate.State {
	t.Helper()
	cur, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	next, err := shardstate.Publish(ctx, st, cur, ch)
	require.NoError(t, err)
	return next
}

func TestFollowSeedsAndConverges(t *testing.T) {
	st := newFenceStore(t)
	c := router.New(st, nil)
	var changes atomic.Int32
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, OnChange: func(old, cur *shardstate.State) {
		changes.Add(1)
	}})
	assert.Equal(t, int64(1), f.Version())
	v, err := c.Version(db)
	require.NoError(t, err)
	assert.Equal(t, int64(1), v)
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, db, user{ID: "a", UserID: "alice"}, nil)
	require.NoError(t, err)

	// A second router on the same store follows the state the first seeded;
	// its own seed is ignored.
	c2 := router.New(st, nil)
	f2 := follow(t, c2, &router.FollowOptions{Seed: ring(t, 7), PollInterval: 20 * time.Millisecond})
	assert.Equal(t, f.State().Resolver, f2.State().Resolver)

	next := publish(t, st, 3, false)
	require.Eventually(t, func() bool { return f.Version() == next.Version && f2.Version() == next.Version },
		5*time.Second, 5*time.Millisecond, "both routers converge")
	r, err := c.Resolver(db)
	require.NoError(t, err)
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Len(t, all, 3, "the new resolver routes")
	// OnChange runs after the switch (and the lease) is done: wait for it.
	require.Eventually(t, func() bool { return changes.Load() == 1 }, 5*time.Second, 5*time.Millisecond)

	_, err = c.Follow(ctx, db, nil)
	require.ErrorContains(t, err, "followed already", "one follower per database and client")

	// Without a seed, a database with no state is an error.
	_, err = router.New(st, nil).Follow(ctx, "dbs/other", nil)
	require.ErrorIs(t, err, shardstate.ErrNoState)
	_, err = c.Follow(ctx, db, &router.FollowOptions{PollInterval: time.Second, LeaseDuration: time.Second})
	require.ErrorContains(t, err, "must be longer than PollInterval")
}

// TestLeaseLapses: a router whose renewals are held back refuses writes
// and reads once its lease lapses, and writes again after a renewal.
func TestLeaseLapses(t *testing.T) {
	st := newFenceStore(t)
	c := router.New(st, nil)
	var errs atomic.Int32
	// RenewInterval: every poll, so held-back renewals fail at once.
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: 150 * time.Millisecond,
		RenewInterval: 20 * time.Millisecond, OnError: func(error) { errs.Add(1) }})
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, db, user{ID: "a", UserID: "alice"}, nil)
	require.NoError(t, err)

	st.hold.Store(true)
	var lerr error
	require.Eventually(t, func() bool {
		_, lerr = c.Create(ctx, db, user{ID: fmt.Sprint(time.Now().UnixNano()), UserID: "bob"}, nil)
		return errors.Is(lerr, router.ErrLeaseExpired)
	}, 5*time.Second, 10*time.Millisecond)
	var le *router.LeaseError
	require.ErrorAs(t, lerr, &le)
	assert.Equal(t, f.RouterID(), le.Router)
	assert.ErrorIs(t, lerr, store.ErrUnavailable, "the error carries why the renewal failed")
	assert.Contains(t, lerr.Error(), "renewals held back")
	for _, write := range []func() error{
		func() error { _, err := c.Upsert(ctx, db, user{ID: "a", UserID: "alice"}, nil); return err },
		func() error { _, err := c.Replace(ctx, db, "a", user{ID: "a", UserID: "alice"}, nil); return err },
		func() error { return c.Delete(ctx, db, "a", "alice", nil) },
	} {
		assert.ErrorIs(t, write(), router.ErrLeaseExpired)
	}
	_, err = c.Read(ctx, db, "a", "alice")
	assert.ErrorIs(t, err, router.ErrLeaseExpired, "reads wait for the lease too")
	assert.Positive(t, errs.Load(), "failed renewals are reported")

	st.hold.Store(false)
	require.Eventually(t, func() bool {
		_, err := c.Upsert(ctx, db, user{ID: "a", UserID: "alice", Name: "back"}, nil)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
}

// TestFencedWriteRefreshes: a router that has not polled since a new epoch
// was published has its write refused by the store itself, refreshes at
// once, and the write lands where the new version puts it. On the test's
// fencing wrapper, and on the embedded store's own fence.
func TestFencedWriteRefreshes(t *testing.T) {
	t.Run("wrapper", func(t *testing.T) {
		st := newFenceStore(t)
		testFencedWriteRefreshes(t, st, st.fenced.Load)
	})
	t.Run("memstore", func(t *testing.T) {
		st := newMem(t)
		require.Implements(t, (*store.Fencer)(nil), st)
		testFencedWriteRefreshes(t, st, nil)
	})
}

func testFencedWriteRefreshes(t *testing.T, st store.Store, fenced func() int32) {
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 1), PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	require.NoError(t, st.CreateCollection(ctx, links(2)[1], &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	next := publish(t, st, 2, true)
	assert.Equal(t, int64(1), f.Version(), "the router has not polled")

	// Find a key the new version places on u1.
	key := ""
	for i := 0; key == ""; i++ {
		if l, _ := ring(t, 2).ResolveForCreate(fmt.Sprint("k", i)); l == links(2)[1] {
			key = fmt.Sprint("k", i)
		}
	}
	d, err := c.Create(ctx, db, user{ID: "x", UserID: key}, nil)
	require.NoError(t, err, "refused as fenced, refreshed, retried")
	assert.NotEmpty(t, d.ETag)
	assert.Equal(t, next.Version, f.Version())
	if fenced != nil {
		assert.Equal(t, int32(1), fenced(), "the store refused the stale write once")
	}
	_, err = st.Read(ctx, links(2)[1], "x", &store.ReadOptions{PartitionKey: key})
	require.NoError(t, err, "the write went where version 2 puts it")

	// With the lease check bypassed (a router that still believes in its
	// lease, say), the store alone refuses a write stamped with the old
	// epoch.
	_, err = st.Create(ctx, links(2)[0], []byte(`{"id":"y","userId":"y"}`), &store.WriteOptions{PartitionKey: "y", Epoch: 1})
	require.ErrorIs(t, err, store.ErrFenced)
}

// TestBrokenStateKeepsLastGood: a corrupted or foreign state document is
// reported, and the router keeps routing (and writing) by the last good
// state; a repaired document is followed again.
func TestBrokenStateKeepsLastGood(t *testing.T) {
	st := newFenceStore(t)
	c := router.New(st, nil)
	var mu sync.Mutex
	var reported []error
	// A lease long enough that a busy machine does not let it lapse
	// between two polls 10 ms apart; the test waits past it below.
	const lease = 2 * time.Second
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 10 * time.Millisecond, LeaseDuration: lease,
		OnError: func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }})
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	coll, _ := shardstate.CollectionLink(db)
	good, err := st.Read(ctx, coll, "state", &store.ReadOptions{PartitionKey: "state"})
	require.NoError(t, err)

	for _, body := range []string{
		`{"id":"state","kind":"state","format":"somebody-else/2"}`,
		`{"id":"state","kind":"state","format":"docshard.state/1","database":"dbs/app","version":2,"epoch":1,"resolver":{"kind":"hash","collections":[]}}`,
	} {
		_, err = st.Replace(ctx, coll, "state", []byte(body), &store.WriteOptions{PartitionKey: "state"})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(reported) > 0 && errors.Is(reported[len(reported)-1], shardstate.ErrInvalidState)
		}, 5*time.Second, 5*time.Millisecond)
		time.Sleep(lease + lease/5) // longer than the lease: it was renewed under the good version
		assert.Equal(t, int64(1), f.Version(), "the last good state is kept")
		_, err = c.Upsert(ctx, db, user{ID: "a", UserID: "alice"}, nil)
		require.NoError(t, err, "the lease is renewed without a break under the good version, so writing stays safe")
		mu.Lock()
		assert.Contains(t, reported[len(reported)-1].Error(), `document "state"`)
		reported = nil
		mu.Unlock()
	}
	_, err = st.Replace(ctx, coll, "state", bytes.Replace(good.Body, []byte(`"version":1`), []byte(`"version":3`), 1), &store.WriteOptions{PartitionKey: "state"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.Version() == 3 }, 5*time.Second, 5*time.Millisecond)
}

// TestWaitForFollowers: a change with a new epoch waits for the routers
// following it; they acknowledge within a couple of polls. A closed router
// releases its lease and is not waited for.
func TestWaitForFollowers(t *testing.T) {
	st := newFenceStore(t)
	var fs []*router.Follower
	for range 3 {
		fs = append(fs, follow(t, router.New(st, nil), &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond}))
	}
	next := publish(t, st, 3, true)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, shardstate.WaitForRouters(wctx, st, db, next.Version, &shardstate.WaitOptions{Poll: 10 * time.Millisecond}))
	for _, f := range fs {
		assert.Equal(t, next.Version, f.Version())
	}
	require.NoError(t, fs[0].Close())
	ls, err := shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	assert.Len(t, ls, 2)
}

// TestSwapUnderTraffic: writers run while versions change under them (each
// a new epoch, so stale writes are refused by the store and retried);
// every write succeeds and is stored exactly once. (The versions place keys
// differently over the same four collections; where a document lands is
// not the point here.)
func TestSwapUnderTraffic(t *testing.T) {
	st := newFenceStore(t)
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 4), PollInterval: 5 * time.Millisecond, LeaseDuration: 10 * time.Second})
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)

	stop := make(chan struct{})
	var written atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := c.Create(ctx, db, user{ID: id, UserID: id}, nil); !assert.NoError(t, err) {
					return
				}
				written.Add(1)
			}
		})
	}
	// Rotate through resolvers over the same four collections (different
	// virtual-node counts place keys differently), each a new epoch.
	for v := range 20 {
		r, err := hashring.New(links(4), &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId"), VirtualNodes: 16 + 16*(v%2)})
		require.NoError(t, err)
		publishChange(t, st, shardstate.Change{Resolver: r, NewEpoch: true})
		time.Sleep(3 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Eventually(t, func() bool { return f.Version() == 21 }, 5*time.Second, 5*time.Millisecond)
	total := 0
	for _, l := range links(4) {
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		total += int(info.Documents)
	}
	assert.Equal(t, int(written.Load()), total, "every acknowledged write is stored once")
	t.Logf("%d writes across 20 versions; %d refused by the fence and retried", written.Load(), st.fenced.Load())
}

// TestWriteWaitsForSwitch: while the state freezes moving keys (a
// reshard's cutover), a write to a moving key waits for the next version
// and then lands where it puts the key; a key that stays is written at
// once; a write that waits too long fails with resolver.ErrMoving.
func TestWriteWaitsForSwitch(t *testing.T) {
	st, c, f, cur, next := cutover(t, 3*time.Second)
	moving, staying := movingKey(t, cur, next), stayingKey(t, cur, next)
	frozen, switched := frozenAndSwitched(t, cur, next)
	publishChange(t, st, shardstate.Change{Resolver: frozen, NewEpoch: true})
	require.NoError(t, f.Refresh(ctx))

	_, err := c.Create(ctx, db, user{ID: "s", UserID: staying}, nil)
	require.NoError(t, err, "a key that stays is not blocked")

	done := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, db, user{ID: "m", UserID: moving}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the write to a moving key did not wait: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	publishChange(t, st, shardstate.Change{Resolver: switched, NewEpoch: true})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting write did not go on after the switch")
	}
	to, _ := next.ResolveForCreate(moving)
	_, err = st.Read(ctx, to, "m", &store.ReadOptions{PartitionKey: moving})
	require.NoError(t, err, "written where the new version puts it")

	// Frozen again, and never switched: the write gives up after MovingWait.
	publishChange(t, st, shardstate.Change{Resolver: frozen, NewEpoch: true})
	require.NoError(t, f.Refresh(ctx))
	start := time.Now()
	_, err = c.Create(ctx, db, user{ID: "m2", UserID: moving}, nil)
	require.ErrorIs(t, err, resolver.ErrMoving)
	assert.GreaterOrEqual(t, time.Since(start), 3*time.Second)
}

// TestSameResolverNewVersion: a version that republishes the resolver in
// force under the same epoch (a reshard's heartbeat or checkpoint) keeps
// the registration (the same resolver, its route cache warm), is
// acknowledged at once, and does not wake a write waiting on a frozen key.
func TestSameResolverNewVersion(t *testing.T) {
	st := newMem(t)
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	before, err := c.Resolver(db)
	require.NoError(t, err)
	again := publishChange(t, st, shardstate.Change{By: "heartbeat"})
	require.NoError(t, f.Refresh(ctx))
	assert.Equal(t, again.Version, f.Version())
	v, err := c.Version(db)
	require.NoError(t, err)
	assert.Equal(t, again.Version, v)
	after, err := c.Resolver(db)
	require.NoError(t, err)
	assert.Same(t, before, after, "the registration goes on")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, shardstate.WaitForRouters(wctx, st, db, again.Version, &shardstate.WaitOptions{Poll: 10 * time.Millisecond}),
		"the lease acknowledges the new version")

	// A new epoch with the same resolver is a new registration.
	next, err := shardstate.Publish(ctx, st, again, shardstate.Change{NewEpoch: true})
	require.NoError(t, err)
	require.NoError(t, f.Refresh(ctx))
	assert.Equal(t, next.Version, f.Version())
	after, err = c.Resolver(db)
	require.NoError(t, err)
	assert.NotSame(t, before, after)
}

// throttleStore throttles every create of a document outside the state
// collection while on is set, counting the attempts.
type throttleStore struct {
	*fenceStore
	on       atomic.Bool
	attempts atomic.Int32
}

func (s *throttleStore) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if s.on.Load() && !strings.HasSuffix(l, "/"+shardstate.CollectionID) {
		s.attempts.Add(1)
		return nil, &store.Error{Kind: store.ErrThrottled, Op: "create", Link: l, Status: 429, RetryAfter: 40 * time.Millisecond} // 8 waits: 320 ms, past a HoldFor of 60 ms
	}
	return s.fenceStore.Create(ctx, l, doc, o)
}

func (s *throttleStore) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	if s.on.Load() && !strings.HasSuffix(l, "/"+shardstate.CollectionID) {
		s.attempts.Add(1)
		return nil, &store.Error{Kind: store.ErrThrottled, Op: "read", Link: l, Status: 429, RetryAfter: 40 * time.Millisecond}
	}
	return s.fenceStore.Read(ctx, l, id, o)
}

// TestThrottledWriteStopsAtLapse: a write the store keeps throttling is
// retried by the store's retry layer, but not past the moment its router's
// lease lapsed (renewals held back): it ends with the lease error, and no
// attempt is sent after it (on Cosmos DB, which has no fence, a retry sent
// then could land after a reshard's waiter counted the router out). Seen
// failing before retry.Guard: the write ended throttled, still retried
// after the lapse.
func TestThrottledWriteStopsAtLapse(t *testing.T) {
	st := &throttleStore{fenceStore: newFenceStore(t)}
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: 150 * time.Millisecond,
		RenewInterval: 20 * time.Millisecond})
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, db, user{ID: "a", UserID: "alice"}, nil)
	require.NoError(t, err)

	st.on.Store(true)
	st.hold.Store(true) // renewals fail: the lease lapses within HoldFor
	_, err = c.Create(ctx, db, user{ID: "b", UserID: "bob"}, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, router.ErrLeaseExpired, "the retries stop at the lapse: %v", err)
	assert.ErrorIs(t, err, store.ErrThrottled, "the error carries the last attempt's failure")
	var le *router.LeaseError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, f.RouterID(), le.Router)
	assert.Positive(t, st.attempts.Load())

	// A read throttled past the lapse stops the same way (a read by a
	// placement a reshard has left could miss what it swept away).
	st.hold.Store(false)
	require.Eventually(t, func() bool { _, err := c.Read(ctx, db, "a", "alice"); return errors.Is(err, store.ErrThrottled) },
		5*time.Second, 10*time.Millisecond, "renewed again: a read fails by the throttle alone")
	st.hold.Store(true)
	_, err = c.Read(ctx, db, "a", "alice")
	assert.ErrorIs(t, err, router.ErrLeaseExpired, "the read's retries stop at the lapse: %v", err)
}

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
	return keyWhere(t, cur, next, false)
}

// stayingKey returns a key that cur and next place in one collection.
func stayingKey(t *testing.T, cur, next resolver.Resolver) string {
	return keyWhere(t, cur, next, true)
}

// keyWhere returns the first of k0, k1, ... that cur and next place in one
// collection (same) or in two.
func keyWhere(t *testing.T, cur, next resolver.Resolver, same bool) string {
	for i := 0; ; i++ {
		k := fmt.Sprint("k", i)
		a, err := cur.ResolveForCreate(k)
		require.NoError(t, err)
		b, err := next.ResolveForCreate(k)
		require.NoError(t, err)
		if (a == b) == same {
			return k
		}
	}
}

// cutover returns a memstore of 3 collections and a client following
// db's state on it (a ring of 2 seeded, polled only when a test asks; a
// write to a frozen key waits movingWait), for a reshard from cur (that
// ring) to next (a ring of 3).
func cutover(t *testing.T, movingWait time.Duration) (st store.Store, c *router.Client, f *router.Follower, cur, next resolver.Resolver) {
	t.Helper()
	st = newMem(t)
	c = router.New(st, nil)
	cur, next = ring(t, 2), ring(t, 3)
	f = follow(t, c, &router.FollowOptions{Seed: cur, PollInterval: time.Hour, LeaseDuration: 2 * time.Hour, MovingWait: movingWait})
	createColls(t, st, 3, "/userId")
	return st, c, f, cur, next
}

// frozenAndSwitched returns the versions a reshard of cur to next
// publishes around its copy: frozen (reads and writes by cur, a key that
// moves held) and switched (reads and writes by next).
func frozenAndSwitched(t testing.TB, cur, next resolver.Resolver) (frozen, switched *transition.Resolver) {
	t.Helper()
	frozen, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadCurrent, WriteTo: transition.WriteCurrent, Frozen: true})
	require.NoError(t, err)
	switched, err = transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadNext, WriteTo: transition.WriteNext})
	require.NoError(t, err)
	return frozen, switched
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
	createColls(t, fs, 3, "/userId")
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
	createColls(t, st, 3, "/userId")
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
	createColls(t, st, 3, "/userId")
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

// TestLostStateStaysLost: a router polls a copy of the state on most polls
// (shardstate.StateCopies), and the copy outlives a deleted state
// document; once a poll of the document itself found it missing, the
// router reads only the document until it is back, so its writes stay
// refused, poll after poll, instead of resuming on the copy.
func TestLostStateStaysLost(t *testing.T) {
	st, c, f := followedUsers(t, 2, 2)
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, coll, "state", &store.WriteOptions{PartitionKey: "state"}))

	lostAt := -1
	for i := range 3 * shardstate.StateCopies {
		err := f.PollOnce(ctx)
		if lostAt < 0 && errors.Is(err, router.ErrStateLost) {
			lostAt = i
		}
		if lostAt < 0 {
			continue
		}
		require.ErrorIs(t, err, router.ErrStateLost, "poll %d, %d after the loss was found", i, i-lostAt)
		_, err = c.Upsert(ctx, db, map[string]any{"id": fmt.Sprint("w", i), "userId": "k1"}, nil)
		require.ErrorIs(t, err, router.ErrStateLost, "write after poll %d", i)
	}
	require.GreaterOrEqual(t, lostAt, 0, "a poll of the state document found it missing")
	assert.Less(t, lostAt, shardstate.StateCopies, "within StateCopies polls")
}

// followedUsers returns a fencing store with colls collections ("/userId"),
// a client following dbs/app's state (ring of 2 seeded; polls only when a
// test asks) and its Follower, with users documents k0, k1, ... added.
func followedUsers(t *testing.T, colls, users int) (*fenceStore, *router.Client, *router.Follower) {
	t.Helper()
	st := newFenceStore(t)
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	createColls(t, st, colls, "/userId")
	addUsers(t, c, users, func(i int) string { return fmt.Sprint("k", i) })
	return st, c, f
}
