package router_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
)

// TestOracleMemstore: the same documents in one collection and in 2, 7
// and 32 collections answer the corpus alike (see routertest).
func TestOracleMemstore(t *testing.T) {
	cfg := routertest.Config{Store: func(t testing.TB) store.Store { return newMem(t) }}
	if testing.Short() {
		cfg.Queries = 60
	}
	routertest.Run(t, cfg)
}

// FuzzOracle: queries the fuzzer writes answer alike over one collection
// and over 3 and 8 (see routertest.Fuzz). Run it with
//
//	go test -run '^$' -fuzz FuzzOracle -fuzztime 5m ./router
func FuzzOracle(f *testing.F) {
	routertest.Fuzz(f, routertest.Config{
		Store:   func(t testing.TB) store.Store { return newMem(t) },
		Docs:    150,
		Queries: 200,
		Splits:  []int{3, 8},
	})
}

// TestOracleDocumentOps: the same patches, transactional batches and
// read-many calls, against one collection and against 3 and 7, answer
// alike (documents without their system properties, errors by kind and,
// for a batch, the failing operation). The three run at once, and each
// read-many reads its collections in parallel: run it with -race.
func TestOracleDocumentOps(t *testing.T) {
	steps := 400
	if testing.Short() {
		steps = 150
	}
	splits := []int{1, 3, 7}
	answers := make([][]string, len(splits))
	var wg sync.WaitGroup
	for i, n := range splits {
		c := setup(t, n, nil, nil)
		wg.Go(func() { answers[i] = docOpsScript(t, c, rand.New(rand.NewPCG(31, 7)), steps) })
	}
	wg.Wait()
	require.Len(t, answers[0], steps)
	for i, n := range splits[1:] {
		for s, want := range answers[0] {
			if !assert.Equal(t, want, answers[i+1][s], "step %d: 1 collection vs %d", s, n) {
				return
			}
		}
	}
	kinds := map[string]int{}
	for _, a := range answers[0] {
		f := strings.Fields(a)
		kinds[f[1]+" "+f[2]]++
	}
	t.Logf("%d steps compared over 1, 3 and 7 collections: %v", steps, kinds)
}

// docOpsScript runs steps random operations through c and returns each
// answer as text.
func docOpsScript(t *testing.T, c *router.Client, rng *rand.Rand, steps int) []string {
	keys := make([]string, 12)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	ids := make([]string, 30)
	for i := range ids {
		ids[i] = fmt.Sprint("d", i)
	}
	home := func(i int) string { return keys[i%len(keys)] } // the key of ids[i], mostly
	for i, id := range ids[:20] {
		_, err := c.Create(ctx, db, userDoc(id, home(i), i), nil)
		require.NoError(t, err)
	}
	var cur int // the id last drawn
	key := func() string {
		if rng.IntN(8) == 0 {
			return keys[rng.IntN(len(keys))]
		}
		return home(cur)
	}
	id := func() string {
		cur = rng.IntN(len(ids))
		return ids[cur]
	}
	// idOf draws an id whose key is mostly k.
	idOf := func(k string) string {
		for range 8 {
			if d := id(); home(cur) == k {
				return d
			}
		}
		return id()
	}
	var out []string
	for s := range steps {
		var a string
		switch rng.IntN(3) {
		case 0:
			d := id()
			a = patchStep(t, c, rng, d, key())
		case 1:
			k := keys[rng.IntN(len(keys))]
			a = batchStep(t, c, rng, func() string { return idOf(k) }, k)
		default:
			items := make([]router.ReadItem, 1+rng.IntN(20))
			for i := range items {
				d := id()
				items[i] = router.ReadItem{ID: d, Key: key()}
			}
			res, err := c.ReadMany(ctx, db, items)
			var b strings.Builder
			for _, r := range res {
				if r.Found {
					b.WriteString(canonDoc(t, r.Document) + ";")
				} else {
					b.WriteString("missing;")
				}
			}
			a = "readmany " + errKind(err) + " " + b.String()
		}
		out = append(out, fmt.Sprintf("%d %s", s, a))
	}
	return out
}

