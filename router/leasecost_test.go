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
