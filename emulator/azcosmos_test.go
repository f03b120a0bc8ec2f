package emulator_test

// These tests are a client written on azcosmos alone (not docshard's cosmos
// package), the way any Go program would use Cosmos DB, against the
// emulator on a loopback port.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m, emulatortest.StopShared) }

// newClient returns an azcosmos client of the server, which returns
// documents on writes and never retries (so statuses are the server's).
func newClient(t testing.TB, srv *emulatortest.Server) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(srv.Key)
	require.NoError(t, err)
	c, err := azcosmos.NewClientWithKey(srv.Endpoint, cred, &azcosmos.ClientOptions{
		EnableContentResponseOnWrite: true,
		ClientOptions:                azcore.ClientOptions{Transport: srv.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	require.NoError(t, err)
	return c
}

// sharedContainer is newContainer on the test binary's shared server,
// through newClient.
func sharedContainer(t testing.TB, pkPath string) *azcosmos.ContainerClient {
	t.Helper()
	return newContainer(t, newClient(t, emulatortest.Shared(t)), pkPath)
}

// newContainer creates a database and a container keyed by pkPath, both
// named after the test, deleted when it ends.
func newContainer(t testing.TB, c *azcosmos.Client, pkPath string) *azcosmos.ContainerClient {
	t.Helper()
	cc := createContainer(t, c, pkPath)
	db, err := c.NewDatabase(databaseName(t))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Delete(context.Background(), nil) })
	return cc
}

// databaseName is the database createContainer makes for a test.
func databaseName(t testing.TB) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
}

// createContainer is newContainer without deleting the database when the
// test ends.
func createContainer(t testing.TB, c *azcosmos.Client, pkPath string) *azcosmos.ContainerClient {
	t.Helper()
	ctx := context.Background()
	name := databaseName(t)
	_, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: name}, nil)
	require.NoError(t, err)
	db, err := c.NewDatabase(name)
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "items", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{pkPath}}}, nil)
	require.NoError(t, err)
	cc, err := db.NewContainer("items")
	require.NoError(t, err)
	return cc
}

// status returns the HTTP status of an azcosmos error (0 when it is not a
// response error).
func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func jsonOf(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func object(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	return m
}

func etag(s string) *azcore.ETag {
	e := azcore.ETag(s)
	return &e
}

// TestItemCRUD: create, read, replace, upsert and delete with partition
// keys of every type, with Cosmos DB's statuses, ETags and system
// properties.
func TestItemCRUD(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	ctx := context.Background()
	cases := []struct {
		name string
		key  any
		pk   azcosmos.PartitionKey
	}{
		{"string", "alice", azcosmos.NewPartitionKeyString("alice")},
		{"unicode string", "ünïcødé 😀", azcosmos.NewPartitionKeyString("ünïcødé 😀")},
		{"number", 42.5, azcosmos.NewPartitionKeyNumber(42.5)},
		{"integer", 7.0, azcosmos.NewPartitionKeyNumber(7)},
		{"bool", true, azcosmos.NewPartitionKeyBool(true)},
		{"null", nil, azcosmos.NullPartitionKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "doc-" + tc.name
			created, err := cc.CreateItem(ctx, tc.pk, jsonOf(t, map[string]any{"id": id, "pk": tc.key, "v": 1}), nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusCreated, created.RawResponse.StatusCode)
			assert.NotEmpty(t, created.ETag)
			m := object(t, created.Value)
			assert.Equal(t, string(created.ETag), m["_etag"], "the etag header is the body's _etag")
			for _, p := range []string{"_rid", "_self", "_ts", "_attachments"} {
				assert.Contains(t, m, p)
			}
			assert.Greater(t, created.RequestCharge, float32(0))
			assert.NotNil(t, created.SessionToken)

			read, err := cc.ReadItem(ctx, tc.pk, id, nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, read.RawResponse.StatusCode)
			assert.Equal(t, created.ETag, read.ETag)
			assert.Equal(t, m["_rid"], object(t, read.Value)["_rid"], "the _rid is stable")
			assert.Equal(t, tc.key, object(t, read.Value)["pk"])

			replaced, err := cc.ReplaceItem(ctx, tc.pk, id, jsonOf(t, map[string]any{"id": id, "pk": tc.key, "v": 2}), nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, replaced.RawResponse.StatusCode, "a replace answers 200")
			assert.NotEqual(t, created.ETag, replaced.ETag)
			assert.Equal(t, m["_rid"], object(t, replaced.Value)["_rid"], "a replace keeps the _rid")

			up, err := cc.UpsertItem(ctx, tc.pk, jsonOf(t, map[string]any{"id": id, "pk": tc.key, "v": 3}), nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, up.RawResponse.StatusCode, "an upsert that replaces answers 200")
			up, err = cc.UpsertItem(ctx, tc.pk, jsonOf(t, map[string]any{"id": id + "-new", "pk": tc.key}), nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusCreated, up.RawResponse.StatusCode, "an upsert that creates answers 201")

			read, err = cc.ReadItem(ctx, tc.pk, id, nil)
			require.NoError(t, err)
			assert.EqualValues(t, 3, object(t, read.Value)["v"])

			del, err := cc.DeleteItem(ctx, tc.pk, id, nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusNoContent, del.RawResponse.StatusCode)
			_, err = cc.ReadItem(ctx, tc.pk, id, nil)
			assert.Equal(t, http.StatusNotFound, status(err))
		})
	}
}

