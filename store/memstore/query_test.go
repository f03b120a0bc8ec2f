package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// TestProgramCache: a cached query answers as a fresh one, parameters are
// bound per run (the same text with other values gives other results), a
// parameterless compile error is not cached as a success, and the cache
// stays bounded.
func TestProgramCache(t *testing.T) {
	s := New(nil)
	l := newColl(t, s, nil)
	for i := range 20 {
		_, err := s.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%02d","n":%d}`, i, i), nil)
		require.NoError(t, err)
	}
	run := func(q store.Query) ([]string, error) {
		page, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: -1})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, it := range page.Items {
			out = append(out, string(it))
		}
		return out, nil
	}
	text := "SELECT VALUE c.n FROM c WHERE c.n < @max ORDER BY c.n DESC"
	for _, tc := range []struct {
		max  any
		want []string
	}{{3, []string{"2", "1", "0"}}, {1, []string{"0"}}, {2.5, []string{"2", "1", "0"}}} {
		got, err := run(store.Query{Text: text, Parameters: []store.Param{{Name: "@max", Value: tc.max}}})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "@max = %v", tc.max)
	}
	_, err := run(store.Query{Text: text})
	require.ErrorIs(t, err, store.ErrBadRequest, "the cached tree still needs its parameter")
	for range 2 {
		got, err := run(store.Query{Text: "SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n DESC"})
		require.NoError(t, err)
		assert.Equal(t, []string{`"d19"`, `"d18"`}, got)
	}

	c := newPrograms(4)
	for i := range 10 {
		_, err := c.prepare(fmt.Sprintf("SELECT VALUE %d", i), nil)
		require.NoError(t, err)
	}
	assert.Equal(t, 4, c.lru.Len())
	assert.Len(t, c.items, 4)
	assert.NotNil(t, c.get("SELECT VALUE 9"))
	assert.Nil(t, c.get("SELECT VALUE 0"), "least recently used out first")
	for range 2 {
		_, err = c.prepare("SELECT VALUE @p", nil)
		require.ErrorContains(t, err, "@p", "a failed compile is not cached")
	}
}

// TestProgramCacheConcurrent runs one text from many goroutines with and
// without parameters (under -race).
func TestProgramCacheConcurrent(t *testing.T) {
	c := newPrograms(2)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				text := fmt.Sprintf("SELECT VALUE @p + %d", i%3)
				prog, err := c.prepare(text, map[string]any{"@p": g})
				if !assert.NoError(t, err) {
					return
				}
				out, err := prog.prog.Values(ctx, func(func(query.Doc) bool) {})
				if assert.NoError(t, err) && assert.Len(t, out, 1) {
					assert.Equal(t, float64(g+i%3), out[0])
				}
			}
		})
	}
	wg.Wait()
}

// lazyDocs fills a collection with documents that tie, miss sort keys,
// vary in size and span three key values.
// pagedDocs fills a collection for the paging tests: mixed types,
// missing fields, tag arrays of 0 to 4 elements, three keys.
func pagedDocs(t *testing.T, s *Store) string {
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
	for i := range 1500 {
		doc := map[string]any{"id": fmt.Sprintf("d%04d", i), "pk": fmt.Sprint("p", i%3), "n": i % 7, "s": strings.Repeat("x", i%40)}
		tags := []any{}
		for j := range i % 5 {
			tags = append(tags, fmt.Sprint("t", (i+j)%6))
		}
		doc["tags"] = tags
		if i%11 == 0 {
			delete(doc, "n")
		}
		if i%13 == 0 {
			doc["n"] = fmt.Sprint(i)
		}
		b, err := json.Marshal(doc)
		require.NoError(t, err)
		_, err = s.Create(ctx, l, b, nil)
		require.NoError(t, err)
	}
	return l
}

// pagingCase is one query of the paging tests and the cursor mode its
// first page must leave (mode reports it of a cursor).
type pagingCase struct {
	text   string
	want   bool
	params []store.Param
	most   int // the query's TOP or LIMIT (0: none)
}

// pagingConfig is a page size, a byte cap and a partition key.
type pagingConfig struct {
	pageSize, maxBytes int
	pk                 any
}

