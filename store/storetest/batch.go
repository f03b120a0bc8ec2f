package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// Case keys of the transactional batch (store.Batcher). A backend that is
// not a Batcher skips them by itself, saying so.
const (
	SkipBatch           = "Batch"           // every kind of operation in one batch, each seeing the ones before
	SkipBatchAtomic     = "BatchAtomic"     // a failing operation leaves nothing written, named by its index
	SkipBatchValidation = "BatchValidation" // malformed batches refused, naming the operation and document
	SkipBatchIsolation  = "BatchIsolation"  // concurrent readers never see part of a batch
)

// capability returns the store as the optional capability C (named name
// in the skip message), skipping the case when the backend lacks it.
func capability[C any](t *testing.T, st store.Store, name string) C {
	t.Helper()
	c, ok := st.(C)
	if !ok {
		t.Skipf("the backend (%T) is not a %s", st, name)
	}
	return c
}

func batcher(t *testing.T, st store.Store) store.Batcher {
	t.Helper()
	return capability[store.Batcher](t, st, "store.Batcher")
}

func bCreate(doc []byte) store.BatchOp { return store.BatchOp{Kind: store.BatchCreate, Doc: doc} }
func bUpsert(doc []byte) store.BatchOp { return store.BatchOp{Kind: store.BatchUpsert, Doc: doc} }
func bRead(id string) store.BatchOp    { return store.BatchOp{Kind: store.BatchRead, ID: id} }
func bReplace(id string, doc []byte) store.BatchOp {
	return store.BatchOp{Kind: store.BatchReplace, ID: id, Doc: doc}
}
func bDelete(id string) store.BatchOp { return store.BatchOp{Kind: store.BatchDelete, ID: id} }

func ifMatch(op store.BatchOp, etag string) store.BatchOp {
	op.IfMatch = etag
	return op
}

// requireBatchError fails unless err is a *store.BatchError at index that
// wraps kind and names want (a document id).
func requireBatchError(t *testing.T, err error, index int, kind error, want, what string) {
	t.Helper()
	requireKind(t, err, kind, "%s", what)
	var be *store.BatchError
	require.True(t, errors.As(err, &be), "%s: want a *store.BatchError, got %T: %v", what, err, err)
	assert.Equal(t, index, be.Index, "%s: the failing operation's index (%v)", what, err)
	assert.Contains(t, err.Error(), want, "%s: the error names the document", what)
}

func (s *suite) batch(t *testing.T, st store.Store) {
	b := batcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	pre := map[string]*store.Document{}
	for _, id := range []string{"r", "u", "d"} {
		d, err := st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": "p", "v": 1.0}), nil)
		require.NoError(t, err)
		pre[id] = d
	}
	v := func(id string, n float64) []byte { return doc(t, map[string]any{"id": id, "pk": "p", "v": n}) }
	ops := []store.BatchOp{
		bCreate(v("a", 1)),       // 0
		bRead("a"),               // 1: sees the create
		bReplace("a", v("a", 2)), // 2
		ifMatch(bReplace("r", v("r", 2)), pre["r"].ETag), // 3
		bUpsert(v("u", 2)),                   // 4: replaces
		bUpsert(v("n", 1)),                   // 5: creates
		ifMatch(bDelete("d"), pre["d"].ETag), // 6
		bRead("a"),                           // 7: sees the replace
		bCreate(v("t", 1)),                   // 8
		bDelete("t"),                         // 9: deletes what 8 created
		bRead("r"),                           // 10
	}
	res, err := b.ExecuteBatch(ctx, l, "p", ops, nil)
	require.NoError(t, err)
	require.Len(t, res, len(ops), "one result per operation")
	for i, want := range []float64{1, 1, 2, 2, 2, 1, -1, 2, 1, -1, 2} {
		if want < 0 {
			assert.Nil(t, res[i].Document, "operation %d is a delete: no document", i)
			continue
		}
		require.NotNil(t, res[i].Document, "operation %d", i)
		assert.NotEmpty(t, res[i].Document.ETag, "operation %d", i)
		assert.Equal(t, want, body(t, res[i].Document)["v"], "operation %d", i)
	}
	assert.Equal(t, "a", res[0].Document.ID)
	assert.NotEqual(t, res[0].Document.ETag, res[2].Document.ETag, "every write changes the ETag")
	assert.Equal(t, res[2].Document.ETag, res[7].Document.ETag, "a read sees the batch's last write")
	assert.Equal(t, res[3].Document.ETag, res[10].Document.ETag)
	assert.NotEqual(t, pre["r"].ETag, res[3].Document.ETag)

	for id, want := range map[string]float64{"a": 2, "r": 2, "u": 2, "n": 1} {
		got := mustRead(t, st, l, id, "p")
		assert.Equal(t, want, body(t, got)["v"], "%s after the batch", id)
	}
	assert.Equal(t, res[2].Document.ETag, mustRead(t, st, l, "a", "p").ETag)
	for _, id := range []string{"d", "t"} {
		_, err := st.Read(ctx, l, id, pk("p"))
		requireKind(t, err, store.ErrNotFound, "%s is deleted by the batch", id)
	}
	assert.Len(t, feedAll(t, st, l, 0), 4)

	// A batch of reads only, and the largest batch.
	res, err = b.ExecuteBatch(ctx, l, "p", []store.BatchOp{bRead("a"), bRead("n")}, nil)
	require.NoError(t, err)
	assert.Equal(t, "n", res[1].Document.ID)
	many := make([]store.BatchOp, store.MaxBatchOperations)
	for i := range many {
		many[i] = bCreate(v(fmt.Sprintf("m%03d", i), float64(i)))
	}
	res, err = b.ExecuteBatch(ctx, l, "p", many, nil)
	require.NoError(t, err, "a batch of %d operations", store.MaxBatchOperations)
	assert.Len(t, res, store.MaxBatchOperations)
	assert.Len(t, feedAll(t, st, l, 0), 4+store.MaxBatchOperations)
}

