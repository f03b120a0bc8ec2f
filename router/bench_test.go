package router_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// The figures of the README come from these benchmarks:
//
//	go test -run '^$' -bench . -benchmem ./router

func benchDoc(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"%d","userId":"user-%d","name":"User %d","age":%d,"notes":%q}`, i, i, i, i%90, strings.Repeat("lorem ipsum ", 70)))
}

// BenchmarkPointOps compares point reads and creates through the router with
// the same calls on the store directly.
func BenchmarkPointOps(b *testing.B) {
	st := memstore.New(nil)
	c := setup(b, 8, st)
	r := ring(b, 8)
	for i := 0; i < 10000; i++ {
		if _, err := c.Create(ctx, db, benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	target, _ := r.ResolveForCreate("user-4242")
	b.Run("read/store", func(b *testing.B) {
		b.ReportAllocs()
		opts := &store.ReadOptions{PartitionKey: "user-4242"}
		for i := 0; i < b.N; i++ {
			if _, err := st.Read(ctx, target, "4242", opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/router", func(b *testing.B) {
		b.ReportAllocs()
		var key any = "user-4242"
		for i := 0; i < b.N; i++ {
			if _, err := c.Read(ctx, db, "4242", key); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Creates: each side gets a fresh store, so neither pays for the
	// other's documents.
	b.Run("create/store", func(b *testing.B) {
		st := memstore.New(nil)
		setup(b, 8, st)
		docs := make([][]byte, b.N)
		links := make([]string, b.N)
		for i := range docs {
			docs[i] = benchDoc(i)
			links[i], _ = r.ResolveForCreate(fmt.Sprint("user-", i))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := st.Create(ctx, links[i], docs[i], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create/router", func(b *testing.B) {
		c := setup(b, 8, memstore.New(nil))
		docs := make([][]byte, b.N)
		for i := range docs {
			docs[i] = benchDoc(i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := c.Create(ctx, db, docs[i], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// slow delays every query page by a fixed time, as a remote store would.
type slow struct {
	store.Store
	delay time.Duration
}

func (s *slow) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	time.Sleep(s.delay)
	return s.Store.Query(ctx, l, q, o)
}

// BenchmarkFanOut32 runs a query over 32 collections whose store answers
// each page after 5 ms, with parallelism 32 and serially, and over one
// collection for reference.
func BenchmarkFanOut32(b *testing.B) {
	mem := memstore.New(nil)
	st := &slow{Store: mem, delay: 5 * time.Millisecond}
	c := setup(b, 32, st)
	one := router.New(st, nil)
	if err := one.Register("dbs/one", ring1(b)); err != nil {
		b.Fatal(err)
	}
	if _, err := one.EnsureCollections(ctx, "dbs/one", nil); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 640; i++ {
		if _, err := c.Create(ctx, db, benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
		if _, err := one.Create(ctx, "dbs/one", benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	q := store.Query{Text: "SELECT c.id, c.age FROM c WHERE c.age > 30"}
	for _, tc := range []struct {
		name string
		c    *router.Client
		db   string
		par  int
	}{
		{"one-collection", one, "dbs/one", -1},
		{"32-collections/parallel-32", c, db, 32},
		{"32-collections/serial", c, db, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				items, err := tc.c.Query(ctx, tc.db, q, &router.QueryOptions{MaxDegreeOfParallelism: tc.par, PageSize: 1000, MaxBufferedItemCount: 32000})
				if err != nil || len(items) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

func ring1(b *testing.B) *hashringResolver {
	r, err := newRing([]string{"dbs/one/colls/all"})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkOrderBy100K merges an ORDER BY over 100,000 documents in 16
// collections with MaxBufferedItemCount 1,600, reporting throughput, the
// most rows the router held at once (max-rows-buffered), and the peak heap
// growth of the whole process while the query runs (peak-heap-MB), which
// includes the embedded store's own sorted result per collection.
func BenchmarkOrderBy100K(b *testing.B) {
	st := memstore.New(nil)
	c := setup(b, 16, st)
	for i := 0; i < 100_000; i++ {
		if _, err := c.Create(ctx, db, benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	q := store.Query{Text: "SELECT c.id, c.age FROM c ORDER BY c.age, c.id"}
	// Warm the store (documents decoded once).
	if _, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var peak uint64
	maxRows := 0
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		p := c.NewQueryPager(db, q, &router.QueryOptions{MaxDegreeOfParallelism: -1, MaxBufferedItemCount: 1600, PageSize: 1000})
		n := 0
		pages := 0
		for p.More() {
			page, err := p.NextPage(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Items)
			pages++
			maxRows = max(maxRows, p.BufferedRows())
			if pages%10 == 0 {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > base.HeapAlloc && ms.HeapAlloc-base.HeapAlloc > peak {
					peak = ms.HeapAlloc - base.HeapAlloc
				}
			}
		}
		if n != 100_000 {
			b.Fatalf("%d results", n)
		}
	}
	b.ReportMetric(float64(100_000*b.N)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(maxRows), "max-rows-buffered")
}
