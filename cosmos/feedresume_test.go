package cosmos_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/store"
)

// TestReadFeedThroughServeResumesByPosition is issue 27's finding 1: a
// read-feed walk through docshard serve (which answers it as a query,
// paged by its store's cursors) that deletes documents it has walked
// must return every document never deleted exactly once, though serve's
// cursor of the walk is evicted between pages (another client's
// one-page queries on the same serve) or serve restarts over the same
// durable store.
func TestReadFeedThroughServeResumesByPosition(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			ctx := emulatortest.Context(t)
			dir := t.TempDir()
			opts := &emulatortest.Options{}
			if restart {
				opts.Dir = dir
			}
			srv := emulatortest.Start(t, opts)
			st, err := emulatortest.Backend(ctx, srv.Endpoint)
			require.NoError(t, err)
			const l, other = "dbs/feedresume/colls/walk", "dbs/feedother/colls/c"
			for _, c := range []string{l, other} {
				require.NoError(t, st.CreateCollection(ctx, c, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
			}
			const n = 350
			for i := range n {
				_, err := st.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%03d","pk":"k%d"}`, i, i%7), nil)
				require.NoError(t, err)
			}
			for i := range 3 {
				_, err := st.Create(ctx, other, fmt.Appendf(nil, `{"id":"o%d","pk":"p"}`, i), nil)
				require.NoError(t, err)
			}
			between := func() { // another client's one-page queries: more than serve keeps cursors for
				for range 270 {
					page, err := st.Query(ctx, other, store.Query{Text: "SELECT c.id FROM c"}, &store.QueryOptions{PageSize: 1})
					require.NoError(t, err)
					require.NotEmpty(t, page.Continuation)
				}
			}
			if restart {
				between = func() {
					st.Close()
					require.NoError(t, srv.Close())
					srv = emulatortest.Start(t, opts)
					st, err = emulatortest.Backend(ctx, srv.Endpoint)
					require.NoError(t, err)
				}
			}
			t.Cleanup(func() { st.Close() })
			seen, deleted := map[string]int{}, map[string]bool{}
			opts2 := &store.FeedOptions{PageSize: 10}
			for i := 0; ; i++ {
				require.Less(t, i, 1000, "the walk ends")
				page, err := st.(store.Feeder).ReadFeed(ctx, l, opts2)
				require.NoError(t, err, "page %d", i)
				for j, raw := range page.Items {
					var doc struct{ ID, PK string }
					require.NoError(t, json.Unmarshal(raw, &doc))
					seen[doc.ID]++
					if j%2 == 0 && !deleted[doc.ID] {
						require.NoError(t, st.Delete(ctx, l, doc.ID, &store.WriteOptions{PartitionKey: doc.PK}))
						deleted[doc.ID] = true
					}
				}
				if page.Continuation == "" {
					break
				}
				opts2.Continuation = page.Continuation
				between()
			}
			var skipped, twice int
			for i := range n {
				id := fmt.Sprintf("d%03d", i)
				switch {
				case seen[id] > 1:
					twice++
				case seen[id] == 0 && !deleted[id]:
					skipped++
				}
			}
			assert.Zero(t, twice, "documents returned twice")
			assert.Zero(t, skipped, "documents never deleted, never returned, of %d", n)
		})
	}
}

// TestQueryResumesByPosition: the backend's pages of a query (evaluated
// here, QueryLocal; or, QueryAuto, the simple ones run by docshard serve)
// resume after their last row once the results kept for them are gone,
// whatever was deleted since (localquerytest.ResumeByPosition).
func TestQueryResumesByPosition(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	for _, mode := range []cosmos.QueryMode{cosmos.QueryLocal, cosmos.QueryAuto} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			ctx := emulatortest.Context(t)
			s, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint, Key: emulatortest.Key}, QueryMode: mode})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			l := fmt.Sprintf("dbs/resume/colls/m%d", mode)
			require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
			localquerytest.ResumeByPosition(t, func() store.Store { return s }, l, func() { cosmos.ForgetCursors(s) })
		})
	}
}
