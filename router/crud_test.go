package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func TestCRUDRoutesByKey(t *testing.T) {
	for _, cache := range []int{0, -1, 1} { // default, none, one slot (constant eviction)
		t.Run(fmt.Sprint("cache", cache), func(t *testing.T) {
			c := setup(t, 4, nil, &router.Options{RouteCacheSize: cache})
			r := ring(t, 4)
			forms := []any{
				user{ID: "1", UserID: "alice", Name: "Alice", Age: 30},
				map[string]any{"id": "2", "userId": "bob", "name": "Bob"},
				[]byte(`{"id":"3","userId":"carol","name":"Carol"}`),
				json.RawMessage(`{"id":"4","userId":"dave","name":"Dave"}`),
				[]byte(`{"id":"5","userId":"caf\u00e9","name":"escaped key"}`),
				&user{ID: "6", UserID: "alice", Name: "pointer"},
				`{"id":"7","userId":"erin","name":"a Go string holds JSON text"}`,
			}
			for _, doc := range forms {
				d, err := c.Create(ctx, db, doc, nil)
				require.NoError(t, err, "%T", doc)
				assert.NotEmpty(t, d.ETag)
			}
			for id, key := range map[string]string{"1": "alice", "2": "bob", "3": "carol", "4": "dave", "5": "café", "6": "alice", "7": "erin"} {
				want, _ := r.ResolveForCreate(key)
				d, err := c.Store().Read(ctx, want, id, &store.ReadOptions{PartitionKey: key})
				require.NoError(t, err, "document %s sits in %s", id, want)
				for range 2 { // the second read comes from the route cache
					got, err := c.Read(ctx, db, id, key)
					require.NoError(t, err)
					assert.Equal(t, d.ETag, got.ETag)
				}
			}
			_, err := c.Upsert(ctx, db, user{ID: "1", UserID: "alice", Name: "Alice B", Age: 31}, nil)
			require.NoError(t, err)
			d, err := c.Read(ctx, db, "1", "alice")
			require.NoError(t, err)
			assert.Contains(t, string(d.Body), "Alice B")
			_, err = c.Upsert(ctx, db, user{ID: "1", UserID: "alice", Name: "stale"}, &router.WriteOptions{IfMatch: `"nope"`})
			assert.ErrorIs(t, err, store.ErrPreconditionFailed)
			_, err = c.Replace(ctx, db, "1", user{ID: "1", UserID: "alice", Name: "Alice C"}, &router.ReplaceOptions{IfMatch: d.ETag})
			require.NoError(t, err)
			_, err = c.Replace(ctx, db, "1", user{ID: "1", UserID: "alice", Name: "stale"}, &router.ReplaceOptions{IfMatch: d.ETag})
			assert.ErrorIs(t, err, store.ErrPreconditionFailed)
			_, err = c.Replace(ctx, db, "404", user{ID: "404", UserID: "alice"}, nil)
			assert.ErrorIs(t, err, store.ErrNotFound)
			require.NoError(t, c.Delete(ctx, db, "2", "bob", nil))
			_, err = c.Read(ctx, db, "2", "bob")
			assert.ErrorIs(t, err, store.ErrNotFound)
			assert.ErrorIs(t, c.Delete(ctx, db, "2", "bob", nil), store.ErrNotFound)
			d3, err := c.Read(ctx, db, "3", "carol")
			require.NoError(t, err)
			assert.ErrorIs(t, c.Delete(ctx, db, "3", "carol", &router.WriteOptions{IfMatch: `"stale"`}), store.ErrPreconditionFailed)
			require.NoError(t, c.Delete(ctx, db, "3", "carol", &router.WriteOptions{IfMatch: d3.ETag}))
			_, err = c.Create(ctx, db, user{ID: "1", UserID: "alice"}, nil)
			assert.ErrorIs(t, err, store.ErrConflict)
		})
	}
}

