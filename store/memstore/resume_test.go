package memstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/store"
)

// evictAll runs more one-page queries than the store keeps cursors for,
// on another collection: every cursor kept so far is evicted.
func evictAll(t *testing.T, s *Store, other string) {
	t.Helper()
	for range s.opts.Cursors + 10 {
		page, err := s.Query(ctx, other, store.Query{Text: "SELECT c.id FROM c"}, &store.QueryOptions{PageSize: 1})
		require.NoError(t, err)
		require.NotEmpty(t, page.Continuation)
	}
}

// TestQueryResumesByPosition: a paged query whose cursor is gone (evicted
// by other queries, or the store restarted) resumes after the last row it
// returned, not at an offset into a re-run: documents deleted earlier in
// the walk do not shift it (localquerytest.ResumeByPosition).
func TestQueryResumesByPosition(t *testing.T) {
	l, other := "dbs/d/colls/walk", "dbs/d/colls/other"
	setup := func(t *testing.T, s *Store) {
		for _, c := range []string{l, other} {
			require.NoError(t, s.CreateCollection(ctx, c, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
		}
		var others [][]byte
		for i := range 20 {
			others = append(others, fmt.Appendf(nil, `{"id":"o%03d","pk":"p"}`, i))
		}
		createAll(t, s, other, others)
	}
	t.Run("evicted", func(t *testing.T) {
		s := New(&Options{Cursors: 8})
		setup(t, s)
		localquerytest.ResumeByPosition(t, func() store.Store { return s }, l, func() { evictAll(t, s, other) })
	})
	t.Run("evicted, scoped to a key", func(t *testing.T) {
		s := New(&Options{Cursors: 8})
		setup(t, s)
		k := keyed{s}
		localquerytest.ResumeByPosition(t, func() store.Store { return k }, l, func() { evictAll(t, s, other) })
	})
	t.Run("restarted", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		setup(t, s)
		localquerytest.ResumeByPosition(t, func() store.Store { return s }, l, func() {
			require.NoError(t, s.Close())
			s, err = Open(dir, nil)
			require.NoError(t, err)
		})
	})
}

// keyed scopes every query to partition key "p" (as docshard serve's read
// feed with a partition key does).
type keyed struct{ *Store }

func (k keyed) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	o := opt.Of(opts)
	o.PartitionKey = "p"
	return k.Store.Query(ctx, l, q, &o)
}

// createAll creates docs in l in one batch per 100.
func createAll(t *testing.T, s *Store, l string, docs [][]byte) {
	t.Helper()
	for len(docs) > 0 {
		k := min(len(docs), 100)
		ops := make([]store.BatchOp, k)
		for i, d := range docs[:k] {
			ops[i] = store.BatchOp{Kind: store.BatchCreate, Doc: d}
		}
		_, err := s.ExecuteBatch(ctx, l, "p", ops, nil)
		require.NoError(t, err)
		docs = docs[k:]
	}
}

// TestWholeQueryResume: a query whose results have no positions (GROUP BY
// here) re-runs by offset once its cursor is gone only over the same
// state of the collection; after a write it is refused, saying to run the
// query again. A token of version 1 (offsets only) is refused as such.
func TestWholeQueryResume(t *testing.T) {
	s := New(&Options{Cursors: 8})
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
	other := "dbs/t/colls/other"
	require.NoError(t, s.CreateCollection(ctx, other, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	var docs, others [][]byte
	for i := range 50 {
		docs = append(docs, fmt.Appendf(nil, `{"id":"d%03d","pk":"p","n":%d}`, i, i))
		others = append(others, fmt.Appendf(nil, `{"id":"o%03d","pk":"p"}`, i))
	}
	createAll(t, s, l, docs)
	createAll(t, s, other, others)
	q := store.Query{Text: "SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n"}
	first, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 10})
	require.NoError(t, err)
	evictAll(t, s, other)
	second, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 10, Continuation: first.Continuation})
	require.NoError(t, err, "unchanged: the re-run's offset is exact")
	assert.Len(t, second.Items, 10)
	evictAll(t, s, other)
	require.NoError(t, s.Delete(ctx, l, "d001", &store.WriteOptions{PartitionKey: "p"}))
	_, err = s.Query(ctx, l, q, &store.QueryOptions{PageSize: 10, Continuation: second.Continuation})
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "run the query again from its first page")

	var tok localquery.Token
	require.NoError(t, cursor.Decode(first.Continuation, &tok))
	old := cursor.Encode(map[string]any{"v": 1, "h": tok.Hash, "c": 0, "o": 10})
	_, err = s.Query(ctx, l, q, &store.QueryOptions{PageSize: 10, Continuation: old})
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "version 1")
}
