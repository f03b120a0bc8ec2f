package localquery_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

var ctx = context.Background()

// evalStore answers queries with the local evaluator over what its
// embedded Store returns, as the router's owned view and the Cosmos DB
// backend do.
type evalStore struct {
	store.Store
	cursors *localquery.Cursors
}

func (s *evalStore) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	o := opt.Of(opts)
	call, err := localquery.Begin("query", l, q, l, "", o.Continuation)
	if err != nil {
		return nil, err
	}
	return call.Page(ctx, nil, s.cursors, o.PageSize, localquery.Source{
		Read: func(ctx context.Context, scan store.Query, cont string) (*store.Page, error) {
			return s.Store.Query(ctx, l, scan, &store.QueryOptions{PageSize: -1, Continuation: cont})
		},
	})
}

// forget drops every kept cursor, as an eviction or a restart does.
func (s *evalStore) forget() { s.cursors = localquery.NewCursors(4, 1<<30) }

// firstPage runs q's first page of five on s; it has a next page.
func firstPage(t *testing.T, s *evalStore, l string, q store.Query) *store.Page {
	t.Helper()
	first, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 5})
	require.NoError(t, err)
	require.NotEmpty(t, first.Continuation)
	return first
}

// newEvalStore returns an evalStore over a collection l of 40 documents
// (localquerytest.TieDocs), read in a new order every time.
func newEvalStore(t *testing.T) (*evalStore, string) {
	s, l := emptyEvalStore(t, 1)
	localquerytest.TieDocs(t, s.Store, l, 40)
	return s, l
}

// emptyEvalStore returns an evalStore over an empty collection l (key
// /pk) whose reads shuffle by seed.
func emptyEvalStore(t *testing.T, seed uint64) (*evalStore, string) {
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	l := "dbs/d/colls/c"
	require.NoError(t, mem.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	return &evalStore{Store: localquerytest.Shuffled(mem, seed), cursors: localquery.NewCursors(4, 1<<30)}, l
}

// TestTieOrder: the evaluator's results do not depend on the order its
// source returns the documents in.
func TestTieOrder(t *testing.T) {
	s, l := newEvalStore(t)
	localquerytest.TieOrder(t, s, l, s.forget)
}

// TestTokens: a token resumes its own query only; another query's, a
// forged or a malformed one is refused with store.ErrBadRequest.
func TestTokens(t *testing.T) {
	s, l := newEvalStore(t)
	q := store.Query{Text: "SELECT c.id FROM c ORDER BY c.id"}
	first := firstPage(t, s, l, q)
	second, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 5, Continuation: first.Continuation})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"d005"}`, string(second.Items[0]))

	var tok localquery.Token
	require.NoError(t, cursor.Decode(first.Continuation, &tok))
	// A token of version 1 (an offset into a re-run) is refused as such.
	_, err = s.Query(ctx, l, q, &store.QueryOptions{PageSize: 5, Continuation: cursor.Encode(map[string]any{"v": 1, "h": tok.Hash, "c": 99, "o": 5})})
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "version 1")
	past := tok
	past.O = 1000
	for name, bad := range map[string]struct {
		q   store.Query
		tok string
	}{
		"another query":      {store.Query{Text: "SELECT c.id FROM c ORDER BY c.id DESC"}, first.Continuation},
		"other parameters":   {store.Query{Text: q.Text, Parameters: []store.Param{{Name: "@x", Value: 1}}}, first.Continuation},
		"malformed":          {q, "not a token"},
		"another version":    {q, cursor.Encode(localquery.Token{V: 7, Hash: tok.Hash})},
		"negative offset":    {q, cursor.Encode(localquery.Token{V: localquery.TokenVersion, Hash: tok.Hash, O: -1})},
		"past the results":   {q, cursor.Encode(past)},
		"unknown field":      {q, cursor.Encode(map[string]any{"v": 1, "h": tok.Hash, "x": 1})},
		"hash of another db": {q, cursor.Encode(localquery.Token{V: localquery.TokenVersion, Hash: "00"})},
	} {
		_, err := s.Query(ctx, l, bad.q, &store.QueryOptions{PageSize: 5, Continuation: bad.tok})
		require.ErrorIs(t, err, store.ErrBadRequest, name)
	}
}

// TestParams: one builder, one error for a bad name or a name given twice,
// naming the parameter, wrapping query.ErrCompile.
func TestParams(t *testing.T) {
	m, err := localquery.Params([]store.Param{{Name: "@a", Value: 1}, {Name: "@b", Value: "x"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"@a": 1, "@b": "x"}, m)
	for _, tc := range []struct {
		ps   []store.Param
		want string
	}{
		{[]store.Param{{Name: "a", Value: 1}}, `parameter name "a": want '@' and a name`},
		{[]store.Param{{Name: "@", Value: 1}}, `parameter name "@"`},
		{[]store.Param{{Name: "", Value: 1}}, `parameter name ""`},
		{[]store.Param{{Name: "@a", Value: 1}, {Name: "@a", Value: 2}}, "parameter @a given twice"},
	} {
		_, err := localquery.Params(tc.ps)
		require.ErrorIs(t, err, query.ErrCompile)
		assert.Contains(t, err.Error(), tc.want)
	}
	// Every path reports it alike.
	s, l := newEvalStore(t)
	_, err = s.Query(ctx, l, store.Query{Text: "SELECT * FROM c", Parameters: []store.Param{{Name: "a"}}}, nil)
	require.ErrorIs(t, err, store.ErrBadRequest)
	require.ErrorIs(t, err, query.ErrCompile)
	assert.Contains(t, err.Error(), `parameter name "a"`)
}

// TestResumeByPosition: a page whose kept results are gone resumes after
// its last row, whatever was deleted since (see
// localquerytest.ResumeByPosition), over a source that returns the
// documents in a new order on every read.
func TestResumeByPosition(t *testing.T) {
	s, l := emptyEvalStore(t, 2)
	localquerytest.ResumeByPosition(t, func() store.Store { return s }, l, s.forget)
}

// TestWholeResume: a query without positions (GROUP BY) whose kept
// results are gone re-runs by offset over the same documents only; once
// they changed its token is refused, saying to run the query again.
func TestWholeResume(t *testing.T) {
	s, l := newEvalStore(t)
	q := store.Query{Text: "SELECT c.id, COUNT(1) AS n FROM c GROUP BY c.id"}
	first := firstPage(t, s, l, q)
	s.forget()
	second, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 5, Continuation: first.Continuation})
	require.NoError(t, err, "the same documents: the offset is exact")
	assert.Len(t, second.Items, 5)
	s.forget()
	require.NoError(t, s.Delete(ctx, l, "d001", &store.WriteOptions{PartitionKey: "k1"}))
	_, err = s.Query(ctx, l, q, &store.QueryOptions{PageSize: 5, Continuation: second.Continuation})
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "run the query again from its first page")
}