// TestIDsScopedByPartitionKey: one id under two keys is two documents; a
// read, replace or delete with another key finds nothing.
func TestIDsScopedByPartitionKey(t *testing.T) {
	cc := sharedContainer(t, "/tenant")
	ctx := context.Background()
	a, b := azcosmos.NewPartitionKeyString("a"), azcosmos.NewPartitionKeyString("b")
	_, err := cc.CreateItem(ctx, a, []byte(`{"id":"x","tenant":"a","v":"a"}`), nil)
	require.NoError(t, err)
	_, err = cc.CreateItem(ctx, b, []byte(`{"id":"x","tenant":"b","v":"b"}`), nil)
	require.NoError(t, err, "the same id under another key is another document")
	for _, k := range []string{"a", "b"} {
		r, err := cc.ReadItem(ctx, azcosmos.NewPartitionKeyString(k), "x", nil)
		require.NoError(t, err)
		assert.Equal(t, k, object(t, r.Value)["v"])
	}
	other := azcosmos.NewPartitionKeyString("c")
	_, err = cc.ReadItem(ctx, other, "x", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "a read with the wrong key is 404")
	_, err = cc.ReplaceItem(ctx, other, "x", []byte(`{"id":"x","tenant":"c"}`), nil)
	assert.Equal(t, http.StatusNotFound, status(err), "a replace with the wrong key is 404")
	_, err = cc.DeleteItem(ctx, other, "x", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "a delete with the wrong key is 404")
	_, err = cc.DeleteItem(ctx, a, "x", nil)
	require.NoError(t, err)
	r, err := cc.ReadItem(ctx, b, "x", nil)
	require.NoError(t, err, "a delete under one key leaves the other")
	assert.Equal(t, "b", object(t, r.Value)["v"])

	// A key query sees its key's documents only.
	pager := cc.NewQueryItemsPager("SELECT VALUE c.v FROM c WHERE c.id = 'x'", b, nil)
	var got []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, it := range page.Items {
			var s string
			require.NoError(t, json.Unmarshal(it, &s))
			got = append(got, s)
		}
	}
	assert.Equal(t, []string{"b"}, got)
}

// TestItemErrors: 409, 404, 412 (replace, delete, upsert) and 400, each
// leaving the document as it was.
func TestItemErrors(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	first, err := cc.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":1}`), nil)
	require.NoError(t, err)
	second, err := cc.ReplaceItem(ctx, pk, "a", []byte(`{"id":"a","pk":"p","v":2}`), &azcosmos.ItemOptions{IfMatchEtag: &first.ETag})
	require.NoError(t, err, "the current ETag matches")
	stale := &azcosmos.ItemOptions{IfMatchEtag: &first.ETag}
	cases := []struct {
		name string
		do   func() error
		want int
	}{
		{"duplicate create", func() error {
			_, err := cc.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":9}`), nil)
			return err
		}, http.StatusConflict},
		{"missing item", func() error { _, err := cc.ReadItem(ctx, pk, "nope", nil); return err }, http.StatusNotFound},
		{"replace missing", func() error {
			_, err := cc.ReplaceItem(ctx, pk, "nope", []byte(`{"id":"nope","pk":"p"}`), nil)
			return err
		}, http.StatusNotFound},
		{"delete missing", func() error { _, err := cc.DeleteItem(ctx, pk, "nope", nil); return err }, http.StatusNotFound},
		{"stale replace", func() error {
			_, err := cc.ReplaceItem(ctx, pk, "a", []byte(`{"id":"a","pk":"p","v":9}`), stale)
			return err
		}, http.StatusPreconditionFailed},
		{"stale delete", func() error { _, err := cc.DeleteItem(ctx, pk, "a", stale); return err }, http.StatusPreconditionFailed},
		{"stale upsert", func() error {
			_, err := cc.UpsertItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":9}`), stale)
			return err
		}, http.StatusPreconditionFailed},
		{"unknown etag", func() error {
			_, err := cc.ReplaceItem(ctx, pk, "a", []byte(`{"id":"a","pk":"p","v":9}`), &azcosmos.ItemOptions{IfMatchEtag: etag(`"nope"`)})
			return err
		}, http.StatusPreconditionFailed},
		{"key differs from the body's", func() error {
			_, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("q"), []byte(`{"id":"b","pk":"p"}`), nil)
			return err
		}, http.StatusBadRequest},
		{"body id differs", func() error {
			_, err := cc.ReplaceItem(ctx, pk, "a", []byte(`{"id":"b","pk":"p"}`), nil)
			return err
		}, http.StatusBadRequest},
		{"bad id", func() error {
			_, err := cc.CreateItem(ctx, pk, []byte(`{"id":"`+strings.Repeat("x", 1024)+`","pk":"p"}`), nil) // the service takes 1,023 bytes
			return err
		}, http.StatusBadRequest},
		{"malformed JSON", func() error {
			_, err := cc.CreateItem(ctx, pk, []byte(`{"id":"c","pk":"p",`), nil)
			return err
		}, http.StatusBadRequest},
		{"too large", func() error {
			_, err := cc.CreateItem(ctx, pk, jsonOf(t, map[string]any{"id": "big", "pk": "p", "blob": strings.Repeat("x", 2<<20)}), nil)
			return err
		}, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			require.Error(t, err)
			assert.Equal(t, tc.want, status(err), "%v", err)
			r, err := cc.ReadItem(ctx, pk, "a", nil)
			require.NoError(t, err)
			assert.Equal(t, second.ETag, r.ETag, "the document is as it was")
		})
	}
}