func TestNumberAndCompositeKeys(t *testing.T) {
	st := newMem(t)
	c := router.New(st, nil)
	num, err := hashring.New([]string{"dbs/app/colls/n0", "dbs/app/colls/n1", "dbs/app/colls/n2"}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/k")})
	require.NoError(t, err)
	require.NoError(t, c.Register(db, num))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		_, err := c.Create(ctx, db, []byte(fmt.Sprintf(`{"id":"%d","k":%d}`, i, i)), nil)
		require.NoError(t, err)
	}
	for i := 0; i < 20; i++ {
		_, err := c.Read(ctx, db, fmt.Sprint(i), i) // an int finds what a JSON number placed
		require.NoError(t, err)
		_, err = c.Read(ctx, db, fmt.Sprint(i), float64(i))
		require.NoError(t, err)
	}
	items, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE c.id FROM c"}, &router.QueryOptions{PartitionKey: 7})
	require.NoError(t, err)
	assert.Equal(t, []json.RawMessage{json.RawMessage(`"7"`)}, items)

	comp, err := hashring.New([]string{"dbs/geo/colls/g0", "dbs/geo/colls/g1"}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/region", "/shop")})
	require.NoError(t, err)
	require.NoError(t, c.Register("dbs/geo", comp))
	_, err = c.EnsureCollections(ctx, "dbs/geo", nil)
	require.NoError(t, err)
	info, err := st.CollectionInfo(ctx, "dbs/geo/colls/g0")
	require.NoError(t, err)
	assert.Equal(t, []string{"/region", "/shop"}, info.Spec.KeyPaths(), "a composite key makes hierarchical collections")
	_, err = c.Create(ctx, "dbs/geo", map[string]any{"id": "a", "region": "eu", "shop": 7.0}, nil)
	require.NoError(t, err)
	d, err := c.Read(ctx, "dbs/geo", "a", resolver.CompositeKey{"eu", 7.0})
	require.NoError(t, err)
	assert.Contains(t, string(d.Body), `"shop":7`)
	_, err = c.Replace(ctx, "dbs/geo", "a", map[string]any{"id": "a", "region": "eu", "shop": 8.0}, &router.ReplaceOptions{OldKey: resolver.CompositeKey{"eu", 7.0}})
	require.NoError(t, err)
	_, err = c.Read(ctx, "dbs/geo", "a", resolver.CompositeKey{"eu", 8.0})
	require.NoError(t, err)
}

// keysIn returns two keys the ring places in different collections.
func keysIn(t *testing.T, r resolver.Resolver) (string, string) {
	from := "alice"
	la, _ := r.ResolveForCreate(from)
	for i := 0; ; i++ {
		k := fmt.Sprint("user", i)
		if l, _ := r.ResolveForCreate(k); l != la {
			return from, k
		}
	}
}

// userToMove returns a client over st (8 hash-routed collections, opts)
// holding user "x" (Name "before") under the key from, and to, a key the
// ring places in another collection.
func userToMove(t *testing.T, st store.Store, opts *router.Options) (c *router.Client, x *store.Document, from, to string) {
	t.Helper()
	c = setup(t, 8, st, opts)
	from, to = keysIn(t, ring(t, 8))
	x, err := c.Create(ctx, db, user{ID: "x", UserID: from, Name: "before"}, nil)
	require.NoError(t, err)
	return c, x, from, to
}

func TestReplaceMovesAChangedKey(t *testing.T) {
	fs := &faulty{Store: newMem(t)}
	c, _, from, to := userToMove(t, fs, nil)

	_, err := c.Replace(ctx, db, "x", user{ID: "x", UserID: to, Name: "after"}, nil)
	require.ErrorIs(t, err, store.ErrNotFound, "without OldKey the router looks under the new key")
	assert.Contains(t, err.Error(), "OldKey")

	d, err := c.Read(ctx, db, "x", from)
	require.NoError(t, err)
	_, err = c.Replace(ctx, db, "x", user{ID: "x", UserID: to}, &router.ReplaceOptions{OldKey: from, IfMatch: `"stale"`})
	require.ErrorIs(t, err, store.ErrPreconditionFailed)
	moved, err := c.Replace(ctx, db, "x", user{ID: "x", UserID: to, Name: "after"}, &router.ReplaceOptions{OldKey: from, IfMatch: d.ETag})
	require.NoError(t, err)
	_, err = c.Read(ctx, db, "x", from)
	assert.ErrorIs(t, err, store.ErrNotFound, "the old copy is gone")
	got, err := c.Read(ctx, db, "x", to)
	require.NoError(t, err)
	assert.Equal(t, moved.ETag, got.ETag)
	assert.Contains(t, string(got.Body), "after")
	assert.Equal(t, 1, countDocs(t, fs, "x"), "moved, not duplicated")

	// A key change within one collection is a move too (another logical
	// partition), and a same-key replace is one store call.
	calls := fs.calls.Load()
	_, err = c.Replace(ctx, db, "x", user{ID: "x", UserID: to, Name: "again"}, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 1, fs.calls.Load()-calls, "an unmoved replace is one store call")
}

func TestReplaceMoveFailures(t *testing.T) {
	injected := &store.Error{Kind: store.ErrUnavailable, Op: "injected"}
	for _, tc := range []struct {
		name      string
		fail      func(op string) error // given the op, after the document was read
		duplicate bool                  // both copies stay
		wantErr   error
	}{
		{"create at the target fails", func(op string) error {
			if op == "create" {
				return injected
			}
			return nil
		}, false, store.ErrUnavailable},
		{"deleting the old copy has an unknown outcome", func(op string) error {
			if op == "delete" {
				return injected
			}
			return nil
		}, true, store.ErrUnavailable},
		{"the old copy changed meanwhile", func(op string) error {
			if op == "delete" {
				return &store.Error{Kind: store.ErrPreconditionFailed, Op: "delete"}
			}
			return nil
		}, false, store.ErrPreconditionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &faulty{Store: newMem(t)}
			c, before, from, to := userToMove(t, fs, &router.Options{Retry: router.RetryPolicy{MaxAttempts: 1}})
			var once atomic.Bool
			fs.fail = func(op, l, id string) error {
				if op == "read" || once.Load() {
					return nil
				}
				if err := tc.fail(op); err != nil {
					once.Store(true)
					return err
				}
				return nil
			}
			_, err := c.Replace(ctx, db, "x", user{ID: "x", UserID: to, Name: "after"}, &router.ReplaceOptions{OldKey: from})
			fs.fail = nil
			var me *router.MoveError
			require.ErrorAs(t, err, &me)
			assert.ErrorIs(t, err, tc.wantErr)
			assert.Equal(t, tc.duplicate, me.Duplicate, "%v", err)
			old, err := c.Read(ctx, db, "x", from)
			require.NoError(t, err, "never a loss: the old copy is there")
			assert.Equal(t, before.ETag, old.ETag, "and unchanged")
			_, err = c.Read(ctx, db, "x", to)
			if tc.duplicate {
				require.NoError(t, err, "the new copy stays: the old one's delete may have happened")
				assert.Equal(t, 2, countDocs(t, fs, "x"), "a detectable duplicate")
			} else {
				assert.ErrorIs(t, err, store.ErrNotFound, "nothing half-written")
				assert.Equal(t, 1, countDocs(t, fs, "x"))
			}
		})
	}
}

