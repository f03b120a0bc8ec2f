package emulator_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHierarchicalKeysOnTheWire: a MultiHash container as a client sees it
// over REST: its definition kept and returned; documents under a composite
// x-ms-documentdb-partitionkey, ids scoped by the full key; a point
// operation or batch under another number of values refused as the service
// refuses it (400, sub-status 1001); queries, the read feed and the change
// feed under the full key or a prefix.
func TestHierarchicalKeysOnTheWire(t *testing.T) {
	srv := serverWith(t, "hpk", `{"id":"c","partitionKey":{"paths":["/tenant","/user"],"kind":"MultiHash","version":2}}`)
	const d = "/dbs/hpk/colls/c/docs"

	code, _, body := send(t, srv, rawRequest{method: "GET", path: "/dbs/hpk/colls/c"})
	require.Equal(t, http.StatusOK, code)
	var coll struct {
		PartitionKey map[string]any `json:"partitionKey"`
	}
	require.NoError(t, json.Unmarshal(body, &coll))
	assert.Equal(t, map[string]any{"paths": []any{"/tenant", "/user"}, "kind": "MultiHash", "version": 2.0}, coll.PartitionKey)

	for _, doc := range []struct{ body, key string }{
		{`{"id":"a","tenant":"t1","user":"u1"}`, `["t1","u1"]`},
		{`{"id":"a","tenant":"t1","user":"u2"}`, `["t1","u2"]`},
		{`{"id":"b","tenant":"t2","user":"😀"}`, `["t2","\U0001f600"]`}, // azcosmos's QuoteToASCII
		{`{"id":"c","tenant":"t2"}`, `["t2",{}]`},
	} {
		code, _, body := send(t, srv, rawRequest{method: "POST", path: d, body: []byte(doc.body), header: pkHeader(doc.key)})
		require.Equal(t, http.StatusCreated, code, "%s: %s", doc.key, body)
	}

	cases := []struct {
		name      string
		rq        rawRequest
		want      int
		substatus string
	}{
		{"read under the full key", rawRequest{method: "GET", path: d + "/a", header: pkHeader(`["t1","u2"]`)}, http.StatusOK, ""},
		{"read under a missing part", rawRequest{method: "GET", path: d + "/c", header: pkHeader(`["t2",{}]`)}, http.StatusOK, ""},
		{"read under another full key", rawRequest{method: "GET", path: d + "/a", header: pkHeader(`["t1","u3"]`)}, http.StatusNotFound, ""},
		{"read under a prefix", rawRequest{method: "GET", path: d + "/a", header: pkHeader(`["t1"]`)}, http.StatusBadRequest, "1001"},
		{"read under too many values", rawRequest{method: "GET", path: d + "/a", header: pkHeader(`["t1","u1","x"]`)}, http.StatusBadRequest, "1001"},
		{"create under a prefix", rawRequest{method: "POST", path: d, body: []byte(`{"id":"z","tenant":"t1","user":"u1"}`), header: pkHeader(`["t1"]`)}, http.StatusBadRequest, "1001"},
		{"create under a key the body does not hold", rawRequest{method: "POST", path: d, body: []byte(`{"id":"z","tenant":"t1","user":"u1"}`), header: pkHeader(`["t1","u9"]`)}, http.StatusBadRequest, ""},
		{"delete under a prefix", rawRequest{method: "DELETE", path: d + "/a", header: pkHeader(`["t1"]`)}, http.StatusBadRequest, "1001"},
		{"batch under a prefix", rawRequest{method: "POST", path: d, body: []byte(`[{"operationType":"Read","id":"a"}]`),
			header: map[string]string{"x-ms-documentdb-partitionkey": `["t1"]`, "x-ms-cosmos-is-batch-request": "True", "x-ms-cosmos-batch-atomic": "True"}}, http.StatusBadRequest, "1001"},
		{"a key part that is an array", rawRequest{method: "GET", path: d + "/a", header: pkHeader(`["t1",[1]]`)}, http.StatusBadRequest, ""},
		{"kind Hash of two paths", rawRequest{method: "POST", path: "/dbs/hpk/colls", body: []byte(`{"id":"h","partitionKey":{"paths":["/a","/b"],"kind":"Hash"}}`)}, http.StatusBadRequest, ""},
		{"MultiHash of four paths", rawRequest{method: "POST", path: "/dbs/hpk/colls", body: []byte(`{"id":"h","partitionKey":{"paths":["/a","/b","/c","/d"],"kind":"MultiHash","version":2}}`)}, http.StatusBadRequest, ""},
		{"replace changing the paths", rawRequest{method: "PUT", path: "/dbs/hpk/colls/c", body: []byte(`{"id":"c","partitionKey":{"paths":["/tenant","/other"],"kind":"MultiHash","version":2}}`)}, http.StatusBadRequest, ""},
	}
	for _, tc := range cases {
		code, h, body := send(t, srv, tc.rq)
		assert.Equal(t, tc.want, code, "%s: %s", tc.name, body)
		if tc.substatus != "" {
			assert.Equal(t, tc.substatus, h.Get("x-ms-substatus"), tc.name)
		}
	}

	ids := func(h map[string]string, rq rawRequest) []string {
		t.Helper()
		rq.header = h
		code, _, body := send(t, srv, rq)
		require.Equal(t, http.StatusOK, code, "%s", body)
		var page struct{ Documents []map[string]any }
		require.NoError(t, json.Unmarshal(body, &page))
		var out []string
		for _, m := range page.Documents {
			out = append(out, m["id"].(string)+"/"+m["tenant"].(string))
		}
		sort.Strings(out)
		return out
	}
	query := rawRequest{method: "POST", path: d, body: []byte(`{"query":"SELECT * FROM c"}`)}
	feed := rawRequest{method: "GET", path: d}
	scoped := map[string][]string{`["t1","u1"]`: {"a/t1"}, `["t1"]`: {"a/t1", "a/t1"}, `["t2"]`: {"b/t2", "c/t2"}, `["t2",{}]`: {"c/t2"}}
	for key, want := range scoped {
		assert.Equal(t, want, ids(queryHeader(map[string]string{"x-ms-documentdb-partitionkey": key}), query), "query under %s", key)
		assert.Equal(t, want, ids(pkHeader(key), feed), "read feed under %s", key)
		assert.Equal(t, want, ids(changeFeedHeader(map[string]string{"x-ms-documentdb-partitionkey": key}), feed), "change feed under %s", key)
	}
	assert.Len(t, ids(queryHeader(nil), query), 4, "a query across keys")

	// Whole documents come back as a point read has them, system
	// properties included; projections do not gain them.
	_, _, read := send(t, srv, rawRequest{method: "GET", path: d + "/a", header: pkHeader(`["t1","u1"]`)})
	for text, whole := range map[string]bool{"SELECT * FROM c": true, "SELECT VALUE r FROM root r": true, "SELECT c.id FROM c": false, "SELECT VALUE c FROM c JOIN t IN c.tags": false} {
		code, _, body := send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`{"query":"` + text + `"}`), header: queryHeader(map[string]string{"x-ms-documentdb-partitionkey": `["t1","u1"]`})})
		require.Equal(t, http.StatusOK, code, "%s: %s", text, body)
		var page struct{ Documents []json.RawMessage }
		require.NoError(t, json.Unmarshal(body, &page))
		if !whole {
			for _, it := range page.Documents {
				assert.NotContains(t, string(it), `"_rid"`, text)
			}
			continue
		}
		require.Len(t, page.Documents, 1, text)
		assert.JSONEq(t, string(read), string(page.Documents[0]), text)
	}
	code, _, body = send(t, srv, rawRequest{method: "POST", path: d, body: query.body, header: queryHeader(map[string]string{"x-ms-documentdb-partitionkey": `["t1","u1","x"]`})})
	assert.Equal(t, http.StatusBadRequest, code, "a query under more values than paths: %s", body)

	code, _, body = send(t, srv, rawRequest{method: "POST", path: d, body: []byte(`[{"operationType":"Create","resourceBody":{"id":"x","tenant":"t3","user":"u"}},{"operationType":"Read","id":"x"}]`),
		header: map[string]string{"x-ms-documentdb-partitionkey": `["t3","u"]`, "x-ms-cosmos-is-batch-request": "True", "x-ms-cosmos-batch-atomic": "True"}})
	require.Equal(t, http.StatusOK, code, "a batch under the full key: %s", body)
}
