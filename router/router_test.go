package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/lookup"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

var ctx = context.Background()

const db = "dbs/app"

func links(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("dbs/app/colls/u%d", i)
	}
	return out
}

func ring(t testing.TB, n int) *hashring.Resolver {
	r, err := hashring.New(links(n), &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	return r
}

// setup returns a client over a fresh memstore with n hash-routed
// collections created.
func setup(t testing.TB, n int, st store.Store) *router.Client {
	if st == nil {
		st = memstore.New(nil)
	}
	c := router.New(st, nil)
	require.NoError(t, c.Register(db, ring(t, n)))
	created, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	require.Len(t, created, n)
	return c
}

type user struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	Name   string `json:"name"`
	Age    int    `json:"age"`
}

func TestCRUDRoutesByKey(t *testing.T) {
	c := setup(t, 4, nil)
	r := ring(t, 4)
	forms := []any{
		user{ID: "1", UserID: "alice", Name: "Alice", Age: 30},
		map[string]any{"id": "2", "userId": "bob", "name": "Bob"},
		[]byte(`{"id":"3","userId":"carol","name":"Carol"}`),
		json.RawMessage(`{"id":"4","userId":"dave","name":"Dave"}`),
	}
	for _, doc := range forms {
		d, err := c.Create(ctx, db, doc, nil)
		require.NoError(t, err, "%T", doc)
		assert.NotEmpty(t, d.ETag)
	}
	for id, key := range map[string]string{"1": "alice", "2": "bob", "3": "carol", "4": "dave"} {
		want, _ := r.ResolveForCreate(key)
		d, err := c.Store().Read(ctx, want, id, &store.ReadOptions{PartitionKey: key})
		require.NoError(t, err, "document %s sits in %s", id, want)
		got, err := c.Read(ctx, db, id, key)
		require.NoError(t, err)
		assert.Equal(t, d.ETag, got.ETag)
	}
	// Upsert, replace, delete.
	_, err := c.Upsert(ctx, db, user{ID: "1", UserID: "alice", Name: "Alice B", Age: 31}, nil)
	require.NoError(t, err)
	d, err := c.Read(ctx, db, "1", "alice")
	require.NoError(t, err)
	_, err = c.Replace(ctx, db, "1", user{ID: "1", UserID: "alice", Name: "Alice C"}, &router.ReplaceOptions{IfMatch: d.ETag})
	require.NoError(t, err)
	_, err = c.Replace(ctx, db, "1", user{ID: "1", UserID: "alice", Name: "stale"}, &router.ReplaceOptions{IfMatch: d.ETag})
	assert.ErrorIs(t, err, store.ErrPreconditionFailed)
	require.NoError(t, c.Delete(ctx, db, "2", "bob", nil))
	_, err = c.Read(ctx, db, "2", "bob")
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.ErrorIs(t, c.Delete(ctx, db, "2", "bob", nil), store.ErrNotFound)
	_, err = c.Create(ctx, db, user{ID: "1", UserID: "alice"}, nil)
	assert.ErrorIs(t, err, store.ErrConflict)
}

func TestReplaceMovesAChangedKey(t *testing.T) {
	c := setup(t, 8, nil)
	r := ring(t, 8)
	// Two keys that the ring places in different collections.
	from, to := "alice", ""
	la, _ := r.ResolveForCreate(from)
	for i := 0; to == ""; i++ {
		k := fmt.Sprint("user", i)
		if l, _ := r.ResolveForCreate(k); l != la {
			to = k
		}
	}
	_, err := c.Create(ctx, db, user{ID: "x", UserID: from, Name: "before"}, nil)
	require.NoError(t, err)
	_, err = c.Replace(ctx, db, "x", user{ID: "x", UserID: to, Name: "after"}, &router.ReplaceOptions{OldKey: from})
	require.NoError(t, err)
	_, err = c.Read(ctx, db, "x", from)
	assert.ErrorIs(t, err, store.ErrNotFound, "the old copy is gone")
	d, err := c.Read(ctx, db, "x", to)
	require.NoError(t, err)
	assert.Contains(t, string(d.Body), "after")
	// Exactly one copy in the whole database.
	n := 0
	for _, l := range links(8) {
		page, err := c.Store().Query(ctx, l, store.Query{Text: `SELECT VALUE c.id FROM c WHERE c.id = "x"`}, nil)
		require.NoError(t, err)
		n += len(page.Items)
	}
	assert.Equal(t, 1, n, "moved, not duplicated")
}