// TestPatch: every operation, conditions, and what a patch may not change.
func TestPatch(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	d, err := cc.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","n":1,"big":9007199254740993,"tags":["x","y"],"inner":{"q":1},"old":true}`), nil)
	require.NoError(t, err)

	var ops azcosmos.PatchOperations
	ops.AppendSet("/color", "red")
	ops.AppendAdd("/tags/1", "inserted")
	ops.AppendAdd("/tags/-", "last")
	ops.AppendReplace("/inner/q", 2)
	ops.AppendRemove("/old")
	ops.AppendIncrement("/n", 5)
	ops.AppendIncrement("/big", 1)
	ops.AppendIncrement("/fresh", 3)
	r, err := cc.PatchItem(ctx, pk, "a", ops, &azcosmos.ItemOptions{IfMatchEtag: &d.ETag, EnableContentResponseOnWrite: true})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, r.RawResponse.StatusCode)
	assert.NotEqual(t, d.ETag, r.ETag)
	m := object(t, r.Value)
	assert.Equal(t, "red", m["color"])
	assert.Equal(t, []any{"x", "inserted", "y", "last"}, m["tags"])
	assert.Equal(t, map[string]any{"q": 2.0}, m["inner"])
	assert.NotContains(t, m, "old")
	assert.Equal(t, 6.0, m["n"])
	assert.Equal(t, 3.0, m["fresh"])
	assert.Contains(t, string(r.Value), `"big":9007199254740994`, "integers are incremented exactly")

	cases := []struct {
		name  string
		build func(*azcosmos.PatchOperations)
		opts  *azcosmos.ItemOptions
		want  int
	}{
		{"replace a missing property", func(p *azcosmos.PatchOperations) { p.AppendReplace("/missing", 1) }, nil, http.StatusBadRequest},
		{"remove a missing property", func(p *azcosmos.PatchOperations) { p.AppendRemove("/missing") }, nil, http.StatusBadRequest},
		{"set under a missing parent", func(p *azcosmos.PatchOperations) { p.AppendSet("/no/such", 1) }, nil, http.StatusBadRequest},
		{"increment a string", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/color", 1) }, nil, http.StatusBadRequest},
		{"change the id", func(p *azcosmos.PatchOperations) { p.AppendSet("/id", "b") }, nil, http.StatusBadRequest},
		{"change the partition key", func(p *azcosmos.PatchOperations) { p.AppendSet("/pk", "q") }, nil, http.StatusBadRequest},
		{"a system property", func(p *azcosmos.PatchOperations) { p.AppendSet("/_ts", 1) }, nil, http.StatusBadRequest},
		{"a stale If-Match", func(p *azcosmos.PatchOperations) { p.AppendSet("/color", "blue") }, &azcosmos.ItemOptions{IfMatchEtag: &d.ETag}, http.StatusPreconditionFailed},
		{"a false condition", func(p *azcosmos.PatchOperations) {
			p.SetCondition("FROM c WHERE c.color = 'green'")
			p.AppendSet("/color", "blue")
		}, nil, http.StatusPreconditionFailed},
		{"eleven operations", func(p *azcosmos.PatchOperations) {
			for i := 0; i < 11; i++ {
				p.AppendSet(fmt.Sprintf("/f%d", i), i)
			}
		}, nil, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p azcosmos.PatchOperations
			tc.build(&p)
			_, err := cc.PatchItem(ctx, pk, "a", p, tc.opts)
			assert.Equal(t, tc.want, status(err), "%v", err)
			cur, err := cc.ReadItem(ctx, pk, "a", nil)
			require.NoError(t, err)
			assert.Equal(t, r.ETag, cur.ETag, "a refused patch changes nothing")
		})
	}
	var cond azcosmos.PatchOperations
	cond.SetCondition("FROM c WHERE c.color = 'red'")
	cond.AppendSet("/inner/color", "red")
	_, err = cc.PatchItem(ctx, pk, "a", cond, nil)
	require.NoError(t, err, "a true condition")
	cur, err := cc.ReadItem(ctx, pk, "a", nil)
	require.NoError(t, err)
	m = object(t, cur.Value)
	assert.Equal(t, "red", m["inner"].(map[string]any)["color"])
	_, err = cc.PatchItem(ctx, azcosmos.NewPartitionKeyString("other"), "a", cond, nil)
	assert.Equal(t, http.StatusNotFound, status(err))
}

// seedItems writes n items over keys k0..k9: n the index, g = n mod 4,
// s a string by n mod 3, odd items with a tag.
func seedItems(t testing.TB, cc *azcosmos.ContainerClient, n int) []map[string]any {
	t.Helper()
	ctx := context.Background()
	var all []map[string]any
	for i := 0; i < n; i++ {
		m := map[string]any{"id": fmt.Sprintf("i%04d", i), "pk": fmt.Sprintf("k%d", i%10), "n": float64(i), "g": float64(i % 4), "s": []string{"red", "green", "blue"}[i%3]}
		if i%2 == 1 {
			m["tag"] = "odd"
		}
		_, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(m["pk"].(string)), jsonOf(t, m), nil)
		require.NoError(t, err)
		all = append(all, m)
	}
	return all
}

// queryAll reads a query to the end, page by page, checking the page size.
func queryAll(t testing.TB, cc *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey, opts *azcosmos.QueryOptions) []json.RawMessage {
	t.Helper()
	return queryPages(t, context.Background(), cc, q, pk, opts)
}

// wholeQuery is a context whose requests carry docshard's query extension
// (emulator.HeaderWholeQuery): serve answers any query whole, as the
// cosmos backend asks, where Cosmos DB's gateway refuses what the client
// must merge.
var wholeQuery = policy.WithHTTPHeader(context.Background(), http.Header{emulator.HeaderWholeQuery: {"true"}})

// queryWhole is queryAll with docshard's query extension (wholeQuery).
func queryWhole(t testing.TB, cc *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey, opts *azcosmos.QueryOptions) []json.RawMessage {
	t.Helper()
	return queryPages(t, wholeQuery, cc, q, pk, opts)
}

// queryPages reads every page of a query with ctx.
func queryPages(t testing.TB, ctx context.Context, cc *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey, opts *azcosmos.QueryOptions) []json.RawMessage {
	t.Helper()
	pager := cc.NewQueryItemsPager(q, pk, opts)
	var out []json.RawMessage
	for pages := 0; pager.More(); pages++ {
		require.Less(t, pages, 10000, "the query does not end")
		page, err := pager.NextPage(ctx)
		require.NoError(t, err, q)
		if opts != nil && opts.PageSizeHint > 0 {
			require.LessOrEqual(t, len(page.Items), int(opts.PageSizeHint), "a page holds at most the page size")
		}
		for _, it := range page.Items {
			out = append(out, it)
		}
	}
	return out
}