// checkPages reads every query page by page under every configuration
// and compares the pages with the engine's whole answer over the same
// documents cut by the documented page rule (size, byte cap, at least one
// item); mode says whether a first page's cursor is of the kind a case
// wants, and want (nil: the case's want) which kind that is for a
// configuration.
func checkPages(t *testing.T, cases []pagingCase, cfgs []pagingConfig, mode func(*resultSet) bool, want func(pagingConfig, pagingCase) bool) {
	for _, c := range cfgs {
		s := New(&Options{MaxPageBytes: c.maxBytes, PageSize: 40})
		l := pagedDocs(t, s)
		for _, q := range cases {
			t.Run(fmt.Sprintf("%s/size=%d/bytes=%d/pk=%v", q.text, c.pageSize, c.maxBytes, c.pk), func(t *testing.T) {
				wantMode := q.want
				if want != nil {
					wantMode = want(c, q)
				}
				want := engineAnswer(t, s, l, q.text, q.params, c.pk)
				var got [][]string
				tok := ""
				for {
					page, err := s.Query(ctx, l, store.Query{Text: q.text, Parameters: q.params},
						&store.QueryOptions{PageSize: c.pageSize, Continuation: tok, PartitionKey: c.pk})
					require.NoError(t, err)
					if rs := lastCursor(t, s, page.Continuation); tok == "" && rs != nil {
						assert.Equal(t, wantMode, mode(rs), "cursor kind")
					}
					var items []string
					for _, it := range page.Items {
						items = append(items, string(it))
					}
					got = append(got, items)
					if tok = page.Continuation; tok == "" {
						break
					}
				}
				assert.Equal(t, cutPages(want, c.pageSize, 40, c.maxBytes), got)
			})
		}
	}
}

// TestLazyOrderByPages checks every page of ORDER BY queries, lazily
// projected or not, against the engine's whole answer over the same
// documents cut by the documented page rule (size, byte cap, at least one
// item), for several page sizes and byte caps, with and without a key.
func TestLazyOrderByPages(t *testing.T) {
	checkPages(t, []pagingCase{
		{`SELECT VALUE {"k": [{"v": c.n}, {"v": c.id}], "p": {"id": c.id, "n": c.n}} FROM c AS c ORDER BY c.n DESC, c.id ASC`, true, nil, 0},
		{`SELECT c.id, c.n, c.s FROM c WHERE c.n > 2 ORDER BY c.n`, true, nil, 0},
		{`SELECT * FROM c ORDER BY c.n DESC`, true, nil, 0},
		{`SELECT TOP @top r.id FROM root r WHERE r.pk != @pk ORDER BY r.n, r.id DESC`, true, []store.Param{{Name: "@top", Value: 50}, {Name: "@pk", Value: "p1"}}, 50},
		{`SELECT [c.id, c.missing] FROM c ORDER BY c.s OFFSET 7 LIMIT 100`, true, nil, 100},
		{`SELECT VALUE [c.n, c.id] FROM c ORDER BY c.id DESC`, true, nil, 0},
		{`SELECT VALUE c.n FROM c ORDER BY c.id`, true, nil, 0}, // IS_DEFINED(c.n) keeps one row per document
		{`SELECT DISTINCT VALUE {"n": c.n} FROM c ORDER BY c.n`, false, nil, 0},
		{`SELECT VALUE {"n": c.n, "r": RAND() >= 0} FROM c ORDER BY c.n`, false, nil, 0},
		{`SELECT c.id FROM c ORDER BY c.n, c.id`, true, nil, 0},
	}, []pagingConfig{
		{7, 1 << 20, nil}, {-1, 900, nil}, {0, 1 << 20, nil}, {50, 300, "p2"}, {3, 1, nil}, {100, 2000, "p0"},
		{700, 1 << 20, nil}, {-1, 40_000, nil}, {2000, 30_000, "p1"}, // pages of several chunks
		{-1, 512 * len(`{"id":"d0000"}`), nil}, // the cap falls on a chunk's end
	}, func(rs *resultSet) bool { return rs.page != nil }, func(c pagingConfig, q pagingCase) bool {
		// Lazy only where the results may not fit the first page.
		size := c.pageSize
		if size == 0 {
			size = 40
		}
		return q.want && size >= 0 && (q.most == 0 || q.most > size)
	})
}