// batchAtomic: a batch whose operation fails writes nothing, and the error
// names the operation.
func (s *suite) batchAtomic(t *testing.T, st store.Store) {
	b := batcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	kept, err := st.Create(ctx, l, doc(t, map[string]any{"id": "kept", "pk": "p", "v": 1.0}), nil)
	require.NoError(t, err)
	_, err = st.Replace(ctx, l, "kept", doc(t, map[string]any{"id": "kept", "pk": "p", "v": 2.0}), nil)
	require.NoError(t, err)
	stale := kept.ETag
	before := snapshot(t, st, l)
	v := func(id string) []byte { return doc(t, map[string]any{"id": id, "pk": "p", "v": 9.0}) }
	cases := []struct {
		name  string
		needs string
		ops   []store.BatchOp
		index int
		kind  error
		id    string
	}{
		{"create conflict", "", []store.BatchOp{bCreate(v("new1")), bUpsert(v("new2")), bReplace("kept", v("kept")), bCreate(v("kept"))}, 3, store.ErrConflict, "kept"},
		{"create twice", "", []store.BatchOp{bCreate(v("twice")), bCreate(v("twice"))}, 1, store.ErrConflict, "twice"},
		{"replace missing", "", []store.BatchOp{bUpsert(v("kept")), bReplace("missing", v("missing"))}, 1, store.ErrNotFound, "missing"},
		{"delete missing", "", []store.BatchOp{bCreate(v("new1")), bDelete("missing")}, 1, store.ErrNotFound, "missing"},
		{"read missing", "", []store.BatchOp{bDelete("kept"), bRead("missing")}, 1, store.ErrNotFound, "missing"},
		{"read deleted", "", []store.BatchOp{bDelete("kept"), bRead("kept")}, 1, store.ErrNotFound, "kept"},
		{"stale replace", SkipIfMatchOnReplace, []store.BatchOp{bCreate(v("new1")), ifMatch(bReplace("kept", v("kept")), stale)}, 1, store.ErrPreconditionFailed, "kept"},
		{"stale delete", SkipIfMatchOnDelete, []store.BatchOp{bUpsert(v("new1")), ifMatch(bDelete("kept"), stale)}, 1, store.ErrPreconditionFailed, "kept"},
		{"stale upsert", SkipIfMatchOnUpsert, []store.BatchOp{ifMatch(bUpsert(v("kept")), stale)}, 0, store.ErrPreconditionFailed, "kept"},
		{"first fails", "", []store.BatchOp{bDelete("missing"), bCreate(v("new1"))}, 0, store.ErrNotFound, "missing"},
	}
	for _, tc := range cases {
		if tc.needs != "" && s.lacks(t, tc.needs) {
			continue
		}
		res, err := b.ExecuteBatch(ctx, l, "p", tc.ops, nil)
		assert.Nil(t, res, tc.name)
		requireBatchError(t, err, tc.index, tc.kind, tc.id, tc.name)
		require.Equal(t, before, snapshot(t, st, l), "after %s nothing is written", tc.name)
	}
}

