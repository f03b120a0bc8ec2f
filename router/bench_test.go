package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// The figures reported for the router come from these benchmarks:
//
//	go test -run '^$' -bench 'PointOps' -benchmem -count 8 ./router
//	go test -run '^$' -bench 'FanOut32' -benchmem ./router
//	go test -run '^$' -bench 'OrderBy100K' -benchmem -benchtime 3x ./router
//	go test -run '^$' -bench 'FanOut128' -benchmem -count 6 ./router

func benchDoc(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"%d","userId":"user-%d","name":"User %d","age":%d,"notes":%q}`, i, i, i, i%90, strings.Repeat("lorem ipsum ", 70)))
}

// BenchmarkPointOps compares point operations through the router with the
// same calls on the store directly (the caller knowing the collection).
// The reads are routertest.BenchPointReads (as on the Cosmos DB backend):
// "hot" repeats one key, as a partition key shared by many documents is;
// "cold" cycles through 20,000 keys, more than the route cache's 4,096
// entries hold, and is also compared with a caller that places each key
// itself (store+placement: the ring's hash, then the store's read); the
// router-vs-* sub-benchmarks time the two sides in alternating blocks and
// report the median ratio. "router-alone" runs the router over a store
// that answers at once: the router's own cost.
func BenchmarkPointOps(b *testing.B) {
	st := memstore.New(nil)
	defer st.Close()
	c := setup(b, 8, st, nil)
	r := ring(b, 8)
	const n = 20000
	keys := make([]any, n) // boxed once: callers hold their keys as they like
	ids := make([]string, n)
	targets := make([]string, n)
	for i := 0; i < n; i++ {
		if _, err := c.Create(ctx, db, benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
		keys[i], ids[i] = fmt.Sprint("user-", i), strconv.Itoa(i)
		targets[i], _ = r.ResolveForCreate(keys[i])
	}
	routertest.BenchPointReads(b, routertest.PointReads{Store: st, Client: c, DB: db, Resolver: r, Keys: keys, IDs: ids, Hot: 4242})
	nc := router.New(st, &router.Options{RouteCacheSize: -1})
	if err := nc.Register(db, r); err != nil {
		b.Fatal(err)
	}
	b.Run("read/hot/router-no-cache", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := nc.Read(ctx, db, ids[4242], keys[4242]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/cold/router-no-cache", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			j := (i * 7919) % n
			if _, err := nc.Read(ctx, db, ids[j], keys[j]); err != nil {
				b.Fatal(err)
			}
		}
	})
	replace := benchDoc(4242)
	b.Run("replace/store", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := st.Replace(ctx, targets[4242], ids[4242], replace, &store.WriteOptions{PartitionKey: keys[4242]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replace/router", func(b *testing.B) {
		b.ReportAllocs()
		var doc any = replace
		for i := 0; i < b.N; i++ {
			if _, err := c.Replace(ctx, db, ids[4242], doc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The router's own cost: the same calls over a store that answers at
	// once with a fixed document, so what is left is routing.
	nop := &nopStore{Store: st, doc: &store.Document{ID: ids[4242], Body: replace}}
	onNop := router.New(nop, nil)
	if err := onNop.Register(db, r); err != nil {
		b.Fatal(err)
	}
	b.Run("read/hot/router-alone", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := onNop.Read(ctx, db, ids[4242], keys[4242]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replace/router-alone", func(b *testing.B) {
		b.ReportAllocs()
		var doc any = replace
		for i := 0; i < b.N; i++ {
			if _, err := onNop.Replace(ctx, db, ids[4242], doc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Creates: each side gets a fresh store, so neither pays for the
	// other's documents. Ten documents share each key.
	createDocs := func(b *testing.B) ([]any, []string) {
		docs := make([]any, b.N)
		tl := make([]string, b.N)
		for i := range docs {
			docs[i] = []byte(fmt.Sprintf(`{"id":"%d","userId":"user-%d","name":"User %d","age":%d,"notes":%q}`, i, i/10, i, i%90, strings.Repeat("lorem ipsum ", 70)))
			tl[i], _ = r.ResolveForCreate(fmt.Sprint("user-", i/10))
		}
		return docs, tl
	}
	b.Run("create/store", func(b *testing.B) {
		st := memstore.New(nil)
		defer st.Close()
		setup(b, 8, st, nil)
		docs, tl := createDocs(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := st.Create(ctx, tl[i], docs[i].([]byte), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create/router", func(b *testing.B) {
		st := memstore.New(nil)
		defer st.Close()
		c := setup(b, 8, st, nil)
		docs, _ := createDocs(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := c.Create(ctx, db, docs[i], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// nopStore answers point reads and replaces at once with one document.
type nopStore struct {
	store.Store
	doc *store.Document
}

func (s *nopStore) Read(context.Context, string, string, *store.ReadOptions) (*store.Document, error) {
	return s.doc, nil
}

func (s *nopStore) Replace(context.Context, string, string, []byte, *store.WriteOptions) (*store.Document, error) {
	return s.doc, nil
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
// each page after 5 ms, with parallelism 32 and serially, against the same
// query over one collection holding every document (through the router,
// and on the store directly).
func BenchmarkFanOut32(b *testing.B) {
	mem := memstore.New(nil)
	defer mem.Close()
	st := &slow{Store: mem, delay: 5 * time.Millisecond}
	c := setup(b, 32, st, nil)
	one := router.New(st, nil)
	if err := one.Register("dbs/one", ringOf(b, []string{"dbs/one/colls/all"})); err != nil {
		b.Fatal(err)
	}
	if _, err := one.EnsureCollections(ctx, "dbs/one", nil); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 3200; i++ {
		if _, err := c.Create(ctx, db, benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
		if _, err := one.Create(ctx, "dbs/one", benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	for _, text := range []string{"SELECT c.id, c.age FROM c WHERE c.age > 30", "SELECT TOP 100 c.id, c.age FROM c ORDER BY c.age DESC, c.id"} {
		q := store.Query{Text: text}
		name := strings.Fields(text)[1]
		if name != "TOP" {
			name = "filter"
		} else {
			name = "order-by-top"
		}
		b.Run(name+"/one-collection-store", func(b *testing.B) {
			plan, err := query.PlanFanOut(must(query.Parse(text)), nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				page, err := st.Query(ctx, "dbs/one/colls/all", store.Query{Text: plan.Query}, &store.QueryOptions{PageSize: -1})
				if err != nil || len(page.Items) == 0 {
					b.Fatal(err)
				}
			}
		})
		for _, tc := range []struct {
			name string
			c    *router.Client
			db   string
			par  int
		}{
			{"one-collection", one, "dbs/one", -1},
			{"32-collections/parallel-32", c, db, 32},
			{"32-collections/serial", c, db, 1},
		} {
			b.Run(name+"/"+tc.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					items, err := tc.c.Query(ctx, tc.db, q, &router.QueryOptions{MaxDegreeOfParallelism: tc.par, PageSize: -1, MaxBufferedItemCount: 1 << 20})
					if err != nil || len(items) == 0 {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFanOut128 runs ORDER BY + TOP 100 over 100,000 documents held
// in 128 collections (and in 32) on the embedded store, against the same
// query over one collection holding every document (through the router,
// and on the store directly). Besides wall time it reports the process's
// CPU per query (cpu-ms/op: every goroutine, the store's included), the
// steadier figure on a busy host. Each collection must scan its own
// documents whatever the router does; what fan-out adds is what each
// collection returns and the router decodes and merges.
func BenchmarkFanOut128(b *testing.B) {
	const docs = 100_000
	mem := memstore.New(nil)
	defer mem.Close()
	wide := map[int]*router.Client{}
	for _, n := range []int{32, 128} {
		wide[n] = router.New(mem, nil)
		ls := make([]string, n)
		for i := range ls {
			ls[i] = fmt.Sprintf("dbs/w%d/colls/c%d", n, i)
		}
		if err := wide[n].Register(fmt.Sprint("dbs/w", n), ringOf(b, ls)); err != nil {
			b.Fatal(err)
		}
		if _, err := wide[n].EnsureCollections(ctx, fmt.Sprint("dbs/w", n), nil); err != nil {
			b.Fatal(err)
		}
	}
	one := router.New(mem, nil)
	if err := one.Register("dbs/one", ringOf(b, []string{"dbs/one/colls/all"})); err != nil {
		b.Fatal(err)
	}
	if _, err := one.EnsureCollections(ctx, "dbs/one", nil); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < docs; i++ {
		d := orderByDoc(i)
		for _, c := range []*router.Client{one, wide[32], wide[128]} {
			if _, err := c.Create(ctx, c.Databases()[0], d, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	text := "SELECT TOP 100 c.id, c.score FROM c ORDER BY c.score DESC, c.id"
	q := store.Query{Text: text}
	cpu := func(b *testing.B, run func()) {
		run() // the store decodes documents on their first query
		start, ok := proctest.CPU()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run()
		}
		b.StopTimer()
		if end, ok2 := proctest.CPU(); ok && ok2 {
			b.ReportMetric(float64((end-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		}
	}
	b.Run("one-collection-store", func(b *testing.B) {
		plan, err := query.PlanFanOut(must(query.Parse(text)), nil)
		if err != nil {
			b.Fatal(err)
		}
		cpu(b, func() {
			page, err := mem.Query(ctx, "dbs/one/colls/all", store.Query{Text: plan.Query}, &store.QueryOptions{PageSize: -1})
			if err != nil || len(page.Items) != 100 {
				b.Fatal(err)
			}
		})
	})
	for _, tc := range []struct {
		name string
		c    *router.Client
	}{{"one-collection", one}, {"32-collections", wide[32]}, {"128-collections", wide[128]}} {
		b.Run(tc.name, func(b *testing.B) {
			dbl := tc.c.Databases()[0]
			cpu(b, func() {
				items, err := tc.c.Query(ctx, dbl, q, &router.QueryOptions{PageSize: -1})
				if err != nil || len(items) != 100 {
					b.Fatal(len(items), err)
				}
			})
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// sortedStore answers one query from results computed beforehand, copying
// each page as a remote store's decoding would: the benchmark then
// measures the router's memory, not the embedded store's cached results.
type sortedStore struct {
	store.Store
	text string
	rows map[string][]json.RawMessage
}

func (s *sortedStore) Query(_ context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	if q.Text != s.text {
		return nil, fmt.Errorf("unexpected query %s", q.Text)
	}
	rows := s.rows[l]
	start := 0
	if o.Continuation != "" {
		start, _ = strconv.Atoi(o.Continuation)
	}
	end := min(start+o.PageSize, len(rows))
	page := &store.Page{Items: make([]json.RawMessage, 0, end-start)}
	for _, r := range rows[start:end] {
		page.Items = append(page.Items, append(json.RawMessage(nil), r...))
	}
	if end < len(rows) {
		page.Continuation = strconv.Itoa(end)
	}
	return page, nil
}

func orderByDoc(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"%06d","userId":"user-%d","score":%d,"name":"User %d"}`, i, i, (i*7919)%100003, i))
}

