package spillover_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestLimitHolds: maxDocuments and maxBytes are limits no collection
// exceeds, whatever the write rate. Eight writers create documents as fast
// as the store takes them through one router, on the embedded store and
// through docshard serve, with a coordinator that never checks on its
// schedule (CheckInterval an hour): the only thing that stops a collection
// from filling past its limit is the store's quota, set on the collections
// the coordinator creates; a write it refuses is sent on to the next
// collection, so every write succeeds, once.
func TestLimitHolds(t *testing.T) {
	const writers, perWriter = 8, 60
	for _, tc := range []struct {
		name    string
		backend string
		docs    int64 // maxDocuments
		bytes   int64 // maxBytes
	}{
		{"documents, embedded", "memstore", 50, 0},
		{"bytes, embedded", "memstore", 0, 6000},
		{"documents, serve", "serve", 50, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := emulatortest.Context(t)
			var st store.Store
			if tc.backend == "serve" {
				_, st = emulatortest.StartBackend(ctx, t)
			} else {
				st = memstore.New(nil)
			}
			defer st.Close()
			r, err := spillover.New([]string{db + "/colls/log0"}, &spillover.Options{PartitionKey: resolver.MustKeyDef("/id"),
				CollectionPrefix: "log", MaxDocuments: tc.docs, MaxBytes: tc.bytes, FillRatio: 0.9})
			require.NoError(t, err)
			coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: r, CheckInterval: time.Hour,
				OnError: func(err error) { t.Log(err) }, OnOpen: func(l string, v int64) { t.Logf("%s opened %s", time.Now().Format("05.000"), l) }})
			require.NoError(t, err)
			defer coord.Close()
			c := router.New(st, &router.Options{Hooks: router.Hooks{Call: coord.Observe}})
			f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
			require.NoError(t, err)
			defer f.Close()

			ids := map[string]bool{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						id := fmt.Sprintf("w%d-%d", w, i)
						_, err := c.Create(ctx, db, map[string]any{"id": id, "pad": strings.Repeat("x", 40)}, nil)
						if !assert.NoError(t, err) {
							return
						}
						mu.Lock()
						ids[id] = true
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			require.NoError(t, coord.Close())
			limit := tc.docs
			if limit == 0 {
				limit = writers * perWriter
			}
			counts := checkFilled(t, st, ids, limit)
			_, cur := current(t, st)
			for _, l := range cur.Collections() {
				info, err := st.CollectionInfo(ctx, l)
				require.NoError(t, err)
				if tc.bytes > 0 {
					assert.LessOrEqual(t, info.Bytes, tc.bytes, "%s holds %d bytes, the limit is %d", l, info.Bytes, tc.bytes)
				}
			}
			t.Logf("%d documents in %v", writers*perWriter, counts)
			assert.Greater(t, len(counts), 1, "the writers filled more than one collection")
		})
	}
}

// TestCollectionWithoutQuota: a collection created before quotas (by an
// older docshard) keeps working: it takes writes past its limit, as it
// did, until the coordinator's check opens the next, which has the quota.
func TestCollectionWithoutQuota(t *testing.T) {
	ctx := emulatortest.Context(t)
	st := memstore.New(nil)
	defer st.Close()
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/log0", &store.CollectionSpec{PartitionKeyPath: "/id"}))
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 10, 1, ""), CheckInterval: time.Hour})
	require.NoError(t, err)
	defer coord.Close()
	c := router.New(st, &router.Options{Hooks: router.Hooks{Call: coord.Observe}})
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	require.NoError(t, err)
	defer f.Close()
	for i := range 15 {
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i)}, nil)
		require.NoError(t, err, "no quota on log0: it takes the 11th document and more")
	}
	opened, err := coord.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, db+"/colls/log1", opened)
	info, err := st.CollectionInfo(ctx, db+"/colls/log1")
	require.NoError(t, err)
	require.NotNil(t, info.Spec.Quota, "the collections the coordinator opens have the quota")
	assert.Equal(t, store.Quota{MaxDocuments: 10}, *info.Spec.Quota)
	require.NoError(t, f.Refresh(ctx))
	rows, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, "15", string(rows[0]))
}
