package fleetsim

import (
	"context"
	"fmt"
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
	return Options{N: n, Follow: router.FollowOptions{PollInterval: 40 * time.Millisecond, LeaseDuration: 200 * time.Millisecond},
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
// window, which is two lease durations, and at most once per poll
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

// TestRunCountsLeases: on the lease protocol of 2026-11-28 (a lease
// write and a state read per poll, every lease in one logical partition),
// the counts are exactly those of the model in docs/performance.md. A
// protocol that changes them updates this test and the model together.
func TestRunCountsLeases(t *testing.T) {
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	o := fast(8)
	res, err := Run(context.Background(), mem, "dbs/app", o)
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink("dbs/app")
	require.NoError(t, err)
	lease, state := Partition{coll, "lease"}, Partition{coll, "state"}
	if _, ok := res.Steady.ByPartition[lease]; !ok || len(res.Steady.ByPartition) != 2 {
		t.Skipf("not the protocol of 2026-11-28 (steady-state partitions %v): see the model in docs/performance.md", res.Steady.Partitions())
	}
	lu, su := res.Steady.ByPartition[lease], res.Steady.ByPartition[state]
	writes := lu.Calls[Upsert] + lu.Calls[Replace]
	assert.Equal(t, lu.CallsTotal(), writes, "no other call on the leases")
	assert.Equal(t, su.CallsTotal(), su.Calls[PointRead], "no other call on the state")
	assert.InDelta(t, writes, su.Calls[PointRead], float64(2*o.N), "one state read per renewal")
	assert.InDelta(t, 5*float64(writes), lu.RU, 1e-6, "a lease is under 1 KB: 5 RU a write")
	assert.InDelta(t, float64(su.Calls[PointRead]), su.RU, 1e-6, "the state is under 1 KB: 1 RU a read")
	assert.Equal(t, lease, res.Busiest)
	assert.Equal(t, int64(1), res.Publish.Calls[Create], "the publish records the history")
	assert.GreaterOrEqual(t, res.Publish.Docs, int64(o.N), "the wait read every lease, at least once")
	cl := res.Change.ByPartition[lease]
	assert.GreaterOrEqual(t, cl.Calls[Upsert]+cl.Calls[Replace], int64(o.N), "every router acknowledged")
}
