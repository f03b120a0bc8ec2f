package cosmos_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
	"github.com/docshard/docshard/store/storetest"
)

// faultProxy sits between the SDK and cosmium and answers chosen requests
// itself: every request is counted, and while inject returns a status the
// proxy answers with it instead of forwarding.
type faultProxy struct {
	srv      *httptest.Server
	pool     *x509.CertPool
	mu       sync.Mutex
	requests []time.Time
	inject   func(r *http.Request, n int) (status int, header map[string]string)
	writes   atomic.Int32
}

func newFaultProxy(t *testing.T, backend *cosmostest.Server) *faultProxy {
	target, err := url.Parse(backend.Endpoint)
	require.NoError(t, err)
	p := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = backend.HTTPClient().Transport
	rp.ModifyResponse = func(resp *http.Response) error {
		// The account description names the server's own endpoint; point
		// the SDK back at the proxy.
		if resp.Request.Method == http.MethodGet && resp.Request.URL.Path == "/" {
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			body = []byte(strings.ReplaceAll(string(body), strings.TrimSuffix(backend.Endpoint, "/"), strings.TrimSuffix(p.srv.URL, "/")))
			resp.Body = io.NopCloser(strings.NewReader(string(body)))
			resp.ContentLength = int64(len(body))
			resp.Header.Del("Content-Length")
		}
		return nil
	}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isDocWrite := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/docs") && r.Header.Get("x-ms-documentdb-isquery") == ""
		if isDocWrite {
			n := int(p.writes.Add(1))
			p.mu.Lock()
			p.requests = append(p.requests, time.Now())
			p.mu.Unlock()
			if p.inject != nil {
				if status, h := p.inject(r, n); status != 0 {
					for k, v := range h {
						w.Header().Set(k, v)
					}
					w.WriteHeader(status)
					_, _ = w.Write([]byte(`{"code":"injected","message":"injected by the test proxy"}`))
					return
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.srv.Certificate())
	return p
}

func (p *faultProxy) store(t *testing.T, retries int) store.Store {
	client := p.srv.Client()
	s, err := cosmos.New(cosmostest.Context(t), &cosmos.Options{
		Account:            cosmos.Account{Endpoint: p.srv.URL + "/", Key: cosmostest.Key},
		HTTPClient:         client,
		QueryMode:          cosmos.QueryLocal,
		MaxThrottleRetries: retries,
	})
	require.NoError(t, err)
	return s
}

// faultCollection returns a fault proxy in front of the shared cosmium, a
// store through it (3 SDK retries) and a new collection partitioned by /pk.
func faultCollection(t *testing.T, name string) (*faultProxy, store.Store, context.Context, string) {
	p := newFaultProxy(t, cosmostest.Shared(t))
	st := p.store(t, 3)
	ctx := cosmostest.Context(t)
	l := "dbs/faults/colls/" + name + time.Now().Format("150405.000000")
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	return p, st, ctx, l
}

func TestThrottledWritesRetryAfterRetryAfter(t *testing.T) {
	p, st, ctx, l := faultCollection(t, "throttle")

	// Two 429s with a 40 ms retry-after, then through.
	p.inject = func(_ *http.Request, n int) (int, map[string]string) {
		if n <= 2 {
			return http.StatusTooManyRequests, map[string]string{"x-ms-retry-after-ms": "40"}
		}
		return 0, nil
	}
	_, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"x"}`), nil)
	require.NoError(t, err)
	require.Len(t, p.requests, 3, "two throttled attempts and the one that went through")
	for i := 1; i < 3; i++ {
		assert.GreaterOrEqual(t, p.requests[i].Sub(p.requests[i-1]), 35*time.Millisecond, "the SDK waits the service's retry-after")
	}
	_, err = st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err, "written exactly once")

	// Throttled beyond the retry budget: store.ErrThrottled with the wait.
	p.writes.Store(0)
	p.requests = nil
	p.inject = func(*http.Request, int) (int, map[string]string) {
		return http.StatusTooManyRequests, map[string]string{"x-ms-retry-after-ms": "15"}
	}
	_, err = st.Create(ctx, l, []byte(`{"id":"b","pk":"x"}`), nil)
	require.ErrorIs(t, err, store.ErrThrottled)
	wait, ok := store.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, 15*time.Millisecond, wait)
	assert.Len(t, p.requests, 4, "bounded: the first attempt and three retries")
}

// TestOneLayerRetriesThrottles: with the store's defaults, one call
// throttled throughout makes exactly as many requests as the retry layer
// makes attempts (not the layer's attempts times the SDK's retries), each
// after the service's retry-after; the store alone sends it once.
func TestOneLayerRetriesThrottles(t *testing.T) {
	p, _, ctx, l := faultCollection(t, "onelayer")
	st := p.store(t, 0)
	p.inject = func(*http.Request, int) (int, map[string]string) {
		return http.StatusTooManyRequests, map[string]string{"x-ms-retry-after-ms": "5"}
	}
	for _, tc := range []struct {
		name string
		st   store.Store
		want int
	}{
		{"the store alone", st, 1},
		{"through the retry layer", retry.Wrap(st, nil), retry.DefaultMaxAttempts},
		{"through the layer, 3 attempts", retry.Wrap(st, &retry.Options{Policy: retry.Policy{MaxAttempts: 3}}), 3},
	} {
		p.writes.Store(0)
		_, err := tc.st.Create(ctx, l, []byte(`{"id":"t","pk":"x"}`), nil)
		require.ErrorIs(t, err, store.ErrThrottled, tc.name)
		wait, ok := store.RetryAfter(err)
		assert.True(t, ok, tc.name)
		assert.Equal(t, 5*time.Millisecond, wait, tc.name)
		assert.EqualValues(t, tc.want, p.writes.Load(), "%s: HTTP requests for one throttled call", tc.name)
	}
}

func TestRejectedWritesAreNotRetried(t *testing.T) {
	p, st, ctx, l := faultCollection(t, "reject")
	for _, tc := range []struct {
		status int
		want   error
	}{{400, store.ErrBadRequest}, {409, store.ErrConflict}, {500, store.ErrUnavailable}, {503, store.ErrUnavailable}} {
		p.writes.Store(0)
		p.inject = func(*http.Request, int) (int, map[string]string) { return tc.status, nil }
		_, err := st.Create(ctx, l, []byte(`{"id":"c","pk":"x"}`), nil)
		require.ErrorIs(t, err, tc.want, "status %d", tc.status)
		assert.EqualValues(t, 1, p.writes.Load(), "status %d: sent once, never retried blindly", tc.status)
	}
}

func TestBadConfiguration(t *testing.T) {
	srv := cosmostest.Shared(t)
	const secret = "c2VjcmV0LWtleS1uZXZlci10by1iZS1wcmludGVk"
	cases := []struct {
		name string
		opts *cosmos.Options
		want string
	}{
		{"no options", nil, "no options"},
		{"missing endpoint", &cosmos.Options{Account: cosmos.Account{Key: secret}}, "endpoint is missing"},
		{"malformed endpoint", &cosmos.Options{Account: cosmos.Account{Endpoint: "not a url", Key: secret}}, "malformed endpoint"},
		{"wrong scheme", &cosmos.Options{Account: cosmos.Account{Endpoint: "ftp://acct.documents.azure.com/", Key: secret}}, "malformed endpoint"},
		{"plain http remote", &cosmos.Options{Account: cosmos.Account{Endpoint: "http://acct.documents.azure.com/", Key: secret}}, "only a loopback emulator may skip TLS"},
		{"missing key, remote", &cosmos.Options{Account: cosmos.Account{Endpoint: "https://acct.documents.azure.com:443/"}}, "no credential"},
		{"malformed key", &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint, Key: "not base64 ###"}}, "not valid base64"},
		{"bad account binding", &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint, Key: cosmostest.Key}, Accounts: map[string]cosmos.Account{"users": {Endpoint: srv.Endpoint, Key: secret}}}, `Accounts["users"]`},
		{"wrong key", &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint, Key: secret}, HTTPClient: srv.HTTPClient()}, "rejected the credentials"},
		{"unreachable", &cosmos.Options{Account: cosmos.Account{Endpoint: "https://127.0.0.1:1/", Key: secret}, HTTPClient: srv.HTTPClient()}, "cannot reach https://127.0.0.1:1/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := cosmos.New(ctx, tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), secret, "the key is never printed")
		})
	}
	// A host that never answers (until the test ends): only the deadline
	// can end the call.
	release := make(chan struct{})
	blackhole := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	blackhole.StartTLS()
	defer func() {
		close(release)
		blackhole.CloseClientConnections()
		blackhole.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: blackhole.URL + "/", Key: secret}, HTTPClient: blackhole.Client()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not answer before the deadline")
}

func TestTLSVerificationStaysOn(t *testing.T) {
	srv := cosmostest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint, Key: cosmostest.Key}})
	require.Error(t, err, "a client that does not trust the test certificate is refused")
	var unknown x509.UnknownAuthorityError
	assert.True(t, errors.As(err, &unknown) || strings.Contains(err.Error(), "certificate"), "%v", err)
}

func TestSeveralAccounts(t *testing.T) {
	main := cosmostest.Shared(t)
	second, err := cosmostest.Start()
	require.NoError(t, err)
	defer second.Stop()
	ctx := cosmostest.Context(t)
	// The shared server outlives the test (-count=N runs it again): the
	// database is new each time.
	db := fmt.Sprintf("dbs/big%d", time.Now().UnixNano())
	overflowColl, mainColl := db+"/colls/overflow", db+"/colls/main"
	// One HTTP client trusting both test certificates.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(main.CertPEM)
	pool.AppendCertsFromPEM(second.CertPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	st, err := cosmos.New(ctx, &cosmos.Options{
		Account:    cosmos.Account{Endpoint: main.Endpoint, Key: cosmostest.Key},
		Accounts:   map[string]cosmos.Account{overflowColl: {Endpoint: second.Endpoint, Key: cosmostest.Key}},
		HTTPClient: client,
		QueryMode:  cosmos.QueryLocal,
	})
	require.NoError(t, err)
	onSecond, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: second.Endpoint, Key: cosmostest.Key}, HTTPClient: second.HTTPClient(), QueryMode: cosmos.QueryLocal})
	require.NoError(t, err)
	require.NoError(t, st.CreateCollection(ctx, overflowColl, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	require.NoError(t, st.CreateCollection(ctx, mainColl, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	_, err = st.Create(ctx, overflowColl, []byte(`{"id":"o","pk":"x"}`), nil)
	require.NoError(t, err)
	_, err = onSecond.Read(ctx, overflowColl, "o", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err, "the bound collection lives in the second account")
	_, err = onSecond.CollectionInfo(ctx, mainColl)
	assert.ErrorIs(t, err, store.ErrNotFound, "the unbound collection does not")
}

// TestQueryAuto exercises the default mode on cosmium with filters it
// answers correctly (string equality in double quotes): a filter and
// projection goes to the service whole, paged by the store's wrapped
// tokens; an ORDER BY query has its WHERE pushed down and is evaluated here.
func TestQueryAuto(t *testing.T) {
	ctx := cosmostest.Context(t)
	st := cosmiumWith(t, cosmos.QueryAuto)
	l := "dbs/auto/colls/c" + time.Now().Format("150405.000000")
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := 0; i < 20; i++ {
		doc := fmt.Sprintf(`{"id":"d%02d","pk":"p%d","s":%q,"n":%d}`, i, i%3, []string{"red", "blue"}[i%2], i)
		_, err := st.Create(ctx, l, []byte(doc), nil)
		require.NoError(t, err)
	}
	read := func(q string, opts store.QueryOptions) []any {
		var out []any
		for i := 0; ; i++ {
			require.Less(t, i, 100)
			page, err := st.Query(ctx, l, store.Query{Text: q}, &opts)
			require.NoError(t, err, q)
			for _, it := range page.Items {
				var v any
				require.NoError(t, json.Unmarshal(it, &v))
				out = append(out, v)
			}
			if page.Continuation == "" {
				return out
			}
			opts.Continuation = page.Continuation
		}
	}
	got := read(`SELECT VALUE c.id FROM c WHERE c.s = "red"`, store.QueryOptions{PageSize: 3})
	sort.Slice(got, func(i, j int) bool { return got[i].(string) < got[j].(string) })
	want := []any{}
	for i := 0; i < 20; i += 2 {
		want = append(want, fmt.Sprintf("d%02d", i))
	}
	assert.Equal(t, want, got, "pushed to the service, paged by 3")
	got = read(`SELECT TOP 3 VALUE c.n FROM c WHERE c.s = "red" ORDER BY c.n DESC`, store.QueryOptions{})
	assert.Equal(t, []any{18.0, 16.0, 14.0}, got, "WHERE pushed down, ORDER BY and TOP evaluated here")
	got = read(`SELECT TOP 2 VALUE r.n FROM root r WHERE r.s = "red" ORDER BY r.n`, store.QueryOptions{})
	assert.Equal(t, []any{0.0, 2.0}, got, "the pushed-down WHERE keeps the query's alias")
	got = read(`SELECT VALUE COUNT(1) FROM c WHERE c.s = "blue"`, store.QueryOptions{PartitionKey: "p1"})
	assert.Equal(t, []any{4.0}, got, "scoped to a partition key: d01, d07, d13, d19")
}

// countingQueries is a transport that counts the documents the service's
// query answers carry, and keeps the query texts sent.
// countingCosmium is a store on the shared cosmium in QueryAuto mode whose
// queries are recorded (countingQueries); wrap, when set, sits between
// them and cosmium.
func countingCosmium(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) (*cosmos.Store, *countingQueries) {
	srv := cosmostest.Shared(t)
	counting := &countingQueries{base: srv.HTTPClient().Transport}
	if counting.base == nil {
		counting.base = http.DefaultTransport
	}
	var rt http.RoundTripper = counting
	if wrap != nil {
		rt = wrap(counting)
	}
	st, err := cosmos.New(cosmostest.Context(t), &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint, Key: cosmostest.Key}, HTTPClient: &http.Client{Transport: rt}})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st, counting
}

// sent returns the query bodies recorded from the n-th on.
func (c *countingQueries) sent(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.texts[n:])
}

// count is how many queries were recorded.
func (c *countingQueries) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.texts)
}

type countingQueries struct {
	base  http.RoundTripper
	mu    sync.Mutex
	texts []string
	docs  int
}

func (c *countingQueries) RoundTrip(r *http.Request) (*http.Response, error) {
	if !isQueryRequest(r) {
		return c.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	resp, err := c.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(strings.NewReader(string(answer)))
	var page struct{ Documents []json.RawMessage }
	_ = json.Unmarshal(answer, &page)
	c.mu.Lock()
	c.texts, c.docs = append(c.texts, string(body)), c.docs+len(page.Documents)
	c.mu.Unlock()
	return resp, nil
}

// TestKeyedCountOnTheService: a plain count within one partition key
// ("SELECT VALUE COUNT(1) FROM c WHERE ...", as shardstate's wait for the
// routers counts stale leases) goes to the service whole, not evaluated
// here over the documents it counts: one number comes back, whatever it
// counts. Through a store that does not know serve's query extension (as
// on Cosmos DB itself); the answer is the local evaluation's.
func TestKeyedCountOnTheService(t *testing.T) {
	ctx := cosmostest.Context(t)
	st, counting := countingCosmium(t, nil)
	local := cosmiumWith(t, cosmos.QueryLocal)
	coll := fmt.Sprintf("dbs/count%d/colls/c", time.Now().UnixNano())
	require.NoError(t, st.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range 60 {
		_, err := st.Create(ctx, coll, []byte(fmt.Sprintf(`{"id":"d%d","pk":"p","v":%d}`, i, i)), nil)
		require.NoError(t, err)
	}
	q := store.Query{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.v < @v", Parameters: []store.Param{{Name: "@v", Value: 45}}}
	for _, tc := range []struct {
		name string
		st   store.Store
	}{{"service", st}, {"local", local}} {
		page, err := tc.st.Query(ctx, coll, q, &store.QueryOptions{PartitionKey: "p", PageSize: 10})
		require.NoError(t, err, tc.name)
		require.Len(t, page.Items, 1, tc.name)
		assert.JSONEq(t, "45", string(page.Items[0]), tc.name)
		assert.Empty(t, page.Continuation, tc.name)
	}
	require.NotEmpty(t, counting.texts)
	assert.Contains(t, counting.texts[len(counting.texts)-1], "COUNT(1)", "the count itself went to the service")
	assert.LessOrEqual(t, counting.docs, 1, "one number came back, not the 45 documents it counts")
}

// TestKeyedQueryScopedOnEmulatorsThatIgnoreTheKey: a query within one
// partition key that goes to the service (filters and projections, and a
// plain count) answers the key's documents only, even where the service
// ignores the key's header, as Cosmium does: the store also writes the key
// into the query's WHERE, as the recorded request bodies show. Every kind
// of key value is asked for, and a hierarchical key whole and by a
// prefix, with a local evaluation of the same query as the oracle. A null
// or undefined key, and a count within a prefix (which the service would
// answer across partitions), run here. Before the key went into the
// WHERE, Cosmium answered a filter within "a" with every document of the
// container.
func TestKeyedQueryScopedOnEmulatorsThatIgnoreTheKey(t *testing.T) {
	ctx := cosmostest.Context(t)
	service, sent := countingCosmium(t, nil)
	local := cosmiumWith(t, cosmos.QueryLocal)
	queries := []store.Query{
		{Text: "SELECT VALUE c.id FROM c"},
		{Text: "SELECT c.id FROM c WHERE c.n >= @n", Parameters: []store.Param{{Name: "@n", Value: 0}}},
		// A parameter, not a literal: cosmium v0.1.20 answers "c.n < 100"
		// with nothing (a whole-number literal right of a comparison never
		// matches; "100 > c.n" and "c.n < 100.0" do).
		{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.n < @top", Parameters: []store.Param{{Name: "@top", Value: 100}}},
	}
	check := func(t *testing.T, coll string, key any, scoped func(q store.Query) bool) {
		for _, q := range queries {
			name := fmt.Sprintf("%v %s", key, q.Text)
			opts := &store.QueryOptions{PartitionKey: key, PageSize: 2}
			want := storetest.QueryAll(t, local, coll, q, opts)
			from := sent.count()
			got := storetest.QueryAll(t, service, coll, q, opts)
			assert.ElementsMatch(t, want, got, "%s: want %s, got %s", name, want, got)
			for _, body := range sent.sent(from) {
				assert.Equal(t, scoped(q), strings.Contains(body, "@docshard_partition_key0"), "%s: the key in the WHERE: %s", name, body)
			}
		}
	}

	t.Run("one path", func(t *testing.T) {
		coll := fmt.Sprintf("dbs/scope%d/colls/c", time.Now().UnixNano())
		require.NoError(t, service.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
		keys := []string{`"a"`, `"a"`, `"a"`, `"b"`, `"b"`, `7`, `7`, `true`, `null`, ``, ``}
		for i, k := range keys {
			body := fmt.Sprintf(`{"id":"d%d","n":%d,"pk":%s}`, i, i, k)
			if k == "" {
				body = fmt.Sprintf(`{"id":"d%d","n":%d}`, i, i)
			}
			var key any
			require.NoError(t, json.Unmarshal([]byte(cmp.Or(k, "null")), &key))
			if k == "" {
				key = store.None
			} else if key == nil {
				key = partitionkey.Null
			}
			_, err := service.Create(ctx, coll, []byte(body), &store.WriteOptions{PartitionKey: key})
			require.NoError(t, err)
		}
		for _, key := range []any{"a", "b", 7.0, true, "nobody"} {
			check(t, coll, key, func(store.Query) bool { return true })
		}
		for _, key := range []any{partitionkey.Null, store.None} {
			check(t, coll, key, func(store.Query) bool { return false })
		}
		// The oracle itself is right: "a" holds d0 to d2.
		assert.ElementsMatch(t, []json.RawMessage{json.RawMessage(`"d0"`), json.RawMessage(`"d1"`), json.RawMessage(`"d2"`)},
			storetest.QueryAll(t, local, coll, queries[0], &store.QueryOptions{PartitionKey: "a"}))
	})

	t.Run("hierarchical", func(t *testing.T) {
		coll := fmt.Sprintf("dbs/scopeh%d/colls/c", time.Now().UnixNano())
		require.NoError(t, service.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPaths: []string{"/t", "/u"}}))
		for i, tu := range [][2]string{{"t1", "u1"}, {"t1", "u1"}, {"t1", "u2"}, {"t2", "u1"}} {
			_, err := service.Create(ctx, coll, []byte(fmt.Sprintf(`{"id":"h%d","n":%d,"t":%q,"u":%q}`, i, i, tu[0], tu[1])),
				&store.WriteOptions{PartitionKey: []any{tu[0], tu[1]}})
			require.NoError(t, err)
		}
		check(t, coll, []any{"t1", "u1"}, func(store.Query) bool { return true })
		check(t, coll, []any{"t1"}, func(q store.Query) bool { return !strings.Contains(q.Text, "COUNT") })
	})
}

// TestKeyedQueryTokenSurvivesAFailedRead: the first read of a container's
// key paths (which the key's WHERE needs) fails once; the query is then
// refused as the failure, not run somewhere else, and its pages, asked for
// again, read on to the end with the tokens they give. Before, the failed
// read sent page 1 to the local evaluator and page 2 to the service, and
// page 2's token was refused as issued for another query.
func TestKeyedQueryTokenSurvivesAFailedRead(t *testing.T) {
	ctx := cosmostest.Context(t)
	seed := cosmiumWith(t, cosmos.QueryLocal)
	coll := fmt.Sprintf("dbs/fail%d/colls/c", time.Now().UnixNano())
	require.NoError(t, seed.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range 5 {
		_, err := seed.Create(ctx, coll, []byte(fmt.Sprintf(`{"id":"d%d","pk":"a"}`, i)), nil)
		require.NoError(t, err)
	}
	var failed atomic.Bool
	st, _ := countingCosmium(t, func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/colls/c") && failed.CompareAndSwap(false, true) {
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"code":"ServiceUnavailable","message":"try again"}`)), Request: r}, nil
			}
			return next.RoundTrip(r)
		})
	})
	q := store.Query{Text: "SELECT VALUE c.id FROM c"}
	opts := &store.QueryOptions{PartitionKey: "a", PageSize: 2}
	_, err := st.Query(ctx, coll, q, opts)
	require.Error(t, err, "the failed read is the query's answer")
	require.True(t, failed.Load())
	assert.Len(t, storetest.QueryAll(t, st, coll, q, opts), 5, "every page, once the read succeeds")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A read feed through a server that pages by its own size, ignoring the
