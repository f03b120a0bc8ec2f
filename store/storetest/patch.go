package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// Case keys of the partial update (store.Patcher). A backend that is not a
// Patcher skips them by itself, saying so.
const (
	SkipPatch           = "Patch"           // every operation, in order, on the current version; ETag and _ts renewed
	SkipPatchCondition  = "PatchCondition"  // If-Match and a filter predicate ("FROM c WHERE ...")
	SkipPatchRefused    = "PatchRefused"    // malformed or inapplicable patches refused, nothing written
	SkipPatchConcurrent = "PatchConcurrent" // concurrent increments of one document all count
	SkipBatchPatch      = "BatchPatch"      // a batch's patch operations (store.BatchPatch), in order, all or nothing
)

func patcher(t *testing.T, st store.Store) store.Patcher {
	t.Helper()
	return capability[store.Patcher](t, st, "store.Patcher")
}

// pop is a patch operation with its value as Go.
func pop(t *testing.T, kind store.PatchOpKind, path string, value any) store.PatchOp {
	t.Helper()
	op := store.PatchOp{Op: kind, Path: path}
	if kind != store.PatchRemove {
		v, err := store.PatchValue(value)
		require.NoError(t, err)
		op.Value = v
	}
	return op
}

func (s *suite) patch(t *testing.T, st store.Store) {
	p := patcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"p","n":1,"f":1.5,"big":9007199254740993,"tags":["x","y"],"inner":{"q":1},"old":true,"src":"moved"}`), nil)
	require.NoError(t, err)
	ops := []store.PatchOp{
		pop(t, store.PatchSet, "/color", "red"),
		pop(t, store.PatchAdd, "/tags/1", "inserted"),
		pop(t, store.PatchAdd, "/tags/-", "last"),
		pop(t, store.PatchReplace, "/inner/q", 2),
		pop(t, store.PatchRemove, "/old", nil),
		pop(t, store.PatchIncrement, "/n", 5),
		pop(t, store.PatchIncrement, "/big", 1),
		pop(t, store.PatchIncrement, "/fresh", 3),
		pop(t, store.PatchIncrement, "/f", 0.25),
		{Op: store.PatchMove, From: "/src", Path: "/dst"},
	}
	got, err := p.Patch(ctx, l, "a", ops, &store.PatchOptions{PartitionKey: "p"})
	require.NoError(t, err)
	assert.Equal(t, "a", got.ID)
	assert.NotEqual(t, d.ETag, got.ETag, "a patch is a write: a new ETag")
	m := body(t, got)
	assert.Equal(t, "red", m["color"])
	assert.Equal(t, []any{"x", "inserted", "y", "last"}, m["tags"], "add inserts at an index and appends at -")
	assert.Equal(t, map[string]any{"q": 2.0}, m["inner"])
	assert.NotContains(t, m, "old")
	assert.Equal(t, 6.0, m["n"])
	assert.Equal(t, 3.0, m["fresh"], "incr of a missing property sets it")
	assert.Equal(t, 1.75, m["f"])
	assert.Equal(t, "moved", m["dst"])
	assert.NotContains(t, m, "src", "move removes the source")
	assert.Contains(t, string(got.Body), `"big":9007199254740994`, "integers are incremented exactly")
	assert.Equal(t, got.ETag, m["_etag"], "the body carries the new ETag")

	back := mustRead(t, st, l, "a", "p")
	assert.Equal(t, got.ETag, back.ETag, "the patch is stored")
	assert.Equal(t, m["tags"], body(t, back)["tags"])

	// Operations apply in order, each to what the ones before left.
	got, err = p.Patch(ctx, l, "a", []store.PatchOp{
		pop(t, store.PatchSet, "/list", []any{}),
		pop(t, store.PatchAdd, "/list/0", "b"),
		pop(t, store.PatchAdd, "/list/0", "a"),
		pop(t, store.PatchSet, "/null", nil),
	}, &store.PatchOptions{PartitionKey: "p"})
	require.NoError(t, err)
	assert.Equal(t, []any{"a", "b"}, body(t, got)["list"])
	v, ok := body(t, got)["null"]
	assert.True(t, ok, "set to null keeps the property")
	assert.Nil(t, v)

	// A patch of a document under another key finds nothing.
	_, err = p.Patch(ctx, l, "a", ops[:1], &store.PatchOptions{PartitionKey: "q"})
	requireKind(t, err, store.ErrNotFound, "a patch under another key")
	_, err = p.Patch(ctx, l, "missing", ops[:1], &store.PatchOptions{PartitionKey: "p"})
	requireKind(t, err, store.ErrNotFound, "a patch of a missing document")
}

func (s *suite) patchCondition(t *testing.T, st store.Store) {
	p := patcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"p","n":1,"state":"open"}`), nil)
	require.NoError(t, err)
	set := []store.PatchOp{pop(t, store.PatchIncrement, "/n", 1)}

	got, err := p.Patch(ctx, l, "a", set, &store.PatchOptions{PartitionKey: "p", IfMatch: d.ETag})
	require.NoError(t, err, "If-Match the current ETag")
	assert.Equal(t, 2.0, body(t, got)["n"])
	_, err = p.Patch(ctx, l, "a", set, &store.PatchOptions{PartitionKey: "p", IfMatch: d.ETag})
	requireKind(t, err, store.ErrPreconditionFailed, "If-Match a stale ETag")

	got, err = p.Patch(ctx, l, "a", set, &store.PatchOptions{PartitionKey: "p", Condition: "FROM c WHERE c.state = 'open' AND c.n = 2"})
	require.NoError(t, err, "a true condition")
	assert.Equal(t, 3.0, body(t, got)["n"])
	_, err = p.Patch(ctx, l, "a", set, &store.PatchOptions{PartitionKey: "p", Condition: "FROM c WHERE c.state = 'closed'"})
	requireKind(t, err, store.ErrPreconditionFailed, "a false condition")
	_, err = p.Patch(ctx, l, "a", set, &store.PatchOptions{PartitionKey: "p", Condition: `FROM c WHERE c.state = "open"`})
	require.NoError(t, err, "a condition with a double-quoted string")
	assert.Equal(t, 4.0, body(t, mustRead(t, st, l, "a", "p"))["n"], "refused patches wrote nothing")
}