func TestTransitionReadsNextThenCurrent(t *testing.T) {
	st := newMem(t)
	c := router.New(st, nil)
	cur, next := ring(t, 2), ringOf(t, []string{"dbs/app/colls/n0", "dbs/app/colls/n1", "dbs/app/colls/n2"})
	require.NoError(t, c.Register(db, cur))
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	addUsers(t, c, 20, func(i int) string { return fmt.Sprint("k", i) })

	require.NoError(t, c.Register(db, twoPlace{current: cur, next: next}))
	created, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	assert.Len(t, created, 3, "only the new collections are created")
	for i := 0; i < 20; i++ {
		_, err := c.Read(ctx, db, fmt.Sprint(i), fmt.Sprint("k", i))
		require.NoError(t, err, "found in the current placement without the caller knowing")
	}
	// A replace moves the document to its next place.
	_, err = c.Replace(ctx, db, "3", user{ID: "3", UserID: "k3", Name: "moved"}, nil)
	require.NoError(t, err)
	nl, _ := next.ResolveForCreate("k3")
	_, err = st.Read(ctx, nl, "3", &store.ReadOptions{PartitionKey: "k3"})
	require.NoError(t, err)
	assert.Equal(t, 1, countDocs(t, st, "3"))
	// A copy in both places: the read prefers next, the delete removes
	// both.
	cl, _ := cur.ResolveForCreate("k5")
	nl, _ = next.ResolveForCreate("k5")
	_, err = st.Create(ctx, nl, []byte(`{"id":"5","userId":"k5","name":"next copy"}`), nil)
	require.NoError(t, err)
	d, err := c.Read(ctx, db, "5", "k5")
	require.NoError(t, err)
	assert.Contains(t, string(d.Body), "next copy")
	require.NoError(t, c.Delete(ctx, db, "5", "k5", nil))
	for _, l := range []string{cl, nl} {
		_, err := st.Read(ctx, l, "5", &store.ReadOptions{PartitionKey: "k5"})
		assert.ErrorIs(t, err, store.ErrNotFound, l)
	}
}

