package shardstate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
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
	err = waitNaming(ctx, st, 3, shardstate.WaitOptions{Poll: 20 * time.Millisecond, Margin: 50 * time.Millisecond}, 3*validFor, "host/1")
	close(stop)
	<-done
	var se *shardstate.StaleRoutersError
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, context.Canceled)
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

// countingStore counts the queries of lease partitions ("lease",
// "lease-NN") and the documents they return, and apart the aggregate
// queries counting them.
type countingStore struct {
	store.Store
	queries, returned, counts atomic.Int64
}

func newCounting(t *testing.T) *countingStore {
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	return &countingStore{Store: st}
}

func (s *countingStore) reset() { s.queries.Store(0); s.returned.Store(0); s.counts.Store(0) }

func (s *countingStore) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	p, err := s.Store.Query(ctx, l, q, o)
	k, ok := o.PartitionKey.(string)
	switch {
	case !ok || !strings.HasPrefix(k, "lease"):
	case strings.Contains(q.Text, "COUNT("):
		s.counts.Add(1)
	default:
		s.queries.Add(1)
		if err == nil {
			s.returned.Add(int64(len(p.Items)))
		}
	}
	return p, err
}

// The lease protocol of docshard.lease/2 (docs/design.md#leases-at-scale):
// leases spread over LeaseBuckets partitions, renewed at a fraction of
// their HoldFor, judged lapsed for a change after ValidFor once the change
// was read published, removed only after HoldFor; leases of the earlier
// format judged by their own rule; the earlier version's waits refused.

// TestLeasesSpreadOverBuckets: every lease lives in one of LeaseBuckets
// partitions named "lease-NN", many routers spread over many of them, and
// Leases reads them all.
func TestLeasesSpreadOverBuckets(t *testing.T) { stores(t, testLeasesSpreadOverBuckets) }

func testLeasesSpreadOverBuckets(t *testing.T, st store.Store) {
	ctx := context.Background()
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	const n = 40
	for i := range n {
		_, err := shardstate.RenewLease(ctx, st, shardstate.Lease{Router: fmt.Sprintf("host/%d", i), Database: db, Version: 1, Epoch: 1, ValidFor: time.Second})
		require.NoError(t, err)
	}
	ls, err := shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, ls, n)
	for _, l := range ls {
		assert.False(t, l.Legacy())
	}
	used := 0
	for b := range shardstate.LeaseBuckets {
		kind := fmt.Sprintf("lease-%02d", b)
		page, err := st.Query(ctx, coll, store.Query{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.kind = @k", Parameters: []store.Param{{Name: "@k", Value: kind}}},
			&store.QueryOptions{PartitionKey: kind})
		require.NoError(t, err)
		var count int
		require.NoError(t, json.Unmarshal(page.Items[0], &count))
		if count > 0 {
			used++
		}
		assert.LessOrEqual(t, count, 8, "partition %s: the hash spreads the routers", kind)
	}
	assert.Greater(t, used, 16, "40 routers use many of the %d partitions", shardstate.LeaseBuckets)
}

// TestWaitLapsesReadPublished: a lease of the new format that does not
// acknowledge a change is waited for only ValidFor (plus the margin) once
// the change was read published (the router stops writing by its older
// state ValidFor after its last read of it), and is not removed while its
// HoldFor runs (the router may be alive, reading, renewing rarely). Before
// the change is published, the same lease is waited for until its
// HoldFor, then removed.
func TestWaitLapsesReadPublished(t *testing.T) { stores(t, testWaitLapsesReadPublished) }

func testWaitLapsesReadPublished(t *testing.T, st store.Store) {
	ctx := context.Background()
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "quiet", Database: db, Version: 1, Epoch: 1,
		ValidFor: 50 * time.Millisecond, HoldFor: time.Hour})
	require.NoError(t, err)
	wo := &shardstate.WaitOptions{Poll: 10 * time.Millisecond, Margin: 10 * time.Millisecond}

	// Version 2 is not published: a router reading the state still finds
	// version 1, and may write by it while its lease is held.
	err = waitNaming(ctx, st, 2, *wo, 2*time.Second, "quiet")
	var se *shardstate.StaleRoutersError
	require.ErrorAs(t, err, &se, "a version not yet published is waited for until the lease's HoldFor")
	require.Len(t, se.Routers, 1)
	assert.Equal(t, "quiet", se.Routers[0].Router)

	// Published: ValidFor after the wait read it, the router has read it
	// or stopped writing.
	s2, err := shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, 3)})
	require.NoError(t, err)
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, s2.Version, wo))
	ls, err := shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, ls, 1, "a lease within its HoldFor is not removed: its router may still renew it")

	// A lease whose HoldFor ran out is removed.
	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "quiet", Database: db, Version: 1, Epoch: 1,
		ValidFor: 20 * time.Millisecond, HoldFor: 60 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, 5, wo), "an unpublished version: waited for until HoldFor")
	ls, err = shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	assert.Empty(t, ls, "the lease that ran out its HoldFor was removed")
}

