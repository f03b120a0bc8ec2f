package localquerytest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// ResumeQuery is a query ResumeByPosition walks, and how many of its rows
// (in its order) the walk must return: 0 for all, else its TOP or LIMIT.
type ResumeQuery struct {
	Text  string
	First int
}

// ResumeQueries cover every shape that resumes by position: feed order
// (with a filter, a JOIN whose pages end inside a document's rows, a
// SELECT VALUE that is undefined for some documents, TOP, OFFSET and
// LIMIT) and ORDER BY (ascending, descending, ties, with a LIMIT).
var ResumeQueries = []ResumeQuery{
	{"SELECT * FROM c", 0},
	{"SELECT c.id FROM c WHERE c.n >= 10", 0},
	{"SELECT c.id, t FROM c JOIN t IN c.tags", 0},
	{"SELECT VALUE {'id': c.id, 'x': c.x} FROM c WHERE IS_DEFINED(c.x) OR c.n % 2 = 0", 0},
	{"SELECT * FROM c ORDER BY c.g, c.id", 0},
	{"SELECT c.id FROM c ORDER BY c.g DESC", 0},
	{"SELECT VALUE c.x FROM c ORDER BY c.n", 0},
	{"SELECT TOP 300 c.id FROM c", 300},
	{"SELECT c.id FROM c OFFSET 5 LIMIT 300", 300},
	{"SELECT c.id FROM c ORDER BY c.g OFFSET 0 LIMIT 300", 300},
}

// ResumeDocs is how many documents ResumeByPosition writes.
const ResumeDocs = 350

// ResumeByPosition checks that a paged query whose kept results are gone
// resumes after the last row it returned, not at an offset into a re-run:
// for each of ResumeQueries it (re)writes ResumeDocs documents to l
// (partition key path "/pk", all under key "p"), reads the query whole,
// then pages through it 10 rows a page, deleting every other document
// each page returned and calling forget (which drops what st keeps for
// tokens: evicts its cursors, restarts it) before the next page. Every
// document never deleted must come exactly once (within the query's TOP
// or LIMIT), and no row twice. st is called for each operation, so forget
// may replace the store.
func ResumeByPosition(t *testing.T, st func() store.Store, l string, forget func()) {
	ctx := context.Background()
	for _, rq := range ResumeQueries {
		t.Run(rq.Text, func(t *testing.T) {
			for i := range ResumeDocs {
				x := ""
				if i%3 == 0 {
					x = fmt.Sprintf(`,"x":{"id":"d%03d","x":%d}`, i, i)
				}
				_, err := st().Upsert(ctx, l, fmt.Appendf(nil, `{"id":"d%03d","pk":"p","n":%d,"g":%d,"tags":["a","b"]%s}`, i, i, i%3, x), nil)
				require.NoError(t, err)
			}
			q := store.Query{Text: rq.Text}
			whole, err := st().Query(ctx, l, q, &store.QueryOptions{PageSize: -1})
			require.NoError(t, err)
			require.Empty(t, whole.Continuation)
			idOf := map[string]string{}
			var order []string
			for _, raw := range whole.Items {
				order = append(order, string(raw))
				idOf[string(raw)] = rowID(t, raw)
			}
			deleted, seen := map[string]bool{}, map[string]int{}
			var got int
			opts := &store.QueryOptions{PageSize: 10}
			for i := 0; ; i++ {
				require.Less(t, i, 1000, "the walk ends")
				page, err := st().Query(ctx, l, q, opts)
				require.NoError(t, err, "page %d", i)
				for j, raw := range page.Items {
					got++
					seen[string(raw)]++
					if id := rowID(t, raw); j%2 == 0 && !deleted[id] {
						require.NoError(t, st().Delete(ctx, l, id, &store.WriteOptions{PartitionKey: "p"}))
						deleted[id] = true
					}
				}
				if page.Continuation == "" {
					break
				}
				opts.Continuation = page.Continuation
				forget()
			}
			var skipped, twice []string
			for row, k := range seen {
				if k > 1 {
					twice = append(twice, row)
				}
			}
			want := order
			if rq.First > 0 {
				want = order[:min(rq.First, len(order))]
				assert.Equal(t, len(want), got, "TOP or LIMIT rows in all")
			}
			for _, row := range want {
				if !deleted[idOf[row]] && seen[row] == 0 {
					skipped = append(skipped, row)
				}
			}
			assert.Empty(t, twice, "rows returned twice")
			assert.Empty(t, skipped, "never deleted, never returned: %d of %d rows", len(skipped), len(want))
		})
	}
}

// rowID is the "id" of a row.
func rowID(t *testing.T, raw json.RawMessage) string {
	var row struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &row))
	return row.ID
}