func TestBadCRUDInput(t *testing.T) {
	fs := &faulty{Store: newMem(t)}
	c := setup(t, 3, fs, nil)
	calls := fs.calls.Load()
	_, err := c.Create(ctx, "dbs/nope", user{ID: "1", UserID: "a"}, nil)
	assert.ErrorIs(t, err, router.ErrUnknownDatabase)
	assert.Contains(t, err.Error(), "dbs/nope")
	assert.Contains(t, err.Error(), "registered: dbs/app")
	for _, call := range []func() error{
		func() error { _, err := c.Read(ctx, "dbs/nope", "1", "a"); return err },
		func() error { _, err := c.Replace(ctx, "dbs/nope", "1", user{ID: "1", UserID: "a"}, nil); return err },
		func() error { return c.Delete(ctx, "dbs/nope", "1", "a", nil) },
		func() error { _, err := c.EnsureCollections(ctx, "dbs/nope", nil); return err },
		func() error {
			_, err := c.Query(ctx, "dbs/nope", store.Query{Text: "SELECT * FROM c"}, nil)
			return err
		},
	} {
		assert.ErrorIs(t, call(), router.ErrUnknownDatabase)
	}
	_, err = c.Create(ctx, "not a link", user{ID: "1", UserID: "a"}, nil)
	assert.Error(t, err)
	assert.Error(t, c.Register("dbs/x/colls/y", ring(t, 1)), "a collection link is not a database link")
	assert.Error(t, c.Register("dbs/x", nil))

	for _, doc := range []any{
		map[string]any{"id": "1"},
		[]byte(`{"id": "1"}`),
		struct {
			ID string `json:"id"`
		}{"1"},
	} {
		_, err = c.Create(ctx, db, doc, nil)
		assert.ErrorIs(t, err, resolver.ErrNoPartitionKey, "%T: a document without its key", doc)
	}
	_, err = c.Create(ctx, db, []byte(`{"id": "1", "userId": `), nil)
	assert.Error(t, err, "malformed JSON")
	_, err = c.Create(ctx, db, nil, nil)
	assert.Error(t, err)
	_, err = c.Create(ctx, db, map[string]any{"id": "1", "userId": func() {}}, nil)
	assert.Error(t, err, "not encodable")
	_, err = c.Create(ctx, db, map[string]any{"id": "1", "userId": []any{1}}, nil)
	assert.ErrorIs(t, err, resolver.ErrKeyType)
	_, err = c.Read(ctx, db, "1", nil)
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	assert.ErrorIs(t, c.Delete(ctx, db, "1", nil, nil), resolver.ErrNoPartitionKey)
	_, err = c.Read(ctx, db, "1", struct{}{})
	assert.ErrorIs(t, err, resolver.ErrKeyType)
	_, err = c.Replace(ctx, db, "1", user{ID: "2", UserID: "a"}, nil)
	assert.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), `"2"`)
	_, err = c.Replace(ctx, db, "1", map[string]any{"userId": "a"}, nil)
	assert.ErrorIs(t, err, store.ErrBadRequest)
	assert.Equal(t, calls, fs.calls.Load(), "no bad input reached the store")

	_, err = c.Create(ctx, db, []byte(`{"id": "`+strings.Repeat("x", store.MaxIDLength+1)+`", "userId": "a"}`), nil)
	assert.ErrorIs(t, err, store.ErrBadRequest, "the store's own checks pass through")
	n := 0
	for _, l := range links(3) {
		info, err := fs.CollectionInfo(ctx, l)
		require.NoError(t, err)
		n += int(info.Documents)
	}
	assert.Zero(t, n, "nothing half-written")
}

func TestEnsureCollections(t *testing.T) {
	st := newMem(t)
	c := router.New(st, nil)
	require.NoError(t, c.Register(db, ring(t, 3)))
	ttl := 3600
	spec := &store.CollectionSpec{DefaultTTL: &ttl, Indexing: json.RawMessage(`{"indexingMode":"consistent"}`)}
	created, err := c.EnsureCollections(ctx, db, spec)
	require.NoError(t, err)
	assert.Equal(t, links(3), created)
	for _, l := range links(3) {
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		assert.Equal(t, "/userId", info.Spec.PartitionKeyPath, "partitioned by the resolver's key")
		require.NotNil(t, info.Spec.DefaultTTL)
		assert.Equal(t, 3600, *info.Spec.DefaultTTL)
		assert.JSONEq(t, `{"indexingMode":"consistent"}`, string(info.Spec.Indexing))
	}
	created, err = c.EnsureCollections(ctx, db, spec)
	require.NoError(t, err)
	assert.Empty(t, created, "idempotent")

	require.NoError(t, c.Register(db, ring(t, 5)))
	created, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	assert.Equal(t, links(5)[3:], created, "only what is missing")

	_, err = c.EnsureCollections(ctx, db, &store.CollectionSpec{PartitionKeyPath: "/tenant"})
	assert.ErrorIs(t, err, router.ErrKeyPathMismatch, "a template partitioned by another path")
	var tpe *store.KeyPathError
	require.ErrorAs(t, err, &tpe)
	assert.Equal(t, store.KeyPathError{Want: "/userId", Found: "/tenant"}, *tpe, "no collection: the template's")
	assert.Contains(t, err.Error(), "the template's partition-key path /tenant is not the resolver's key /userId")
	require.NoError(t, st.CreateCollection(ctx, "dbs/app/colls/u5", &store.CollectionSpec{PartitionKeyPath: "/id"}))
	require.NoError(t, c.Register(db, ring(t, 6)))
	_, err = c.EnsureCollections(ctx, db, nil)
	assert.ErrorIs(t, err, router.ErrKeyPathMismatch, "an existing collection partitioned by another path")
	assert.Contains(t, err.Error(), "dbs/app/colls/u5")
	var kpe *store.KeyPathError
	require.ErrorAs(t, err, &kpe, "the one error of the conflict rule")
	assert.Equal(t, store.KeyPathError{Collection: "dbs/app/colls/u5", Want: "/userId", Found: "/id"}, *kpe)
	// The same path spelt another way is no conflict.
	require.NoError(t, st.DeleteCollection(ctx, "dbs/app/colls/u5"))
	require.NoError(t, st.CreateCollection(ctx, "dbs/app/colls/u5", &store.CollectionSpec{PartitionKeyPath: `/"userId"`}))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
}