func TestBadInput(t *testing.T) {
	c := setup(t, 3, nil)
	_, err := c.Create(ctx, "dbs/nope", user{ID: "1", UserID: "a"}, nil)
	assert.ErrorIs(t, err, router.ErrUnknownDatabase)
	_, err = c.Read(ctx, "dbs/nope", "1", "a")
	assert.ErrorIs(t, err, router.ErrUnknownDatabase)
	_, err = c.Create(ctx, "not a link", user{ID: "1", UserID: "a"}, nil)
	assert.Error(t, err)
	_, err = c.Create(ctx, db, map[string]any{"id": "1"}, nil)
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey, "a document without its key")
	_, err = c.Create(ctx, db, []byte(`{"id": "1", "userId": `), nil)
	assert.Error(t, err)
	_, err = c.Create(ctx, db, nil, nil)
	assert.Error(t, err)
	_, err = c.Read(ctx, db, "1", nil)
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	_, err = c.Create(ctx, db, []byte(`{"id": "a/b", "userId": "a"}`), nil)
	assert.ErrorIs(t, err, store.ErrBadRequest)
	_, err = c.Replace(ctx, db, "1", user{ID: "2", UserID: "a"}, nil)
	assert.ErrorIs(t, err, store.ErrBadRequest)

	for _, tc := range []struct {
		sql  string
		want error
	}{
		{"SELEC * FROM c", nil},
		{"SELECT VALUE FOO(c.x) FROM c", query.ErrCompile},
		{"SELECT DISTINCT VALUE c.a FROM c ORDER BY c.b", query.ErrUnmergeable},
	} {
		_, err := c.Query(ctx, db, store.Query{Text: tc.sql}, nil)
		require.Error(t, err, tc.sql)
		if tc.want != nil {
			assert.ErrorIs(t, err, tc.want, tc.sql)
		} else {
			var se *query.SyntaxError
			assert.True(t, errors.As(err, &se), "%T %v", err, err)
		}
	}
	for _, tok := range []string{"garbage", "eyJ2IjoxfQ", ""} {
		if tok == "" {
			continue
		}
		p := c.NewQueryPager(db, store.Query{Text: "SELECT * FROM c"}, &router.QueryOptions{Continuation: tok})
		_, err := p.NextPage(ctx)
		assert.ErrorIs(t, err, router.ErrBadContinuation, tok)
	}
	// A token of another query.
	for i := 0; i < 10; i++ {
		_, err := c.Create(ctx, db, user{ID: fmt.Sprint(i), UserID: fmt.Sprint("u", i)}, nil)
		require.NoError(t, err)
	}
	p := c.NewQueryPager(db, store.Query{Text: "SELECT * FROM c"}, &router.QueryOptions{PageSize: 2})
	page, err := p.NextPage(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, page.Continuation)
	p = c.NewQueryPager(db, store.Query{Text: "SELECT c.id FROM c"}, &router.QueryOptions{PageSize: 2, Continuation: page.Continuation})
	_, err = p.NextPage(ctx)
	assert.ErrorIs(t, err, router.ErrBadContinuation)
}

// throttling wraps a store and answers the first n calls of each
// operation with ErrThrottled.
type throttling struct {
	store.Store
	left  atomic.Int32
	calls atomic.Int32
}

func (s *throttling) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	s.calls.Add(1)
	if s.left.Add(-1) >= 0 {
		return nil, &store.Error{Kind: store.ErrThrottled, Op: "read", Link: l, RetryAfter: 5 * time.Millisecond}
	}
	return s.Store.Read(ctx, l, id, o)
}

func TestThrottlingIsRetried(t *testing.T) {
	ts := &throttling{Store: memstore.New(nil)}
	var retries atomic.Int32
	c := router.New(ts, &router.Options{Retry: router.RetryPolicy{MaxAttempts: 4}, Hooks: router.Hooks{
		Retry: func(l, op string, attempt int, wait time.Duration) {
			retries.Add(1)
			assert.Equal(t, 5*time.Millisecond, wait, "the store's retry-after is honoured")
		},
	}})
	require.NoError(t, c.Register(db, ring(t, 2)))
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, db, user{ID: "1", UserID: "a"}, nil)
	require.NoError(t, err)

	ts.left.Store(3)
	_, err = c.Read(ctx, db, "1", "a")
	require.NoError(t, err, "three throttles then success within four attempts")
	assert.EqualValues(t, 3, retries.Load())

	ts.left.Store(10)
	ts.calls.Store(0)
	_, err = c.Read(ctx, db, "1", "a")
	assert.ErrorIs(t, err, store.ErrThrottled, "bounded: gives up after MaxAttempts")
	assert.EqualValues(t, 4, ts.calls.Load())

	ts.left.Store(10)
	short, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
	defer cancel()
	_, err = router.New(ts, &router.Options{Retry: router.RetryPolicy{MaxAttempts: 100}}).Read(short, db, "1", "a")
	assert.Error(t, err)
}