func (s *suite) patchRefused(t *testing.T, st store.Store) {
	p := patcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"p","n":1,"color":"red"}`), nil)
	require.NoError(t, err)
	before := mustRead(t, st, l, "a", "p")
	eleven := make([]store.PatchOp, store.MaxPatchOperations+1)
	for i := range eleven {
		eleven[i] = pop(t, store.PatchSet, fmt.Sprintf("/x%d", i), i)
	}
	cases := []struct {
		name string
		ops  []store.PatchOp
		want string // a word the error holds
	}{
		{"no operations", nil, "1 to 10"},
		{"eleven operations", eleven, "1 to 10"},
		{"an unknown operation", []store.PatchOp{{Op: "copy", Path: "/x", From: "/n"}}, "copy"},
		{"a path without a slash", []store.PatchOp{pop(t, store.PatchSet, "x", 1)}, "path"},
		{"the root", []store.PatchOp{pop(t, store.PatchSet, "/", 1)}, "path"},
		{"set without a value", []store.PatchOp{{Op: store.PatchSet, Path: "/x"}}, "value"},
		{"a system property", []store.PatchOp{pop(t, store.PatchSet, "/_ts", 1)}, "_ts"},
		{"the id", []store.PatchOp{pop(t, store.PatchSet, "/id", "b")}, "id"},
		{"the partition key", []store.PatchOp{pop(t, store.PatchSet, "/pk", "q")}, "partition key"},
		{"replace a missing property", []store.PatchOp{pop(t, store.PatchReplace, "/missing", 1)}, "missing"},
		{"remove a missing property", []store.PatchOp{pop(t, store.PatchRemove, "/missing", nil)}, "missing"},
		{"set under a missing parent", []store.PatchOp{pop(t, store.PatchSet, "/no/such", 1)}, "no"},
		{"incr of a string", []store.PatchOp{pop(t, store.PatchIncrement, "/color", 1)}, "color"},
		{"incr by a string", []store.PatchOp{pop(t, store.PatchIncrement, "/n", "1")}, "number"},
		{"a later operation fails", []store.PatchOp{pop(t, store.PatchSet, "/color", "blue"), pop(t, store.PatchRemove, "/missing", nil)}, "missing"},
		{"a malformed condition", []store.PatchOp{pop(t, store.PatchSet, "/color", "blue")}, "condition"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &store.PatchOptions{PartitionKey: "p"}
			if tc.name == "a malformed condition" {
				o.Condition = "FROM c WHERE ("
			}
			_, err := p.Patch(ctx, l, "a", tc.ops, o)
			requireKind(t, err, store.ErrBadRequest, "%s", tc.name)
			assert.Contains(t, strings.ToLower(err.Error()), strings.ToLower(tc.want), "the error says what is wrong")
			assert.Equal(t, before.ETag, mustRead(t, st, l, "a", "p").ETag, "a refused patch writes nothing")
		})
	}
}

// patchConcurrent: writers increment one document at once; each patch
// applies to the version it replaces, so none is lost.
func (s *suite) patchConcurrent(t *testing.T, st store.Store) {
	p := patcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"p","n":0}`), nil)
	require.NoError(t, err)
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := p.Patch(ctx, l, "a", []store.PatchOp{
					pop(t, store.PatchIncrement, "/n", 1),
					pop(t, store.PatchSet, fmt.Sprintf("/w%d", w), i),
				}, &store.PatchOptions{PartitionKey: "p"})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	m := body(t, mustRead(t, st, l, "a", "p"))
	assert.Equal(t, float64(writers*each), m["n"], "every increment counted")
	for w := range writers {
		assert.Equal(t, float64(each-1), m[fmt.Sprintf("w%d", w)])
	}
}

