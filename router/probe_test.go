package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// recording records the text of every query call, by collection.
type recording struct {
	store.Store
	mu       sync.Mutex
	calls    map[string][]string
	inflight sync.WaitGroup
}

func (s *recording) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	s.mu.Lock()
	s.calls[l] = append(s.calls[l], q.Text)
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	return s.Store.Query(ctx, l, q, o)
}

// reset forgets the calls recorded so far, once the calls in flight (a
// pager given up after a page may still have fetches on their way) end.
func (s *recording) reset() {
	s.inflight.Wait()
	s.mu.Lock()
	s.calls = map[string][]string{}
	s.mu.Unlock()
}

// recorded returns the calls recorded since the last reset.
func (s *recording) recorded() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestTopProbesCollections: an ORDER BY with TOP (or OFFSET/LIMIT) over
// many collections asks each collection for a few rows first, and the full
// query only of collections the merge reads past their probe; the results,
// and pages resumed from tokens, are exactly one collection's.
func TestTopProbesCollections(t *testing.T) {
	const n = 64
	mem := newMem(t)
	rec := &recording{Store: mem, calls: map[string][]string{}}
	wide := setup(t, n, rec, nil)
	one := router.New(mem, nil)
	require.NoError(t, one.Register("dbs/one", ringOf(t, []string{"dbs/one/colls/all"})))
	_, err := one.EnsureCollections(ctx, "dbs/one", nil)
	require.NoError(t, err)
	for i := 0; i < 2000; i++ {
		key := fmt.Sprint("user-", i)
		if i%1000 >= 900 {
			key = "hot" // the highest scores of each thousand share one key, so one collection
		}
		doc := fmt.Sprintf(`{"id":"%d","userId":%q,"score":%d,"tie":%d}`, i, key, i%1000, i%7)
		for _, c := range []*router.Client{wide, one} {
			_, err := c.Create(ctx, c.Databases()[0], []byte(doc), nil)
			require.NoError(t, err)
		}
	}
	for _, tc := range []struct {
		name, text string
		followUps  int // at most this many collections are asked for the full query
	}{
		{"spread", "SELECT TOP 100 c.id, c.score FROM c ORDER BY c.tie, c.id", 8},
		{"skewed", "SELECT TOP 100 c.id FROM c ORDER BY c.score DESC, c.id", 1},
		{"offset-limit", "SELECT c.id FROM c ORDER BY c.tie DESC, c.score OFFSET 10 LIMIT 30", 8},
		{"value", "SELECT TOP 50 VALUE c.id FROM c ORDER BY c.score, c.id DESC", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := store.Query{Text: tc.text}
			want, err := one.Query(ctx, "dbs/one", q, nil)
			require.NoError(t, err)
			rec.reset()
			got, err := wide.Query(ctx, db, q, nil)
			require.NoError(t, err)
			assert.Equal(t, texts(want), texts(got))

			plan, err := query.PlanFanOut(must(query.Parse(tc.text)), nil)
			require.NoError(t, err)
			full := 0
			byColl := rec.recorded()
			for l, calls := range byColl {
				require.NotEmpty(t, calls, l)
				assert.NotEqual(t, plan.Query, calls[0], "%s: the first call is a probe", l)
				for _, c := range calls[1:] { // the full query's pages
					assert.Equal(t, plan.Query, c, l)
				}
				if len(calls) > 1 {
					full++
				}
			}
			assert.Len(t, byColl, n)
			assert.LessOrEqual(t, full, tc.followUps)

			// Page by page, each page from a new pager resuming the
			// previous page's token.
			var paged []json.RawMessage
			tok := ""
			for {
				p := wide.NewQueryPager(db, q, &router.QueryOptions{PageSize: 7, Continuation: tok})
				page, err := p.NextPage(ctx)
				require.NoError(t, err)
				paged = append(paged, page.Items...)
				if tok = page.Continuation; tok == "" {
					break
				}
			}
			assert.Equal(t, texts(want), texts(paged))
		})
	}
}

func texts(rows []json.RawMessage) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r)
	}
	return out
}
