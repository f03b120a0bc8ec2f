package router_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
)

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