// batchPatch: a batch's patch applies to the document as the operations
// before it leave it; a patch that fails fails the batch, nothing written.
func (s *suite) batchPatch(t *testing.T, st store.Store) {
	b := batcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	old, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"p","n":1}`), nil)
	require.NoError(t, err)
	patchOf := func(id string, ops ...store.PatchOp) store.BatchOp {
		return store.BatchOp{Kind: store.BatchPatch, ID: id, Patch: ops}
	}
	res, err := b.ExecuteBatch(ctx, l, "p", []store.BatchOp{
		bCreate([]byte(`{"id":"b","pk":"p","n":10}`)),
		patchOf("b", pop(t, store.PatchIncrement, "/n", 5)), // sees the create
		ifMatch(patchOf("a", pop(t, store.PatchSet, "/s", "x")), old.ETag),
		patchOf("a", pop(t, store.PatchIncrement, "/n", 1)), // sees the patch before
		{Kind: store.BatchPatch, ID: "a", Patch: []store.PatchOp{pop(t, store.PatchIncrement, "/n", 1)}, Condition: "FROM c WHERE c.s = 'x'"},
	}, nil)
	require.NoError(t, err)
	require.Len(t, res, 5)
	assert.Equal(t, 15.0, body(t, res[1].Document)["n"])
	assert.Equal(t, 3.0, body(t, res[4].Document)["n"])
	assert.Equal(t, "x", body(t, res[4].Document)["s"])
	a := mustRead(t, st, l, "a", "p")
	assert.Equal(t, res[4].Document.ETag, a.ETag, "the last patch is stored")

	for name, op := range map[string]store.BatchOp{
		"a stale If-Match":      ifMatch(patchOf("a", pop(t, store.PatchIncrement, "/n", 1)), old.ETag),
		"a false condition":     {Kind: store.BatchPatch, ID: "a", Patch: []store.PatchOp{pop(t, store.PatchIncrement, "/n", 1)}, Condition: "FROM c WHERE c.n > 100"},
		"a missing document":    patchOf("zz", pop(t, store.PatchIncrement, "/n", 1)),
		"an inapplicable patch": patchOf("a", pop(t, store.PatchRemove, "/missing", nil)),
		"no operations":         patchOf("a"),
	} {
		_, err := b.ExecuteBatch(ctx, l, "p", []store.BatchOp{bCreate([]byte(`{"id":"c","pk":"p"}`)), op}, nil)
		require.Error(t, err, name)
		var be *store.BatchError
		require.ErrorAs(t, err, &be, name)
		assert.Equal(t, 1, be.Index, name)
		_, err = st.Read(ctx, l, "c", pk("p"))
		requireKind(t, err, store.ErrNotFound, "%s: nothing written", name)
		assert.Equal(t, a.ETag, mustRead(t, st, l, "a", "p").ETag, name)
	}
}
