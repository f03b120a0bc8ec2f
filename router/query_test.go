package router_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/lookup"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func firstPage(t *testing.T, c *router.Client, q store.Query, opts *router.QueryOptions) *router.QueryPage {
	t.Helper()
	page, err := c.NewQueryPager(db, q, opts).NextPage(ctx)
	require.NoError(t, err)
	return page
}

func TestQueryBadInput(t *testing.T) {
	fs := &faulty{Store: newMem(t)}
	c := setup(t, 3, fs, nil)
	addUsers(t, c, 30, func(i int) string { return fmt.Sprint("u", i) })
	calls := fs.calls.Load()
	for _, tc := range []struct {
		q     store.Query
		want  error
		names string // what the message must name
	}{
		{store.Query{Text: "SELEC * FROM c"}, nil, "line 1, column 1"},
		{store.Query{Text: "SELECT * FROM c WHERE"}, nil, "expected"},
		{store.Query{Text: "SELECT VALUE FOO(c.x) FROM c"}, query.ErrCompile, "FOO"},
		{store.Query{Text: "SELECT * FROM c WHERE c.a = @missing"}, query.ErrCompile, "@missing"},
		{store.Query{Text: "SELECT DISTINCT VALUE c.a FROM c ORDER BY c.b"}, query.ErrUnmergeable, "DISTINCT with ORDER BY c.b"},
		{store.Query{Text: "SELECT * FROM c", Parameters: []store.Param{{Name: "x", Value: 1}}}, nil, `"x"`},
		{store.Query{Text: "SELECT * FROM c", Parameters: []store.Param{{Name: "@x", Value: 1}, {Name: "@x", Value: 2}}}, nil, "@x given twice"},
	} {
		p := c.NewQueryPager(db, tc.q, nil)
		require.True(t, p.More())
		_, err := p.NextPage(ctx)
		require.Error(t, err, tc.q.Text)
		assert.False(t, p.More(), "an error ends the pager")
		if tc.want != nil {
			assert.ErrorIs(t, err, tc.want, tc.q.Text)
		} else if strings.HasPrefix(tc.q.Text, "SELEC ") || strings.HasSuffix(tc.q.Text, "WHERE") {
			var se *query.SyntaxError
			assert.ErrorAs(t, err, &se, tc.q.Text)
		}
		assert.Contains(t, err.Error(), tc.names, tc.q.Text)
		_, err = c.Query(ctx, db, tc.q, nil)
		assert.Error(t, err)
	}
	assert.Equal(t, calls, fs.calls.Load(), "bad queries never reach the store")

	// NextPage after the end.
	p := c.NewQueryPager(db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	_, err := p.NextPage(ctx)
	require.NoError(t, err)
	require.False(t, p.More())
	_, err = p.NextPage(ctx)
	assert.Error(t, err)
}

func TestContinuationTokens(t *testing.T) {
	c := setup(t, 4, nil, &router.Options{MaxDegreeOfParallelism: -1})
	addUsers(t, c, 40, func(i int) string { return fmt.Sprint("u", i%7) })
	q := store.Query{Text: "SELECT c.id, c.age FROM c WHERE c.age >= @min ORDER BY c.age DESC, c.id", Parameters: []store.Param{{Name: "@min", Value: 3}}}
	opts := &router.QueryOptions{PageSize: 5, MaxDegreeOfParallelism: -1}
	want, err := c.Query(ctx, db, q, opts)
	require.NoError(t, err)
	require.Len(t, want, 37)
	page := firstPage(t, c, q, opts)
	tok := page.Continuation
	require.NotEmpty(t, tok)
	t.Logf("a token over 4 collections: %d bytes", len(tok))

	// Resumed in another client: exactly the rest.
	other := router.New(c.Store(), nil)
	require.NoError(t, other.Register(db, ring(t, 4)))
	rest, err := other.Query(ctx, db, q, &router.QueryOptions{Continuation: tok, MaxDegreeOfParallelism: 0})
	require.NoError(t, err)
	assert.Equal(t, want[5:], rest)

	bad := func(tok string, q store.Query, key any, why string) {
		t.Helper()
		o := &router.QueryOptions{Continuation: tok, PartitionKey: key, MaxDegreeOfParallelism: -1}
		_, err := c.NewQueryPager(db, q, o).NextPage(ctx)
		require.ErrorIs(t, err, router.ErrBadContinuation, why)
		assert.Contains(t, err.Error(), why)
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	require.NoError(t, err)
	for i := range raw { // every corrupted byte is caught
		flipped := append([]byte(nil), raw...)
		flipped[i] ^= 0x20
		_, err := c.NewQueryPager(db, q, &router.QueryOptions{Continuation: base64.RawURLEncoding.EncodeToString(flipped)}).NextPage(ctx)
		require.ErrorIs(t, err, router.ErrBadContinuation, "byte %d", i)
	}
	bad(tok[:len(tok)-3], q, nil, "checksum")
	bad(tok+"AAAA", q, nil, "checksum")
	bad("garbage!", q, nil, "base64")
	bad("eyJ2IjoxfQ", q, nil, "too short")
	bad(tok, store.Query{Text: "SELECT c.id FROM c"}, nil, "another query")
	bad(tok, store.Query{Text: q.Text, Parameters: []store.Param{{Name: "@min", Value: 4}}}, nil, "another query, parameters")
	bad(tok, q, "u3", "partition key")
	require.NoError(t, c.Register(db, ring(t, 5)))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	bad(tok, q, nil, "collections changed")

	// Parameters bind by value: 3 and 3.0 are the same query.
	require.NoError(t, c.Register(db, ring(t, 4)))
	same := store.Query{Text: q.Text, Parameters: []store.Param{{Name: "@min", Value: 3.0}}}
	rest, err = c.Query(ctx, db, same, &router.QueryOptions{Continuation: tok, MaxDegreeOfParallelism: -1})
	require.NoError(t, err)
	assert.Equal(t, want[5:], rest)
}

func TestTokenStaysCompact(t *testing.T) {
	c := setup(t, 32, nil, nil)
	addUsers(t, c, 640, func(i int) string { return fmt.Sprint("u", i) })
	for _, text := range []string{"SELECT * FROM c ORDER BY c.age", "SELECT * FROM c", "SELECT c.age, COUNT(1) AS n FROM c GROUP BY c.age"} {
		page := firstPage(t, c, store.Query{Text: text}, &router.QueryOptions{PageSize: 20, MaxDegreeOfParallelism: -1})
		require.NotEmpty(t, page.Continuation)
		t.Logf("%s over 32 collections: a %d-byte token", text, len(page.Continuation))
		assert.Less(t, len(page.Continuation), 2500, text)
	}
}

func TestPartialResults(t *testing.T) {
	fs := &faulty{Store: newMem(t)}
	// An unavailable collection is retried (a query is repeatable), here
	// with millisecond waits, before it fails the query.
	c := setup(t, 3, fs, &router.Options{Retry: router.RetryPolicy{DefaultWait: time.Millisecond, MaxBackoff: time.Millisecond}})
	addUsers(t, c, 60, func(i int) string { return fmt.Sprint("k", i) })
	fs.fail = func(op, l, id string) error {
		if op == "query" && l == "dbs/app/colls/u1" {
			return &store.Error{Kind: store.ErrUnavailable, Op: "query", Link: l, Message: "injected"}
		}
		return nil
	}
	_, err := c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, nil)
	assert.ErrorIs(t, err, store.ErrUnavailable, "by default a failing collection fails the query")

	inU1 := 0
	r := ring(t, 3)
	for i := 0; i < 60; i++ {
		if l, _ := r.ResolveForCreate(fmt.Sprint("k", i)); l == "dbs/app/colls/u1" {
			inU1++
		}
	}
	require.Positive(t, inU1)
	for _, text := range []string{"SELECT VALUE c.id FROM c ORDER BY c.id", "SELECT VALUE c.id FROM c", "SELECT VALUE COUNT(1) FROM c", "SELECT DISTINCT VALUE c.id FROM c"} {
		opts := &router.QueryOptions{PartialResults: true, MaxDegreeOfParallelism: -1, PageSize: 7}
		items, err := c.Query(ctx, db, store.Query{Text: text}, opts)
		var pe *router.PartialError
		require.ErrorAs(t, err, &pe, text)
		assert.ErrorIs(t, err, router.ErrPartialResults)
		assert.ErrorIs(t, pe.Failed["dbs/app/colls/u1"], store.ErrUnavailable)
		assert.Len(t, pe.Failed, 1)
		assert.Contains(t, err.Error(), "dbs/app/colls/u1")
		if strings.Contains(text, "COUNT") {
			assert.Equal(t, fmt.Sprint(60-inU1), string(items[0]), "the healthy collections' count")
		} else {
			assert.Len(t, items, 60-inU1, text)
		}
		// Page by page from tokens: once a page names the failed
		// collection, every later one does (a streamed page may come
		// before the failure is seen).
		var got []json.RawMessage
		tok, named := "", false
		for i := 0; ; i++ {
			require.Less(t, i, 100)
			opts.Continuation = tok
			page, err := c.NewQueryPager(db, store.Query{Text: text}, opts).NextPage(ctx)
			if named || err != nil {
				require.ErrorAs(t, err, &pe)
				require.Contains(t, page.Failed, "dbs/app/colls/u1")
				named = true
			}
			got = append(got, page.Items...)
			if named && page.Continuation != "" {
				// A caller that did not ask for partial results cannot
				// go on from a token that skips a failed collection.
				_, err := c.NewQueryPager(db, store.Query{Text: text}, &router.QueryOptions{Continuation: page.Continuation}).NextPage(ctx)
				require.ErrorIs(t, err, router.ErrBadContinuation, text)
				assert.Contains(t, err.Error(), "PartialResults")
			}
			if tok = page.Continuation; tok == "" {
				break
			}
		}
		assert.True(t, named)
		assert.ElementsMatch(t, items, got, text)
	}
}

func TestHooks(t *testing.T) {
	var width, docs, calls, queryCalls atomic.Int32
	c := setup(t, 5, nil, &router.Options{MaxDegreeOfParallelism: -1, Hooks: router.Hooks{
		FanOut:    func(_ context.Context, _ string, w int) { width.Store(int32(w)) },
		Documents: func(_ context.Context, _ string, n int) { docs.Add(int32(n)) },
		Call: func(_ context.Context, l, op string, d time.Duration, err error) {
			calls.Add(1)
			if op == "query" {
				queryCalls.Add(1)
				assert.True(t, strings.HasPrefix(l, "dbs/app/colls/u"), l)
			}
			assert.GreaterOrEqual(t, d, time.Duration(0))
		},
	}})
	addUsers(t, c, 20, func(i int) string { return fmt.Sprint("k", i) })
	assert.EqualValues(t, 20+5, calls.Load(), "one call per create and per collection created")
	items, err := c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, nil)
	require.NoError(t, err)
	assert.Len(t, items, 20)
	assert.EqualValues(t, 5, width.Load())
	assert.EqualValues(t, 20, docs.Load())
	assert.EqualValues(t, 5, queryCalls.Load(), "one page per collection")
}

