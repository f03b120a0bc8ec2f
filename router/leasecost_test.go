package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// controlCounter counts the calls to the state collection by kind
// ("read", "write", "query") and logical partition, the routers whose
// lease writes each partition took, and the documents lease queries
// returned.
type controlCounter struct {
	store.Store
	mu       sync.Mutex
	calls    map[string]int // "kind partition"
	routers  map[string]map[string]bool
	returned int
}

func newControlCounter(st store.Store) *controlCounter {
	c := &controlCounter{Store: st}
	c.reset()
	return c
}

func (c *controlCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.routers, c.returned = map[string]int{}, map[string]map[string]bool{}, 0
}

func (c *controlCounter) count(l, kind string, pk any, body []byte, returned int) {
	if !strings.HasSuffix(l, "/"+shardstate.CollectionID) {
		return
	}
	p := fmt.Sprint(pk)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[kind+" "+p]++
	c.returned += returned
	var d struct{ Router string }
	if kind == "write" && json.Unmarshal(body, &d) == nil && d.Router != "" {
		if c.routers[p] == nil {
			c.routers[p] = map[string]bool{}
		}
		c.routers[p][d.Router] = true
	}
}

// snapshot returns the counts by "kind partition", and per partition the
// routers that wrote there.
func (c *controlCounter) snapshot() (map[string]int, map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, routers := map[string]int{}, map[string]int{}
	for k, n := range c.calls {
		calls[k] = n
	}
	for p, rs := range c.routers {
		routers[p] = len(rs)
	}
	return calls, routers, c.returned
}

func (c *controlCounter) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	c.count(l, "read", o.PartitionKey, nil, 0)
	return c.Store.Read(ctx, l, id, o)
}

func (c *controlCounter) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	c.count(l, "write", o.PartitionKey, doc, 0)
	return c.Store.Create(ctx, l, doc, o)
}

func (c *controlCounter) Upsert(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	c.count(l, "write", o.PartitionKey, doc, 0)
	return c.Store.Upsert(ctx, l, doc, o)
}

func (c *controlCounter) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	c.count(l, "write", o.PartitionKey, doc, 0)
	return c.Store.Replace(ctx, l, id, doc, o)
}

func (c *controlCounter) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	c.count(l, "write", o.PartitionKey, nil, 0)
	return c.Store.Delete(ctx, l, id, o)
}

func (c *controlCounter) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	p, err := c.Store.Query(ctx, l, q, o)
	n := 0
	if err == nil {
		n = len(p.Items)
	}
	c.count(l, "query", o.PartitionKey, nil, n)
	return p, err
}

