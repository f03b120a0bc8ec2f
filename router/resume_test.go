package router_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestResumeAfterChangesInsideAPage pages a query through the router in
// pages smaller than the store's, so each token stands inside a store
// page; between pages a document the walk already returned is deleted and
// the store's cursors are evicted, so a resume fetches the store's page
// again from the collection as it is now. Skipping the rows the token
// counted would then skip a live document (issue 27: a re-run must not
// shift a position): the router must either resume exactly or refuse the
// token with ErrBadContinuation, never answer without a document that
// existed throughout. A replace that keeps each document's place changes
// nothing the token counted: the walk resumes.
func TestResumeAfterChangesInsideAPage(t *testing.T) {
	for _, tc := range []struct {
		q       string
		replace bool // replace the document (keeping its place) instead of deleting it
	}{
		{q: "SELECT * FROM c"},
		{q: "SELECT * FROM c ORDER BY c.age"},
		{q: "SELECT c.id FROM c ORDER BY c.id DESC"},
		{q: "SELECT * FROM c", replace: true},
		{q: "SELECT * FROM c ORDER BY c.age", replace: true},
	} {
		q := tc.q
		t.Run(fmt.Sprintf("%s/replace=%v", q, tc.replace), func(t *testing.T) {
			st := memstore.New(&memstore.Options{Cursors: 1})
			t.Cleanup(func() { _ = st.Close() })
			c := setup(t, 1, st, nil)
			addUsers(t, c, 40, func(i int) string { return fmt.Sprint("k", i) })
			seen := map[string]int{}
			deleted := map[string]bool{}
			tok, refused := "", false
			for i := 0; ; i++ {
				require.Less(t, i, 100, "the walk ends")
				p := c.NewQueryPager(db, store.Query{Text: q}, &router.QueryOptions{PageSize: 3, MaxBufferedItemCount: 40, Continuation: tok})
				page, err := p.NextPage(ctx)
				if err != nil {
					require.ErrorIs(t, err, router.ErrBadContinuation)
					refused = true
					break
				}
				for _, raw := range page.Items {
					var u struct{ ID string }
					require.NoError(t, json.Unmarshal(raw, &u))
					seen[u.ID]++
				}
				if tok = page.Continuation; tok == "" {
					break
				}
				// Delete the first document of this page (returned already),
				// then evict the store's cursor with another query.
				var u struct{ ID string }
				require.NoError(t, json.Unmarshal(page.Items[0], &u))
				switch {
				case tc.replace:
					var i int
					_, _ = fmt.Sscan(u.ID, &i)
					_, err := c.Replace(ctx, db, u.ID, user{ID: u.ID, UserID: "k" + u.ID, Age: i % 50, Name: "again"}, nil)
					require.NoError(t, err)
				case !deleted[u.ID]:
					deleted[u.ID] = true
					require.NoError(t, c.Delete(ctx, db, u.ID, "k"+u.ID, nil))
				}
				_, err = st.Query(ctx, "dbs/app/colls/u0", store.Query{Text: "SELECT VALUE 1 FROM c"}, &store.QueryOptions{PageSize: 1})
				require.NoError(t, err)
			}
			for id, n := range seen {
				assert.Equal(t, 1, n, "document %s returned %d times", id, n)
			}
			if refused {
				t.Logf("refused after %d documents: %v", len(seen), "ErrBadContinuation")
				return // refused, not answered wrongly
			}
			for i := range 40 {
				id := fmt.Sprint(i)
				if !deleted[id] {
					assert.Equal(t, 1, seen[id], "document %s existed throughout the walk and was returned %d times", id, seen[id])
				}
			}
		})
	}
}
