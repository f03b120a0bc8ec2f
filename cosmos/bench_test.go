package cosmos_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
)

// BenchmarkRouterPointOps measures what the router adds to point
// operations on the Cosmos DB backend (azcosmos over HTTP on loopback),
// against two servers:
//
//   - serve: docshard serve's emulator in this process over plain HTTP
//     (its in-memory store: the test binary's shared server);
//   - cosmium: a local cosmium over HTTPS, in its own process.
//
// The reads are routertest.BenchPointReads, as on the embedded store: hot
// (one key repeated) against the store's own Read, cold (every key in turn,
// 20,000 keys through the route cache's default 4,096 entries) against a
// caller that places each key with the same ring and then reads, and the
// router-vs-* pairs reporting the median ratio of alternating blocks. On a
// backend doing network I/O the router's tens of nanoseconds vanish in the
// round trip, so the ratios are 1 within the noise. Allocations are the
// process's: with serve, the server's are counted too, on both sides.
// DOCSHARD_BENCH_KEYS sets the number of keys (default 20000).
//
//	go test -run '^$' -bench RouterPointOps -benchmem -count 6 ./cosmos
func BenchmarkRouterPointOps(b *testing.B) {
	n := 20000
	if v := os.Getenv("DOCSHARD_BENCH_KEYS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err, "DOCSHARD_BENCH_KEYS")
	}
	for _, be := range []struct {
		name string
		open func(testing.TB) store.Store
	}{{"serve", emulatorStore}, {"cosmium", newCosmium}} {
		b.Run(be.name, func(b *testing.B) { routerPointOps(b, be.open(b), n) })
	}
}

func routerPointOps(b *testing.B, st store.Store, n int) {
	const db = "dbs/bench"
	ls := []string{"dbs/bench/colls/u0", "dbs/bench/colls/u1", "dbs/bench/colls/u2", "dbs/bench/colls/u3"}
	r, err := hashring.New(ls, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(b, err)
	c := router.New(st, nil)
	require.NoError(b, c.Register(db, r))
	ctx := b.Context()
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(b, err)
	doc := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":"%d","userId":"user-%d","name":"User %d","age":%d,"notes":%q}`, i, i, i, i%90, strings.Repeat("lorem ipsum ", 70))
	}
	keys := make([]any, n)
	ids := make([]string, n)
	var g errgroup.Group
	g.SetLimit(16)
	for i := 0; i < n; i++ {
		keys[i], ids[i] = fmt.Sprint("user-", i), strconv.Itoa(i)
		g.Go(func() error {
			_, err := c.Upsert(ctx, db, doc(i), nil) // upsert: a shared server may hold them from an earlier run
			return err
		})
	}
	require.NoError(b, g.Wait())
	const hot = 42
	// A block of 16 reads lasts about a millisecond over loopback.
	routertest.BenchPointReads(b, routertest.PointReads{Store: st, Client: c, DB: db, Resolver: r, Keys: keys, IDs: ids, Hot: hot, Block: 16})
	target, err := r.ResolveForCreate(keys[hot])
	require.NoError(b, err)
	body := doc(hot)
	b.Run("replace/store", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := st.Replace(ctx, target, ids[hot], body, &store.WriteOptions{PartitionKey: keys[hot]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replace/router", func(b *testing.B) {
		b.ReportAllocs()
		var d any = body
		for i := 0; i < b.N; i++ {
			if _, err := c.Replace(ctx, db, ids[hot], d, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