// TestControlPlaneCost: N followers, each a client of its own (a process
// of its own, sharing only the store), over some renew intervals. The
// formulas of docs/design.md#leases-at-scale: a router writes its lease
// once per RenewInterval R (not once per poll), so over a window of E a
// partition holding k routers takes at most k·(E/R + 1) lease writes, the
// busiest one k_max·(E/R + 1), where k_max ≈ N/LeaseBuckets; each router
// reads the state once per poll P, at most E/P + 1 times. A published
// change costs one acknowledgement per router, and the wait reads every
// lease partition once, then only those still holding a stale lease.
func TestControlPlaneCost(t *testing.T) {
	const (
		n     = 48
		poll  = 20 * time.Millisecond
		lease = time.Second // long: a poll's calls time out after it, and a slow machine must not lose leases
		renew = 200 * time.Millisecond
	)
	cs := newControlCounter(newMem(t))
	_, err := shardstate.Init(ctx, cs, db, ring(t, 2), nil)
	require.NoError(t, err)
	for i := range n {
		c := router.New(cs, nil)
		f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: poll, LeaseDuration: lease, RenewInterval: renew, RouterID: fmt.Sprintf("router-%d", i)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
	}

	cs.reset()
	start := time.Now()
	time.Sleep(5 * renew) // the window measured, whatever its length turns out to be
	calls, routers, _ := cs.snapshot()
	e := time.Since(start)

	perRouter := float64(e)/float64(renew) + 1 // the most renewals a router makes in the window
	writes, busiest, busiestP, stateReads := 0, 0, "", 0
	for k, c := range calls {
		kind, p, _ := strings.Cut(k, " ")
		switch {
		case kind == "write" && p == "lease":
			// The marker a lease's take writes (once per take).
		case kind == "write":
			require.True(t, strings.HasPrefix(p, "lease-"), "every write of the steady state is a lease's renewal in its bucket: %s", k)
			writes += c
			assert.LessOrEqual(t, float64(c), float64(routers[p])*perRouter, "partition %s: %d routers renew at most once per %s", p, routers[p], renew)
			if c > busiest {
				busiest, busiestP = c, p
			}
		case kind == "read" && p == "state":
			stateReads += c
		}
	}
	maxK := 0
	for _, k := range routers {
		maxK = max(maxK, k)
	}
	sec := e.Seconds()
	t.Logf("window %s: %d lease writes (%.2f per router per second; formula 1/R = %.2f; once per poll it would be %.2f), busiest partition %s: %d writes from %d routers (%.1f/s; formula k_max/R = %.1f/s), %d state reads (%.1f per router per second; formula 1/P = %.1f)",
		e.Round(time.Millisecond), writes, float64(writes)/n/sec, 1/renew.Seconds(), 1/poll.Seconds(), busiestP, busiest, routers[busiestP],
		float64(busiest)/sec, float64(maxK)/renew.Seconds(), stateReads, float64(stateReads)/n/sec, 1/poll.Seconds())
	assert.Positive(t, writes, "the leases are renewed")
	assert.LessOrEqual(t, float64(writes), n*perRouter, "a router renews once per RenewInterval, not once per poll")
	assert.LessOrEqual(t, float64(busiest), float64(maxK)*perRouter)
	assert.Less(t, maxK, n/4, "the leases are spread over the buckets")
	assert.LessOrEqual(t, float64(stateReads), n*(float64(e)/float64(poll)+1), "one state read per poll")

	// A change: one acknowledgement per router (besides renewals that fell
	// due), and a wait that reads the stale leases only.
	cur, err := shardstate.Load(ctx, cs, db)
	require.NoError(t, err)
	cs.reset()
	start = time.Now()
	next, err := shardstate.Publish(ctx, cs, cur, shardstate.Change{Resolver: ring(t, 3)})
	require.NoError(t, err)
	polls := 0
	require.NoError(t, shardstate.WaitForRouters(ctx, cs, db, next.Version, &shardstate.WaitOptions{Poll: poll, Pending: func([]*shardstate.Lease) { polls++ }}))
	calls, _, returned := cs.snapshot()
	e = time.Since(start)
	writes, queries := 0, 0
	var parts []string
	for k, c := range calls {
		kind, p, _ := strings.Cut(k, " ")
		switch {
		case kind == "write" && strings.HasPrefix(p, "lease-"):
			writes += c
		case kind == "query" && strings.HasPrefix(p, "lease"):
			queries += c
			parts = append(parts, p)
		}
	}
	sort.Strings(parts)
	t.Logf("a change: %d lease writes in %s for %d routers; the wait: %d polls, %d lease queries, %d stale leases returned", writes, e.Round(time.Millisecond), n, polls, queries, returned)
	assert.GreaterOrEqual(t, writes, n, "every router acknowledged")
	assert.LessOrEqual(t, float64(writes), n*(1+float64(e)/float64(renew)+1), "an acknowledgement each, and the renewals that fell due")
	assert.LessOrEqual(t, queries, (shardstate.LeaseBuckets+1)+(polls-1)*(maxK+shardstate.LeaseBuckets), "the first poll reads every partition once, then only those with stale leases")
	assert.LessOrEqual(t, returned, polls*n, "only stale leases are returned")
}

