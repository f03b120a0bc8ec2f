package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// forgeQueries are the shapes a forged token is tried on: one per merge
// mode, with OFFSET/LIMIT and DISTINCT runs.
var forgeQueries = []string{
	"SELECT * FROM c",
	"SELECT c.id FROM c OFFSET 3 LIMIT 9",
	"SELECT c.id, c.age FROM c ORDER BY c.age DESC, c.id",
	"SELECT DISTINCT VALUE c.age FROM c ORDER BY c.age OFFSET 1 LIMIT 7",
	"SELECT DISTINCT c.tag FROM c",
	"SELECT c.tag, COUNT(1) AS n FROM c GROUP BY c.tag",
	"SELECT VALUE AVG(c.age) FROM c",
}

// forgeFixture is a client over three collections holding documents of
// mixed types, shared by every fuzz input.
func forgeFixture(tb testing.TB) *Client {
	tb.Helper()
	links := []string{"dbs/f/colls/c0", "dbs/f/colls/c1", "dbs/f/colls/c2"}
	r, err := hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/k")})
	require.NoError(tb, err)
	st := memstore.New(nil)
	tb.Cleanup(func() { _ = st.Close() })
	c := New(st, nil)
	require.NoError(tb, c.Register("dbs/f", r))
	_, err = c.EnsureCollections(context.Background(), "dbs/f", nil)
	require.NoError(tb, err)
	tags := []any{"a", "b", 1, nil, true, []int{1}}
	for i := 0; i < 40; i++ {
		doc := map[string]any{"id": fmt.Sprint(i), "k": fmt.Sprint("k", i%11), "age": i % 9, "tag": tags[i%len(tags)]}
		_, err := c.Create(context.Background(), "dbs/f", doc, nil)
		require.NoError(tb, err)
	}
	return c
}

// tokenBody returns the state inside a genuine token, uncompressed.
func tokenBody(tb testing.TB, p *Pager, tok string) []byte {
	t, err := decodeToken(tok, p.bind, p.lh, len(p.sched.srcs))
	require.NoError(tb, err)
	return t.body()
}

// forge wraps a state in a token that passes every envelope check
// (version, binding, links hash, checksum): what a client that knows the
// format can send.
func forge(p *Pager, body []byte) string { return seal(p.bind, p.lh, 0, body) }

// FuzzForgedToken gives the pager continuation tokens whose envelope is
// valid and whose state is anything at all. The pager must refuse the
// state with ErrBadContinuation or read on from it, within the results'
// bounds: never panic, loop or hand out more results than the query has.
func FuzzForgedToken(f *testing.F) {
	c := forgeFixture(f)
	ctx := context.Background()
	total := make([]int, len(forgeQueries))
	for qi, text := range forgeQueries {
		all, err := c.Query(ctx, "dbs/f", store.Query{Text: text}, nil)
		require.NoError(f, err)
		total[qi] = len(all)
		p := c.NewQueryPager("dbs/f", store.Query{Text: text}, &QueryOptions{PageSize: 2, MaxDegreeOfParallelism: -1})
		for p.More() {
			page, err := p.NextPage(ctx)
			require.NoError(f, err)
			if page.Continuation != "" {
				f.Add(uint8(qi), tokenBody(f, p, page.Continuation))
			}
		}
	}
	f.Fuzz(func(t *testing.T, qi uint8, body []byte) {
		qi %= uint8(len(forgeQueries))
		q := store.Query{Text: forgeQueries[qi]}
		opts := &QueryOptions{PageSize: 3, MaxDegreeOfParallelism: -1}
		tok := forge(c.NewQueryPager("dbs/f", q, opts), body)
		opts.Continuation = tok
		p := c.NewQueryPager("dbs/f", q, opts)
		got := 0
		for pages := 0; p.More(); pages++ {
			require.Less(t, pages, 100, "the pager does not end")
			page, err := p.NextPage(ctx)
			if err != nil {
				var bad *json.SyntaxError
				require.False(t, errors.As(err, &bad))
				require.True(t, errors.Is(err, ErrBadContinuation) || errors.Is(err, store.ErrBadRequest), "a forged state fails as a bad token or a bad store continuation: %v", err)
				return
			}
			got += len(page.Items)
			for _, it := range page.Items {
				require.True(t, json.Valid(it), "result %s", it)
			}
		}
		require.LessOrEqual(t, got, total[qi], "more results than the query has")
	})
}