func TestThrottlingIsRetried(t *testing.T) {
	var left atomic.Int32
	fs := &faulty{Store: newMem(t)}
	fs.fail = func(op, l, id string) error {
		if left.Add(-1) >= 0 {
			return &store.Error{Kind: store.ErrThrottled, Op: op, Link: l, RetryAfter: 2 * time.Millisecond}
		}
		return nil
	}
	var retries atomic.Int32
	c := setup(t, 2, fs, &router.Options{MaxDegreeOfParallelism: -1, Retry: router.RetryPolicy{MaxAttempts: 4}, Hooks: router.Hooks{
		Retry: func(_ context.Context, l, op string, attempt int, wait time.Duration, _ error) {
			retries.Add(1)
			assert.Equal(t, 2*time.Millisecond, wait, "the store's retry-after is honoured")
		},
	}})
	for _, op := range []func() error{
		func() error { _, err := c.Create(ctx, db, user{ID: "1", UserID: "a"}, nil); return err },
		func() error { _, err := c.Upsert(ctx, db, user{ID: "1", UserID: "a", Name: "b"}, nil); return err },
		func() error { _, err := c.Read(ctx, db, "1", "a"); return err },
		func() error { _, err := c.Replace(ctx, db, "1", user{ID: "1", UserID: "a"}, nil); return err },
		func() error {
			items, err := c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, &router.QueryOptions{MaxDegreeOfParallelism: 1})
			if err == nil && len(items) != 1 {
				err = fmt.Errorf("%d items", len(items))
			}
			return err
		},
		func() error { return c.Delete(ctx, db, "1", "a", nil) },
	} {
		retries.Store(0)
		left.Store(3)
		require.NoError(t, op(), "three throttles, then success within four attempts")
		assert.EqualValues(t, 3, retries.Load())
	}

	left.Store(10)
	fs.calls.Store(0)
	_, err := c.Read(ctx, db, "1", "a")
	assert.ErrorIs(t, err, store.ErrThrottled, "bounded: gives up after MaxAttempts")
	assert.EqualValues(t, 4, fs.calls.Load())

	left.Store(10)
	fs.calls.Store(0)
	cw := router.New(fs, &router.Options{Retry: router.RetryPolicy{MaxAttempts: 100, MaxWait: 5 * time.Millisecond}})
	require.NoError(t, cw.Register(db, ring(t, 2)))
	_, err = cw.Read(ctx, db, "1", "a")
	assert.ErrorIs(t, err, store.ErrThrottled, "bounded by the total wait")
	assert.EqualValues(t, 3, fs.calls.Load(), "2 ms + 2 ms fit in 5 ms, a third wait does not")

	left.Store(1000)
	fs.fail = func(op, l, id string) error {
		left.Add(-1)
		return &store.Error{Kind: store.ErrThrottled, Op: op, Link: l, RetryAfter: time.Hour}
	}
	short, cancel := ctxTimeout(20 * time.Millisecond)
	defer cancel()
	_, err = router.New(fs, nil).Read(short, db, "1", "a")
	assert.ErrorIs(t, err, router.ErrUnknownDatabase)
	cc := router.New(fs, &router.Options{Retry: router.RetryPolicy{MaxWait: 2 * time.Hour}})
	require.NoError(t, cc.Register(db, ring(t, 2)))
	_, err = cc.Read(short, db, "1", "a")
	assert.ErrorIs(t, err, ctxDeadline, "the context ends the wait")
	assert.ErrorIs(t, err, store.ErrThrottled, "and the throttle is named (an hour's retry-after: only the context ends the wait)")
}