func TestKeyedQueryNarrowsFanOut(t *testing.T) {
	var width atomic.Int32
	st := newMem(t)
	c := router.New(st, &router.Options{Hooks: router.Hooks{FanOut: func(_ context.Context, _ string, w int) { width.Store(int32(w)) }}})
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
	// A key sharing a collection with others sees only its own documents.
	items, err = c.Query(ctx, db, store.Query{Text: "SELECT VALUE c.userId FROM c"}, &router.QueryOptions{PartitionKey: "k1"})
	require.NoError(t, err)
	assert.EqualValues(t, 1, width.Load())
	assert.Len(t, items, 4)
	items, err = c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 5, width.Load())
	assert.Equal(t, "30", string(items[0]))
}

func TestEmptyFanOut(t *testing.T) {
	c := router.New(newMem(t), nil)
	rr, err := rangeresolver.New(resolver.MustKeyDef("/n"), []rangeresolver.Entry[float64]{
		{Range: rangeresolver.Range[float64]{Low: 0, High: 9}, Target: resolver.LinkTarget("dbs/app/colls/low")},
	}, resolver.Target{})
	require.NoError(t, err)
	require.NoError(t, c.Register(db, rr))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	outside := &router.QueryOptions{PartitionKey: rangeresolver.Range[float64]{Low: 100, High: 200}}
	items, err := c.Query(ctx, db, store.Query{Text: "SELECT * FROM c"}, outside)
	require.NoError(t, err)
	assert.Empty(t, items, "no collection may hold the range: no results")
	items, err = c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, outside)
	require.NoError(t, err)
	assert.Equal(t, []json.RawMessage{json.RawMessage("0")}, items, "as one empty collection would answer")
}

