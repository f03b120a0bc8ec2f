package router_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

type spanKey struct{}

// ctxStore records, per operation, whether each call's context carried
// the span the Span hook opened.
type ctxStore struct {
	store.Store
	mu   sync.Mutex
	seen map[string][]any
}

func (s *ctxStore) saw(ctx context.Context, op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[op] = append(s.seen[op], ctx.Value(spanKey{}))
}

func (s *ctxStore) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	s.saw(ctx, "create")
	return s.Store.Create(ctx, l, doc, o)
}

func (s *ctxStore) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	s.saw(ctx, "read")
	return s.Store.Read(ctx, l, id, o)
}

func (s *ctxStore) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	s.saw(ctx, "replace")
	return s.Store.Replace(ctx, l, id, doc, o)
}

func (s *ctxStore) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	s.saw(ctx, "query")
	return s.Store.Query(ctx, l, q, o)
}

// TestSpanContextReachesTheStore: every store call runs with the context
// the Span hook returned (so a backend's spans nest under the router's),
// and the Call hook receives it too.
func TestSpanContextReachesTheStore(t *testing.T) {
	st := &ctxStore{Store: newMem(t), seen: map[string][]any{}}
	var mu sync.Mutex
	var calls []any
	c := setup(t, 3, st, &router.Options{Hooks: router.Hooks{
		Span: func(ctx context.Context, l, op string) (context.Context, func(error)) {
			return context.WithValue(ctx, spanKey{}, op+" "+l), func(error) {}
		},
		Call: func(ctx context.Context, l, op string, _ time.Duration, _ error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, ctx.Value(spanKey{}))
		},
	}})
	_, err := c.Create(ctx, db, user{ID: "1", UserID: "ann"}, nil)
	require.NoError(t, err)
	_, err = c.Read(ctx, db, "1", "ann")
	require.NoError(t, err)
	_, err = c.Replace(ctx, db, "1", user{ID: "1", UserID: "ann", Name: "b"}, nil)
	require.NoError(t, err)
	_, err = c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, nil)
	require.NoError(t, err)
	l, err := ring(t, 3).ResolveForCreate("ann")
	require.NoError(t, err)
	for _, op := range []string{"create", "read", "replace"} {
		assert.Equal(t, []any{op + " " + l}, st.seen[op], op)
	}
	require.Len(t, st.seen["query"], 3)
	for _, v := range st.seen["query"] {
		assert.Contains(t, v, "query dbs/app/colls/u")
	}
	for _, v := range calls {
		assert.NotNil(t, v, "Call receives the span's context")
	}
}