// TestInFlightKeepsTheWaitWaiting: a router that renews its lease rarely
// (RenewInterval) and has switched to a new version while a call by the
// old placement is still in flight renews on every poll until that call
// ends, so a change waiting for it (WaitForRouters) keeps waiting rather
// than taking the unchanged lease for lapsed after ValidFor; once the call
// ended the router acknowledges and the wait returns.
func TestInFlightKeepsTheWaitWaiting(t *testing.T) {
	fs := newFenceStore(t)
	st := &blockingReads{Store: fs, id: "1", started: make(chan struct{}, 1), release: make(chan struct{})}
	c := router.New(st, nil)
	const lease = 300 * time.Millisecond
	follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: lease, RenewInterval: time.Hour, RouterID: "r1"})
	for _, l := range links(3) {
		require.NoError(t, fs.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	addUsers(t, c, 3, func(i int) string { return fmt.Sprint("k", i) })

	done := make(chan error, 1)
	go func() {
		_, err := c.Read(ctx, db, "1", "k1")
		done <- err
	}()
	<-st.started // in flight, placed by version 1's resolver
	next := publish(t, fs, 3, true)

	wo := &shardstate.WaitOptions{Poll: 10 * time.Millisecond, Margin: lease / 2}
	wctx, cancel := context.WithTimeout(ctx, 6*lease)
	err := shardstate.WaitForRouters(wctx, fs, db, next.Version, wo)
	cancel()
	var se *shardstate.StaleRoutersError
	require.ErrorAs(t, err, &se, "a router with a call in flight by the old placement is waited for")
	assert.Equal(t, "r1", se.Routers[0].Router)

	close(st.release)
	require.NoError(t, <-done)
	require.NoError(t, shardstate.WaitForRouters(ctx, fs, db, next.Version, wo))
	ls, err := shardstate.Leases(ctx, fs, db)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.Equal(t, next.Version, ls[0].Version, "acknowledged once the call ended")
}

// TestShareLease: the Followers of one database in one process over one
// store that set ShareLease hold one lease, which acknowledges a version
// only once every one of them routes by it, and is released with the last
// of them. A Follower without it holds its own.
func TestShareLease(t *testing.T) {
	st := newFenceStore(t)
	opts := func() *router.FollowOptions {
		return &router.FollowOptions{Seed: ring(t, 2), PollInterval: time.Hour, LeaseDuration: 2 * time.Hour, ShareLease: true}
	}
	f1, err := router.New(st, nil).Follow(ctx, db, opts())
	require.NoError(t, err)
	f2, err := router.New(st, nil).Follow(ctx, db, opts())
	require.NoError(t, err)
	assert.Equal(t, f1.RouterID(), f2.RouterID(), "one lease for the process")
	leases := func() []*shardstate.Lease {
		ls, err := shardstate.Leases(ctx, st, db)
		require.NoError(t, err)
		return ls
	}
	require.Len(t, leases(), 1)

	next := publish(t, st, 3, true)
	require.NoError(t, f1.Refresh(ctx))
	assert.Equal(t, next.Version, f1.Version())
	require.Len(t, leases(), 1)
	assert.Less(t, leases()[0].Version, next.Version, "the other client still routes by the old version")
	require.NoError(t, f2.Refresh(ctx))
	assert.Equal(t, next.Version, leases()[0].Version, "acknowledged once both route by it")
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, next.Version, &shardstate.WaitOptions{Poll: 10 * time.Millisecond}))

	own, err := router.New(st, nil).Follow(ctx, db, &router.FollowOptions{PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	require.NoError(t, err)
	require.Len(t, leases(), 2, "a Follower that does not share holds its own lease")
	require.NoError(t, own.Close())

	require.NoError(t, f1.Close())
	require.Len(t, leases(), 1, "held while a member follows")
	require.NoError(t, f2.Close())
	assert.Empty(t, leases(), "released with the last member")
}

// TestShareLeaseCost: n clients of one process sharing a lease write it
// about once per RenewInterval in all, not once each.
func TestShareLeaseCost(t *testing.T) {
	const (
		n     = 8
		poll  = 20 * time.Millisecond
		renew = 200 * time.Millisecond
	)
	cs := newControlCounter(newMem(t))
	_, err := shardstate.Init(ctx, cs, db, ring(t, 2), nil)
	require.NoError(t, err)
	for range n {
		f, err := router.New(cs, nil).Follow(ctx, db, &router.FollowOptions{PollInterval: poll, LeaseDuration: 5 * poll, RenewInterval: renew, ShareLease: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
	}
	cs.reset()
	start := time.Now()
	time.Sleep(5 * renew) // the window measured, whatever its length turns out to be
	calls, _, _ := cs.snapshot()
	e := time.Since(start)
	writes := 0
	for k, c := range calls {
		if kind, p, _ := strings.Cut(k, " "); kind == "write" && strings.HasPrefix(p, "lease") {
			writes += c
		}
	}
	t.Logf("window %s: %d lease writes for %d clients sharing one lease (renew interval %s)", e.Round(time.Millisecond), writes, n, renew)
	assert.Positive(t, writes)
	assert.LessOrEqual(t, float64(writes), float64(e)/float64(renew)+1, "one renewal per interval for the process")
	ls, err := shardstate.Leases(ctx, cs, db)
	require.NoError(t, err)
	assert.Len(t, ls, 1)
}