func engineAnswer(t *testing.T, s *Store, l, text string, params []store.Param, key any) []string {
	pk := ""
	if key != nil {
		var err error
		pk, err = partitionkey.IdentityText(key)
		require.NoError(t, err)
	}
	pm := map[string]any{}
	for _, p := range params {
		pm[p.Name] = p.Value
	}
	prog, err := query.Prepare(text, pm)
	require.NoError(t, err)
	c := s.colls[l]
	var docs []query.Doc
	for _, e := range c.order {
		if !e.dead && (key == nil || e.pk == pk) {
			d, err := e.decoded()
			require.NoError(t, err)
			docs = append(docs, *d)
		}
	}
	rows, err := prog.Execute(ctx, func(yield func(query.Doc) bool) {
		for _, d := range docs {
			if !yield(d) {
				return
			}
		}
	})
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, string(r))
	}
	return out
}

// cutPages splits results into pages as Store.Query documents it.
func cutPages(rows []string, size, defSize, maxBytes int) [][]string {
	switch {
	case size == 0:
		size = defSize
	case size < 0:
		size = len(rows) + 1
	}
	pages := [][]string{}
	for start := 0; ; {
		var page []string
		bytes := 0
		for start < len(rows) && len(page) < size {
			if bytes += len(rows[start]); bytes > maxBytes && len(page) > 0 {
				break
			}
			page = append(page, rows[start])
			start++
		}
		pages = append(pages, page)
		if start == len(rows) {
			return pages
		}
	}
}

// lastCursor returns the result set a continuation token points to.
func lastCursor(t *testing.T, s *Store, token string) *resultSet {
	if token == "" {
		return nil
	}
	var tok localquery.Token
	require.NoError(t, cursor.Decode(token, &tok))
	rs, ok := s.cursors.Get(tok.C, tok.Hash)
	require.True(t, ok)
	return rs
}

