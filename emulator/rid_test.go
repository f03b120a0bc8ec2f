package emulator_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// TestDocumentRIDs: a document's _rid follows the read feed, as the
// service's follow creation: kept by a replace, new (and later) for a
// document deleted and created again; queries whose results are whole
// documents, the read feed and the change feed return each document as a
// point read does, system properties included; a projection gains none.
func TestDocumentRIDs(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	for _, rq := range []rawRequest{
		{method: "POST", path: "/dbs", body: []byte(`{"id":"rids"}`)},
		{method: "POST", path: "/dbs/rids/colls", body: []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`)},
	} {
		code, _, body := send(t, srv, rq)
		require.Equal(t, http.StatusCreated, code, "%s", body)
	}
	const d = "/dbs/rids/colls/c/docs"
	type doc struct{ id, key, body string }
	docs := []doc{
		{"z", `["k1"]`, `{"id":"z","pk":"k1"}`},
		{"a", `[2]`, `{"id":"a","pk":2}`},
		{"m", `[{}]`, `{"id":"m"}`},
		{"a", `["k1"]`, `{"id":"a","pk":"k1"}`},
	}
	write := func(method, path string, dc doc) string {
		code, _, body := send(t, srv, rawRequest{method: method, path: path, body: []byte(dc.body), header: pkHeader(dc.key)})
		require.Contains(t, []int{http.StatusCreated, http.StatusOK}, code, "%s %s: %s", method, dc.id, body)
		var sys struct {
			Rid string `json:"_rid"`
		}
		require.NoError(t, json.Unmarshal(body, &sys))
		return sys.Rid
	}
	rids := make([]string, len(docs))
	for i, dc := range docs {
		rids[i] = write("POST", d, dc)
		if i > 0 {
			assert.Greater(t, rids[i], rids[i-1], "created after %s", docs[i-1].id)
		}
	}
	assert.Equal(t, rids[0], write("PUT", d+"/z", doc{"z", `["k1"]`, `{"id":"z","pk":"k1","v":1}`}), "a replace keeps the _rid")
	code, _, body := send(t, srv, rawRequest{method: "DELETE", path: d + "/m", header: pkHeader(`[{}]`)})
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	again := write("POST", d, docs[2])
	assert.Greater(t, again, rids[3], "created again: a new _rid, after the others")
	docs = append(docs[:2], docs[3], docs[2])
	rids = append(rids[:2], rids[3], again)

	read := make([]string, len(docs))
	for i, dc := range docs {
		code, _, body := send(t, srv, rawRequest{method: "GET", path: d + "/" + dc.id, header: pkHeader(dc.key)})
		require.Equal(t, http.StatusOK, code, "%s", body)
		read[i] = string(body)
		assert.Contains(t, read[i], `"_rid":"`+rids[i]+`"`, dc.id)
	}
	pages := map[string]rawRequest{
		"SELECT *":         {method: "POST", path: d, body: []byte(`{"query":"SELECT * FROM c"}`), header: queryHeader(nil)},
		"SELECT VALUE":     {method: "POST", path: d, body: []byte(`{"query":"SELECT VALUE r FROM root r"}`), header: queryHeader(nil)},
		"read feed":        {method: "GET", path: d},
		"change feed":      {method: "GET", path: d, header: changeFeedHeader(map[string]string{"x-ms-documentdb-partitionkeyrangeid": "0"})},
		"SELECT c.id":      {method: "POST", path: d, body: []byte(`{"query":"SELECT c.id FROM c"}`), header: queryHeader(nil)},
		"SELECT VALUE c.v": {method: "POST", path: d, body: []byte(`{"query":"SELECT VALUE {\"x\": c.v} FROM c"}`), header: queryHeader(nil)},
	}
	for name, rq := range pages {
		code, _, body := send(t, srv, rq)
		require.Equal(t, http.StatusOK, code, "%s: %s", name, body)
		var page struct{ Documents []json.RawMessage }
		require.NoError(t, json.Unmarshal(body, &page), name)
		require.Len(t, page.Documents, len(docs), name)
		if name == "SELECT c.id" || name == "SELECT VALUE c.v" {
			for _, it := range page.Documents {
				assert.NotContains(t, string(it), `"_rid"`, name)
			}
			continue
		}
		if name == "change feed" {
			// In the order of last writes: z (replaced) after a and a.
			docs, read := []doc{docs[1], docs[2], docs[0], docs[3]}, []string{read[1], read[2], read[0], read[3]}
			for i := range docs {
				assert.JSONEq(t, read[i], string(page.Documents[i]), "%s: %s", name, docs[i].id)
			}
			continue
		}
		for i := range docs {
			assert.JSONEq(t, read[i], string(page.Documents[i]), "%s: %s in feed order", name, docs[i].id)
		}
	}
}