// gate is a store whose queries prove how many run at once without racing
// the scheduler: the first `want` queries are held until all of them have
// arrived (so that many ran together), then every query goes through; it
// also counts the most queries running at once, which must never pass
// want. A pager that cannot reach want fails with the count it reached,
// after a bound that only a broken pager meets.
type gate struct {
	store.Store
	want     int32
	arrived  atomic.Int32
	open     chan struct{}
	inflight atomic.Int32
	peak     atomic.Int32
}

func newGate(st store.Store, want int) *gate {
	return &gate{Store: st, want: int32(want), open: make(chan struct{})}
}

func (g *gate) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	n := g.inflight.Add(1)
	defer g.inflight.Add(-1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	if g.arrived.Add(1) == g.want {
		close(g.open)
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("only %d of %d queries ever ran at once", g.peak.Load(), g.want)
	}
	return g.Store.Query(ctx, l, q, o)
}

// TestParallelismBound: a query runs exactly as many store calls at once
// as MaxDegreeOfParallelism allows (capped by the collections), and a zero
// QueryOptions means the client's default, not serial.
func TestParallelismBound(t *testing.T) {
	mem := newMem(t)
	loader := setup(t, 12, mem, nil)
	addUsers(t, loader, 240, func(i int) string { return fmt.Sprint("k", i) })
	for _, tc := range []struct {
		name        string
		client, par int
		want        int
		zeroOptions bool
	}{
		{"serial", 0, 1, 1, false},
		{"three", 0, 3, 3, false},
		{"automatic", 0, -1, 12, false},
		{"more than collections", 0, 100, 12, false},
		{"zero means the client's default (automatic)", 0, 0, 12, false},
		{"zero options, client default serial", 1, 0, 1, true},
		{"zero options, client default 5", 5, 0, 5, true},
		{"zero options, client default automatic", -1, 0, 12, true},
	} {
		for _, text := range []string{"SELECT * FROM c", "SELECT * FROM c ORDER BY c.age", "SELECT VALUE AVG(c.age) FROM c", "SELECT DISTINCT VALUE c.age FROM c"} {
			g := newGate(mem, tc.want)
			c := router.New(g, &router.Options{MaxDegreeOfParallelism: tc.client, MaxBufferedItemCount: 120})
			require.NoError(t, c.Register(db, ring(t, 12)))
			opts := &router.QueryOptions{MaxDegreeOfParallelism: tc.par}
			if tc.zeroOptions {
				opts = &router.QueryOptions{}
			}
			items, err := c.Query(ctx, db, store.Query{Text: text}, opts)
			require.NoError(t, err, "%s: %s", tc.name, text)
			require.NotEmpty(t, items)
			assert.EqualValues(t, tc.want, g.peak.Load(), "%s: %s", tc.name, text)
		}
	}
}