// TestLazyPagesKeepTheirSnapshot: documents written, replaced or deleted
// after the first page do not change the later pages of a lazily
// projected query, and an evicted cursor re-runs the query on the
// current documents.
func TestLazyPagesKeepTheirSnapshot(t *testing.T) {
	s := New(&Options{Cursors: 2})
	l := newColl(t, s, nil)
	for i := range 30 {
		_, err := s.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%02d","n":%d}`, i, i), nil)
		require.NoError(t, err)
	}
	q := store.Query{Text: "SELECT c.id, c.n FROM c ORDER BY c.n DESC"}
	first, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 10})
	require.NoError(t, err)
	require.NotNil(t, lastCursor(t, s, first.Continuation).page, "lazy")
	_, err = s.Upsert(ctx, l, []byte(`{"id":"d15","n":-1}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, l, "d18", nil))
	_, err = s.Create(ctx, l, []byte(`{"id":"d99","n":15.5}`), nil)
	require.NoError(t, err)
	second, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 10, Continuation: first.Continuation})
	require.NoError(t, err)
	var ids []string
	for _, it := range second.Items {
		ids = append(ids, string(it))
	}
	assert.Equal(t, `{"id":"d19","n":19}`, ids[0])
	assert.Contains(t, ids, `{"id":"d15","n":15}`, "the replaced document as it was")
	assert.Contains(t, ids, `{"id":"d18","n":18}`, "the deleted document as it was")

	// Evict the cursor: the token re-runs the query over today's documents.
	for range 2 {
		_, err := s.Query(ctx, l, store.Query{Text: "SELECT c.id FROM c ORDER BY c.id"}, &store.QueryOptions{PageSize: 1})
		require.NoError(t, err)
	}
	again, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 3, Continuation: first.Continuation})
	require.NoError(t, err)
	require.Len(t, again.Items, 3)
	assert.Equal(t, []string{`{"id":"d19","n":19}`, `{"id":"d17","n":17}`, `{"id":"d16","n":16}`}, []string{string(again.Items[0]), string(again.Items[1]), string(again.Items[2])},
		"offset 10 of the new order (d29 to d20, d19, d17, d16, d99 with 15.5)")
}

// TestStreamedPages checks every page of queries read as their scan goes
// (no ORDER BY, aggregate, DISTINCT, TOP or LIMIT) against the engine's
// whole answer cut by the documented page rule, for several page sizes,
// byte caps and keys, and that the other shapes are not streamed.
func TestStreamedPages(t *testing.T) {
	checkPages(t, []pagingCase{
		{`SELECT * FROM c`, true, nil, 0},
		{`SELECT c.id, c.n FROM c WHERE c.n > @min`, true, []store.Param{{Name: "@min", Value: 3}}, 0},
		{`SELECT VALUE c.id FROM c WHERE c.id = "d1499"`, true, nil, 0}, // one match, at the very end
		{`SELECT VALUE c.id FROM c WHERE c.id = "nothing"`, true, nil, 0},
		{`SELECT c.id, t FROM c JOIN t IN c.tags WHERE t != "t3"`, true, nil, 0},
		{`SELECT VALUE t FROM t IN c.tags`, true, nil, 0},
		{`SELECT VALUE c.missing FROM c`, true, nil, 0},
		{`SELECT c.id, ARRAY(SELECT VALUE x FROM x IN c.tags WHERE x > "t2") AS big FROM c WHERE IS_NUMBER(c.n)`, true, nil, 0},
		{`SELECT VALUE COUNT(1) FROM c`, false, nil, 0},
		{`SELECT DISTINCT VALUE c.n FROM c`, false, nil, 0},
		{`SELECT TOP 30 c.id FROM c`, true, nil, 0}, // TOP, OFFSET and LIMIT stream too
		{`SELECT c.id FROM c OFFSET 5 LIMIT 900`, true, nil, 0},
		{`SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n`, false, nil, 0},
		// Subqueries and paths as sources: one row per document streams.
		{`SELECT * FROM (SELECT c.id, c.n FROM c WHERE c.n > 3) AS x`, true, nil, 0},
		{`SELECT c.id, t FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE t != "t3") AS t`, true, nil, 0},
		{`SELECT VALUE n FROM c.n`, true, nil, 0},
		{`SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.n FROM c)`, false, nil, 0},
		{`SELECT * FROM (SELECT TOP 30 c.id FROM c) AS x`, false, nil, 0},
	}, []pagingConfig{
		{7, 1 << 20, nil}, {-1, 1 << 20, nil}, {-1, 900, nil}, {0, 1 << 20, nil}, {50, 300, "p2"}, {3, 1, nil},
		{700, 1 << 20, nil}, {2000, 30_000, "p1"}, {128, 1 << 20, nil}, // pages across runs of documents
	}, func(rs *resultSet) bool { return rs.stream != nil }, nil)
}

// TestStreamedTokensReused: a token read again (a retry, a second reader,
// an older page) returns the same page, sequentially and concurrently;
// writes after the first page do not change later pages; an evicted
// cursor re-runs the query on the current documents.
func TestStreamedTokensReused(t *testing.T) {
	s := New(&Options{Cursors: 2})
	l := newColl(t, s, nil)
	for i := range 600 {
		_, err := s.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%03d","n":%d}`, i, i), nil)
		require.NoError(t, err)
	}
	q := store.Query{Text: "SELECT VALUE c.n FROM c WHERE c.n % 2 = 0"}
	opts := func(tok string) *store.QueryOptions { return &store.QueryOptions{PageSize: 50, Continuation: tok} }
	var tokens []string
	var pages [][]json.RawMessage
	tok := ""
	for {
		page, err := s.Query(ctx, l, q, opts(tok))
		require.NoError(t, err)
		pages = append(pages, page.Items)
		if tok == "" {
			require.NotNil(t, lastCursor(t, s, page.Continuation).stream, "streamed")
			_, err = s.Upsert(ctx, l, []byte(`{"id":"d100","n":-1}`), nil)
			require.NoError(t, err)
			require.NoError(t, s.Delete(ctx, l, "d200", nil))
		}
		if page.Continuation == "" {
			break
		}
		tok = page.Continuation
		tokens = append(tokens, tok)
	}
	require.Len(t, pages, 6)
	assert.JSONEq(t, "100", string(pages[1][0]), "the replaced document as it was")
	assert.JSONEq(t, "200", string(pages[2][0]), "the deleted document as it was")
	assert.JSONEq(t, "598", string(pages[5][49]))

	// Older tokens, in any order, and the same token from many goroutines.
	for _, i := range []int{3, 0, 4, 4, 1} {
		page, err := s.Query(ctx, l, q, opts(tokens[i]))
		require.NoError(t, err)
		assert.Equal(t, pages[i+1], page.Items, "token %d again", i)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			i := g % len(tokens)
			page, err := s.Query(ctx, l, q, opts(tokens[i]))
			if assert.NoError(t, err) {
				assert.Equal(t, pages[i+1], page.Items, "token %d concurrently", i)
			}
		})
	}
	wg.Wait()

	// A token read twice in a row, one result a page: the cursor has just
	// served it, and must step back one.
	one := func(tok string) *store.QueryOptions { return &store.QueryOptions{PageSize: 1, Continuation: tok} }
	first, err := s.Query(ctx, l, q, one(""))
	require.NoError(t, err)
	second, err := s.Query(ctx, l, q, one(first.Continuation))
	require.NoError(t, err)
	again, err := s.Query(ctx, l, q, one(first.Continuation))
	require.NoError(t, err)
	assert.Equal(t, second.Items, again.Items)
	assert.JSONEq(t, "2", string(again.Items[0]))

	// Evict the cursor: the token re-runs the query over today's documents
	// (d100 now has n = -1 and d200 is gone, so offset 50 starts at 102).
	for range 2 {
		_, err := s.Query(ctx, l, store.Query{Text: "SELECT c.id FROM c"}, &store.QueryOptions{PageSize: 1})
		require.NoError(t, err)
	}
	page, err := s.Query(ctx, l, q, opts(tokens[0]))
	require.NoError(t, err)
	assert.JSONEq(t, "102", string(page.Items[0]))
}