// one asked for, and whose _rids do not sort as its pages run, resumed by
// a store that no longer holds the page (another process), while the walk
// deletes what it has read: every document is returned exactly once, or
// the walk is told to start again; none is silently skipped. Cosmos DB
// documents no order of _rid (the REST reference and the SDKs call it a
// unique, hierarchical, system-generated id), so the resume must not
// depend on one. The server is docshard serve behind a proxy that pages
// every query by 50 and gives each document a _rid that sorts in reverse
// creation order. Before the fix, a resume took the re-read page in _rid
// order and skipped what sorted before the last _rid returned, which
// included documents pulled into the page by the deletions.
func TestReadFeedResumeNeedsNoRIDOrder(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	target, err := url.Parse(srv.Endpoint)
	require.NoError(t, err)
	var proxy *httptest.Server
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		isQuery := isQueryRequest(req)
		account := req.Method == http.MethodGet && req.URL.Path == "/"
		if !isQuery && !account || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if account { // point the SDK back at the proxy
			body = []byte(strings.ReplaceAll(string(body), strings.TrimSuffix(srv.Endpoint, "/"), strings.TrimSuffix(proxy.URL, "/")))
		} else {
			var page map[string]any
			if err := json.Unmarshal(body, &page); err != nil {
				return err
			}
			docs, _ := page["Documents"].([]any)
			for _, d := range docs {
				if m, ok := d.(map[string]any); ok {
					if n, ok := m["n"].(float64); ok {
						m["_rid"] = fmt.Sprintf("r%06d", 999999-int(n)) // reverse creation order
					}
				}
			}
			if body, err = json.Marshal(page); err != nil {
				return err
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isQueryRequest(r) {
			r.Header.Set("x-ms-max-item-count", "50") // its own page size
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	ctx := emulatortest.Context(t)
	open := func() *cosmos.Store { // a store holding no page: another process
		s, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: proxy.URL + "/", Key: emulatortest.Key}})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	const l, n = "dbs/feedorder/colls/walk", 200
	st := open()
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range n {
		_, err := st.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%03d","pk":"k%d","n":%d}`, i, i%7, i), nil)
		require.NoError(t, err)
	}

	seen := map[string]int{}
	opts := &store.FeedOptions{PageSize: 10}
	restarts := 0
	for i := 0; ; i++ {
		require.Less(t, i, 2000, "the walk ends")
		page, err := open().ReadFeed(ctx, l, opts)
		if err != nil {
			var se *store.Error
			require.True(t, errors.As(err, &se) && errors.Is(err, store.ErrBadRequest), "%v", err)
			require.Contains(t, err.Error(), "from its first page")
			restarts++
			opts.Continuation = ""
			continue
		}
		for _, raw := range page.Items {
			var doc struct{ ID, PK string }
			require.NoError(t, json.Unmarshal(raw, &doc))
			seen[doc.ID]++
			require.NoError(t, st.Delete(ctx, l, doc.ID, &store.WriteOptions{PartitionKey: doc.PK}))
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	var skipped, twice []string
	for i := range n {
		id := fmt.Sprintf("d%03d", i)
		switch {
		case seen[id] > 1:
			twice = append(twice, id)
		case seen[id] == 0:
			skipped = append(skipped, id)
		}
	}
	t.Logf("%d restarts", restarts)
	assert.Empty(t, twice, "documents returned twice")
	assert.Empty(t, skipped, "documents never returned, of %d, none deleted before it was read", n)
}

// isQueryRequest reports whether r is a query of documents (azcosmos sends
// them with Content-Type application/query+json).
func isQueryRequest(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/docs") && strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json")
}

// TestListCollectionsAcrossAccounts: a database whose collections live in
// several accounts lists every one of them, each from the account it is
// bound to, and none that an account holds but the store does not reach
// there (a container of the same name left in another account).
func TestListCollectionsAcrossAccounts(t *testing.T) {
	first, second, third := emulatortest.Start(t, nil), emulatortest.Start(t, nil), emulatortest.Start(t, nil)
	ctx := emulatortest.Context(t)
	const db = "dbs/spread"
	tests := []struct {
		name     string
		accounts map[string]cosmos.Account
		want     []string
	}{
		{"collections bound to two other accounts", map[string]cosmos.Account{
			db + "/colls/b": {Endpoint: second.Endpoint},
			db + "/colls/c": {Endpoint: third.Endpoint},
		}, []string{db + "/colls/a", db + "/colls/b", db + "/colls/c", db + "/colls/stray"}},
		{"the database bound, one collection back on the default", map[string]cosmos.Account{
			db:              {Endpoint: second.Endpoint},
			db + "/colls/a": {Endpoint: first.Endpoint},
		}, []string{db + "/colls/a", db + "/colls/b"}},
	}
	// Each account holds containers of the database: the first a, stray
	// and a b that the bindings shadow; the second b; the third c.
	for srv, colls := range map[*emulatortest.Server][]string{first: {"a", "b", "stray"}, second: {"b"}, third: {"c"}} {
		plain, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}})
		require.NoError(t, err)
		for _, c := range colls {
			require.NoError(t, plain.CreateCollection(ctx, db+"/colls/"+c, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
		}
		require.NoError(t, plain.Close())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: first.Endpoint}, Accounts: tt.accounts})
			require.NoError(t, err)
			defer st.Close()
			got, err := st.ListCollections(ctx, db)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
