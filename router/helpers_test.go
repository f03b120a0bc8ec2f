package router_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/linkset"
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
	return ringOf(t, links(n))
}

func ringOf(t testing.TB, ls []string) *hashring.Resolver {
	r, err := hashring.New(ls, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	return r
}

func newMem(t testing.TB) store.Store {
	s := memstore.New(nil)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// createColls creates the collections of links(n) on st, keyed by pkPath.
func createColls(t testing.TB, st store.Store, n int, pkPath string) {
	t.Helper()
	for _, l := range links(n) {
		require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: pkPath}))
	}
}

// setup returns a client over st (nil: a fresh memstore) with n
// hash-routed collections created.
func setup(t testing.TB, n int, st store.Store, opts *router.Options) *router.Client {
	if st == nil {
		st = newMem(t)
	}
	c := router.New(st, opts)
	require.NoError(t, c.Register(db, ring(t, n)))
	created, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	require.Len(t, created, n)
	return c
}

type user struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	Name   string `json:"name,omitempty"`
	Age    int    `json:"age,omitempty"`
}

func addUsers(t testing.TB, c *router.Client, n int, key func(i int) string) {
	for i := 0; i < n; i++ {
		_, err := c.Create(ctx, db, user{ID: fmt.Sprint(i), UserID: key(i), Age: i % 50}, nil)
		require.NoError(t, err)
	}
}

// faulty wraps a store: fail, when set, is asked before every document
// and query call and its error returned instead; delay slows queries. It
// counts calls and the most queries running at once.
type faulty struct {
	store.Store
	fail     func(op, link, id string) error
	delay    atomic.Int64 // nanoseconds
	calls    atomic.Int32
	inflight atomic.Int32
	peak     atomic.Int32
}

func (s *faulty) check(op, l, id string) error {
	s.calls.Add(1)
	if s.fail != nil {
		return s.fail(op, l, id)
	}
	return nil
}

func (s *faulty) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if err := s.check("create", l, ""); err != nil {
		return nil, err
	}
	return s.Store.Create(ctx, l, doc, o)
}

func (s *faulty) Upsert(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if err := s.check("upsert", l, ""); err != nil {
		return nil, err
	}
	return s.Store.Upsert(ctx, l, doc, o)
}

func (s *faulty) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if err := s.check("replace", l, id); err != nil {
		return nil, err
	}
	return s.Store.Replace(ctx, l, id, doc, o)
}

func (s *faulty) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	if err := s.check("read", l, id); err != nil {
		return nil, err
	}
	return s.Store.Read(ctx, l, id, o)
}

func (s *faulty) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	if err := s.check("delete", l, id); err != nil {
		return err
	}
	return s.Store.Delete(ctx, l, id, o)
}

func (s *faulty) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if err := s.check("query", l, ""); err != nil {
		return nil, err
	}
	if d := time.Duration(s.delay.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	return s.Store.Query(ctx, l, q, o)
}

func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

var ctxDeadline = context.DeadlineExceeded

// twoPlace is a transition-like resolver: new documents go to next, reads
// look in next, then in current.
type twoPlace struct {
	current, next resolver.Resolver
}

func (r twoPlace) PartitionKey(doc any) (any, error)        { return r.next.PartitionKey(doc) }
func (r twoPlace) KeyDef() resolver.KeyDef                  { return resolver.MustKeyDef("/userId") }
func (r twoPlace) ResolveForCreate(key any) (string, error) { return r.next.ResolveForCreate(key) }
func (r twoPlace) ResolveForRead(key any) ([]string, error) {
	a, err := r.next.ResolveForRead(key)
	if err != nil {
		return nil, err
	}
	b, err := r.current.ResolveForRead(key)
	if err != nil {
		return nil, err
	}
	return linkset.Union(a, b), nil
}

// countDocs counts a document id over every collection of the database.
func countDocs(t testing.TB, st store.Store, id string) int {
	ls, err := st.ListCollections(ctx, db)
	require.NoError(t, err)
	n := 0
	for _, l := range ls {
		page, err := st.Query(ctx, l, store.Query{Text: "SELECT VALUE c.id FROM c WHERE c.id = @id", Parameters: []store.Param{{Name: "@id", Value: id}}}, &store.QueryOptions{PageSize: -1})
		require.NoError(t, err)
		n += len(page.Items)
	}
	return n
}