// TestPagedQueries: hundreds of items read page by page, each exactly
// once, across partitions and within one, with parameters.
func TestPagedQueries(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	all := seedItems(t, cc, 600)
	for _, size := range []int32{1, 7, 100, 599, -1} {
		t.Run(fmt.Sprintf("page size %d", size), func(t *testing.T) {
			items := queryAll(t, cc, "SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: size})
			seen := map[string]bool{}
			for _, it := range items {
				id := object(t, it)["id"].(string)
				require.False(t, seen[id], "%s returned twice", id)
				seen[id] = true
			}
			assert.Len(t, seen, len(all), "every item exactly once")
		})
	}
	// Within one key, with parameters.
	items := queryAll(t, cc, "SELECT VALUE c.n FROM c WHERE c.n >= @lo AND c.s = @s", azcosmos.NewPartitionKeyString("k3"),
		&azcosmos.QueryOptions{PageSizeHint: 4, QueryParameters: []azcosmos.QueryParameter{{Name: "@lo", Value: 100}, {Name: "@s", Value: "red"}}})
	var want []float64
	for _, m := range all {
		if m["pk"] == "k3" && m["n"].(float64) >= 100 && m["s"] == "red" {
			want = append(want, m["n"].(float64))
		}
	}
	var got []float64
	for _, it := range items {
		var f float64
		require.NoError(t, json.Unmarshal(it, &f))
		got = append(got, f)
	}
	assert.Equal(t, want, got)
	assert.NotEmpty(t, got)
}

// TestCrossPartitionQueries: azcosmos v1.5.0 sends every query to the
// gateway as it is (no query plan), with enablecrosspartition; the
// emulator answers ORDER BY, aggregates, DISTINCT, GROUP BY, TOP and
// OFFSET/LIMIT whole, paged.
func TestCrossPartitionQueries(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	all := seedItems(t, cc, 300)
	ns := func(keep func(m map[string]any) bool) []any {
		var out []any
		for _, m := range all {
			if keep(m) {
				out = append(out, m["n"])
			}
		}
		return out
	}
	desc := ns(func(m map[string]any) bool { return m["s"] == "blue" })
	sort.Slice(desc, func(i, j int) bool { return desc[i].(float64) > desc[j].(float64) })
	odd := len(ns(func(m map[string]any) bool { return m["tag"] == "odd" }))
	sum := 0.0
	for _, m := range all {
		sum += m["n"].(float64)
	}
	cases := []struct {
		name  string
		query string
		want  []any
	}{
		{"ORDER BY", "SELECT VALUE c.n FROM c WHERE c.s = 'blue' ORDER BY c.n DESC", desc},
		{"TOP with ORDER BY", "SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC", []any{299.0, 298.0, 297.0}},
		{"OFFSET LIMIT", "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 10 LIMIT 5", []any{10.0, 11.0, 12.0, 13.0, 14.0}},
		{"COUNT", "SELECT VALUE COUNT(1) FROM c", []any{300.0}},
		{"COUNT with a filter", "SELECT VALUE COUNT(1) FROM c WHERE c.tag = 'odd'", []any{float64(odd)}},
		{"aggregates", "SELECT SUM(c.n) AS s, AVG(c.n) AS a, MIN(c.n) AS lo, MAX(c.n) AS hi FROM c",
			[]any{map[string]any{"s": sum, "a": sum / 300, "lo": 0.0, "hi": 299.0}}},
		{"DISTINCT", "SELECT DISTINCT VALUE c.s FROM c ORDER BY c.s", []any{"blue", "green", "red"}},
		{"GROUP BY", "SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", []any{
			map[string]any{"g": 0.0, "n": 75.0}, map[string]any{"g": 1.0, "n": 75.0},
			map[string]any{"g": 2.0, "n": 75.0}, map[string]any{"g": 3.0, "n": 75.0}}},
		{"empty COUNT", "SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000", []any{0.0}},
		// Subqueries and paths as FROM and JOIN sources.
		{"COUNT of a DISTINCT subquery", "SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.s FROM c)", []any{3.0}},
		{"FROM subquery", "SELECT VALUE x.n FROM (SELECT c.n FROM c WHERE c.s = 'blue') AS x ORDER BY x.n DESC", desc},
		{"JOIN subquery", "SELECT VALUE c.n FROM c JOIN (SELECT VALUE c.tag) t WHERE c.n < 6 ORDER BY c.n", []any{1.0, 3.0, 5.0}},
		{"inferred alias", "SELECT TOP 3 VALUE n FROM c.n ORDER BY n DESC", []any{299.0, 298.0, 297.0}},
	}
	for _, tc := range cases {
		for _, size := range []int32{0, 2} {
			t.Run(fmt.Sprintf("%s, page size %d", tc.name, size), func(t *testing.T) {
				items := queryWhole(t, cc, tc.query, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: size})
				got := make([]any, len(items))
				for i, it := range items {
					require.NoError(t, json.Unmarshal(it, &got[i]))
				}
				if tc.name == "GROUP BY" {
					sort.Slice(got, func(i, j int) bool {
						return got[i].(map[string]any)["g"].(float64) < got[j].(map[string]any)["g"].(float64)
					})
				}
				assert.Equal(t, tc.want, got)
			})
		}
		// Without the extension, as Cosmos DB's gateway: the client must
		// merge these, so they are refused, with the plan in the body
		// (sub-status 1004), or without one for an aggregate outside
		// SELECT VALUE.
		t.Run(tc.name+", refused without the extension", func(t *testing.T) {
			_, err := cc.NewQueryItemsPager(tc.query, azcosmos.NewPartitionKey(), nil).NextPage(context.Background())
			var re *azcore.ResponseError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, http.StatusBadRequest, re.StatusCode)
			if tc.name == "aggregates" || tc.name == "GROUP BY" {
				assert.Contains(t, err.Error(), "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates")
				assert.Empty(t, re.RawResponse.Header.Get("x-ms-substatus"))
				return
			}
			assert.Contains(t, err.Error(), "cross partition query can not be directly served by the gateway")
			assert.Equal(t, "1004", re.RawResponse.Header.Get("x-ms-substatus"))
			assert.Contains(t, err.Error(), "additionalErrorInfo")
		})
	}
	// ReadManyItems asks for the partition-key ranges and queries the one
	// range by its id.
	resp, err := cc.ReadManyItems(context.Background(), []azcosmos.ItemIdentity{
		{ID: "i0001", PartitionKey: azcosmos.NewPartitionKeyString("k1")},
		{ID: "i0002", PartitionKey: azcosmos.NewPartitionKeyString("k2")},
		{ID: "i0002", PartitionKey: azcosmos.NewPartitionKeyString("k3")}, // no such item
	}, nil)
	require.NoError(t, err)
	assert.Len(t, resp.Items, 2)
	ranges, err := cc.ReadFeedRanges(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, []azcosmos.FeedRange{{MinInclusive: "", MaxExclusive: "FF"}}, ranges)
}

