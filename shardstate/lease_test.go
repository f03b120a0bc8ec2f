package shardstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

func TestLeasesAndWaitForRouters(t *testing.T) { stores(t, testLeasesAndWaitForRouters) }

func testLeasesAndWaitForRouters(t *testing.T, st store.Store) {
	ctx := context.Background()
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)

	const validFor = 300 * time.Millisecond
	lease := func(router string, version int64) *shardstate.Lease {
		l, err := shardstate.RenewLease(ctx, st, shardstate.Lease{Router: router, Database: db, Version: version, Epoch: 1, ValidFor: validFor, RenewedAt: time.Now()})
		require.NoError(t, err)
		return l
	}
	lease("host/1", s.Version)
	lease(`odd/id?with#chars\`, s.Version)
	ls, err := shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	assert.Equal(t, "host/1", ls[0].Router)
	assert.Equal(t, validFor, ls[0].ValidFor)
	assert.NotEmpty(t, ls[0].ETag)

	// Both acknowledge version 1: nothing to wait for.
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, 1, nil))

	// Version 2: one router acknowledges it, the other never renews; the
	// wait ends once that lease has gone unrenewed for ValidFor + margin,
	// and the lapsed lease is removed.
	lease("host/1", 2)
	start := time.Now()
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, 2, &shardstate.WaitOptions{Poll: 20 * time.Millisecond, Margin: 50 * time.Millisecond}))
	assert.GreaterOrEqual(t, time.Since(start), validFor+50*time.Millisecond, "a silent lease is waited out in full")
	ls, err = shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.Equal(t, "host/1", ls[0].Router)

	// A router that keeps renewing under the old version is waited for
	// until the context ends; the error names it. (Its lease is long, so a
	// renewer stalled by a busy machine is not taken for a lapsed one.)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
				_, _ = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "host/1", Database: db, Version: 2, Epoch: 1, ValidFor: 10 * validFor})
			}
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 3*validFor)
	err = shardstate.WaitForRouters(wctx, st, db, 3, &shardstate.WaitOptions{Poll: 20 * time.Millisecond, Margin: 50 * time.Millisecond})
	cancel()
	close(stop)
	<-done
	var se *shardstate.StaleRoutersError
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, se.Routers, 1)
	assert.Contains(t, err.Error(), "host/1 (version 2)")

	require.NoError(t, shardstate.ReleaseLease(ctx, st, db, "host/1"))
	require.NoError(t, shardstate.ReleaseLease(ctx, st, db, "host/1"), "releasing twice is fine")
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, 3, nil), "a released lease is not waited for")
}

func TestLeaseLost(t *testing.T) { stores(t, testLeaseLost) }

func testLeaseLost(t *testing.T, st store.Store) {
	ctx := context.Background()
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	l, err := shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "r1", Database: db, Version: 1, Epoch: 1, ValidFor: time.Second})
	require.NoError(t, err)
	l2, err := shardstate.RenewLease(ctx, st, *l)
	require.NoError(t, err, "a renewal on condition of its own ETag")
	assert.NotEqual(t, l.ETag, l2.ETag)
	_, err = shardstate.RenewLease(ctx, st, *l)
	require.ErrorIs(t, err, shardstate.ErrLeaseLost, "a stale ETag: someone else wrote it")
	require.NoError(t, shardstate.ReleaseLease(ctx, st, db, "r1"))
	_, err = shardstate.RenewLease(ctx, st, *l2)
	require.ErrorIs(t, err, shardstate.ErrLeaseLost, "removed as lapsed")
}

// TestOldLeaseIDsRemoved: a lease written by an earlier version, under
// its percent-escaped id ("lease-host%2F9"), is read and, once lapsed,
// removed by its own id. (Such ids failed their signature on Cosmos DB's
// gateway, which decodes escapes in a path: leases now have ids of
// base64url letters.)
func TestOldLeaseIDsRemoved(t *testing.T) { stores(t, testOldLeaseIDsRemoved) }

func testOldLeaseIDsRemoved(t *testing.T, st store.Store) {
	ctx := context.Background()
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	old := `{"id":"lease-host%2F9","kind":"lease","format":"` + shardstate.Format + `","router":"host/9","database":"` + db + `","version":0,"epoch":0,"validFor":1000000,"renewedAt":"2026-11-27T00:00:00Z"}`
	_, err = st.Create(ctx, coll, []byte(old), &store.WriteOptions{PartitionKey: "lease"})
	require.NoError(t, err)
	ls, err := shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.Equal(t, "host/9", ls[0].Router)

	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, s.Version, &shardstate.WaitOptions{Poll: 10 * time.Millisecond, Margin: time.Millisecond}))
	ls, err = shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	assert.Empty(t, ls, "the lapsed old-format lease was removed")
}
