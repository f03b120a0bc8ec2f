package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/fleetsim"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// stateCalls returns what each logical partition of the state collection
// took in s, by partition-key value ("state", "lease-07", ...).
func stateCalls(s fleetsim.Snapshot) map[string]fleetsim.Usage {
	out := map[string]fleetsim.Usage{}
	for p, u := range s.ByPartition {
		if strings.HasSuffix(p.Link, "/"+shardstate.CollectionID) {
			out[p.Key] = u
		}
	}
	return out
}

// meteredFollowers starts n Followers of db, the i-th with opts(i), over
// one embedded store whose calls meter counts, its state initialised; they
// close when the test ends.
func meteredFollowers(t *testing.T, n int, opts func(i int) *router.FollowOptions) (*fleetsim.Counter, store.Store) {
	meter := fleetsim.NewCounter(nil)
	cs := meter.Wrap(newMem(t))
	_, err := shardstate.Init(ctx, cs, db, ring(t, 2), nil)
	require.NoError(t, err)
	for i := range n {
		follow(t, router.New(cs, nil), opts(i))
	}
	return meter, cs
}

// stateWindow lets the followers run for about d and returns what the
// state collection took meanwhile (stateCalls) and the window's length,
// whatever it turned out to be.
func stateWindow(meter *fleetsim.Counter, d time.Duration) (map[string]fleetsim.Usage, time.Duration) {
	before := meter.Snapshot()
	start := time.Now()
	time.Sleep(d)
	return stateCalls(meter.Snapshot().Sub(before)), time.Since(start)
}

// writesOf counts u's document writes.
func writesOf(u fleetsim.Usage) int {
	return int(u.Calls[fleetsim.Create] + u.Calls[fleetsim.Upsert] + u.Calls[fleetsim.Replace] + u.Calls[fleetsim.Delete])
}

// leaseHolders counts the routers whose lease each lease partition holds,
// from the lease documents themselves.
func leaseHolders(t *testing.T, st store.Store) map[string]int {
	p, err := st.Query(ctx, db+"/colls/"+shardstate.CollectionID, store.Query{Text: "SELECT c.kind FROM c WHERE IS_DEFINED(c.router)"}, nil)
	require.NoError(t, err)
	out := map[string]int{}
	for _, it := range p.Items {
		var d struct{ Kind string }
		require.NoError(t, json.Unmarshal(it, &d))
		out[d.Kind]++
	}
	return out
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
	meter, cs := meteredFollowers(t, n, func(i int) *router.FollowOptions {
		return &router.FollowOptions{PollInterval: poll, LeaseDuration: lease, RenewInterval: renew, RouterID: fmt.Sprintf("router-%d", i)}
	})
	calls, e := stateWindow(meter, 5*renew)
	routers := leaseHolders(t, cs)

	perRouter := float64(e)/float64(renew) + 1 // the most renewals a router makes in the window
	writes, busiest, busiestP := 0, 0, ""
	for p, u := range calls {
		c := writesOf(u)
		if c == 0 || p == "lease" { // "lease": the marker a lease's take writes (once per take)
			continue
		}
		require.True(t, strings.HasPrefix(p, "lease-"), "every write of the steady state is a lease's renewal in its bucket: %s", p)
		writes += c
		assert.LessOrEqual(t, float64(c), float64(routers[p])*perRouter, "partition %s: %d routers renew at most once per %s", p, routers[p], renew)
		if c > busiest {
			busiest, busiestP = c, p
		}
	}
	stateReads := int(calls["state"].Calls[fleetsim.PointRead])
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
	before := meter.Snapshot()
	start := time.Now()
	next, err := shardstate.Publish(ctx, cs, cur, shardstate.Change{Resolver: ring(t, 3)})
	require.NoError(t, err)
	polls := 0
	require.NoError(t, shardstate.WaitForRouters(ctx, cs, db, next.Version, &shardstate.WaitOptions{Poll: poll, Pending: func([]*shardstate.Lease) { polls++ }}))
	calls = stateCalls(meter.Snapshot().Sub(before))
	e = time.Since(start)
	writes, queries, returned := 0, 0, 0
	for p, u := range calls {
		if strings.HasPrefix(p, "lease-") {
			writes += writesOf(u)
		}
		if strings.HasPrefix(p, "lease") {
			queries += int(u.Calls[fleetsim.Query])
			returned += int(u.Docs)
		}
	}
	t.Logf("a change: %d lease writes in %s for %d routers; the wait: %d polls, %d lease queries, %d stale leases returned", writes, e.Round(time.Millisecond), n, polls, queries, returned)
	assert.GreaterOrEqual(t, writes, n, "every router acknowledged")
	// An acknowledgement each and the renewals that fell due; but a router
	// renews on every poll while it decodes the new resolver (poll's
	// keep: a wait keeps waiting for it meanwhile), which on a busy
	// machine takes several polls, so the bound is one write a poll.
	assert.LessOrEqual(t, float64(writes), n*(1+float64(e)/float64(poll)+1), "an acknowledgement each, and at most one renewal a poll while the new resolver decodes")
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
	const lease = 300 * time.Millisecond
	r := startReadInFlight(t, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: lease, RenewInterval: time.Hour, RouterID: "r1"})
	fs := r.fs
	next := publish(t, fs, 3, true)

	// The wait is ended once it has waited 6 leases and read r1's by name
	// (a deadline could end it before a busy machine read the name).
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	start := time.Now()
	named := func(ls []*shardstate.Lease) {
		if len(ls) > 0 && time.Since(start) >= 6*lease {
			cancel()
		}
	}
	err := shardstate.WaitForRouters(wctx, fs, db, next.Version, &shardstate.WaitOptions{Poll: 10 * time.Millisecond, Margin: lease / 2, Pending: named})
	cancel()
	var se *shardstate.StaleRoutersError
	require.ErrorAs(t, err, &se, "a router with a call in flight by the old placement is waited for")
	require.ErrorIs(t, err, context.Canceled, "not ended by the minute's deadline")
	require.Len(t, se.Routers, 1)
	assert.Equal(t, "r1", se.Routers[0].Router)
	wo := &shardstate.WaitOptions{Poll: 10 * time.Millisecond, Margin: lease / 2}

	close(r.reads.release)
	require.NoError(t, <-r.done)
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
	meter, cs := meteredFollowers(t, n, func(int) *router.FollowOptions {
		return &router.FollowOptions{PollInterval: poll, LeaseDuration: 5 * poll, RenewInterval: renew, ShareLease: true}
	})
	calls, e := stateWindow(meter, 5*renew)
	writes := 0
	for p, u := range calls {
		if strings.HasPrefix(p, "lease") {
			writes += writesOf(u)
		}
	}
	t.Logf("window %s: %d lease writes for %d clients sharing one lease (renew interval %s)", e.Round(time.Millisecond), writes, n, renew)
	assert.Positive(t, writes)
	assert.LessOrEqual(t, float64(writes), float64(e)/float64(renew)+1, "one renewal per interval for the process")
	ls, err := shardstate.Leases(ctx, cs, db)
	require.NoError(t, err)
	assert.Len(t, ls, 1)
}