func TestResolverSwapUnderTraffic(t *testing.T) {
	st := memstore.New(nil)
	c := router.New(st, nil)
	small, big := ring(t, 2), ring(t, 6)
	require.NoError(t, c.Register(db, big))
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	require.NoError(t, c.Register(db, small))
	var wg sync.WaitGroup
	var failures, written atomic.Int32
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := c.Create(ctx, db, user{ID: id, UserID: id}, nil); err != nil {
					failures.Add(1)
					t.Errorf("create during swaps: %v", err)
					return
				}
				written.Add(1)
			}
		}()
	}
	for i := 0; i < 200; i++ {
		time.Sleep(200 * time.Microsecond)
		if i%2 == 0 {
			require.NoError(t, c.Register(db, big))
		} else {
			require.NoError(t, c.Register(db, small))
		}
	}
	close(stop)
	wg.Wait()
	assert.Zero(t, failures.Load(), "no request lost while the resolver was swapped 200 times")
	// Every written document is in one of the six collections, once.
	total := 0
	for _, l := range links(6) {
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		total += int(info.Documents)
	}
	assert.Positive(t, total)
	assert.EqualValues(t, written.Load(), total, "every acknowledged create is stored, once")
}

// failing wraps a store and fails every query on one collection.
type failing struct {
	store.Store
	bad string
}

func (s *failing) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	if l == s.bad {
		return nil, &store.Error{Kind: store.ErrUnavailable, Op: "query", Link: l, Message: "injected"}
	}
	return s.Store.Query(ctx, l, q, o)
}

func TestPartialResults(t *testing.T) {
	fs := &failing{Store: memstore.New(nil), bad: "dbs/app/colls/u1"}
	c := setup(t, 3, fs)
	for i := 0; i < 60; i++ {
		_, err := c.Create(ctx, db, user{ID: fmt.Sprint(i), UserID: fmt.Sprint("k", i)}, nil)
		require.NoError(t, err)
	}
	_, err := c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, nil)
	assert.ErrorIs(t, err, store.ErrUnavailable, "by default a failing collection fails the query")

	items, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE c.id FROM c ORDER BY c.id"}, &router.QueryOptions{PartialResults: true, MaxDegreeOfParallelism: -1})
	var pe *router.PartialError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.ErrorIs(t, err, router.ErrPartialResults)
	assert.Contains(t, pe.Failed, "dbs/app/colls/u1")
	assert.NotEmpty(t, items)
	assert.Less(t, len(items), 60)
}

func TestHooks(t *testing.T) {
	var width, docs atomic.Int32
	var calls atomic.Int32
	c := router.New(memstore.New(nil), &router.Options{MaxDegreeOfParallelism: -1, Hooks: router.Hooks{
		FanOut:    func(_ string, w int) { width.Store(int32(w)) },
		Documents: func(_ string, n int) { docs.Add(int32(n)) },
		Call: func(l, op string, d time.Duration, err error) {
			calls.Add(1)
			assert.GreaterOrEqual(t, d, time.Duration(0))
		},
	}})
	require.NoError(t, c.Register(db, ring(t, 5)))
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		_, err := c.Create(ctx, db, user{ID: fmt.Sprint(i), UserID: fmt.Sprint("k", i)}, nil)
		require.NoError(t, err)
	}
	items, err := c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, nil)
	require.NoError(t, err)
	assert.Len(t, items, 20)
	assert.EqualValues(t, 5, width.Load())
	assert.EqualValues(t, 20, docs.Load())
	assert.GreaterOrEqual(t, calls.Load(), int32(20+5+5))
}

func TestKeyedQueryNarrowsFanOut(t *testing.T) {
	var width atomic.Int32
	st := memstore.New(nil)
	c := router.New(st, &router.Options{Hooks: router.Hooks{FanOut: func(_ string, w int) { width.Store(int32(w)) }}})
	ten, err := lookup.New(resolver.MustKeyDef("/userId"), map[string]resolver.Target{
		"vip": resolver.LinkTarget("dbs/app/colls/vip"),
	}, resolver.ResolverTarget(ring(t, 4)))
	require.NoError(t, err)
	require.NoError(t, c.Register(db, ten))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	for i := 0; i < 30; i++ {
		key := fmt.Sprint("k", i%5)
		if i%3 == 0 {
			key = "vip"
		}
		_, err := c.Create(ctx, db, user{ID: fmt.Sprint(i), UserID: key}, nil)
		require.NoError(t, err)
	}
	items, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE c.userId FROM c"}, &router.QueryOptions{PartitionKey: "vip"})
	require.NoError(t, err)
	assert.EqualValues(t, 1, width.Load())
	assert.Len(t, items, 10)
	for _, it := range items {
		assert.JSONEq(t, `"vip"`, string(it))
	}
	items, err = c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 5, width.Load())
	assert.JSONEq(t, `[30]`, "["+string(items[0])+"]")
}

type hashringResolver = hashring.Resolver

func newRing(links []string) (*hashring.Resolver, error) {
	return hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
}