func patchStep(t *testing.T, c *router.Client, rng *rand.Rand, id, key string) string {
	var ops []store.PatchOp
	for range 1 + rng.IntN(3) {
		switch rng.IntN(8) {
		case 0, 1:
			ops = append(ops, setOp(t, "/name", fmt.Sprint("n", rng.IntN(5))))
		case 2, 3:
			ops = append(ops, incrOp("/age", rng.IntN(7)-3))
		case 4:
			ops = append(ops, store.PatchOp{Op: store.PatchAdd, Path: "/tags", Value: json.RawMessage(`[]`)}, store.PatchOp{Op: store.PatchAdd, Path: "/tags/-", Value: json.RawMessage(`"t"`)})
		case 5:
			ops = append(ops, store.PatchOp{Op: store.PatchRemove, Path: "/name"}) // fails when there is none
		case 6:
			ops = append(ops, store.PatchOp{Op: store.PatchMove, From: "/name", Path: "/nick"})
		default:
			ops = append(ops, setOp(t, "/userId", "other")) // refused: the key
		}
	}
	var o router.PatchOptions
	switch rng.IntN(5) {
	case 0:
		o.Condition = fmt.Sprintf("FROM c WHERE c.age > %d", rng.IntN(20))
	case 1:
		o.IfMatch = `"stale"`
	case 2:
		if d, err := c.Read(ctx, db, id, key); err == nil {
			o.IfMatch = d.ETag
		}
	}
	d, err := c.Patch(ctx, db, id, key, ops, &o)
	if err != nil {
		return "patch " + errKind(err)
	}
	return "patch ok " + canonDoc(t, d)
}

func batchStep(t *testing.T, c *router.Client, rng *rand.Rand, id func() string, key string) string {
	ops := make([]store.BatchOp, 1+rng.IntN(4))
	for i := range ops {
		switch rng.IntN(7) {
		case 6:
			ops[i] = store.BatchOp{Kind: store.BatchPatch, ID: id(), Patch: []store.PatchOp{incrOp("/age", 1+rng.IntN(3))}}
			if rng.IntN(3) == 0 {
				ops[i].Condition = fmt.Sprintf("FROM c WHERE c.age < %d", rng.IntN(40))
			}
		case 0:
			ops[i] = store.BatchOp{Kind: store.BatchCreate, Doc: userDoc(id(), key, rng.IntN(50))}
		case 1:
			ops[i] = store.BatchOp{Kind: store.BatchUpsert, Doc: userDoc(id(), key, rng.IntN(50))}
		case 2:
			d := id()
			ops[i] = store.BatchOp{Kind: store.BatchReplace, ID: d, Doc: userDoc(d, key, rng.IntN(50))}
		case 3:
			ops[i] = store.BatchOp{Kind: store.BatchDelete, ID: id()}
		case 4:
			ops[i] = store.BatchOp{Kind: store.BatchRead, ID: id()}
		default:
			if rng.IntN(3) == 0 {
				ops[i] = store.BatchOp{Kind: store.BatchCreate, Doc: userDoc(id(), key+"x", 1)} // another key: refused
			} else {
				ops[i] = store.BatchOp{Kind: store.BatchRead, ID: id()}
			}
		}
	}
	res, err := c.ExecuteBatch(ctx, db, key, ops)
	if err != nil {
		var be *store.BatchError
		if errors.As(err, &be) {
			return fmt.Sprintf("batch %s at %d", errKind(err), be.Index)
		}
		return "batch " + errKind(err)
	}
	var b strings.Builder
	for _, r := range res {
		if r.Document == nil {
			b.WriteString("none;")
			continue
		}
		fmt.Fprintf(&b, "%v %s;", r.Created, canonDoc(t, r.Document))
	}
	return "batch ok " + b.String()
}

// errKind names the store sentinel err wraps; "ok" for nil.
func errKind(err error) string {
	if err == nil {
		return "ok"
	}
	for _, k := range []error{store.ErrNotFound, store.ErrConflict, store.ErrPreconditionFailed, store.ErrBadRequest} {
		if errors.Is(err, k) {
			return strings.ReplaceAll(k.Error(), " ", "-")
		}
	}
	return "other:" + err.Error()
}

// canonDoc is a document's JSON without its system properties, keys
// sorted.
func canonDoc(t *testing.T, d *store.Document) string {
	var m map[string]any
	require.NoError(t, json.Unmarshal(d.Body, &m))
	for _, k := range []string{"_etag", "_ts", "_rid", "_self", "_attachments"} {
		delete(m, k)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}
