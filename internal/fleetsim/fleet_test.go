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

func checkRun(t *testing.T, res *Result, o Options) {
	t.Helper()
	n := int64(o.N)
	coll, err := shardstate.CollectionLink("dbs/app")
	require.NoError(t, err)
	lease, state, history := Partition{coll, "lease"}, Partition{coll, "state"}, Partition{coll, "history"}
	assert.ElementsMatch(t, []Partition{lease, state}, res.Steady.Partitions(), "the steady state touches the leases and the state only")
	lu, su := res.Steady.ByPartition[lease], res.Steady.ByPartition[state]
	writes := lu.Calls[Upsert] + lu.Calls[Replace]
	reads := su.Calls[PointRead]
	polls := int64(res.SteadyFor / o.Follow.PollInterval)
	assert.GreaterOrEqual(t, writes, n, "every router renewed its lease in the window")
	assert.LessOrEqual(t, writes, n*(polls+2), "at most one renewal per router per poll interval")
	assert.InDelta(t, writes, reads, float64(2*n), "one state read per renewal")
	assert.Equal(t, lu.CallsTotal(), writes, "no other call on the leases")
	assert.Equal(t, su.CallsTotal(), reads, "no other call on the state")
	assert.InDelta(t, 5*float64(writes), lu.RU, 1e-6, "small leases: 5 RU a write")
	assert.Equal(t, lease, res.Busiest)
	assert.InDelta(t, res.Steady.Total().RU/res.SteadyFor.Seconds(), res.RUPerSecond, 1e-6)

	assert.Zero(t, res.Missed)
	require.Len(t, res.Propagation, o.N, "every router switched")
	require.NoError(t, res.WaitErr)
	assert.LessOrEqual(t, res.Quantile(0.5), res.Max())
	p := res.Publish
	assert.Equal(t, int64(1), p.Calls[Create], "the publish records the history")
	assert.Equal(t, int64(1), res.Change.ByPartition[history].Calls[Create])
	assert.GreaterOrEqual(t, p.Calls[Query], int64(1), "the wait reads the leases")
	assert.GreaterOrEqual(t, p.Docs, n, "every lease, at least once")
	cl := res.Change.ByPartition[lease]
	assert.GreaterOrEqual(t, cl.Calls[Upsert]+cl.Calls[Replace], n, "every router acknowledged")
	assert.Greater(t, res.Change.Total().RU, p.RU)
}