func TestBufferBound(t *testing.T) {
	c := setup(t, 8, nil, nil)
	addUsers(t, c, 2000, func(i int) string { return fmt.Sprint("k", i) })
	for _, buf := range []int{16, 100, 1000} {
		for _, text := range []string{"SELECT c.id FROM c ORDER BY c.age, c.id", "SELECT c.id FROM c"} {
			p := c.NewQueryPager(db, store.Query{Text: text}, &router.QueryOptions{MaxDegreeOfParallelism: -1, MaxBufferedItemCount: buf, PageSize: 50})
			n := 0
			for p.More() {
				page, err := p.NextPage(ctx)
				require.NoError(t, err)
				n += len(page.Items)
				assert.LessOrEqual(t, p.BufferedRows(), buf)
			}
			assert.Equal(t, 2000, n)
			assert.LessOrEqual(t, p.PeakBufferedRows(), buf, "%s with MaxBufferedItemCount %d", text, buf)
			assert.Greater(t, p.PeakBufferedRows(), buf/4, "reads ahead up to the bound")
		}
	}
}

func TestContextCancellation(t *testing.T) {
	fs := &faulty{Store: newMem(t)}
	c := setup(t, 6, fs, nil)
	addUsers(t, c, 300, func(i int) string { return fmt.Sprint("k", i) })
	q := store.Query{Text: "SELECT c.id FROM c ORDER BY c.age, c.id"}
	want, err := c.Query(ctx, db, q, &router.QueryOptions{MaxDegreeOfParallelism: -1})
	require.NoError(t, err)

	// A store that never answers on its own: the query can only end
	// because its context does.
	held := &holding{Store: fs, release: make(chan struct{})}
	defer close(held.release)
	hc := router.New(held, nil)
	require.NoError(t, hc.Register(db, ring(t, 6)))
	short, cancel := ctxTimeout(20 * time.Millisecond)
	defer cancel()
	_, err = hc.Query(short, db, q, &router.QueryOptions{MaxDegreeOfParallelism: -1})
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the context ends the query, not the store")

	// A context per page, cancelled once the page is back: read-ahead
	// started under it is cancelled too, and simply made again.
	fs.delay.Store(int64(time.Millisecond))
	p := c.NewQueryPager(db, q, &router.QueryOptions{MaxDegreeOfParallelism: -1, MaxBufferedItemCount: 60, PageSize: 13})
	var got []json.RawMessage
	for p.More() {
		pctx, cancel := context.WithCancel(ctx)
		page, err := p.NextPage(pctx)
		cancel()
		require.NoError(t, err)
		got = append(got, page.Items...)
	}
	assert.Equal(t, want, got)
}

