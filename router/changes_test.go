package router_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// feedDoc is a document of the change-feed tests: V counts its writes.
type feedDoc struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	V      int    `json:"v"`
}

// feedView is what a consumer of a database's change feed holds: each
// document's last version seen, and every (id, v) seen.
type feedView struct {
	last map[string]int
	seen map[string]bool
}

func newFeedView() *feedView { return &feedView{last: map[string]int{}, seen: map[string]bool{}} }

// apply takes a page: a document's versions must come in order.
func (v *feedView) apply(t *testing.T, items []json.RawMessage) {
	t.Helper()
	for _, it := range items {
		var d feedDoc
		require.NoError(t, json.Unmarshal(it, &d))
		if prev, ok := v.last[d.ID]; ok {
			require.Greater(t, d.V, prev, "document %s: version %d after %d", d.ID, d.V, prev)
		}
		v.last[d.ID] = d.V
		v.seen[fmt.Sprintf("%s@%d", d.ID, d.V)] = true
	}
}

// drainFeed reads c's feed from cont until a page is caught up and returns
// the position.
func drainFeed(t *testing.T, c *router.Client, v *feedView, cont string) string {
	t.Helper()
	for {
		p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 7})
		require.NoError(t, err)
		require.NotEmpty(t, p.Continuation)
		v.apply(t, p.Items)
		cont = p.Continuation
		if p.CaughtUp {
			return cont
		}
	}
}

// dbView reads every document of the database through c: id → v.
func dbView(t *testing.T, c *router.Client) map[string]int {
	t.Helper()
	rows, err := c.Query(ctx, db, store.Query{Text: "SELECT c.id, c.v FROM c"}, nil)
	require.NoError(t, err)
	out := map[string]int{}
	for _, r := range rows {
		var d feedDoc
		require.NoError(t, json.Unmarshal(r, &d))
		out[d.ID] = d.V
	}
	return out
}

// TestChangesResume: a database's feed gives every document of every
// collection once, resumes from its token in another client, starts at
// the present with FromNow, and refuses a token of another database or a
// query's.
func TestChangesResume(t *testing.T) {
	st := newMem(t)
	c := setup(t, 3, st, nil)
	for i := range 40 {
		_, err := c.Create(ctx, db, feedDoc{ID: fmt.Sprint(i), UserID: fmt.Sprint("k", i), V: 1}, nil)
		require.NoError(t, err)
	}
	now, err := c.Changes(ctx, db, &router.ChangeOptions{FromNow: true})
	require.NoError(t, err)
	assert.Empty(t, now.Items)
	assert.True(t, now.CaughtUp)

	v := newFeedView()
	cont := drainFeed(t, c, v, "")
	assert.Len(t, v.last, 40)

	other := router.New(st, nil) // another process, in effect
	require.NoError(t, other.Register(db, ring(t, 3)))
	for i := range 10 {
		_, err := c.Upsert(ctx, db, feedDoc{ID: fmt.Sprint(i), UserID: fmt.Sprint("k", i), V: 2}, nil)
		require.NoError(t, err)
	}
	later := newFeedView()
	drainFeed(t, other, later, cont)
	assert.Len(t, later.last, 10, "only what was written after the token")
	fromNow := newFeedView()
	drainFeed(t, other, fromNow, now.Continuation)
	assert.Equal(t, later.last, fromNow.last, "FromNow's token reads what was written after it")

	require.NoError(t, other.Register("dbs/other", ring(t, 3)))
	_, err = other.Changes(ctx, "dbs/other", &router.ChangeOptions{Continuation: cont})
	require.ErrorIs(t, err, router.ErrBadContinuation)
	pager := c.NewQueryPager(db, store.Query{Text: "SELECT * FROM c"}, &router.QueryOptions{PageSize: 3})
	qp, err := pager.NextPage(ctx)
	require.NoError(t, err)
	_, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: qp.Continuation})
	require.ErrorIs(t, err, router.ErrBadContinuation, "a query's token")
	_, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: "garbage"})
	require.ErrorIs(t, err, router.ErrBadContinuation)
	_, err = c.Changes(ctx, db, &router.ChangeOptions{PageSize: -1})
	require.Error(t, err)
}

// TestChangesOracle: the same writes (creates, upserts, replaces,
// deletes) against 1, 3 and 7 collections while a consumer reads the
// database's feed: every document's versions come in order, every write
// that is still the document's last is seen, and the consumer ends with
// the database's view, the same for every width.
func TestChangesOracle(t *testing.T) {
	var views []map[string]int
	for _, n := range []int{1, 3, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := setup(t, n, nil, nil)
			v := newFeedView()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			cont := ""
			go func() { // the consumer, concurrent with the writers
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 5})
					if !assert.NoError(t, err) {
						return
					}
					v.apply(t, p.Items)
					cont = p.Continuation
				}
			}()
			var writers sync.WaitGroup
			for w := range 4 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					ver, exists := map[string]int{}, map[string]bool{}
					for range 300 {
						id := fmt.Sprintf("w%d-%d", w, rng.IntN(40))
						doc := feedDoc{ID: id, UserID: "k" + id, V: ver[id] + 1}
						var err error
						switch op := rng.IntN(10); {
						case op < 6:
							_, err = c.Upsert(ctx, db, doc, nil)
						case op < 8 && exists[id]:
							_, err = c.Replace(ctx, db, id, doc, nil)
						case op < 8:
							_, err = c.Create(ctx, db, doc, nil)
						case exists[id]:
							// A document created again goes on from its deleted
							// versions, so the consumer's order holds.
							if assert.NoError(t, c.Delete(ctx, db, id, "k"+id, nil)) {
								exists[id] = false
							}
							continue
						default:
							continue
						}
						if assert.NoError(t, err) {
							ver[id], exists[id] = doc.V, true
						}
					}
				}()
			}
			writers.Wait()
			close(stop)
			wg.Wait()
			drainFeed(t, c, v, cont)
			want := dbView(t, c)
			for id, ver := range want {
				assert.Equal(t, ver, v.last[id], "document %s", id)
			}
			views = append(views, want)
		})
	}
	for _, w := range views[1:] {
		assert.Equal(t, views[0], w, "every width ends with the same documents")
	}
}
