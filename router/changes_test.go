package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
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

// feedCalls is a memstore counting the calls a change-feed read makes.
type feedCalls struct {
	*memstore.Store
	queries, feeds atomic.Int64
}

func (s *feedCalls) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	s.queries.Add(1)
	return s.Store.Query(ctx, l, q, o)
}

func (s *feedCalls) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	s.feeds.Add(1)
	return s.Store.ReadChanges(ctx, l, o)
}

// TestChangesFromNowCost: a consumer starting at the present costs one
// change-feed read per collection the database names now, and no read of
// the state's history, however long that history is (versions that named
// other collections: nothing is written there after now).
func TestChangesFromNowCost(t *testing.T) {
	st := &feedCalls{Store: memstore.New(nil)}
	t.Cleanup(func() { _ = st.Close() })
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	for _, n := range []int{5, 3, 4} { // versions that named other collections
		s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, n), NewEpoch: true})
		require.NoError(t, err)
	}
	c := router.New(st, nil)
	require.NoError(t, c.Register(db, ring(t, 4)))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)

	st.queries.Store(0)
	st.feeds.Store(0)
	p, err := c.Changes(ctx, db, &router.ChangeOptions{FromNow: true})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.True(t, p.CaughtUp)
	require.Equal(t, int64(0), st.queries.Load(), "queries (the state's history) for a feed from now")
	require.Equal(t, int64(4), st.feeds.Load(), "change-feed reads for a feed from now over 4 collections")

	// The position it returned reads what is written after it, once.
	_, err = c.Create(ctx, db, []byte(`{"id":"after","userId":"u"}`), nil)
	require.NoError(t, err)
	p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: p.Continuation})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
}

// stateReads counts the point reads of documents a client makes.
type stateReads struct {
	*feedCalls
	reads atomic.Int64
}

func (s *stateReads) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	s.reads.Add(1)
	return s.Store.Read(ctx, l, id, o)
}

// TestChangesKeptView: a consumer polling with the token it was given
// costs one read of the state a call, and a change of the state between
// two calls is still seen (a collection a new resolver names joins the
// feed from its beginning).
func TestChangesKeptView(t *testing.T) {
	st := &stateReads{feedCalls: &feedCalls{Store: memstore.New(nil)}}
	t.Cleanup(func() { _ = st.Close() })
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	c := router.New(st, nil)
	require.NoError(t, c.Register(db, ring(t, 2)))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	for i := range 10 {
		_, err := c.Create(ctx, db, []byte(fmt.Sprintf(`{"id":"d%d","userId":"u%d"}`, i, i)), nil)
		require.NoError(t, err)
	}
	p, err := c.Changes(ctx, db, nil)
	require.NoError(t, err)
	require.Len(t, p.Items, 10)

	st.reads.Store(0)
	given := p.Continuation
	p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: given})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.Equal(t, int64(1), st.reads.Load(), "point reads (of the state) for a poll")
	require.Equal(t, given, p.Continuation, "a poll that moved nothing returns the token it was given")

	// A third collection, written before the state names it: the feed
	// must read it from its beginning once the state does.
	three := ring(t, 3)
	c3 := router.New(st, nil)
	require.NoError(t, c3.Register(db, three))
	_, err = c3.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, links(3)[2], []byte(`{"id":"new","userId":"x"}`), nil)
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: three, NewEpoch: true})
	require.NoError(t, err)
	var got []string
	cont := p.Continuation
	for {
		p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont})
		require.NoError(t, err)
		for _, it := range p.Items {
			got = append(got, string(it))
		}
		cont = p.Continuation
		if p.CaughtUp {
			break
		}
	}
	require.Len(t, got, 1)
	require.Contains(t, got[0], `"id":"new"`)
}

// remoteFeed is a memstore whose change-feed reads take a round trip (so
// Changes reads the collections at once), and fail for one collection
// when fail is set.
type remoteFeed struct {
	*memstore.Store
	fail string
}

var errFeedDown = errors.New("feed down")

func (s *remoteFeed) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	time.Sleep(time.Millisecond) // a round trip: selects the concurrent reads, not a wait for anything
	if l == s.fail {
		return nil, fmt.Errorf("%s: %w", l, errFeedDown)
	}
	return s.Store.ReadChanges(ctx, l, o)
}