func TestPageSizes(t *testing.T) {
	c := setup(t, 3, nil, nil)
	addUsers(t, c, 250, func(i int) string { return fmt.Sprint("k", i) })
	for _, tc := range []struct{ size, pages int }{{-1, 1}, {0, 3}, {100, 3}, {250, 1}, {249, 2}, {1000, 1}} {
		p := c.NewQueryPager(db, store.Query{Text: "SELECT * FROM c ORDER BY c.id"}, &router.QueryOptions{PageSize: tc.size, MaxDegreeOfParallelism: -1})
		pages, n := 0, 0
		for p.More() {
			page, err := p.NextPage(ctx)
			require.NoError(t, err)
			pages++
			n += len(page.Items)
		}
		assert.Equal(t, 250, n)
		assert.Equal(t, tc.pages, pages, "page size %d", tc.size)
	}
	p := c.NewQueryPager(db, store.Query{Text: "SELECT * FROM c"}, &router.QueryOptions{MaxDegreeOfParallelism: -1})
	assert.Equal(t, links(3), p.Collections())
}

// ExampleClient_NewQueryPager reads a cross-collection ORDER BY page by
// page; any page's continuation token resumes the query, here or in
// another process.
func ExampleClient_NewQueryPager() {
	st := memstore.New(nil)
	defer st.Close()
	client := router.New(st, nil)
	ring, err := hashring.New([]string{"dbs/shop/colls/o0", "dbs/shop/colls/o1", "dbs/shop/colls/o2"},
		&hashring.Options{PartitionKey: resolver.MustKeyDef("/customer")})
	if err != nil {
		panic(err)
	}
	if err := client.Register("dbs/shop", ring); err != nil {
		panic(err)
	}
	if _, err := client.EnsureCollections(ctx, "dbs/shop", nil); err != nil {
		panic(err)
	}
	for i := 1; i <= 9; i++ {
		doc := fmt.Sprintf(`{"id":"o%d","customer":"c%d","total":%d}`, i, i%4, i*10)
		if _, err := client.Create(ctx, "dbs/shop", []byte(doc), nil); err != nil {
			panic(err)
		}
	}
	q := store.Query{Text: "SELECT c.id, c.total FROM c WHERE c.total > @min ORDER BY c.total DESC", Parameters: []store.Param{{Name: "@min", Value: 20}}}
	pager := client.NewQueryPager("dbs/shop", q, &router.QueryOptions{PageSize: 4, MaxDegreeOfParallelism: -1})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d results, more: %v\n", len(page.Items), page.Continuation != "")
		for _, it := range page.Items {
			fmt.Println(" ", string(it))
		}
	}
	total, err := client.Query(ctx, "dbs/shop", store.Query{Text: "SELECT VALUE SUM(c.total) FROM c"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("sum:", string(total[0]))
	// Output:
	// 4 results, more: true
	//   {"id":"o9","total":90}
	//   {"id":"o8","total":80}
	//   {"id":"o7","total":70}
	//   {"id":"o6","total":60}
	// 3 results, more: false
	//   {"id":"o5","total":50}
	//   {"id":"o4","total":40}
	//   {"id":"o3","total":30}
	// sum: 450
}

// holding is a store whose queries wait for release, whatever their
// context says.
type holding struct {
	store.Store
	release chan struct{}
}

func (h *holding) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	<-h.release
	return h.Store.Query(ctx, l, q, o)
}

