package fleetsim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// fast is a run's pace in the tests: polls every 40 ms.
func fast(n int) Options {
	return Options{N: n, Follow: router.FollowOptions{PollInterval: 40 * time.Millisecond, LeaseDuration: 200 * time.Millisecond, RenewInterval: 200 * time.Millisecond},
		Window: 400 * time.Millisecond, Wait: &shardstate.WaitOptions{Poll: 20 * time.Millisecond}}
}

// TestRunCounts: a fleet's steady state is its routers' polls, each a
// lease write and a state read, in the two logical partitions of the
// state collection, and no more polls than the interval allows; a change
// reaches every router, and its cost is counted.
func TestRunCounts(t *testing.T) {
	for _, n := range []int{3, 12} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			mem := memstore.New(nil)
			t.Cleanup(func() { _ = mem.Close() })
			o := fast(n)
			res, err := Run(context.Background(), mem, "dbs/app", o)
			require.NoError(t, err)
			checkRun(t, res, o)
		})
	}
}

// TestRunServe: the same through docshard serve, each follower with a
// connection of its own.
func TestRunServe(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	ctx := emulatortest.Context(t)
	st, err := emulatortest.Backend(ctx, srv.Endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	o := fast(4)
	o.Open = func(ctx context.Context, _ int) (store.Store, error) { return emulatortest.Backend(ctx, srv.Endpoint) }
	res, err := Run(ctx, st, "dbs/app", o)
	require.NoError(t, err)
	checkRun(t, res, o)
}

// checkRun checks what any lease protocol does, so the test holds for
// whatever protocol is in the tree: the fleet's steady state stays in the
// state collection; every router writes (renews) at least once in the
// window, which is two renew intervals, and at most once per poll
// interval; the change reaches every router and the wait returns; the
// figures add up.
func checkRun(t *testing.T, res *Result, o Options) {
	t.Helper()
	n := int64(o.N)
	coll, err := shardstate.CollectionLink("dbs/app")
	require.NoError(t, err)
	var writes int64
	for _, p := range res.Steady.Partitions() {
		assert.Equal(t, coll, p.Link, "the steady state touches the state collection only")
		u := res.Steady.ByPartition[p]
		writes += u.Calls[Create] + u.Calls[Upsert] + u.Calls[Replace] + u.Calls[Batch]
	}
	polls := int64(res.SteadyFor / o.Follow.PollInterval)
	assert.GreaterOrEqual(t, writes, n, "every router renewed in the window")
	assert.LessOrEqual(t, writes, n*(polls+2), "at most one write per router per poll interval")
	assert.InDelta(t, res.Steady.Total().RU/res.SteadyFor.Seconds(), res.RUPerSecond, 1e-6)
	busy, bu := res.Steady.Busiest()
	assert.Equal(t, busy, res.Busiest)
	for _, u := range res.Steady.ByPartition {
		assert.LessOrEqual(t, u.RU, bu.RU)
	}

	assert.Zero(t, res.Missed)
	require.Len(t, res.Propagation, o.N, "every router switched")
	require.NoError(t, res.WaitErr)
	assert.LessOrEqual(t, res.Quantile(0.5), res.Max())
	assert.LessOrEqual(t, res.Max(), res.ChangeFor)
	assert.LessOrEqual(t, res.Wait, res.ChangeFor)
	p := res.Publish
	assert.GreaterOrEqual(t, p.CallsTotal(), int64(2), "the publish wrote and the wait read")
	assert.Greater(t, res.Change.Total().RU, p.RU, "the routers' calls during the change count too")
}

// TestRunCountsLeases: the protocol's shape as the meter sees it (docs/
// design.md, "Leases at scale"): the leases spread over the lease-NN
// buckets and only written there, the state only point-read, and a lease
// renewed once per RenewInterval rather than on every poll; a change
// records one history version and every router acknowledges it.
func TestRunCountsLeases(t *testing.T) {
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	o := fast(16)
	o.Follow.RenewInterval = 400 * time.Millisecond // ten polls
	o.Window = 1200 * time.Millisecond              // three renewals, thirty polls
	res, err := Run(context.Background(), mem, "dbs/app", o)
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink("dbs/app")
	require.NoError(t, err)
	var writes, buckets, reads, states int64
	for p, u := range res.Steady.ByPartition {
		require.Equal(t, coll, p.Link, "the control plane reads and writes only its own collection")
		if p.Key == "state" || strings.HasPrefix(p.Key, "state-") {
			assert.Equal(t, u.CallsTotal(), u.Calls[PointRead], "no other call than reads on the state and its copies (%s)", p.Key)
			reads += u.Calls[PointRead]
			states++
			continue
		}
		require.True(t, strings.HasPrefix(p.Key, "lease-"), "steady-state calls only on the state, its copies and the lease buckets, not %q", p.Key)
		assert.Equal(t, u.CallsTotal(), u.Calls[Upsert]+u.Calls[Replace], "only lease writes in %s", p.Key)
		writes += u.Calls[Upsert] + u.Calls[Replace]
		buckets++
	}
	assert.Greater(t, buckets, int64(1), "16 routers' leases in more than one bucket")
	assert.Greater(t, states, int64(2), "16 routers' state reads on more than the state document and one copy")
	// Polls outnumber renewals ten to one; allow the scheduler a factor of
	// two either way, which still tells renewal-per-poll (reads ≈ writes)
	// from renewal-per-RenewInterval.
	assert.Greater(t, writes, int64(0), "the routers renewed in the window")
	assert.Less(t, 5*writes, reads, "a lease is renewed once per RenewInterval, not on every poll (%d writes, %d reads)", writes, reads)
	assert.Equal(t, int64(1), res.Publish.Calls[Create], "the publish records the history")
	var acks int64
	for p, u := range res.Change.ByPartition {
		if strings.HasPrefix(p.Key, "lease-") {
			acks += u.Calls[Upsert] + u.Calls[Replace]
		}
	}
	assert.GreaterOrEqual(t, acks, int64(o.N), "every router acknowledged the change")
}
