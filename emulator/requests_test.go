package emulator_test

// Requests written by hand: what no SDK sends, malformed or hostile
// input, signatures and dates, and the wire format itself.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// signing says how a hand-written request is signed.
type signing int

const (
	signed signing = iota
	wrongKey
	unsigned
	aadToken
	staleDate
	noDate
	otherLink
	badSignature
	plainToken // signed, the token not URL-encoded
)

// rawRequest is one hand-written request.
type rawRequest struct {
	method, path string
	body         []byte
	header       map[string]string
	sign         signing
	date         time.Time // zero: now
}

// send signs and sends a request (resource type and link from the path,
// as the SDKs compute them) and returns the status, headers and body.
func send(t *testing.T, srv *emulatortest.Server, rq rawRequest) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(rq.method, strings.TrimSuffix(srv.Endpoint, "/")+rq.path, bytes.NewReader(rq.body))
	require.NoError(t, err)
	date := time.Now().UTC().Format(http.TimeFormat)
	if !rq.date.IsZero() {
		date = rq.date.UTC().Format(http.TimeFormat)
	}
	if rq.sign == staleDate {
		date = time.Now().Add(-20 * time.Minute).UTC().Format(http.TimeFormat)
	}
	if rq.sign != noDate {
		req.Header.Set("x-ms-date", date)
	}
	req.Header.Set("x-ms-version", "2020-11-05")
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	var segs []string
	for _, s := range strings.Split(strings.Trim(req.URL.EscapedPath(), "/"), "/") {
		if s != "" {
			u, _ := url.PathUnescape(s)
			segs = append(segs, u)
		}
	}
	typ, link := "", ""
	if n := len(segs); n%2 == 1 {
		typ, link = segs[n-1], strings.Join(segs[:n-1], "/")
	} else if n > 0 {
		typ, link = segs[n-2], strings.Join(segs, "/")
	}
	if len(segs) == 2 && segs[0] == "offers" {
		link = strings.ToLower(segs[1]) // an offer is signed by its _rid, as the SDKs sign it
	}
	key, _ := base64.StdEncoding.DecodeString(srv.Key)
	if rq.sign == wrongKey {
		key = []byte("not the key")
	}
	if rq.sign == otherLink {
		link += "x"
	}
	auth := "type=master&ver=1.0&sig=" + signature(key, rq.method, typ, link, date)
	switch rq.sign {
	case unsigned:
		auth = ""
	case aadToken:
		auth = "type=aad&ver=1.0&sig=eyJ0eXAiOiJKV1Qi"
	case badSignature:
		auth = "type=master&ver=1.0&sig=%%%"
	}
	switch {
	case rq.sign == plainToken:
		req.Header.Set("Authorization", auth)
	case auth != "":
		req.Header.Set("Authorization", url.QueryEscape(auth))
	}
	resp, err := srv.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, body
}

// signature is the master-key signature of a request, as the SDKs compute
// it.
func signature(key []byte, method, resType, resLink, date string) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s\n%s\n%s\n%s\n\n", strings.ToLower(method), resType, resLink, strings.ToLower(date))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// requireServing checks that the server still answers a good request.
func requireServing(t *testing.T, srv *emulatortest.Server) {
	t.Helper()
	code, _, body := send(t, srv, rawRequest{method: "GET", path: "/"})
	require.Equal(t, http.StatusOK, code, "the server keeps serving: %s", body)
}

// cosmosError checks a Cosmos-shaped error body and returns its code.
func cosmosError(t *testing.T, header http.Header, body []byte) string {
	t.Helper()
	assert.Equal(t, "application/json", header.Get("Content-Type"))
	assert.NotEmpty(t, header.Get("x-ms-activity-id"))
	var e struct{ Code, Message string }
	require.NoError(t, json.Unmarshal(body, &e), "an error body is JSON: %s", body)
	assert.NotEmpty(t, e.Message)
	return e.Code
}

const docs = "/dbs/raw/colls/c/docs"

func pkHeader(v string) map[string]string {
	return map[string]string{"x-ms-documentdb-partitionkey": v}
}