func TestResolverSwapUnderTraffic(t *testing.T) {
	st := newMem(t)
	c := router.New(st, nil)
	small, big := ring(t, 2), ring(t, 6)
	require.NoError(t, c.Register(db, big))
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	// Readers read documents placed the same way by both of two equal
	// resolvers swapped in turn on another database.
	same1, same2 := ringOf(t, []string{"dbs/r/colls/a", "dbs/r/colls/b"}), ringOf(t, []string{"dbs/r/colls/a", "dbs/r/colls/b"})
	require.NoError(t, c.Register("dbs/r", same1))
	_, err = c.EnsureCollections(ctx, "dbs/r", nil)
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		_, err := c.Create(ctx, "dbs/r", user{ID: fmt.Sprint(i), UserID: fmt.Sprint("k", i)}, nil)
		require.NoError(t, err)
	}

	var wg sync.WaitGroup
	var written, reads, queries atomic.Int32
	stop := make(chan struct{})
	running := func() bool {
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	for w := 0; w < 3; w++ {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := 0; running(); i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := c.Create(ctx, db, user{ID: id, UserID: id}, nil); err != nil {
					t.Errorf("create during swaps: %v", err)
					return
				}
				written.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; running(); i++ {
				k := i % 50
				if _, err := c.Read(ctx, "dbs/r", fmt.Sprint(k), fmt.Sprint("k", k)); err != nil {
					t.Errorf("read during swaps: %v", err)
					return
				}
				reads.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			for running() {
				items, err := c.Query(ctx, "dbs/r", store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
				if err != nil || len(items) != 1 || string(items[0]) != "50" {
					t.Errorf("query during swaps: %v %s", err, items)
					return
				}
				queries.Add(1)
			}
		}()
	}
	// Swap at least 200 times, and until the readers and queriers have
	// run through swaps (a loaded machine may not schedule them at once).
	for i := 0; i < 200 || reads.Load() < 50 || queries.Load() < 5; i++ {
		time.Sleep(100 * time.Microsecond)
		if i%2 == 0 {
			require.NoError(t, c.Register(db, big))
			require.NoError(t, c.Register("dbs/r", same2))
		} else {
			require.NoError(t, c.Register(db, small))
			require.NoError(t, c.Register("dbs/r", same1))
		}
	}
	close(stop)
	wg.Wait()
	assert.Positive(t, reads.Load())
	assert.Positive(t, queries.Load())
	total := 0
	for _, l := range links(6) {
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		total += int(info.Documents)
	}
	assert.Positive(t, total)
	assert.EqualValues(t, written.Load(), total, "every acknowledged create is stored, once")
}

// blocking holds creates until released.
type blocking struct {
	store.Store
	entered chan string
	release chan struct{}
}

func (s *blocking) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	s.entered <- l
	<-s.release
	return s.Store.Create(ctx, l, doc, o)
}

func TestSwapDuringACallUsesTheResolverItStartedWith(t *testing.T) {
	bs := &blocking{Store: newMem(t), entered: make(chan string, 1), release: make(chan struct{})}
	c := router.New(bs, nil)
	a, b := ringOf(t, []string{"dbs/app/colls/a"}), ringOf(t, []string{"dbs/app/colls/b"})
	for _, l := range []string{"dbs/app/colls/a", "dbs/app/colls/b"} {
		require.NoError(t, bs.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	require.NoError(t, c.Register(db, a))
	done := make(chan error)
	go func() {
		_, err := c.Create(ctx, db, user{ID: "1", UserID: "u"}, nil)
		done <- err
	}()
	assert.Equal(t, "dbs/app/colls/a", <-bs.entered)
	require.NoError(t, c.Register(db, b))
	close(bs.release)
	require.NoError(t, <-done)
	_, err := bs.Read(ctx, "dbs/app/colls/a", "1", &store.ReadOptions{PartitionKey: "u"})
	require.NoError(t, err, "the call in flight finished under the resolver it started with")
	r, err := c.Resolver(db)
	require.NoError(t, err)
	assert.Same(t, b, r)
	c.Unregister(db)
	_, err = c.Read(ctx, db, "1", "u")
	assert.ErrorIs(t, err, router.ErrUnknownDatabase)
	assert.Empty(t, c.Databases())
}

func TestStorePanicIsAnError(t *testing.T) {
	fs := &faulty{Store: newMem(t)}
	c := setup(t, 3, fs, nil)
	addUsers(t, c, 10, func(i int) string { return fmt.Sprint("k", i) })
	fs.fail = func(op, l, id string) error {
		if op == "query" && l == "dbs/app/colls/u1" {
			panic("boom")
		}
		return nil
	}
	_, err := c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, &router.QueryOptions{MaxDegreeOfParallelism: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom")
	assert.Contains(t, err.Error(), "dbs/app/colls/u1")
	assert.False(t, errors.Is(err, router.ErrPartialResults))
}

// TestReplaceRawJSON drives Replace with raw JSON, which the router places
// through its route cache and checks in place: escapes in the id and key,
// a wrong or missing id, conditional replaces and a moved key behave as
// with structs, on a warm cache and a cold one.
func TestReplaceRawJSON(t *testing.T) {
	for _, size := range []int{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", size), func(t *testing.T) {
			fs := &faulty{Store: newMem(t)}
			c := setup(t, 8, fs, &router.Options{RouteCacheSize: size})
			from, to := keysIn(t, ring(t, 8))
			created, err := c.Create(ctx, db, []byte(`{"id":"a\"b","userId":"`+from+`","n":1}`), nil)
			require.NoError(t, err)

			// The id and the key written with escapes are the same strings.
			esc := func(s string) string {
				var b strings.Builder
				for _, r := range s {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
				return b.String()
			}
			d, err := c.Replace(ctx, db, `a"b`, []byte(`{"id":"a\u0022b","userId":"`+esc(from)+`","n":2}`), &router.ReplaceOptions{IfMatch: created.ETag})
			require.NoError(t, err)
			assert.NotEqual(t, created.ETag, d.ETag)

			_, err = c.Replace(ctx, db, `a"b`, []byte(`{"id":"a\"b","userId":"`+from+`","n":3}`), &router.ReplaceOptions{IfMatch: created.ETag})
			assert.ErrorIs(t, err, store.ErrPreconditionFailed, "a stale ETag")

			calls := fs.calls.Load()
			for _, tc := range []struct{ body, want string }{
				{`{"id":"ab","userId":"` + from + `"}`, `"ab"`},
				{`{"userId":"` + from + `"}`, "missing"},
				{`{"id":7,"userId":"` + from + `"}`, "7"},
			} {
				_, err = c.Replace(ctx, db, `a"b`, []byte(tc.body), nil)
				require.ErrorIs(t, err, store.ErrBadRequest, tc.body)
				assert.Contains(t, err.Error(), tc.want)
			}
			assert.Equal(t, calls, fs.calls.Load(), "no bad replace reached the store")

			_, err = c.Replace(ctx, db, `a"b`, json.RawMessage(`{"id":"a\"b","userId":"`+to+`","n":4}`), &router.ReplaceOptions{OldKey: from})
			require.NoError(t, err)
			got, err := c.Read(ctx, db, `a"b`, to)
			require.NoError(t, err)
			assert.Contains(t, string(got.Body), `"n":4`)
			_, err = c.Read(ctx, db, `a"b`, from)
			assert.ErrorIs(t, err, store.ErrNotFound, "moved")
			assert.Equal(t, 1, countDocs(t, fs, `a"b`))
		})
	}
}

// TestRawKeysPlacedByText: raw JSON whose key is not a cacheable string (a
// number, a composite key) is placed by its canonical text where the
// resolver places the key's value, with the route cache on and off; a key
// without canonical text (an object, a missing part) is refused as the
// resolver refuses the value, with nothing written.
func TestRawKeysPlacedByText(t *testing.T) {
	for _, size := range []int{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", size), func(t *testing.T) {
			st := newMem(t)
			c := router.New(st, &router.Options{RouteCacheSize: size})
			kd := resolver.MustKeyDef("/region", "/shop")
			r, err := hashring.New(links(5), &hashring.Options{PartitionKey: kd})
			require.NoError(t, err)
			require.NoError(t, c.Register(db, r))
			_, err = c.EnsureCollections(ctx, db, nil)
			require.NoError(t, err)
			for i := range 60 {
				doc := []byte(fmt.Sprintf(`{"id":"%d","region":"r\u00e9%d","shop":%d.25}`, i, i%4, i))
				key, err := kd.Extract(doc)
				require.NoError(t, err)
				want, err := r.ResolveForCreate(key)
				require.NoError(t, err)
				_, err = c.Create(ctx, db, doc, nil)
				require.NoError(t, err)
				_, err = st.Read(ctx, want, fmt.Sprint(i), &store.ReadOptions{PartitionKey: key}) // a hierarchical collection: the whole key
				require.NoError(t, err, "document %d is in %s", i, want)
				_, err = c.Read(ctx, db, fmt.Sprint(i), key)
				require.NoError(t, err)
			}
			for _, doc := range []string{`{"id":"o","region":{"a":1},"shop":1}`, `{"id":"m","region":"x"}`} {
				_, err := c.Create(ctx, db, []byte(doc), nil)
				require.Error(t, err, doc)
				assert.True(t, errors.Is(err, resolver.ErrKeyType) || errors.Is(err, resolver.ErrNoPartitionKey), "%s: %v", doc, err)
			}
			assert.Equal(t, 60, countAll(t, st))
		})
	}
}

