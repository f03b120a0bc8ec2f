package router_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

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