// TestDatabasesAndContainers: the lifecycle of databases and containers,
// what a container keeps, and what is refused.
func TestDatabasesAndContainers(t *testing.T) {
	srv := emulatortest.Shared(t)
	c := newClient(t, srv)
	ctx := context.Background()
	r, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "lifecycle"}, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, r.RawResponse.StatusCode)
	assert.NotEmpty(t, r.DatabaseProperties.ResourceID)
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "lifecycle"}, nil)
	assert.Equal(t, http.StatusConflict, status(err))
	db, err := c.NewDatabase("lifecycle")
	require.NoError(t, err)
	_, err = db.Read(ctx, nil)
	require.NoError(t, err, "an empty database exists")

	names := collect(t, c.NewQueryDatabasesPager("SELECT * FROM d WHERE d.id = 'lifecycle'", nil),
		func(p azcosmos.QueryDatabasesResponse) (ids []string) {
			for _, d := range p.Databases {
				ids = append(ids, d.ID)
			}
			return ids
		})
	assert.Equal(t, []string{"lifecycle"}, names)

	ttl := int32(3600)
	props := azcosmos.ContainerProperties{ID: "kept", DefaultTimeToLive: &ttl,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}},
		IndexingPolicy:         &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent, IncludedPaths: []azcosmos.IncludedPath{{Path: "/tenant/?"}}}}
	cr, err := db.CreateContainer(ctx, props, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, cr.RawResponse.StatusCode)
	_, err = db.CreateContainer(ctx, props, nil)
	assert.Equal(t, http.StatusConflict, status(err))
	cc, err := db.NewContainer("kept")
	require.NoError(t, err)
	read, err := cc.Read(ctx, nil)
	require.NoError(t, err)
	got := read.ContainerProperties
	assert.Equal(t, []string{"/tenant"}, got.PartitionKeyDefinition.Paths)
	assert.Equal(t, azcosmos.PartitionKeyKindHash, got.PartitionKeyDefinition.Kind)
	require.NotNil(t, got.DefaultTimeToLive)
	assert.Equal(t, ttl, *got.DefaultTimeToLive)
	require.NotNil(t, got.IndexingPolicy)
	assert.Equal(t, "/tenant/?", got.IndexingPolicy.IncludedPaths[0].Path, "the indexing policy is kept")
	assert.NotEmpty(t, got.ResourceID)

	_, err = cc.Replace(ctx, *got, nil)
	require.NoError(t, err, "a replace that changes nothing")
	changed := *got
	other := int32(60)
	changed.DefaultTimeToLive = &other
	rr, err := cc.Replace(ctx, changed, nil)
	require.NoError(t, err, "a replace that changes the TTL")
	require.NotNil(t, rr.ContainerProperties.DefaultTimeToLive)
	assert.Equal(t, other, *rr.ContainerProperties.DefaultTimeToLive)
	assert.NotEqual(t, got.ETag, rr.ContainerProperties.ETag, "a new ETag")
	changed.PartitionKeyDefinition.Paths = []string{"/other"}
	_, err = cc.Replace(ctx, changed, nil)
	assert.Equal(t, http.StatusBadRequest, status(err), "the partition key cannot change")

	refused := []struct {
		name string
		def  azcosmos.PartitionKeyDefinition
		want int
	}{
		{"hierarchical key of four paths", azcosmos.PartitionKeyDefinition{Paths: []string{"/a", "/b", "/c", "/d"}, Kind: azcosmos.PartitionKeyKindMultiHash}, http.StatusBadRequest},
		{"kind Hash of two paths", azcosmos.PartitionKeyDefinition{Paths: []string{"/a", "/b"}, Kind: azcosmos.PartitionKeyKindHash}, http.StatusBadRequest},
		{"MultiHash of one path", azcosmos.PartitionKeyDefinition{Paths: []string{"/a"}, Kind: azcosmos.PartitionKeyKindMultiHash}, http.StatusBadRequest},
		{"no key", azcosmos.PartitionKeyDefinition{}, http.StatusBadRequest},
		{"bad path", azcosmos.PartitionKeyDefinition{Paths: []string{"tenant"}}, http.StatusBadRequest},
	}
	for _, tc := range refused {
		_, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "refused", PartitionKeyDefinition: tc.def}, nil)
		assert.Equal(t, tc.want, status(err), "%s: %v", tc.name, err)
	}
	zero := int32(0)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "refused", DefaultTimeToLive: &zero, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/a"}}}, nil)
	assert.Equal(t, http.StatusBadRequest, status(err), "defaultTtl 0")

	ids := collect(t, db.NewQueryContainersPager("SELECT * FROM c", nil), func(p azcosmos.QueryContainersResponse) (ids []string) {
		for _, c := range p.Containers {
			ids = append(ids, c.ID)
		}
		return ids
	})
	assert.Equal(t, []string{"kept"}, ids)

	_, err = cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("t"), []byte(`{"id":"1","tenant":"t"}`), nil)
	require.NoError(t, err)
	del, err := cc.Delete(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, del.RawResponse.StatusCode)
	_, err = cc.Read(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err))
	_, err = cc.ReadItem(ctx, azcosmos.NewPartitionKeyString("t"), "1", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "an item of a deleted container")
	_, err = db.Read(ctx, nil)
	require.NoError(t, err, "a database outlives its last container")

	_, err = db.CreateContainer(ctx, props, nil)
	require.NoError(t, err)
	_, err = db.Delete(ctx, nil)
	require.NoError(t, err)
	_, err = db.Read(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err))
	_, err = cc.Read(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err), "deleting a database deletes its containers")
	_, err = db.Delete(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err))
	_, err = db.CreateContainer(ctx, props, nil)
	assert.Equal(t, http.StatusNotFound, status(err), "a container needs its database")
}

// collect reads a pager to the end and returns what items takes from its
// pages.
func collect[P, T any](t testing.TB, pager *runtime.Pager[P], items func(P) []T) []T {
	t.Helper()
	var out []T
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		require.NoError(t, err)
		out = append(out, items(page)...)
	}
	return out
}

// readChanges reads azcosmos's change feed from opts until a page is empty
// and returns the items as "id=v" and the last continuation token.
func readChanges(t testing.TB, cc *azcosmos.ContainerClient, opts azcosmos.ChangeFeedOptions) ([]string, string) {
	t.Helper()
	var out []string
	for i := 0; ; i++ {
		require.Less(t, i, 1000, "the change feed does not end")
		resp, err := cc.ReadChangeFeed(context.Background(), &opts)
		require.NoError(t, err)
		require.NotEmpty(t, resp.ContinuationToken)
		if opts.MaxItemCount > 0 {
			require.LessOrEqual(t, len(resp.Items), int(opts.MaxItemCount))
		}
		if len(resp.Items) == 0 {
			return out, resp.ContinuationToken
		}
		assert.Equal(t, len(resp.Items), resp.Count)
		for _, it := range resp.Items {
			m := object(t, it)
			out = append(out, fmt.Sprintf("%v=%v", m["id"], m["v"]))
		}
		opts.Continuation, opts.FeedRange = &resp.ContinuationToken, nil
	}
}