// TestChangesRemoteStore: over a store that answers in round trips the
// collections are read at once; the page holds every document once, in
// each collection's order, and one collection's failure fails the call
// with its error (and no token).
func TestChangesRemoteStore(t *testing.T) {
	tests := []struct {
		name string
		fail string
	}{
		{name: "every collection answers"},
		{name: "one fails", fail: links(5)[3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &remoteFeed{Store: memstore.New(nil)}
			t.Cleanup(func() { _ = st.Close() })
			c := router.New(st, nil)
			require.NoError(t, c.Register(db, ring(t, 5)))
			_, err := c.EnsureCollections(ctx, db, nil)
			require.NoError(t, err)
			want := map[string]bool{}
			for i := range 40 {
				id := fmt.Sprintf("d%d", i)
				_, err := c.Create(ctx, db, []byte(fmt.Sprintf(`{"id":%q,"userId":"u%d"}`, id, i)), nil)
				require.NoError(t, err)
				want[id] = true
			}
			st.fail = tt.fail
			p, err := c.Changes(ctx, db, &router.ChangeOptions{PageSize: 100})
			if tt.fail != "" {
				require.ErrorIs(t, err, errFeedDown)
				require.ErrorContains(t, err, tt.fail)
				require.Nil(t, p)
				return
			}
			require.NoError(t, err)
			got := map[string]bool{}
			for _, it := range p.Items {
				var d struct{ ID string }
				require.NoError(t, json.Unmarshal(it, &d))
				require.False(t, got[d.ID], "document %s twice", d.ID)
				got[d.ID] = true
			}
			require.Equal(t, want, got)
			p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: p.Continuation})
			require.NoError(t, err)
			require.Empty(t, p.Items)
			require.True(t, p.CaughtUp)
		})
	}
}

// presentReads is a memstore recording, per collection, whether a
// change-feed read found its present (an empty page) since reset.
type presentReads struct {
	*memstore.Store
	mu      sync.Mutex
	present map[string]bool
	again   []string // collections read again after their present, since reset
}

func (s *presentReads) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.present, s.again = map[string]bool{}, nil
}

func (s *presentReads) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	p, err := s.Store.ReadChanges(ctx, l, o)
	if err != nil {
		return p, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.present[l] {
		s.again = append(s.again, l)
	}
	if len(p.Items) == 0 {
		s.present[l] = true
	}
	return p, nil
}

// TestChangesCatchUpReadsOnce: the call of a database's change feed that
// ends a catch-up (the collections read one after another to their
// present after a change of placement) does not read those collections
// again in the same call; the feed still returns every document once and
// says it caught up.
func TestChangesCatchUpReadsOnce(t *testing.T) {
	tests := []struct {
		name     string
		pageSize int
	}{
		{name: "one call catches every collection up", pageSize: 1000},
		{name: "the catch-up spans calls", pageSize: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &presentReads{Store: memstore.New(nil)}
			t.Cleanup(func() { _ = st.Close() })
			c := router.New(st, nil)
			f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(t, 4)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = f.Close() })
			_, err = c.EnsureCollections(ctx, db, nil)
			require.NoError(t, err)
			const docs = 200
			for i := range docs {
				_, err := c.Create(ctx, db, []byte(fmt.Sprintf(`{"id":"d%d","userId":"u%d"}`, i, i)), nil)
				require.NoError(t, err)
			}
			seen, cont, calls := map[string]bool{}, "", 0
			for {
				st.reset()
				p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: tt.pageSize})
				require.NoError(t, err)
				calls++
				assert.Empty(t, st.again, "call %d read these collections again after their present", calls)
				for _, it := range p.Items {
					var d struct{ ID string }
					require.NoError(t, json.Unmarshal(it, &d))
					assert.False(t, seen[d.ID], "document %s twice", d.ID)
					seen[d.ID] = true
				}
				cont = p.Continuation
				if p.CaughtUp {
					break
				}
			}
			assert.Len(t, seen, docs)
			// A poll at the present reads each collection once.
			st.reset()
			p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont})
			require.NoError(t, err)
			assert.Empty(t, p.Items)
			assert.True(t, p.CaughtUp)
			assert.Empty(t, st.again)
			assert.Len(t, st.present, 4)
		})
	}
}