func queryHeader(extra map[string]string) map[string]string {
	h := map[string]string{"x-ms-documentdb-isquery": "True", "Content-Type": "application/query+json", "x-ms-documentdb-query-enablecrosspartition": "True"}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// changeFeedHeader is the header of a change-feed read, with extra.
func changeFeedHeader(extra map[string]string) map[string]string {
	h := map[string]string{"A-IM": "Incremental feed"}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// TestBadRequests: each answered with Cosmos DB's status and a
// {"code","message"} body, nothing written, and the server keeps serving.
func TestBadRequests(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	ctx := context.Background()
	c := newClient(t, srv)
	_, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "raw"}, nil)
	require.NoError(t, err)
	db, _ := c.NewDatabase("raw")
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(t, err)
	cc, _ := db.NewContainer("c")
	for _, id := range []string{"a", "b", "c"} {
		_, err = cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"`+id+`","pk":"p"}`), nil)
		require.NoError(t, err)
	}
	// A real token, of another query.
	_, h, _ := send(t, srv, rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT * FROM c"}`),
		header: queryHeader(map[string]string{"x-ms-max-item-count": "1"})})
	otherToken := h.Get("x-ms-continuation")
	require.NotEmpty(t, otherToken)
	_, h, _ = send(t, srv, rawRequest{method: "GET", path: docs, header: map[string]string{"x-ms-max-item-count": "1"}})
	feedToken := h.Get("x-ms-continuation")
	require.NotEmpty(t, feedToken)

	cases := []struct {
		name string
		rq   rawRequest
		want int
	}{
		{"unknown route", rawRequest{method: "GET", path: "/nothing/here"}, http.StatusNotFound},
		{"unknown child of a collection", rawRequest{method: "GET", path: "/dbs/raw/colls/c/things"}, http.StatusNotFound},
		{"stored procedures", rawRequest{method: "GET", path: "/dbs/raw/colls/c/sprocs"}, http.StatusNotImplemented},
		{"users", rawRequest{method: "GET", path: "/dbs/raw/users"}, http.StatusNotImplemented},
		{"an unknown offer", rawRequest{method: "GET", path: "/offers/nothing"}, http.StatusNotFound},
		{"below an offer", rawRequest{method: "GET", path: "/offers/a/b"}, http.StatusNotFound},
		{"deleting an offer", rawRequest{method: "DELETE", path: "/offers/nothing"}, http.StatusMethodNotAllowed},
		{"attachments", rawRequest{method: "GET", path: docs + "/a/attachments"}, http.StatusNotImplemented},
		{"wrong method", rawRequest{method: "PUT", path: "/dbs"}, http.StatusMethodNotAllowed},
		{"wrong method on a document", rawRequest{method: "POST", path: docs + "/a", header: pkHeader(`["p"]`)}, http.StatusMethodNotAllowed},
		{"malformed JSON", rawRequest{method: "POST", path: docs, body: []byte(`{"id":"x","pk":"p",`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"not an object", rawRequest{method: "POST", path: docs, body: []byte(`[1,2]`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"empty body", rawRequest{method: "POST", path: docs, header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"oversize body", rawRequest{method: "POST", path: docs, body: bytes.Repeat([]byte(" "), 4<<20), header: pkHeader(`["p"]`)}, http.StatusRequestEntityTooLarge},
		{"oversize document", rawRequest{method: "POST", path: docs, body: []byte(`{"id":"x","pk":"p","b":"` + strings.Repeat("x", store.MaxDocumentSize) + `"}`), header: pkHeader(`["p"]`)}, http.StatusRequestEntityTooLarge},
		{"bad id in the body", rawRequest{method: "POST", path: docs, body: []byte(`{"id":"` + strings.Repeat("x", store.MaxIDLength+1) + `","pk":"p"}`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"numeric id", rawRequest{method: "POST", path: docs, body: []byte(`{"id":7,"pk":"p"}`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"control character in the path", rawRequest{method: "GET", path: docs + "/a%0Db", header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"long id in the path", rawRequest{method: "GET", path: docs + "/" + strings.Repeat("x", store.MaxIDLength+1), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"no partition key", rawRequest{method: "GET", path: docs + "/a"}, http.StatusBadRequest},
		{"hierarchical key", rawRequest{method: "GET", path: docs + "/a", header: pkHeader(`["p","q"]`)}, http.StatusBadRequest},
		{"malformed key", rawRequest{method: "GET", path: docs + "/a", header: pkHeader(`p`)}, http.StatusBadRequest},
		{"array key", rawRequest{method: "GET", path: docs + "/a", header: pkHeader(`[[1]]`)}, http.StatusBadRequest},
		{"wrong key", rawRequest{method: "GET", path: docs + "/a", header: pkHeader(`["q"]`)}, http.StatusNotFound},
		{"missing collection", rawRequest{method: "GET", path: "/dbs/raw/colls/none/docs/a", header: pkHeader(`["p"]`)}, http.StatusNotFound},
		{"missing database", rawRequest{method: "GET", path: "/dbs/none"}, http.StatusNotFound},
		{"bad database id", rawRequest{method: "POST", path: "/dbs", body: []byte(`{"id":"a\\b"}`)}, http.StatusBadRequest},
		{"database conflict", rawRequest{method: "POST", path: "/dbs", body: []byte(`{"id":"raw"}`)}, http.StatusConflict},
		{"container without a key", rawRequest{method: "POST", path: "/dbs/raw/colls", body: []byte(`{"id":"k"}`)}, http.StatusBadRequest},
		{"a unique key without paths", rawRequest{method: "POST", path: "/dbs/raw/colls", body: []byte(`{"id":"k","partitionKey":{"paths":["/a"]},"uniqueKeyPolicy":{"uniqueKeys":[{"paths":[]}]}}`)}, http.StatusBadRequest},
		{"a unique key with a bad path", rawRequest{method: "POST", path: "/dbs/raw/colls", body: []byte(`{"id":"k","partitionKey":{"paths":["/a"]},"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["b"]}]}}`)}, http.StatusBadRequest},
		{"a vector policy not an object", rawRequest{method: "POST", path: "/dbs/raw/colls", body: []byte(`{"id":"k","partitionKey":{"paths":["/a"]},"vectorEmbeddingPolicy":[1]}`)}, http.StatusBadRequest},
		{"a throughput below 400", rawRequest{method: "POST", path: "/dbs/raw/colls", header: map[string]string{"x-ms-offer-throughput": "100"}, body: []byte(`{"id":"k","partitionKey":{"paths":["/a"]}}`)}, http.StatusBadRequest},
		{"manual and autoscale", rawRequest{method: "POST", path: "/dbs", header: map[string]string{"x-ms-offer-throughput": "400", "x-ms-cosmos-offer-autopilot-settings": `{"maxThroughput":4000}`}, body: []byte(`{"id":"k"}`)}, http.StatusBadRequest},
		{"wrong key signature", rawRequest{method: "GET", path: "/", sign: wrongKey}, http.StatusUnauthorized},
		{"wrong key on a write", rawRequest{method: "POST", path: docs, body: []byte(`{"id":"w","pk":"p"}`), header: pkHeader(`["p"]`), sign: wrongKey}, http.StatusUnauthorized},
		{"signed for another resource", rawRequest{method: "GET", path: "/dbs/raw/colls/c", sign: otherLink}, http.StatusUnauthorized},
		{"malformed signature", rawRequest{method: "GET", path: "/dbs/raw/colls/c", sign: badSignature}, http.StatusUnauthorized},
		{"no authorization", rawRequest{method: "GET", path: "/dbs", sign: unsigned}, http.StatusUnauthorized},
		{"Entra ID token", rawRequest{method: "GET", path: "/dbs", sign: aadToken}, http.StatusUnauthorized},
		{"date far from now", rawRequest{method: "GET", path: "/dbs", sign: staleDate}, http.StatusUnauthorized},
		{"no date", rawRequest{method: "GET", path: "/dbs", sign: noDate}, http.StatusUnauthorized},
		{"malformed continuation", rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT * FROM c"}`), header: queryHeader(map[string]string{"x-ms-continuation": "garbage"})}, http.StatusBadRequest},
		{"another query's continuation", rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT c.id FROM c"}`), header: queryHeader(map[string]string{"x-ms-continuation": otherToken})}, http.StatusBadRequest},
		{"feed continuation", rawRequest{method: "GET", path: docs, header: map[string]string{"x-ms-continuation": "garbage"}}, http.StatusBadRequest},
		{"lone surrogate in a key header", rawRequest{method: "GET", path: docs + "/a", header: pkHeader(`["\ud800"]`)}, http.StatusBadRequest},
		{"lone surrogate in an id", rawRequest{method: "POST", path: docs, body: []byte(`{"id":"\udbff","pk":"p"}`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"lone surrogate in a body's key", rawRequest{method: "POST", path: docs, body: []byte(`{"id":"s","pk":"\udc00"}`)}, http.StatusBadRequest},
		{"query limit", rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT * FROM c WHERE c.a IN (` + strings.TrimSuffix(strings.Repeat("1,", 6001), ",") + `)"}`), header: queryHeader(nil)}, http.StatusBadRequest},
		{"query syntax", rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT FROM WHERE"}`), header: queryHeader(nil)}, http.StatusBadRequest},
		{"query body not JSON", rawRequest{method: "POST", path: docs, body: []byte(`SELECT * FROM c`), header: queryHeader(nil)}, http.StatusBadRequest},
		{"query without text", rawRequest{method: "POST", path: docs, body: []byte(`{"parameters":[]}`), header: queryHeader(nil)}, http.StatusBadRequest},
		{"missing parameter", rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT * FROM c WHERE c.n = @n"}`), header: queryHeader(nil)}, http.StatusBadRequest},
		{"bad page size", rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT * FROM c"}`), header: queryHeader(map[string]string{"x-ms-max-item-count": "many"})}, http.StatusBadRequest},
		{"unknown partition-key range", rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT * FROM c"}`), header: queryHeader(map[string]string{"x-ms-documentdb-partitionkeyrangeid": "7"})}, http.StatusGone},
		{"change feed of all versions and deletes", rawRequest{method: "GET", path: docs, header: map[string]string{"A-IM": "Full-Fidelity Feed"}}, http.StatusNotImplemented},
		{"change feed from a malformed etag", rawRequest{method: "GET", path: docs, header: changeFeedHeader(map[string]string{"If-None-Match": `"garbage"`})}, http.StatusBadRequest},
		{"change feed from a read-feed token", rawRequest{method: "GET", path: docs, header: changeFeedHeader(map[string]string{"If-None-Match": `"` + feedToken + `"`})}, http.StatusBadRequest},
		{"change feed from a malformed date", rawRequest{method: "GET", path: docs, header: changeFeedHeader(map[string]string{"If-Modified-Since": "yesterday"})}, http.StatusBadRequest},
		{"change feed of an unknown range", rawRequest{method: "GET", path: docs, header: changeFeedHeader(map[string]string{"x-ms-documentdb-partitionkeyrangeid": "7"})}, http.StatusGone},
		{"change feed of a missing collection", rawRequest{method: "GET", path: "/dbs/raw/colls/none/docs", header: changeFeedHeader(nil)}, http.StatusNotFound},
		{"patch without operations", rawRequest{method: "PATCH", path: docs + "/a", body: []byte(`{"operations":[]}`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"unknown patch operation", rawRequest{method: "PATCH", path: docs + "/a", body: []byte(`{"operations":[{"op":"copy","path":"/x","from":"/id"}]}`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
		{"patch condition syntax", rawRequest{method: "PATCH", path: docs + "/a", body: []byte(`{"condition":"FROM c WHERE (","operations":[{"op":"set","path":"/x","value":1}]}`), header: pkHeader(`["p"]`)}, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, h, body := send(t, srv, tc.rq)
			require.Equal(t, tc.want, code, "%s", body)
			got := cosmosError(t, h, body)
			assert.Equal(t, strings.ReplaceAll(http.StatusText(tc.want), " ", ""), got, "the code names the status")
			requireServing(t, srv)
		})
	}
	// Nothing was written by any of them.
	code, _, body := send(t, srv, rawRequest{method: "POST", path: docs, body: []byte(`{"query":"SELECT VALUE c.id FROM c"}`), header: queryHeader(nil)})
	require.Equal(t, http.StatusOK, code)
	var feed struct{ Documents []string }
	require.NoError(t, json.Unmarshal(body, &feed))
	assert.ElementsMatch(t, []string{"a", "b", "c"}, feed.Documents)
}

// TestWireFormat: what the SDKs rely on beyond statuses.
func TestWireFormat(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	for _, rq := range []rawRequest{
		{method: "POST", path: "/dbs", body: []byte(`{"id":"wire"}`)},
		{method: "POST", path: "/dbs/wire/colls", body: []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`)},
	} {
		code, _, body := send(t, srv, rq)
		require.Equal(t, http.StatusCreated, code, "%s", body)
	}
	const d = "/dbs/wire/colls/c/docs"

	t.Run("a token not URL-encoded", func(t *testing.T) {
		// A date within the allowed skew whose signature holds a '+'.
		key, _ := base64.StdEncoding.DecodeString(srv.Key)
		var date time.Time
		for s := -600; s <= 600 && date.IsZero(); s++ {
			d := time.Now().Add(time.Duration(s) * time.Second)
			if strings.Contains(signature(key, "GET", "dbs", "dbs/wire", d.UTC().Format(http.TimeFormat)), "+") {
				date = d
			}
		}
		require.False(t, date.IsZero())
		code, _, body := send(t, srv, rawRequest{method: "GET", path: "/dbs/wire", sign: plainToken, date: date})
		require.Equal(t, http.StatusOK, code, "%s", body)
	})
	t.Run("account", func(t *testing.T) {
		code, _, body := send(t, srv, rawRequest{method: "GET", path: "/"})
		require.Equal(t, http.StatusOK, code)
		var acct struct {
			WritableLocations []struct{ DatabaseAccountEndpoint string }
		}
		require.NoError(t, json.Unmarshal(body, &acct))
		assert.Equal(t, srv.Endpoint, acct.WritableLocations[0].DatabaseAccountEndpoint, "the endpoint is the one the client used")
	})
	t.Run("create", func(t *testing.T) {
		code, h, body := send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`{"id":"a","pk":"p","n":1}`), header: pkHeader(`["p"]`)})
		require.Equal(t, http.StatusCreated, code, "%s", body)
		for _, name := range []string{"etag", "x-ms-request-charge", "x-ms-session-token", "x-ms-activity-id", "lsn"} {
			assert.NotEmpty(t, h.Get(name), name)
		}
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(body, &m))
		assert.Equal(t, h.Get("etag"), m["_etag"])
		assert.Regexp(t, `^[A-Za-z0-9+\-]{22}==$`, m["_rid"])
		assert.Regexp(t, `^dbs/[^/]+/colls/[^/]+/docs/[^/]+/$`, m["_self"])
		assert.Equal(t, "attachments/", m["_attachments"])
	})
	t.Run("minimal response", func(t *testing.T) {
		code, h, body := send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`{"id":"m","pk":"p"}`), header: map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "Prefer": "return=minimal"}})
		require.Equal(t, http.StatusCreated, code)
		assert.Empty(t, body)
		assert.NotEmpty(t, h.Get("etag"))
	})
	t.Run("If-None-Match", func(t *testing.T) {
		_, h, _ := send(t, srv, rawRequest{method: "GET", path: d + "/a", header: pkHeader(`["p"]`)})
		code, _, body := send(t, srv, rawRequest{method: "GET", path: d + "/a", header: map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "If-None-Match": h.Get("etag")}})
		assert.Equal(t, http.StatusNotModified, code)
		assert.Empty(t, body)
	})
	t.Run("keys", func(t *testing.T) {
		// azcosmos quotes keys with strconv.QuoteToASCII, which writes
		// \U0001f600 where JSON writes a surrogate pair; [{}] is the
		// undefined key, distinct from null.
		code, _, body := send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`{"id":"e","pk":"😀"}`), header: pkHeader(`["\U0001f600"]`)})
		require.Equal(t, http.StatusCreated, code, "%s", body)
		code, _, _ = send(t, srv, rawRequest{method: "GET", path: d + "/e", header: pkHeader(`["\ud83d\ude00"]`)})
		assert.Equal(t, http.StatusOK, code)
		code, _, body = send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`{"id":"u"}`), header: pkHeader(`[{}]`)})
		require.Equal(t, http.StatusCreated, code, "%s", body)
		code, _, _ = send(t, srv, rawRequest{method: "GET", path: d + "/u", header: pkHeader(`[{}]`)})
		assert.Equal(t, http.StatusOK, code)
		code, _, _ = send(t, srv, rawRequest{method: "GET", path: d + "/u", header: pkHeader(`[null]`)})
		assert.Equal(t, http.StatusNotFound, code, "the undefined key is not null")
		code, _, _ = send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`{"id":"n","pk":42}`), header: pkHeader(`[42.0]`)})
		assert.Equal(t, http.StatusCreated, code)
		code, _, _ = send(t, srv, rawRequest{method: "GET", path: d + "/n", header: pkHeader(`[42]`)})
		assert.Equal(t, http.StatusOK, code, "42 and 42.0 are one key")
	})
	t.Run("move", func(t *testing.T) {
		code, _, body := send(t, srv, rawRequest{method: "PATCH", path: d + "/a", header: pkHeader(`["p"]`),
			body: []byte(`{"operations":[{"op":"move","from":"/n","path":"/moved"}]}`)})
		require.Equal(t, http.StatusOK, code, "%s", body)
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(body, &m))
		assert.Equal(t, 1.0, m["moved"])
		assert.NotContains(t, m, "n")
	})
	t.Run("patch as a JSON Patch array", func(t *testing.T) {
		code, _, body := send(t, srv, rawRequest{method: "PATCH", path: d + "/a", header: pkHeader(`["p"]`),
			body: []byte(`[{"op":"add","path":"/list","value":[1]},{"op":"add","path":"/list/0","value":0}]`)})
		require.Equal(t, http.StatusOK, code, "%s", body)
		assert.Contains(t, string(body), `"list":[0,1]`)
	})
	t.Run("query plan", func(t *testing.T) {
		code, _, body := send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`{"query":"SELECT VALUE COUNT(1) FROM c"}`),
			header: queryHeader(map[string]string{"x-ms-cosmos-is-query-plan-request": "True", "x-ms-cosmos-supported-query-features": "Aggregate, OrderBy"})})
		require.Equal(t, http.StatusOK, code, "%s", body)
		var plan struct {
			QueryInfo   map[string]any
			QueryRanges []map[string]any
		}
		require.NoError(t, json.Unmarshal(body, &plan))
		assert.Equal(t, []map[string]any{{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}}, plan.QueryRanges)
		assert.Equal(t, []any{"Count"}, plan.QueryInfo["aggregates"], "the client adds up the ranges' counts, as the service's plan asks")
		assert.Equal(t, `SELECT VALUE [{"item": COUNT(1)}] FROM c AS c`, plan.QueryInfo["rewrittenQuery"])
	})
	t.Run("read feed", func(t *testing.T) {
		code, h, body := send(t, srv, rawRequest{method: "GET", path: d, header: map[string]string{"x-ms-max-item-count": "2"}})
		require.Equal(t, http.StatusOK, code, "%s", body)
		assert.Equal(t, "2", h.Get("x-ms-item-count"))
		require.NotEmpty(t, h.Get("x-ms-continuation"))
		var feed struct {
			Documents []map[string]any
			Count     int `json:"_count"`
		}
		require.NoError(t, json.Unmarshal(body, &feed))
		assert.Equal(t, 2, feed.Count)
		assert.Contains(t, feed.Documents[0], "_rid", "feed documents carry the system properties")
		code, _, body = send(t, srv, rawRequest{method: "GET", path: d, header: map[string]string{"x-ms-max-item-count": "2", "x-ms-continuation": h.Get("x-ms-continuation")}})
		require.Equal(t, http.StatusOK, code, "%s", body)
	})
	t.Run("change feed", func(t *testing.T) {
		code, _, body := send(t, srv, rawRequest{method: "POST", path: "/dbs/wire/colls", body: []byte(`{"id":"cf","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`)})
		require.Equal(t, http.StatusCreated, code, "%s", body)
		const cf = "/dbs/wire/colls/cf/docs"
		write := func(id, key string, v int) {
			t.Helper()
			code, _, body := send(t, srv, rawRequest{method: "POST", path: cf, body: []byte(fmt.Sprintf(`{"id":%q,"pk":%q,"v":%d}`, id, key, v)),
				header: map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf(`[%q]`, key), "x-ms-documentdb-is-upsert": "True"}})
			require.Contains(t, []int{http.StatusCreated, http.StatusOK}, code, "%s", body)
		}
		type feedBody struct {
			RID       string `json:"_rid"`
			Documents []map[string]any
			Count     int `json:"_count"`
		}
		// read sends a change-feed read and returns its status, etag and
		// documents as "id=v".
		read := func(extra map[string]string) (int, string, []string) {
			t.Helper()
			code, h, body := send(t, srv, rawRequest{method: "GET", path: cf, header: changeFeedHeader(extra)})
			require.Contains(t, []int{http.StatusOK, http.StatusNotModified}, code, "%s", body)
			etag := h.Get("etag")
			require.Regexp(t, `^"[A-Za-z0-9_-]+"$`, etag, "the position is a quoted etag")
			if code == http.StatusNotModified {
				assert.Empty(t, body, "304 has no body")
				return code, etag, nil
			}
			var f feedBody
			require.NoError(t, json.Unmarshal(body, &f))
			assert.NotEmpty(t, f.RID)
			assert.Equal(t, len(f.Documents), f.Count)
			assert.Equal(t, strconv.Itoa(f.Count), h.Get("x-ms-item-count"))
			out := make([]string, len(f.Documents))
			for i, d := range f.Documents {
				for _, sys := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
					assert.Contains(t, d, sys, "change-feed documents carry the system properties")
				}
				out[i] = fmt.Sprintf("%v=%v", d["id"], d["v"])
			}
			return code, etag, out
		}
		code, empty, _ := read(nil)
		assert.Equal(t, http.StatusNotModified, code, "an empty collection: nothing changed")
		write("x1", "p", 1)
		write("x2", "q", 1)
		write("x3", "p", 1)
		write("x1", "p", 2)

		tests := []struct {
			name   string
			header map[string]string
			code   int
			docs   []string
		}{
			{"from the beginning", nil, http.StatusOK, []string{"x2=1", "x3=1", "x1=2"}},
			{"from the empty collection's etag", map[string]string{"If-None-Match": empty}, http.StatusOK, []string{"x2=1", "x3=1", "x1=2"}},
			{"a page of 2", map[string]string{"x-ms-max-item-count": "2"}, http.StatusOK, []string{"x2=1", "x3=1"}},
			{"as much as a page holds", map[string]string{"x-ms-max-item-count": "-1"}, http.StatusOK, []string{"x2=1", "x3=1", "x1=2"}},
			{"one partition key", map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}, http.StatusOK, []string{"x3=1", "x1=2"}},
			{"the one range by id", map[string]string{"x-ms-documentdb-partitionkeyrangeid": "0"}, http.StatusOK, []string{"x2=1", "x3=1", "x1=2"}},
			{"from now", map[string]string{"If-None-Match": "*"}, http.StatusNotModified, nil},
			{"from a time to come", map[string]string{"If-Modified-Since": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, http.StatusNotModified, nil},
			{"from a time past", map[string]string{"If-Modified-Since": time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)}, http.StatusOK, []string{"x2=1", "x3=1", "x1=2"}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				code, _, docs := read(tc.header)
				assert.Equal(t, tc.code, code)
				assert.Equal(t, tc.docs, docs)
			})
		}

		// Paging by etag, then polling.
		_, first, docs := read(map[string]string{"x-ms-max-item-count": "2"})
		require.Len(t, docs, 2)
		code, end, docs := read(map[string]string{"If-None-Match": first, "x-ms-max-item-count": "2"})
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, []string{"x1=2"}, docs)
		code, again, _ := read(map[string]string{"If-None-Match": end})
		assert.Equal(t, http.StatusNotModified, code, "caught up")
		assert.Equal(t, end, again, "a 304's etag is the same position")
		_, now, _ := read(map[string]string{"If-None-Match": "*"})
		write("x4", "q", 1)
		write("x2", "q", 2)
		for _, from := range []string{end, now} {
			_, _, docs = read(map[string]string{"If-None-Match": from})
			assert.Equal(t, []string{"x4=1", "x2=2"}, docs, "what was written since")
		}
		// From a time: the store's clock moves an hour on; what is written
		// then is all that is newer than half an hour from now.
		srv.Advance(time.Hour)
		write("x5", "p", 1)
		_, _, docs = read(map[string]string{"If-Modified-Since": time.Now().Add(30 * time.Minute).UTC().Format(http.TimeFormat)})
		assert.Equal(t, []string{"x5=1"}, docs)
		_, _, docs = read(map[string]string{"If-None-Match": now, "If-Modified-Since": time.Now().Add(30 * time.Minute).UTC().Format(http.TimeFormat)})
		assert.Equal(t, []string{"x4=1", "x2=2", "x5=1"}, docs, "If-Modified-Since is ignored with If-None-Match")
	})
	t.Run("partition-key ranges as a change feed", func(t *testing.T) {
		code, h, body := send(t, srv, rawRequest{method: "GET", path: "/dbs/wire/colls/c/pkranges", header: map[string]string{"A-IM": "Incremental feed"}})
		require.Equal(t, http.StatusOK, code, "%s", body)
		code, _, _ = send(t, srv, rawRequest{method: "GET", path: "/dbs/wire/colls/c/pkranges", header: map[string]string{"A-IM": "Incremental feed", "If-None-Match": h.Get("etag")}})
		assert.Equal(t, http.StatusNotModified, code)
	})
}

// faultyStore fails or panics on Read as told.
type faultyStore struct {
	store.Store
	fail  atomic.Pointer[error]
	panic atomic.Bool
}

func (f *faultyStore) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	if f.panic.Load() {
		panic("boom")
	}
	if err := f.fail.Load(); err != nil {
		return nil, *err
	}
	return f.Store.Read(ctx, l, id, o)
}

// TestStoreErrorsAndPanics: store errors map to Cosmos DB's statuses (429
// with its wait), and a handler that panics answers 500 and the server
// keeps serving.
func TestStoreErrorsAndPanics(t *testing.T) {
	fs := &faultyStore{Store: memstore.New(nil)}
	t.Cleanup(func() { fs.Store.Close() })
	var logged atomic.Int32
	srv := emulatortest.Start(t, &emulatortest.Options{Store: fs, Logf: func(string, ...any) { logged.Add(1) }})
	for _, rq := range []rawRequest{
		{method: "POST", path: "/dbs", body: []byte(`{"id":"raw"}`)},
		{method: "POST", path: "/dbs/raw/colls", body: []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`)},
		{method: "POST", path: docs, body: []byte(`{"id":"a","pk":"p"}`), header: pkHeader(`["p"]`)},
	} {
		code, _, body := send(t, srv, rq)
		require.Equal(t, http.StatusCreated, code, "%s", body)
	}
	read := rawRequest{method: "GET", path: docs + "/a", header: pkHeader(`["p"]`)}
	cases := []struct {
		err  error
		want int
	}{
		{&store.Error{Kind: store.ErrThrottled, RetryAfter: 250 * time.Millisecond}, http.StatusTooManyRequests},
		{&store.Error{Kind: store.ErrUnavailable, Message: "disk full"}, http.StatusServiceUnavailable},
		{&store.Error{Kind: store.ErrPreconditionFailed}, http.StatusPreconditionFailed},
		{&store.Error{Kind: store.ErrTooLarge}, http.StatusRequestEntityTooLarge},
		{fmt.Errorf("wrapped: %w", store.ErrConflict), http.StatusConflict},
		{fmt.Errorf("something else"), http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			fs.fail.Store(&tc.err)
			code, h, body := send(t, srv, read)
			require.Equal(t, tc.want, code, "%s", body)
			cosmosError(t, h, body)
			if tc.want == http.StatusTooManyRequests {
				assert.Equal(t, "250", h.Get("x-ms-retry-after-ms"))
			}
		})
	}
	fs.fail.Store(nil)
	fs.panic.Store(true)
	code, h, body := send(t, srv, read)
	require.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, "InternalServerError", cosmosError(t, h, body))
	assert.EqualValues(t, 1, logged.Load(), "the panic is reported")
	fs.panic.Store(false)
	code, _, body = send(t, srv, read)
	require.Equal(t, http.StatusOK, code, "%s", body)
}

// TestKeys: the default key is the well-known emulator key (the cosmos
// backend's default for loopback endpoints), another key replaces it, and
// a key that is not base64 is refused.
func TestKeys(t *testing.T) {
	assert.Equal(t, cosmos.EmulatorKey, emulator.DefaultKey)
	_, err := emulator.New(memstore.New(nil), &emulator.Options{Key: "not base64!"})
	require.Error(t, err)
	other := base64.StdEncoding.EncodeToString([]byte("another key of the test"))
	h, err := emulator.New(memstore.New(nil), &emulator.Options{Key: other})
	require.NoError(t, err)
	srv := emulatortest.Start(t, nil)
	req := func(key string) int {
		r, _ := http.NewRequest("GET", "/", nil)
		date := time.Now().UTC().Format(http.TimeFormat)
		r.Header.Set("x-ms-date", date)
		k, _ := base64.StdEncoding.DecodeString(key)
		r.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+signature(k, "GET", "", "", date)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	assert.Equal(t, http.StatusOK, req(other))
	assert.Equal(t, http.StatusUnauthorized, req(srv.Key))
}

// rawExchange sends one request on a new connection and returns the
// status and the header lines as they came over the wire (names not
// canonicalised, as a client that keeps them sees them).
func rawExchange(t *testing.T, addr, method, path, header, body string) (int, []string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(hangGuard)))
	req := method + " " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n" + header +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	raw, err := io.ReadAll(bufio.NewReader(conn))
	require.NoError(t, err)
	head, rest, ok := strings.Cut(string(raw), "\r\n\r\n")
	require.True(t, ok, "a response: %q", raw)
	lines := strings.Split(head, "\r\n")
	status, err := strconv.Atoi(strings.Fields(lines[0])[1])
	require.NoError(t, err)
	return status, lines[1:], rest
}

// headerNames are the names of raw header lines.
func headerNames(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		name, v, _ := strings.Cut(l, ":")
		out[name] = strings.TrimSpace(v)
	}
	return out
}

// Over HTTP/1.1 Cosmos DB's own headers go out in lower case, as the
// service sends them (the Python SDK v3 looks them up so: with Go's
// canonical X-Ms-Continuation it stopped paging after the first page), and
// a doubled slash in the path ("//dbs", from the Python SDK v3 joining
// "https://host:8081/" with "/dbs") names what the single one does.
func TestWireHeaderNamesAndDoubledSlashes(t *testing.T) {
	addr := serveLikeServe(t, 0)
	pk := "x-ms-documentdb-partitionkey: [\"p\"]\r\n"
	steps := []struct {
		method, path, resType, link, header, body string
		want                                      int
		names                                     []string // lower-case names the answer has
	}{
		{"GET", "//", "", "", "", "", http.StatusOK, []string{"x-ms-activity-id", "x-ms-request-charge"}},
		{"POST", "//dbs", "dbs", "", "", `{"id":"db"}`, http.StatusCreated, nil},
		{"POST", "/dbs//db/colls", "colls", "dbs/db", "", `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`, http.StatusCreated, nil},
		{"POST", "//dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", pk, `{"id":"a","pk":"p"}`, http.StatusCreated, []string{"etag", "lsn", "x-ms-session-token"}},
		{"POST", "//dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", pk, `{"id":"b","pk":"p"}`, http.StatusCreated, nil},
		{"GET", "//dbs/db/colls/c/docs/a/", "docs", "dbs/db/colls/c/docs/a", pk, "", http.StatusOK, []string{"etag", "lsn", "x-ms-session-token"}},
		{"GET", "//dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", "x-ms-max-item-count: 1\r\n", "", http.StatusOK, []string{"x-ms-continuation", "x-ms-item-count"}},
		{"GET", "//dbs/db/colls/c/docs/missing", "docs", "dbs/db/colls/c/docs/missing", pk, "", http.StatusNotFound, []string{"x-ms-activity-id"}},
		{"GET", "//dbs/db", "dbs", "dbs/db", "", "", http.StatusOK, []string{"x-docshard-serve", "x-docshard-fence"}},
	}
	for _, s := range steps {
		status, lines, body := rawExchange(t, addr, s.method, s.path, signedHeader(s.method, s.resType, s.link)+s.header, s.body)
		require.Equal(t, s.want, status, "%s %s: %s", s.method, s.path, body)
		names := headerNames(lines)
		for _, n := range s.names {
			assert.Contains(t, names, n, "%s %s: %v", s.method, s.path, lines)
		}
		for n := range names {
			switch n {
			case "Content-Type", "Content-Length", "Connection", "Date":
			default:
				assert.Equal(t, strings.ToLower(n), n, "%s %s: a header name as the service sends it", s.method, s.path)
			}
		}
	}
}