// TestChangeFeed: azcosmos's ReadChangeFeed over the emulator: from the
// beginning and from a time, paged, resumed from its composite token,
// scoped to a partition key, each document once at its last write in the
// order of last writes, and a token of another container refused.
func TestChangeFeed(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	c := newClient(t, srv)
	cc := newContainer(t, c, "/pk")
	ctx := context.Background()
	ranges, err := cc.ReadFeedRanges(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []azcosmos.FeedRange{{MinInclusive: "", MaxExclusive: "FF"}}, ranges)
	whole := &ranges[0]
	upsert := func(id, key string, v int) {
		t.Helper()
		_, err := cc.UpsertItem(ctx, azcosmos.NewPartitionKeyString(key), []byte(fmt.Sprintf(`{"id":%q,"pk":%q,"v":%d}`, id, key, v)), nil)
		require.NoError(t, err)
	}
	got, empty := readChanges(t, cc, azcosmos.ChangeFeedOptions{FeedRange: whole})
	assert.Empty(t, got)
	for i := range 6 {
		upsert(fmt.Sprintf("d%d", i), fmt.Sprintf("k%d", i%2), 1)
	}
	upsert("d0", "k0", 2)
	upsert("d3", "k1", 2)
	_, err = cc.DeleteItem(ctx, azcosmos.NewPartitionKeyString("k0"), "d4", nil)
	require.NoError(t, err)
	want := []string{"d1=1", "d2=1", "d5=1", "d0=2", "d3=2"}

	for _, size := range []int32{0, 1, 2, 100} {
		got, _ = readChanges(t, cc, azcosmos.ChangeFeedOptions{FeedRange: whole, MaxItemCount: size})
		assert.Equal(t, want, got, "from the beginning, pages of %d", size)
	}
	got, end := readChanges(t, cc, azcosmos.ChangeFeedOptions{Continuation: &empty})
	assert.Equal(t, want, got, "from the token of the empty container")
	var token struct {
		ResourceID   string
		Continuation []struct{ MinInclusive, MaxExclusive, ContinuationToken string }
	}
	require.NoError(t, json.Unmarshal([]byte(end), &token))
	props, err := cc.Read(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, props.ContainerProperties.ResourceID, token.ResourceID, "the token names the container")
	require.Len(t, token.Continuation, 1)
	assert.NotEmpty(t, token.Continuation[0].ContinuationToken, "and holds the etag of the one range")

	got, end2 := readChanges(t, cc, azcosmos.ChangeFeedOptions{Continuation: &end})
	assert.Empty(t, got, "caught up")
	upsert("d1", "k1", 2)
	upsert("d6", "k0", 1)
	for _, from := range []string{end, end2} {
		got, _ = readChanges(t, cc, azcosmos.ChangeFeedOptions{Continuation: &from})
		assert.Equal(t, []string{"d1=2", "d6=1"}, got, "only what was written since")
	}

	k1 := azcosmos.NewPartitionKeyString("k1")
	got, _ = readChanges(t, cc, azcosmos.ChangeFeedOptions{FeedRange: whole, PartitionKey: &k1, MaxItemCount: 1})
	assert.Equal(t, []string{"d5=1", "d3=2", "d1=2"}, got, "one partition key")

	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	got, _ = readChanges(t, cc, azcosmos.ChangeFeedOptions{FeedRange: whole, StartFrom: &past})
	assert.Equal(t, []string{"d2=1", "d5=1", "d0=2", "d3=2", "d1=2", "d6=1"}, got, "from a time past: everything")
	got, fromFuture := readChanges(t, cc, azcosmos.ChangeFeedOptions{FeedRange: whole, StartFrom: &future})
	assert.Empty(t, got, "from a time to come: nothing yet")
	srv.Advance(2 * time.Hour)
	upsert("d7", "k1", 1)
	got, _ = readChanges(t, cc, azcosmos.ChangeFeedOptions{FeedRange: whole, StartFrom: &future})
	assert.Equal(t, []string{"d7=1"}, got, "from a time: what was written since")
	got, _ = readChanges(t, cc, azcosmos.ChangeFeedOptions{Continuation: &fromFuture})
	assert.Equal(t, []string{"d7=1"}, got, "resumed from the token of an empty page")

	db, err := c.NewDatabase(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())) // newContainer's
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "other", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(t, err)
	other, err := db.NewContainer("other")
	require.NoError(t, err)
	_, err = other.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{Continuation: &end})
	assert.ErrorContains(t, err, "different container", "azcosmos refuses a token of another container by its resource id")
}

// TestUnsupportedAnswersClearly: what the emulator leaves out is refused
// with 501 and says so, never half done.
func TestUnsupportedAnswersClearly(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	batch := cc.NewTransactionalBatch(pk)
	batch.CreateItem([]byte(`{"id":"a","pk":"p"}`), nil)
	batch.PatchItem("a", azcosmos.PatchOperations{}, nil) // a patch of no operations: the batch is refused whole
	_, err := cc.ExecuteTransactionalBatch(ctx, batch, nil)
	assert.Equal(t, http.StatusBadRequest, status(err))
	assert.Contains(t, err.Error(), "a patch holds 1 to 10 operations")
	_, err = cc.ReadItem(ctx, pk, "a", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "nothing of the batch was written")
	_, err = cc.ReadThroughput(ctx, nil)
	assert.Error(t, err)
}

// TestRestartKeepsData: a durable server stopped and started again on the
// same directory answers everything that was acknowledged, empty
// databases included.
func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	srv, err := emulatortest.New(&emulatortest.Options{Dir: dir})
	require.NoError(t, err)
	c := newClient(t, srv)
	cc := newContainer(t, c, "/pk")
	seedItems(t, cc, 50)
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "empty"}, nil)
	require.NoError(t, err)
	require.NoError(t, srv.Close())

	srv = emulatortest.Start(t, &emulatortest.Options{Dir: dir})
	c = newClient(t, srv)
	for _, dbID := range []string{"TestRestartKeepsData", "empty"} {
		db, err := c.NewDatabase(dbID)
		require.NoError(t, err)
		_, err = db.Read(ctx, nil)
		require.NoError(t, err, "database %s survives", dbID)
	}
	db, _ := c.NewDatabase("TestRestartKeepsData")
	cc, err = db.NewContainer("items")
	require.NoError(t, err)
	items := queryWhole(t, cc, "SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKey(), nil)
	assert.Equal(t, "50", string(items[0]))
	r, err := cc.ReadItem(ctx, azcosmos.NewPartitionKeyString("k7"), "i0017", nil)
	require.NoError(t, err)
	assert.Equal(t, 17.0, object(t, r.Value)["n"])
}