// countAll counts the documents of every collection of the database.
func countAll(t testing.TB, st store.Store) int {
	ls, err := st.ListCollections(ctx, db)
	require.NoError(t, err)
	n := 0
	for _, l := range ls {
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		n += int(info.Documents)
	}
	return n
}

// sharing hands every caller the same link slices and remembers them, so
// a test can check that nobody changed them (the resolver contract lets a
// resolver share its slices).
type sharing struct {
	resolver.Resolver
	mu    sync.Mutex
	given map[string][]string
}

func (r *sharing) KeyDef() resolver.KeyDef { return resolver.MustKeyDef("/userId") }

func (r *sharing) ResolveForRead(key any) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := fmt.Sprint(key)
	if out, ok := r.given[k]; ok {
		return out, nil
	}
	links, err := r.Resolver.ResolveForRead(key)
	if err != nil {
		return nil, err
	}
	r.given[k] = links
	return links, nil
}

// TestRouterNeverModifiesResolverSlices: every operation leaves the slices
// ResolveForRead returned as they were.
func TestRouterNeverModifiesResolverSlices(t *testing.T) {
	r := &sharing{Resolver: twoPlace{current: ring(t, 3), next: ring(t, 5)}, given: map[string][]string{}}
	c := router.New(newMem(t), &router.Options{RouteCacheSize: -1})
	require.NoError(t, c.Register(db, r))
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	addUsers(t, c, 30, func(i int) string { return fmt.Sprint("k", i%7) })
	for i := range 30 {
		key := fmt.Sprint("k", i%7)
		_, err := c.Read(ctx, db, fmt.Sprint(i), key)
		require.NoError(t, err)
		_, err = c.Replace(ctx, db, fmt.Sprint(i), user{ID: fmt.Sprint(i), UserID: key, Name: "x"}, nil)
		require.NoError(t, err)
		_, err = c.Query(ctx, db, store.Query{Text: "SELECT * FROM c ORDER BY c.id"}, &router.QueryOptions{PartitionKey: key})
		require.NoError(t, err)
	}
	_, err = c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, db, "0", "k0", nil))
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, got := range r.given {
		want, err := r.Resolver.ResolveForRead(nil)
		if k != "<nil>" {
			want, err = r.Resolver.ResolveForRead(k)
		}
		require.NoError(t, err)
		assert.Equal(t, want, got, "the links of key %s", k)
	}
}