// BenchmarkOrderBy100K merges ORDER BY over 100,000 documents in 16
// collections. On memstore it reports end-to-end throughput. On a store
// serving precomputed pages (sortedStore) it reports the router's own
// throughput and memory for two buffer settings: the most rows the pager
// held (max-rows), and the peak of the live heap above the level before the
// query, sampled after a collection every 5 pages of 1,000 results
// (peak-live-KB), which the buffer bounds whatever the result size.
func BenchmarkOrderBy100K(b *testing.B) {
	const docs = 100_000
	mem := memstore.New(nil)
	c := setup(b, 16, mem, nil)
	for i := 0; i < docs; i++ {
		if _, err := c.Create(ctx, db, orderByDoc(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	text := "SELECT c.id, c.score FROM c ORDER BY c.score DESC, c.id"
	q := store.Query{Text: text}
	drain := func(b *testing.B, c *router.Client, buf int, sample bool) (rows int, live uint64) {
		var base runtime.MemStats
		if sample {
			runtime.GC()
			runtime.ReadMemStats(&base)
		}
		p := c.NewQueryPager(db, q, &router.QueryOptions{MaxDegreeOfParallelism: -1, MaxBufferedItemCount: buf, PageSize: 1000})
		n := 0
		for pages := 1; p.More(); pages++ {
			page, err := p.NextPage(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Items)
			if sample && pages%5 == 0 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > base.HeapAlloc {
					live = max(live, ms.HeapAlloc-base.HeapAlloc)
				}
			}
		}
		if n != docs {
			b.Fatalf("%d results", n)
		}
		return p.PeakBufferedRows(), live
	}
	b.Run("memstore/buffer-1600", func(b *testing.B) {
		drain(b, c, 1600, false) // the store decodes documents once
		// The live heap above the level before the query: the router's
		// buffer and the store's 16 cursors (sorted positions).
		rows, live := drain(b, c, 1600, true)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			drain(b, c, 1600, false)
		}
		b.ReportMetric(float64(docs*b.N)/b.Elapsed().Seconds(), "docs/s")
		b.ReportMetric(float64(rows), "max-rows")
		b.ReportMetric(float64(live)/1024, "peak-live-KB")
	})

	plan, err := query.PlanFanOut(must(query.Parse(text)), nil)
	if err != nil {
		b.Fatal(err)
	}
	ss := &sortedStore{Store: mem, text: plan.Query, rows: map[string][]json.RawMessage{}}
	for _, l := range links(16) {
		page, err := mem.Query(ctx, l, store.Query{Text: plan.Query}, &store.QueryOptions{PageSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range page.Items {
			ss.rows[l] = append(ss.rows[l], append(json.RawMessage(nil), it...))
		}
	}
	// Only the precomputed rows stay: the documents are dropped.
	ss.Store = nil
	_ = mem.Close()
	c = nil
	mem = nil
	runtime.GC()
	sc := router.New(ss, nil)
	if err := sc.Register(db, ring(b, 16)); err != nil {
		b.Fatal(err)
	}
	for _, buf := range []int{1600, 16000} {
		b.Run(fmt.Sprintf("router-only/buffer-%d", buf), func(b *testing.B) {
			rows, live := drain(b, sc, buf, true)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				drain(b, sc, buf, false)
			}
			b.ReportMetric(float64(docs*b.N)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64(rows), "max-rows")
			b.ReportMetric(float64(live)/1024, "peak-live-KB")
		})
	}
}

// BenchmarkDocumentOps measures the routed patch, transactional batch and
// read-many against the store's own calls (docs/performance.md):
//
//	go test -run '^$' -bench 'DocumentOps' -benchmem -count 6 ./router
//
// patch and batch: 20,000 documents of 1 KB in 8 collections, keys in
// turn (more than the route cache holds: the router places each key
// twice, where it is read and where it is written, the caller once;
// "warm": 2,000 keys, which the cache holds); the router's call against the
// store's own on the collection a caller placed itself (the ring's hash,
// then the store call), timed in alternating blocks (routertest.Paired,
// metric "ratio"). readmany: 100 items, the router over 8 collections
// against the router over one collection holding the same documents, and
// the store's own ReadMany of the one collection.
func BenchmarkDocumentOps(b *testing.B) {
	st := memstore.New(nil)
	defer st.Close()
	c := setup(b, 8, st, nil)
	r := ring(b, 8)
	one := memstore.New(nil)
	defer one.Close()
	c1 := setup(b, 1, one, nil)
	const n = 20000
	keys := make([]any, n)
	ids := make([]string, n)
	docs := make([][]byte, n)
	for i := range n {
		docs[i] = benchDoc(i)
		for _, cl := range []*router.Client{c, c1} {
			if _, err := cl.Create(ctx, db, docs[i], nil); err != nil {
				b.Fatal(err)
			}
		}
		keys[i], ids[i] = fmt.Sprint("user-", i), strconv.Itoa(i)
	}
	at := func(i int) int { return (i * 7919) % n }
	ops := []store.PatchOp{setOp(b, "/name", "patched"), incrOp("/age", 1)}
	placedPatch := func(i int) error {
		j := at(i)
		l, err := r.ResolveForCreate(keys[j])
		if err != nil {
			return err
		}
		_, err = st.Patch(ctx, l, ids[j], ops, &store.PatchOptions{PartitionKey: keys[j]})
		return err
	}
	routedPatch := func(i int) error {
		j := at(i)
		_, err := c.Patch(ctx, db, ids[j], keys[j], ops, nil)
		return err
	}
	b.Run("patch/store+placement", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if err := placedPatch(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("patch/router", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if err := routedPatch(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("patch/router-vs-store+placement", func(b *testing.B) { routertest.Paired(b, 64, n/2, placedPatch, routedPatch) })

	batch := func(j int) []store.BatchOp {
		return []store.BatchOp{{Kind: store.BatchRead, ID: ids[j]}, {Kind: store.BatchReplace, ID: ids[j], Doc: docs[j]}, {Kind: store.BatchUpsert, Doc: docs[j]}}
	}
	placedBatch := func(i int) error {
		j := at(i)
		l, err := r.ResolveForCreate(keys[j])
		if err != nil {
			return err
		}
		_, err = st.ExecuteBatch(ctx, l, keys[j], batch(j), nil)
		return err
	}
	routedBatch := func(i int) error {
		j := at(i)
		_, err := c.ExecuteBatch(ctx, db, keys[j], batch(j))
		return err
	}
	b.Run("batch/store+placement", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if err := placedBatch(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batch/router", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if err := routedBatch(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batch/router-vs-store+placement", func(b *testing.B) { routertest.Paired(b, 64, n/2, placedBatch, routedBatch) })
	// warm: 2,000 keys in turn, which the route cache holds.
	warm := func(f func(int) error) func(int) error { return func(i int) error { return f(i % 2000) } }
	b.Run("batch/warm/router-vs-store+placement", func(b *testing.B) {
		routertest.Paired(b, 64, 1000, warm(placedBatch), warm(routedBatch))
	})
	b.Run("patch/warm/router-vs-store+placement", func(b *testing.B) {
		routertest.Paired(b, 64, 1000, warm(placedPatch), warm(routedPatch))
	})

	const many = 100
	sets := make([][]router.ReadItem, 64)
	refs := make([][]store.ItemRef, len(sets))
	for s := range sets {
		sets[s] = make([]router.ReadItem, many)
		refs[s] = make([]store.ItemRef, many)
		for k := range many {
			j := at(s*many + k)
			sets[s][k] = router.ReadItem{ID: ids[j], Key: keys[j]}
			refs[s][k] = store.ItemRef{ID: ids[j], PartitionKey: keys[j]}
		}
	}
	oneLink := links(1)[0]
	readOne := func(i int) error { _, err := c1.ReadMany(ctx, db, sets[i%len(sets)]); return err }
	readEight := func(i int) error { _, err := c.ReadMany(ctx, db, sets[i%len(sets)]); return err }
	b.Run("readmany100/store-1-collection", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := one.ReadMany(ctx, oneLink, refs[i%len(refs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readmany100/router-1-collection", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if err := readOne(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readmany100/router-8-collections", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if err := readEight(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readmany100/8-collections-vs-1", func(b *testing.B) { routertest.Paired(b, 16, 0, readOne, readEight) })
}

// BenchmarkChangeFeed compares reading a database's change feed from its
// beginning to its end through the router (Changes: one token over every
// collection, the shared state's ETag read once a call) with reading each
// collection's feed on the store directly, one after another (what a
// consumer without Changes does): 8 collections of a database that
// follows its shared state, 40,000 documents of about 1 KB, pages of
// 1,000 documents a collection. It reports documents a second of each and
// the median over iterations of the ratio of their speeds (db/sum, each
// iteration timing both, in turns: the target is at least 0.8), and the
// same ratio by the process's CPU time (db/sum-cpu: on a shared host, time
// slices lost to other processes inflate wall time but not CPU time).
//
//	go test -run '^$' -bench 'ChangeFeed' -benchtime 20x -count 6 ./router
func BenchmarkChangeFeed(b *testing.B) {
	const colls, docs = 8, 40000
	st := memstore.New(nil)
	b.Cleanup(func() { _ = st.Close() })
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(b, colls)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	if _, err := c.EnsureCollections(ctx, db, nil); err != nil {
		b.Fatal(err)
	}
	for i := range docs {
		if _, err := c.Create(ctx, db, benchDoc(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	sum := func() int {
		n := 0
		for _, l := range links(colls) {
			cont := ""
			for {
				p, err := st.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: cont, PageSize: 1000, HideReshard: true})
				if err != nil {
					b.Fatal(err)
				}
				n += len(p.Items)
				cont = p.Continuation
				if len(p.Items) == 0 {
					break
				}
			}
		}
		return n
	}
	whole := func() int {
		n, cont := 0, ""
		for {
			p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 1000})
			if err != nil {
				b.Fatal(err)
			}
			n += len(p.Items)
			cont = p.Continuation
			if p.CaughtUp {
				return n
			}
		}
	}
	if got := whole(); got != docs {
		b.Fatalf("the database's feed read %d documents, want %d", got, docs)
	}
	if got := sum(); got != docs {
		b.Fatalf("the collections' feeds read %d documents, want %d", got, docs)
	}
	var tSum, tDB, cSum, cDB time.Duration
	var ratios, cpuRatios []float64
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first, so neither always reads a warmer cache.
		var ds, dd, cs, cd time.Duration
		for j := range 2 {
			start := time.Now()
			cpu0, _ := proctest.CPU()
			if (i+j)%2 == 0 {
				sum()
				ds = time.Since(start)
				cpu1, _ := proctest.CPU()
				cs = cpu1 - cpu0
			} else {
				whole()
				dd = time.Since(start)
				cpu1, _ := proctest.CPU()
				cd = cpu1 - cpu0
			}
		}
		tSum, tDB, cSum, cDB = tSum+ds, tDB+dd, cSum+cs, cDB+cd
		ratios = append(ratios, ds.Seconds()/dd.Seconds())
		if cd > 0 {
			cpuRatios = append(cpuRatios, cs.Seconds()/cd.Seconds())
		}
	}
	n := float64(b.N * docs)
	b.ReportMetric(n/tSum.Seconds(), "sum-docs/s")
	b.ReportMetric(n/tDB.Seconds(), "db-docs/s")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "db/sum")
	if len(cpuRatios) > 0 {
		slices.Sort(cpuRatios)
		b.ReportMetric(cpuRatios[len(cpuRatios)/2], "db/sum-cpu")
	}
}