// TestHTTPS: the same client over TLS, trusting the server's certificate.
func TestHTTPS(t *testing.T) {
	srv := emulatortest.Start(t, &emulatortest.Options{TLS: true})
	require.True(t, strings.HasPrefix(srv.Endpoint, "https://"))
	cc := newContainer(t, newClient(t, srv), "/pk")
	ctx := context.Background()
	_, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	_, err = cc.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), "a", nil)
	require.NoError(t, err)
}

// TestTTL: documents expire by the container's default TTL and their own.
func TestTTL(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	c := newClient(t, srv)
	ctx := context.Background()
	_, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "ttl"}, nil)
	require.NoError(t, err)
	db, _ := c.NewDatabase("ttl")
	ttl := int32(60)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", DefaultTimeToLive: &ttl, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(t, err)
	cc, _ := db.NewContainer("c")
	pk := azcosmos.NewPartitionKeyString("p")
	_, err = cc.CreateItem(ctx, pk, []byte(`{"id":"default","pk":"p"}`), nil)
	require.NoError(t, err)
	_, err = cc.CreateItem(ctx, pk, []byte(`{"id":"forever","pk":"p","ttl":-1}`), nil)
	require.NoError(t, err)
	srv.Advance(2 * time.Minute)
	_, err = cc.ReadItem(ctx, pk, "default", nil)
	assert.Equal(t, http.StatusNotFound, status(err))
	_, err = cc.ReadItem(ctx, pk, "forever", nil)
	require.NoError(t, err)
}

// TestLoad: 32 clients of mixed operations at once against the durable
// store, as docshard serve runs it, for 3 seconds (DOCSHARD_LOAD_SECONDS
// sets another length). No operation may fail (the server never throttles,
// and a 429 would count as an error too), every read must see the version
// its client last wrote, and afterwards, and again after a restart on the
// same directory, every document is there with the content last
// acknowledged, and nothing else.
//
//	DOCSHARD_LOAD_SECONDS=60 go test -run TestLoad -v ./emulator
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	srv := emulatortest.Start(t, &emulatortest.Options{Dir: dir})
	cc := createContainer(t, newClient(t, srv), "/pk") // in a directory removed at the end
	d := 3 * time.Second
	if testing.Short() {
		d = time.Second
	}
	if s := os.Getenv("DOCSHARD_LOAD_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "DOCSHARD_LOAD_SECONDS")
		d = time.Duration(n) * time.Second
	}
	const clients = 32
	type state map[string]float64 // id -> version; -1 deleted
	kinds := []string{"creates", "replaces", "upserts", "deletes", "reads", "queries"}
	var counts [6]atomic.Int64 // by kind
	results := make([]state, clients)
	errs := make(chan error, clients)
	began := time.Now()
	deadline := began.Add(d)
	for w := 0; w < clients; w++ {
		go func() {
			ctx := context.Background()
			mine := state{}
			results[w] = mine
			pk := azcosmos.NewPartitionKeyString(fmt.Sprintf("w%d", w%8))
			for i := 0; time.Now().Before(deadline); i++ {
				id := fmt.Sprintf("w%d-%d", w, i%20)
				v, exists := mine[id]
				next := v + 1
				if !exists || v < 0 {
					next = 1
				}
				body, _ := json.Marshal(map[string]any{"id": id, "pk": fmt.Sprintf("w%d", w%8), "v": next})
				var err error
				var kind int
				switch {
				case !exists || v < 0:
					_, err = cc.CreateItem(ctx, pk, body, nil)
					mine[id] = 1
				case i%7 == 0:
					kind = 3
					_, err = cc.DeleteItem(ctx, pk, id, nil)
					mine[id] = -1
				case i%3 == 0:
					kind = 2
					_, err = cc.UpsertItem(ctx, pk, body, nil)
					mine[id] = next
				case i%5 == 0:
					kind = 4
					var r azcosmos.ItemResponse
					r, err = cc.ReadItem(ctx, pk, id, nil)
					var doc struct{ V float64 }
					if err == nil {
						err = json.Unmarshal(r.Value, &doc)
					}
					if err == nil && doc.V != v {
						err = fmt.Errorf("read %s: v %v, want %v", id, doc.V, v)
					}
				case i%11 == 0:
					kind = 5
					_, err = countQuery(ctx, cc, "SELECT c.id FROM c", pk, 10)
				default:
					kind = 1
					_, err = cc.ReplaceItem(ctx, pk, id, body, nil)
					mine[id] = next
				}
				if err != nil {
					errs <- fmt.Errorf("client %d, operation %d (one of its %s): %w", w, i, kinds[kind], err)
					return
				}
				counts[kind].Add(1)
			}
			errs <- nil
		}()
	}
	for w := 0; w < clients; w++ {
		require.NoError(t, <-errs)
	}
	took := time.Since(began)
	want := map[string]float64{}
	for _, r := range results {
		for id, v := range r {
			if v >= 0 {
				want[id] = v
			}
		}
	}
	stored := func(cc *azcosmos.ContainerClient) map[string]float64 {
		got := map[string]float64{}
		for _, it := range queryAll(t, cc, "SELECT c.id, c.v FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 500}) {
			m := object(t, it)
			got[m["id"].(string)] = m["v"].(float64)
		}
		return got
	}
	assert.Equal(t, want, stored(cc), "count and content")
	require.NoError(t, srv.Close())
	again := emulatortest.Start(t, &emulatortest.Options{Dir: dir})
	ccAgain, err := newClient(t, again).NewContainer(databaseName(t), cc.ID())
	require.NoError(t, err)
	assert.Equal(t, want, stored(ccAgain), "count and content after a restart")

	total, line := int64(0), ""
	for k, name := range kinds {
		n := counts[k].Load()
		total += n
		line += fmt.Sprintf(", %d %s", n, name)
	}
	t.Logf("32 clients for %s: %d operations (%.0f/s)%s; 0 errors, 0 throttled; %d reads each saw its client's last write; afterwards %d documents, each with the version last acknowledged, and nothing else, also after a restart",
		took.Round(time.Millisecond), total, float64(total)/took.Seconds(), line, counts[4].Load(), len(want))
}

