// Package localquerytest holds the checks every store that pages a query
// itself runs: the embedded store, the Cosmos DB backend's local
// evaluation and the router's view of shared collections.
package localquerytest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// TieQueries are queries whose rows tie: ORDER BY a value many documents
// share, TOP without ORDER BY. Which rows come first among ties depends on
// the order the documents are evaluated in.
var TieQueries = []string{
	"SELECT c.id FROM c ORDER BY c.g",
	"SELECT c.id, c.g FROM c ORDER BY c.g DESC OFFSET 2 LIMIT 11",
	"SELECT TOP 7 c.id FROM c",
	"SELECT VALUE c.id FROM c WHERE c.g >= 1 ORDER BY c.g",
}

// TieDocs writes n documents to collection l whose "g" takes three values
// (so ORDER BY c.g ties), partitioned by "/pk" over four keys.
func TieDocs(t testing.TB, st store.Store, l string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		doc := fmt.Appendf(nil, `{"id":"d%03d","pk":"k%d","g":%d}`, i, i%4, i%3)
		_, err := st.Create(ctx, l, doc, nil)
		require.NoError(t, err)
	}
}

// TieOrder checks that the pages of queries whose rows tie (TieQueries,
// over collection l of st, filled by TieDocs) do not depend on the order
// the documents are read in: every page is read after forget has dropped
// the results st keeps for continuation tokens, so each page evaluates
// the query again, and the pages must still concatenate to the whole
// answer read in one page. A store whose evaluation order follows its
// reads (which a store does not promise across partitions) returns some
// tied rows twice and others never.
func TieOrder(t *testing.T, st store.Store, l string, forget func()) {
	ctx := context.Background()
	for _, text := range TieQueries {
		q := store.Query{Text: text}
		whole, err := st.Query(ctx, l, q, &store.QueryOptions{PageSize: -1})
		require.NoError(t, err, text)
		require.Empty(t, whole.Continuation, text)
		for _, size := range []int{1, 3, 4} {
			var got []json.RawMessage
			opts := &store.QueryOptions{PageSize: size}
			for i := 0; ; i++ {
				require.Less(t, i, 1000, text)
				forget()
				page, err := st.Query(ctx, l, q, opts)
				require.NoError(t, err, text)
				got = append(got, page.Items...)
				if page.Continuation == "" {
					break
				}
				opts.Continuation = page.Continuation
			}
			assert.Equal(t, texts(whole.Items), texts(got), "%s, pages of %d, each evaluated again", text, size)
		}
	}
}

func texts(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// Shuffled returns st with every page of a query's results in a new random
// order, as a store that promises no order across partitions may return
// them (cosmium does, from one read to the next).
func Shuffled(st store.Store, seed uint64) store.Store {
	return &shuffled{Store: st, rng: rand.New(rand.NewPCG(seed, seed))}
}

type shuffled struct {
	store.Store
	rng *rand.Rand
}

func (s *shuffled) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	page, err := s.Store.Query(ctx, l, q, opts)
	if err != nil {
		return nil, err
	}
	items := append([]json.RawMessage(nil), page.Items...)
	s.rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	out := *page
	out.Items = items
	return &out, nil
}