// TestWaitRefreshesPendingBucketsOnly: a wait counts the leases naming an
// older version in every partition on its first poll, reads them in a
// partition once their count stopped falling, and then reads only the
// partitions that still hold a lease it waits for, and only the leases
// naming an older version.
func TestWaitRefreshesPendingBucketsOnly(t *testing.T) {
	st := newCounting(t)
	ctx := context.Background()
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	for i := range 20 {
		v := int64(1)
		if i == 0 {
			v = 0 // the one that has not acknowledged version 1
		}
		_, err := shardstate.RenewLease(ctx, st, shardstate.Lease{Router: fmt.Sprintf("r%d", i), Database: db, Version: v, Epoch: 1,
			ValidFor: 30 * time.Millisecond, HoldFor: time.Hour})
		require.NoError(t, err)
	}
	st.reset()
	polls := 0
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, 1, &shardstate.WaitOptions{Poll: 10 * time.Millisecond, Margin: 10 * time.Millisecond,
		Pending: func([]*shardstate.Lease) { polls++ }}))
	q, docs, counts := st.queries.Load(), st.returned.Load(), st.counts.Load()
	t.Logf("%d polls: %d counts, %d queries, %d leases returned", polls, counts, q, docs)
	require.GreaterOrEqual(t, polls, 3, "the silent lease is waited for")
	assert.Equal(t, int64(shardstate.LeaseBuckets+1+1), counts, "the first poll counts in every partition, the second in the one with a stale lease")
	assert.Equal(t, int64(polls-1), q, "from the second poll on, the partition still waited for is read")
	assert.Equal(t, int64(polls-1), docs, "only the lease naming an older version is returned")
}

// TestLegacyLeaseWaitedOut: a lease of the earlier format (a router of an
// earlier docshard version, renewing on every poll, whose writes are not
// bounded by its state reads) is waited for as long as it is renewed, even
// once the change is published; unrenewed for ValidFor, it is removed.
func TestLegacyLeaseWaitedOut(t *testing.T) { stores(t, testLegacyLeaseWaitedOut) }

func testLegacyLeaseWaitedOut(t *testing.T, st store.Store) {
	ctx := context.Background()
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	old := func(n int) []byte {
		return []byte(fmt.Sprintf(`{"id":"lease.b2xk","kind":"lease","format":%q,"router":"old","database":%q,"version":1,"epoch":1,"validFor":%d,"renewedAt":"2026-11-27T00:00:%02dZ"}`,
			shardstate.Format, db, int64(500*time.Millisecond), n%60))
	}
	_, err = st.Upsert(ctx, coll, old(0), &store.WriteOptions{PartitionKey: "lease"})
	require.NoError(t, err)
	ls, err := shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.True(t, ls[0].Legacy())

	s2, err := shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, 3)})
	require.NoError(t, err)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				_, _ = st.Upsert(ctx, coll, old(n), &store.WriteOptions{PartitionKey: "lease"})
			}
		}
	}()
	wo := &shardstate.WaitOptions{Poll: 5 * time.Millisecond, Margin: 10 * time.Millisecond}
	err = waitNaming(ctx, st, s2.Version, *wo, 2*time.Second, "old")
	close(stop)
	<-done
	var se *shardstate.StaleRoutersError
	require.ErrorAs(t, err, &se, "an old router that renews is waited for")
	assert.Contains(t, err.Error(), "old (version 1)")

	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, s2.Version, wo))
	ls, err = shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	assert.Empty(t, ls, "the old lease, unrenewed, was removed")
}

// TestOldWaitersRefused: the first lease of the new format leaves a marker
// in the earlier format's lease partition, of another format: an earlier
// version's wait (or InUse), which reads only that partition and refuses
// any document of another format than its own, fails naming it instead of
// taking the new routers it cannot see for none.
func TestOldWaitersRefused(t *testing.T) { stores(t, testOldWaitersRefused) }

func testOldWaitersRefused(t *testing.T, st store.Store) {
	ctx := context.Background()
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	q := store.Query{Text: "SELECT * FROM c WHERE c.kind = @kind", Parameters: []store.Param{{Name: "@kind", Value: "lease"}}}
	page, err := st.Query(ctx, coll, q, &store.QueryOptions{PartitionKey: "lease"})
	require.NoError(t, err)
	require.Empty(t, page.Items)

	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "new", Database: db, Version: 1, Epoch: 1, ValidFor: time.Second})
	require.NoError(t, err)
	page, err = st.Query(ctx, coll, q, &store.QueryOptions{PartitionKey: "lease"})
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "the marker, where an earlier version looks for leases")
	var d struct {
		ID, Format string
	}
	require.NoError(t, json.Unmarshal(page.Items[0], &d))
	assert.NotEqual(t, shardstate.Format, d.Format, "an earlier version refuses it (format %q, want %q)", d.Format, shardstate.Format)
	assert.Equal(t, shardstate.LeaseFormat, d.Format)
	assert.True(t, strings.Contains(d.ID, "upgrade") && strings.Contains(d.ID, "lease-00-to-lease-31"), "its id, which the earlier version's error names, says what to do: %s", d.ID)

	ls, err := shardstate.Leases(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, ls, 1, "the marker is no lease")
	require.NoError(t, shardstate.ReleaseLease(ctx, st, db, "new"))
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, 1, nil))
}

// waitNaming runs WaitForRouters until it has waited at least min and has
// read router's lease by name among those it waits for (Pending), then
// ends the wait's context: its error names the router however busy the
// machine. (A wait ended by a deadline names only the leases it read by
// name before then, which a slow machine may not have reached.) A minute
// bounds it.
func waitNaming(ctx context.Context, st store.Store, version int64, wo shardstate.WaitOptions, min time.Duration, router string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	wo.Pending = func(ls []*shardstate.Lease) {
		for _, l := range ls {
			if l.Router == router && time.Since(start) >= min {
				cancel()
			}
		}
	}
	return shardstate.WaitForRouters(ctx, st, db, version, &wo)
}