func (s *suite) batchValidation(t *testing.T, st store.Store) {
	b := batcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "kept", "pk": "p"}), nil)
	require.NoError(t, err)
	before := snapshot(t, st, l)
	ok := doc(t, map[string]any{"id": "ok", "pk": "p"})
	blob := func(id string, n int) []byte {
		return doc(t, map[string]any{"id": id, "pk": "p", "blob": strings.Repeat("x", n)})
	}
	tooMany := make([]store.BatchOp, store.MaxBatchOperations+1)
	for i := range tooMany {
		tooMany[i] = bCreate(doc(t, map[string]any{"id": fmt.Sprint(i), "pk": "p"}))
	}
	cases := []struct {
		name  string
		key   any
		ops   []store.BatchOp
		index int // -1: not an operation's error
		kind  error
		want  string // the error holds it
	}{
		{"empty", "p", nil, -1, store.ErrBadRequest, ""},
		{"too many", "p", tooMany, -1, store.ErrBadRequest, fmt.Sprint(store.MaxBatchOperations)},
		{"no key", nil, []store.BatchOp{bCreate(ok)}, -1, store.ErrBadRequest, ""},
		{"key differs", "p", []store.BatchOp{bCreate(ok), bCreate(doc(t, map[string]any{"id": "other", "pk": "q"}))}, 1, store.ErrBadRequest, "other"},
		{"key missing", "p", []store.BatchOp{bUpsert([]byte(`{"id":"nokey"}`))}, 0, store.ErrBadRequest, "nokey"},
		{"malformed", "p", []store.BatchOp{bCreate(ok), bCreate([]byte(`{"id":"bad",`))}, 1, store.ErrBadRequest, ""},
		{"not an object", "p", []store.BatchOp{bUpsert([]byte(`["id"]`))}, 0, store.ErrBadRequest, "object"},
		{"no id", "p", []store.BatchOp{bCreate([]byte(`{"pk":"p"}`))}, 0, store.ErrBadRequest, "id"},
		{"bad id", "p", []store.BatchOp{bCreate(ok), bRead(strings.Repeat("b", store.MaxIDLength+1))}, 1, store.ErrBadRequest, "bbb"},
		{"empty id", "p", []store.BatchOp{bDelete("")}, 0, store.ErrBadRequest, "id"},
		{"replace id differs", "p", []store.BatchOp{bReplace("kept", ok)}, 0, store.ErrBadRequest, "kept"},
		{"unknown kind", "p", []store.BatchOp{bCreate(ok), {Kind: 99, ID: "kept"}}, 1, store.ErrBadRequest, "kind"},
		{"document too large", "p", []store.BatchOp{bCreate(ok), bUpsert(blob("big", store.MaxDocumentSize))}, 1, store.ErrTooLarge, "big"},
		{"batch too large", "p", []store.BatchOp{bCreate(blob("half1", 1200<<10)), bCreate(blob("half2", 1200<<10))}, -1, store.ErrTooLarge, ""},
	}
	for _, tc := range cases {
		res, err := b.ExecuteBatch(ctx, l, tc.key, tc.ops, nil)
		assert.Nil(t, res, tc.name)
		if tc.index >= 0 {
			requireBatchError(t, err, tc.index, tc.kind, tc.want, tc.name)
		} else {
			requireKind(t, err, tc.kind, "%s", tc.name)
			assert.Contains(t, err.Error(), tc.want, "%s: the error names the problem", tc.name)
		}
		require.Equal(t, before, snapshot(t, st, l), "after %s nothing is written", tc.name)
	}
	_, err = b.ExecuteBatch(ctx, s.collLink(t), "p", []store.BatchOp{bCreate(ok)}, nil)
	requireKind(t, err, store.ErrCollectionNotFound, "a batch on a missing collection")
}

// batchIsolation: writers replace two documents together, readers read
// both in one batch and query them; a reader never sees one changed
// without the other.
func (s *suite) batchIsolation(t *testing.T, st store.Store) {
	b := batcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	pair := func(n float64) []store.BatchOp {
		return []store.BatchOp{
			bUpsert(doc(t, map[string]any{"id": "a", "pk": "p", "n": n})),
			bUpsert(doc(t, map[string]any{"id": "b", "pk": "p", "n": n})),
		}
	}
	_, err := b.ExecuteBatch(ctx, l, "p", pair(0), nil)
	require.NoError(t, err)
	const writers, each = 4, 25
	seen := make([]int, 2)
	readWhileWriting(2, writers, func(r int) bool {
		var a, b2 any
		if r == 0 {
			res, err := b.ExecuteBatch(ctx, l, "p", []store.BatchOp{bRead("a"), bRead("b")}, nil)
			if err != nil {
				t.Errorf("batch read: %v", err)
				return false
			}
			a, b2 = object(t, res[0].Document.Body)["n"], object(t, res[1].Document.Body)["n"]
		} else {
			page, err := st.Query(ctx, l, store.Query{Text: `SELECT VALUE c.n FROM c WHERE c.id IN ("a", "b")`}, &store.QueryOptions{PartitionKey: "p"})
			if err != nil || len(page.Items) != 2 {
				t.Errorf("query: %v (%d items)", err, len(page.Items))
				return false
			}
			a, b2 = string(page.Items[0]), string(page.Items[1])
		}
		if a != b2 {
			t.Errorf("reader %d saw part of a batch: %v and %v", r, a, b2)
			return false
		}
		seen[r]++
		return true
	}, func(w int) {
		for i := range each {
			if _, err := b.ExecuteBatch(ctx, l, "p", pair(float64(1+w*each+i)), nil); err != nil {
				t.Errorf("batch write: %v", err)
				return
			}
		}
	})
	t.Logf("%d batches written; %d batch reads and %d queries saw whole batches", writers*each, seen[0], seen[1])
	a, bb := mustRead(t, st, l, "a", "p"), mustRead(t, st, l, "b", "p")
	assert.Equal(t, body(t, a)["n"], body(t, bb)["n"])
}