// TestReadFindsTheDatabase reads through each way the router finds a
// registration: the one registration named as registered (the inlined
// case), another spelling of it, one of several, and an unknown one.
func TestReadFindsTheDatabase(t *testing.T) {
	c := setup(t, 2, nil, nil)
	_, err := c.Create(ctx, db, user{ID: "1", UserID: "a"}, nil)
	require.NoError(t, err)
	dynamic := strings.Join([]string{"dbs", "app"}, "/") // equal bytes, another string
	read := func(link string) error { _, err := c.Read(ctx, link, "1", "a"); return err }
	for _, tc := range []struct {
		link string
		want error
	}{{db, nil}, {dynamic, nil}, {"/dbs/app/", nil}, {"dbs/other", router.ErrUnknownDatabase}, {"not a link", nil}} {
		err := read(tc.link)
		switch {
		case tc.link == "not a link":
			assert.Error(t, err, tc.link)
		case tc.want == nil:
			assert.NoError(t, err, tc.link)
		default:
			assert.ErrorIs(t, err, tc.want, tc.link)
		}
	}
	require.NoError(t, c.Register("dbs/other", ringOf(t, []string{"dbs/other/colls/c0", "dbs/other/colls/c1"})))
	_, err = c.EnsureCollections(ctx, "dbs/other", nil)
	require.NoError(t, err)
	assert.NoError(t, read(db), "one of two registrations")
	assert.ErrorIs(t, read("dbs/other"), store.ErrNotFound, "the other database has no such document")
	c.Unregister("dbs/other")
	c.Unregister(db)
	assert.ErrorIs(t, read(db), router.ErrUnknownDatabase, "nothing registered")
}

// TestQuotaRefusalOfARing: only a spillover's full newest collection makes
// a write wait for the next version; a ring's collection refusing a write
// for quota is the caller's error at once, not after MovingWait.
func TestQuotaRefusalOfARing(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	const l = "dbs/q/colls/only"
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/id", Quota: &store.Quota{MaxDocuments: 1}}))
	r, err := hashring.New([]string{l}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/id")})
	require.NoError(t, err)
	c := router.New(st, nil)
	f, err := c.Follow(ctx, "dbs/q", &router.FollowOptions{Seed: r, PollInterval: time.Hour, LeaseDuration: 2 * time.Hour, MovingWait: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	_, err = c.Create(ctx, "dbs/q", map[string]any{"id": "a"}, nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "dbs/q", map[string]any{"id": "b"}, nil)
	require.ErrorIs(t, err, store.ErrQuotaExceeded)
	assert.NotContains(t, err.Error(), "waited", "no wait for a next collection a ring never opens")
}

// appliedThenLost applies the first conditional delete and then answers
// ErrUnavailable, as a connection that drops after the service deleted.
type appliedThenLost struct {
	store.Store
	lost atomic.Bool
}

func (s *appliedThenLost) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	err := s.Store.Delete(ctx, l, id, o)
	if err == nil && o != nil && o.IfMatch != "" && s.lost.CompareAndSwap(false, true) {
		return &store.Error{Kind: store.ErrUnavailable, Op: "delete", Message: "the connection was reset after the request was sent"}
	}
	return err
}

// TestMoveLostReply: a replace that moves a document to another
// collection deletes the old copy If-Match; when that delete lands and its
// answer is lost, the retried delete is refused (not found). The router
// took that for "another writer won" and deleted the new copy too: the
// document was gone. Now the unknown outcome is reported and the document
// survives (found by its new key), once.
func TestMoveLostReply(t *testing.T) {
	fs := &appliedThenLost{Store: newMem(t)}
	c, _, from, to := userToMove(t, fs, nil)
	_, err := c.Replace(ctx, db, "x", user{ID: "x", UserID: to, Name: "after"}, &router.ReplaceOptions{OldKey: from})
	require.True(t, fs.lost.Load(), "the delete's answer was lost")
	if err != nil {
		assert.ErrorIs(t, err, store.ErrUnavailable, "the outcome is reported as unknown")
	}
	require.Equal(t, 1, countDocs(t, fs, "x"), "the document is kept, once")
	_, err = c.Read(ctx, db, "x", to)
	require.NoError(t, err, "found by its new key")
}
