package cosmos_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// BenchmarkRouterPointOps compares point operations through the router
// with the same calls on the Cosmos DB backend directly (the caller
// knowing the collection), against a local cosmium over HTTPS on loopback:
// what the router adds in front of a store that does network I/O. "hot"
// repeats one key; "cold" cycles through more keys than the route cache
// holds, so every call hashes its key.
//
//	go test -run '^$' -bench RouterPointOps -benchmem -count 6 ./cosmos
func BenchmarkRouterPointOps(b *testing.B) {
	st := newCosmium(b)
	ls := []string{"dbs/bench/colls/u0", "dbs/bench/colls/u1", "dbs/bench/colls/u2", "dbs/bench/colls/u3"}
	r, err := hashring.New(ls, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(b, err)
	c := router.New(st, &router.Options{RouteCacheSize: 256})
	require.NoError(b, c.Register("dbs/bench", r))
	ctx := b.Context()
	_, err = c.EnsureCollections(ctx, "dbs/bench", nil)
	require.NoError(b, err)
	const n = 1000
	doc := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":"%d","userId":"user-%d","name":"User %d","age":%d,"notes":%q}`, i, i, i, i%90, strings.Repeat("lorem ipsum ", 70))
	}
	keys := make([]any, n)
	ids := make([]string, n)
	targets := make([]string, n)
	for i := 0; i < n; i++ {
		_, err := c.Upsert(ctx, "dbs/bench", doc(i), nil)
		require.NoError(b, err)
		keys[i], ids[i] = fmt.Sprint("user-", i), strconv.Itoa(i)
		targets[i], _ = r.ResolveForCreate(keys[i])
	}
	cold := func(i int) int { return (i * 7919) % n }
	for _, tc := range []struct {
		name string
		pick func(int) int
	}{{"hot", func(int) int { return 42 }}, {"cold", cold}} {
		b.Run("read/"+tc.name+"/store", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				j := tc.pick(i)
				if _, err := st.Read(ctx, targets[j], ids[j], &store.ReadOptions{PartitionKey: keys[j]}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("read/"+tc.name+"/router", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				j := tc.pick(i)
				if _, err := c.Read(ctx, "dbs/bench", ids[j], keys[j]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	body := doc(42)
	b.Run("replace/store", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := st.Replace(ctx, targets[42], ids[42], body, &store.WriteOptions{PartitionKey: keys[42]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replace/router", func(b *testing.B) {
		b.ReportAllocs()
		var d any = body
		for i := 0; i < b.N; i++ {
			if _, err := c.Replace(ctx, "dbs/bench", ids[42], d, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