// TestQueryClockOneInstant: a query's clock functions read one instant
// across every collection and every page, continuation tokens included
// (the router binds the time once and records it in the token).
func TestQueryClockOneInstant(t *testing.T) {
	c := setup(t, 4, nil, &router.Options{MaxDegreeOfParallelism: -1})
	addUsers(t, c, 40, func(i int) string { return fmt.Sprint("u", i) })
	for _, text := range []string{
		"SELECT c.id, GetCurrentDateTime() AS t FROM c",
		"SELECT c.id, GetCurrentTicks() AS t FROM c ORDER BY c.id",
		"SELECT c.id, GetCurrentTimestampStatic() AS t FROM c WHERE c.age < GetCurrentTimestamp() ORDER BY c.age, c.id",
	} {
		seen := map[string]bool{}
		n := 0
		tok := ""
		for {
			p := c.NewQueryPager(db, store.Query{Text: text}, &router.QueryOptions{PageSize: 7, Continuation: tok})
			page, err := p.NextPage(ctx)
			require.NoError(t, err, text)
			for _, it := range page.Items {
				var row struct {
					T any `json:"t"`
				}
				require.NoError(t, json.Unmarshal(it, &row))
				seen[fmt.Sprint(row.T)] = true
				n++
			}
			if tok = page.Continuation; tok == "" {
				break
			}
			time.Sleep(time.Millisecond) // a later page runs later
		}
		all, err := c.Query(ctx, db, store.Query{Text: text}, nil)
		require.NoError(t, err)
		assert.Len(t, all, n, text)
		assert.Greater(t, n, 30, text)
		assert.Len(t, seen, 1, "%s: one instant for the whole query, got %v", text, seen)
	}
}

// A FROM subquery that looks across collections (COUNT of DISTINCT, a TOP
// of the whole database) is merged by its own plan and the query runs over
// its results on the client: the answer is one collection's, page by page
// and resumed from a token in another client.
func TestNestedFromSubquery(t *testing.T) {
	c := setup(t, 4, nil, nil)
	addUsers(t, c, 60, func(i int) string { return fmt.Sprint("u", i%9) })
	one := setup(t, 1, nil, nil) // the same documents in one collection
	addUsers(t, one, 60, func(i int) string { return fmt.Sprint("u", i%9) })
	for _, text := range []string{
		"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.userId FROM c)",
		"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.age FROM c WHERE c.age > 20)",
		"SELECT x.id, x.age FROM (SELECT TOP 7 c.id, c.age FROM c ORDER BY c.age DESC, c.id) AS x ORDER BY x.id",
		"SELECT VALUE x FROM (SELECT DISTINCT VALUE c.userId FROM c) AS x",
		"SELECT g.userId, g.n FROM (SELECT c.userId, COUNT(1) AS n FROM c GROUP BY c.userId) AS g WHERE g.n > 6",
	} {
		t.Run(text, func(t *testing.T) {
			q := store.Query{Text: text}
			want, err := one.Query(ctx, db, q, nil)
			require.NoError(t, err)
			require.NotEmpty(t, want)
			got, err := c.Query(ctx, db, q, &router.QueryOptions{PageSize: 2})
			require.NoError(t, err)
			if strings.Contains(text, "ORDER BY x.id") || strings.Contains(text, "COUNT(1) FROM") {
				assert.Equal(t, want, got)
			} else {
				assert.ElementsMatch(t, want, got)
			}
			if len(got) < 2 {
				return
			}
			page := firstPage(t, c, q, &router.QueryOptions{PageSize: 1})
			require.NotEmpty(t, page.Continuation)
			other := router.New(c.Store(), nil)
			require.NoError(t, other.Register(db, ring(t, 4)))
			rest, err := other.Query(ctx, db, q, &router.QueryOptions{Continuation: page.Continuation})
			require.NoError(t, err)
			assert.Equal(t, got, append(page.Items, rest...), "resumed from a token: the rest, in the same order")
		})
	}
}

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

