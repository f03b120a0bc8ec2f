package emulator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// t1EPK is the effective partition key of the prefix ["t1"] of a
// hierarchical key, as the Node.js SDK computes it
// (getEPKRangeForPrefixPartitionKey: the range is [t1EPK, t1EPK+"FF")).
const t1EPK = "3D48BB14DA9D090D22112C96695028B6"

// TestChangeFeedUnderAnEPKRange: a change feed read with x-ms-start-epk
// and x-ms-end-epk, as the Node.js SDK reads one under a prefix of a
// hierarchical key (ChangeFeedStartFrom.Beginning(["t1"])), has only the
// documents whose effective partition key is in that range, paged and
// resumed as any change feed, as the service answers it. Malformed
// bounds are 400; a query or read feed narrowed to part of the range,
// which the emulator does not offer, is 501 rather than answered whole.
func TestChangeFeedUnderAnEPKRange(t *testing.T) {
	srv := serverWith(t, "epk", `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
	const docs = "/dbs/epk/colls/c/docs"
	var want []string
	for i := range 12 {
		tv, uv := fmt.Sprintf("t%d", i%3), fmt.Sprintf("u%d", i%2)
		code, _, body := send(t, srv, rawRequest{method: "POST", path: docs, header: pkHeader(fmt.Sprintf(`[%q,%q]`, tv, uv)),
			body: fmt.Appendf(nil, `{"id":"d%02d","t":%q,"u":%q}`, i, tv, uv)})
		require.Equal(t, http.StatusCreated, code, "%s", body)
		if tv == "t1" {
			want = append(want, fmt.Sprintf("d%02d", i))
		}
	}
	under := func(extra map[string]string) map[string]string {
		h := map[string]string{"x-ms-documentdb-partitionkeyrangeid": "0", "x-ms-start-epk": t1EPK, "x-ms-end-epk": t1EPK + "FF", "x-ms-read-key-type": "EffectivePartitionKeyRange"}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}

	var got []string
	etag := ""
	for range 10 {
		h := changeFeedHeader(under(map[string]string{"x-ms-max-item-count": "2"}))
		if etag != "" {
			h["If-None-Match"] = etag
		}
		code, hdr, body := send(t, srv, rawRequest{method: "GET", path: docs, header: h})
		etag = hdr.Get("etag")
		if code == http.StatusNotModified {
			break
		}
		require.Equal(t, http.StatusOK, code, "%s", body)
		var page struct{ Documents []struct{ ID string } }
		require.NoError(t, json.Unmarshal(body, &page))
		require.LessOrEqual(t, len(page.Documents), 2)
		for _, d := range page.Documents {
			got = append(got, d.ID)
		}
	}
	sort.Strings(got)
	assert.Equal(t, want, got, "the change feed under the prefix t1's range holds its documents, each once")

	whole := changeFeedHeader(under(map[string]string{"x-ms-start-epk": "", "x-ms-end-epk": "FF"}))
	code, _, body := send(t, srv, rawRequest{method: "GET", path: docs, header: whole})
	require.Equal(t, http.StatusOK, code, "%s", body)
	assert.Contains(t, string(body), `"_count":12`, "the whole range is every document")

	for name, h := range map[string]map[string]string{
		"lower case":          changeFeedHeader(under(map[string]string{"x-ms-start-epk": "3d48"})),
		"start not below end": changeFeedHeader(under(map[string]string{"x-ms-end-epk": t1EPK})),
	} {
		code, hdr, body := send(t, srv, rawRequest{method: "GET", path: docs, header: h})
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", name, body)
		cosmosError(t, hdr, body)
	}
	code, _, body = send(t, srv, rawRequest{method: "GET", path: docs, header: under(nil)})
	assert.Equal(t, http.StatusNotImplemented, code, "a read feed under part of the range: %s", body)
	code, _, body = send(t, srv, rawRequest{method: "POST", path: docs, header: queryHeader(under(nil)), body: []byte(`{"query":"SELECT * FROM c"}`)})
	assert.Equal(t, http.StatusNotImplemented, code, "a query under part of the range: %s", body)
}

// serverWith starts a server of the test's own with database db and in it
// the collection the JSON body coll describes, created over REST.
func serverWith(t *testing.T, db, coll string) *emulatortest.Server {
	t.Helper()
	srv := emulatortest.Start(t, nil)
	for _, rq := range []rawRequest{
		{method: "POST", path: "/dbs", body: fmt.Appendf(nil, `{"id":%q}`, db)},
		{method: "POST", path: "/dbs/" + db + "/colls", body: []byte(coll)},
	} {
		code, _, body := send(t, srv, rq)
		require.Equal(t, http.StatusCreated, code, "%s", body)
	}
	return srv
}