// countQuery reads every page of a query, of pages of size (-1: as large
// as the server gives), and counts the results.
func countQuery(ctx context.Context, cc *azcosmos.ContainerClient, text string, pk azcosmos.PartitionKey, size int32) (int, error) {
	pager := cc.NewQueryItemsPager(text, pk, &azcosmos.QueryOptions{PageSizeHint: size})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return n, err
		}
		n += len(page.Items)
	}
	return n, nil
}

// TestIDsAsTheGatewayReadsThem: every id the service creates is created
// (201), and point operations over HTTP answer what the service's gateway
// answers for it (azcosmos's TestItemIdEncodingRoutingGW): ids that end in
// a space, hold '/', '\', '#' or an escape sequence are read by the
// gateway as another resource link than the SDK signed (401); ids holding
// CR, LF or Tab make an invalid URL (400). A query finds every one.
func TestIDsAsTheGatewayReadsThem(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	ctx := context.Background()
	cases := []struct {
		id   string
		want int // read, replace; delete is 204 where this is 200
	}{
		{"Test", http.StatusOK},
		{"This is a test", http.StatusOK},
		{" Test", http.StatusOK},
		{"Test ", http.StatusUnauthorized},
		{"Test  ", http.StatusUnauthorized},
		{"WithAllowedSpecial,=.:~+-@()^${}[]!_Chars", http.StatusOK},
		{"BQE1D3PdG4N4bzU9TKaCIM3qc0TVcZ2-Y3jnsRfwdHC1ombkX3F1dot-SG0-UTq9AbgdX3kOWoP6qL6lJqWeKgV3zwWWPZO-t5X0ehJzv9LGkWld07LID2rhWhGT6huBM6Q=", http.StatusOK},
		{"IdEndingWithPercentEncodedWhitespace%20", http.StatusUnauthorized},
		{"WithPercentEncodedSpecialChar%E9%B1%80", http.StatusUnauthorized},
		{"Disallowed?Chars", http.StatusOK},
		{"Disallowed/Chars", http.StatusUnauthorized},
		{"Disallowed\\Chars", http.StatusUnauthorized},
		{"Disallowed#Chars", http.StatusUnauthorized},
		{"With\rCarriageReturn", http.StatusBadRequest},
		{"With\tTab", http.StatusBadRequest},
		{"With\nLineFeed", http.StatusBadRequest},
		{"WithUnicode鱀", http.StatusOK},
		{"100%", http.StatusOK},
		{strings.Repeat("L", 1023), http.StatusOK}, // the service's longest id (its quotas: 1,023 bytes)
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			pk := azcosmos.NewPartitionKeyString(tc.id)
			body, err := json.Marshal(map[string]string{"id": tc.id, "pk": tc.id})
			require.NoError(t, err)
			_, err = cc.CreateItem(ctx, pk, body, nil)
			require.NoError(t, err, "the service creates it")
			got := func(err error, ok int) int {
				if err != nil {
					return status(err)
				}
				return ok
			}
			_, err = cc.ReadItem(ctx, pk, tc.id, nil)
			assert.Equal(t, tc.want, got(err, http.StatusOK), "read")
			_, err = cc.ReplaceItem(ctx, pk, tc.id, body, nil)
			assert.Equal(t, tc.want, got(err, http.StatusOK), "replace")
			found := queryAll(t, cc, "SELECT VALUE c.id FROM c WHERE c.id = @id", pk,
				&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: tc.id}}})
			assert.Len(t, found, 1, "a query finds it")
			wantDelete := tc.want
			if wantDelete == http.StatusOK {
				wantDelete = http.StatusNoContent
			}
			_, err = cc.DeleteItem(ctx, pk, tc.id, nil)
			assert.Equal(t, wantDelete, got(err, http.StatusNoContent), "delete")
		})
	}
}

// TestQueryMetrics: azcosmos asks every query page for its metrics
// (x-ms-documentdb-populatequerymetrics) and, with PopulateIndexMetrics,
// for its index utilization; the service answers both headers, and
// Microsoft's own emulator tests (TestSinglePartitionQueryWithIndexMetrics,
// the query tests that check QueryMetrics) fail without them. The metrics
// are what the server measures: the page's time, its result count and
// size; the index lists are empty, since the store keeps no indexes.
func TestQueryMetrics(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	seedItems(t, cc, 30)
	pager := cc.NewQueryItemsPager("SELECT * FROM c WHERE c.pk = 'k1'", azcosmos.NewPartitionKeyString("k1"),
		&azcosmos.QueryOptions{PopulateIndexMetrics: true})
	require.True(t, pager.More())
	page, err := pager.NextPage(context.Background())
	require.NoError(t, err)
	require.NotNil(t, page.QueryMetrics, "x-ms-documentdb-query-metrics")
	metrics := map[string]string{}
	for _, kv := range strings.Split(*page.QueryMetrics, ";") {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, "%q in %q is name=value", kv, *page.QueryMetrics)
		metrics[k] = v
	}
	assert.Contains(t, metrics, "totalExecutionTimeInMs")
	assert.Equal(t, metrics["outputDocumentCount"], jsonNumber(len(page.Items)))
	size := 0
	for _, it := range page.Items {
		size += len(it)
	}
	assert.Equal(t, jsonNumber(size), metrics["outputDocumentSize"], "the bytes of the page's results")
	assert.NotEmpty(t, page.Items)

	require.NotNil(t, page.IndexMetrics, "x-ms-cosmos-index-utilization")
	raw, err := base64.StdEncoding.DecodeString(*page.IndexMetrics)
	require.NoError(t, err)
	var used map[string][]any
	require.NoError(t, json.Unmarshal(raw, &used))
	assert.Len(t, used, 4)
	assert.Empty(t, used["UtilizedSingleIndexes"])

	// Without PopulateIndexMetrics, no index utilization (azcosmos always
	// asks for the query metrics).
	plain := cc.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString("k1"), nil)
	page, err = plain.NextPage(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, page.QueryMetrics)
	assert.Nil(t, page.IndexMetrics)
}

func jsonNumber(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