// TestHeldPagerAcrossAPlacementChange: a Pager placed its query on the
// collections of the version in force; when the database moves to a
// placement that reads other collections (a reshard's switch), whose
// clean-up then empties the old ones, its next page must not answer by
// the old collections. A new version that keeps them changes nothing.
func TestHeldPagerAcrossAPlacementChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moved bool // the new version reads other collections
	}{{"same collections", false}, {"other collections", true}} {
		t.Run(tc.name, func(t *testing.T) {
			st, c, f := followedUsers(t, 3, 30)
			p := c.NewQueryPager(db, store.Query{Text: "SELECT * FROM c ORDER BY c.age"}, &router.QueryOptions{PageSize: 5})
			_, err := p.NextPage(ctx)
			require.NoError(t, err)

			n := 2
			if tc.moved {
				n = 3
			}
			publish(t, st, n, true) // a new epoch: a new registration either way
			require.NoError(t, f.Refresh(ctx))
			page, err := p.NextPage(ctx)
			if !tc.moved {
				require.NoError(t, err)
				assert.Len(t, page.Items, 5)
				return
			}
			require.ErrorIs(t, err, router.ErrPlacementChanged)
			assert.Contains(t, err.Error(), "run it again from its first page")
		})
	}
}

// blockingReads holds every Read of id until release is closed, telling
// started when one begins.
type blockingReads struct {
	store.Store
	id      string
	started chan struct{}
	release chan struct{}
}

func (s *blockingReads) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	if id == s.id {
		s.started <- struct{}{}
		<-s.release
	}
	return s.Store.Read(ctx, l, id, o)
}

// readInFlight is a router over a fence store whose read of document "1"
// has begun, by version 1's placement over three collections, and waits
// until reads.release is closed; done receives its outcome.
type readInFlight struct {
	fs    *fenceStore
	reads *blockingReads
	f     *router.Follower
	done  chan error
}

// startReadInFlight follows with opts, adds three users and starts the
// read of "1", returning once it is in flight.
func startReadInFlight(t *testing.T, opts *router.FollowOptions) *readInFlight {
	fs := newFenceStore(t)
	r := &readInFlight{fs: fs, reads: &blockingReads{Store: fs, id: "1", started: make(chan struct{}, 1), release: make(chan struct{})}, done: make(chan error, 1)}
	c := router.New(r.reads, nil)
	r.f = follow(t, c, opts)
	createColls(t, fs, 3, "/userId")
	addUsers(t, c, 3, func(i int) string { return fmt.Sprint("k", i) })
	go func() {
		_, err := c.Read(ctx, db, "1", "k1")
		r.done <- err
	}()
	<-r.reads.started
	return r
}

// TestReadInFlightHoldsTheAcknowledgement: a router acknowledges a new
// version (in its lease, which a reshard waits for before its clean-up)
// only once the reads it began by the old placement have ended, as it
// does for writes: otherwise the clean-up could delete what such a read
// is about to read.
func TestReadInFlightHoldsTheAcknowledgement(t *testing.T) {
	r := startReadInFlight(t, &router.FollowOptions{Seed: ring(t, 2), PollInterval: time.Hour, LeaseDuration: 2 * time.Hour, RouterID: "r1"})
	fs, f := r.fs, r.f
	next := publish(t, fs, 3, true)
	require.NoError(t, f.Refresh(ctx))
	leaseVersion := func() int64 {
		ls, err := shardstate.Leases(ctx, fs, db)
		require.NoError(t, err)
		require.Len(t, ls, 1)
		return ls[0].Version
	}
	assert.Less(t, leaseVersion(), next.Version, "acknowledged with a read by the old placement in flight")

	close(r.reads.release)
	require.NoError(t, <-r.done)
	require.NoError(t, f.Refresh(ctx))
	assert.Equal(t, next.Version, leaseVersion(), "acknowledged once the read ended")
}