// TestQueryStringLimit: a query whose string function would exceed
// query.MaxStringBytes is a bad request that says so, and the store goes on
// answering.
func TestQueryStringLimit(t *testing.T) {
	s := New(nil)
	l := newColl(t, s, nil)
	_, err := s.Create(ctx, l, []byte(`{"id":"a","s":"ab"}`), nil)
	require.NoError(t, err)
	_, err = s.Query(ctx, l, store.Query{Text: `SELECT VALUE REPLACE(REPLICATE("a", 10000), "a", REPLICATE("b", 10000)) FROM c`}, nil)
	require.ErrorIs(t, err, store.ErrBadRequest)
	require.ErrorIs(t, err, query.ErrStringTooLong)
	page, err := s.Query(ctx, l, store.Query{Text: `SELECT VALUE REPLACE(c.s, "b", "c") FROM c`}, nil)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.JSONEq(t, `"ac"`, string(page.Items[0]))
}

// TestQueryDecodesOnlyWhatItReads: a query that never looks inside its
// documents decodes none of them, one scoped to a key decodes that key's
// only, and the answers are the same as over decoded documents.
func TestQueryDecodesOnlyWhatItReads(t *testing.T) {
	ctx := t.Context()
	s := New(nil)
	l := "dbs/d/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range 300 {
		_, err := s.Create(ctx, l, fmt.Appendf(nil, `{"id":"%d","pk":"k%d","n":%d}`, i, i%3, i), nil)
		require.NoError(t, err)
	}
	decoded := func() map[string]int {
		out := map[string]int{}
		for _, e := range s.colls[l].order {
			if e.doc.Load() != nil {
				out[e.pk]++
			}
		}
		return out
	}
	query := func(text string, key any) string {
		opts := &store.QueryOptions{PageSize: -1}
		if key != nil {
			opts.PartitionKey = key
		}
		page, err := s.Query(ctx, l, store.Query{Text: text}, opts)
		require.NoError(t, err, text)
		require.Len(t, page.Items, 1, text)
		return string(page.Items[0])
	}
	assert.Equal(t, "300", query(`SELECT VALUE COUNT(1) FROM c`, nil))
	assert.Empty(t, decoded(), "COUNT(1) reads no document")
	assert.Equal(t, "50", query(`SELECT VALUE COUNT(1) FROM c WHERE c.n >= 150`, "k1"))
	keyText, err := partitionkey.IdentityText("k1")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{keyText: 100}, decoded(), "only k1's documents")
	assert.Equal(t, "150", query(`SELECT VALUE COUNT(1) FROM c WHERE c.n >= 150`, nil))
	assert.Len(t, decoded(), 3, "an unscoped filter decodes every document")
	for _, n := range decoded() {
		assert.Equal(t, 100, n)
	}
	assert.Equal(t, "300", query(`SELECT VALUE COUNT(1) FROM c`, nil), "the same answer over decoded documents")
}

// TestTieOrder: the check every store that pages a query itself runs; the
// embedded store evaluates over its snapshot, in feed order, so a page
// evaluated again ties rows as the first evaluation did.
func TestTieOrder(t *testing.T) {
	s := New(nil)
	t.Cleanup(func() { _ = s.Close() })
	l := "dbs/d/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	localquerytest.TieDocs(t, s, l, 40)
	localquerytest.TieOrder(t, s, l, func() { s.cursors = cursor.NewSizedCache(s.opts.Cursors, s.opts.CursorBytes, (*resultSet).bytes) })
}

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
