package emulator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
)

// TestGatewayRefusals: a query sent across partitions (neither a partition
// key nor a range id) is answered as Cosmos DB's gateway answers it:
// refused without x-ms-documentdb-query-enablecrosspartition, refused with
// its plan in the body (sub-status 1004) when the client must merge it,
// answered when a WHERE pins the partition key, and paged as the service
// pages (a full last page has a continuation to an empty one). docshard's
// HeaderWholeQuery, or a range id, gets the query answered whole.
func TestGatewayRefusals(t *testing.T) {
	srv := serverWith(t, "gw", `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`)
	const d = "/dbs/gw/colls/c/docs"
	for i := range 6 {
		code, _, body := send(t, srv, rawRequest{method: "POST", path: d, header: pkHeader(fmt.Sprintf(`["k%d"]`, i%2)),
			body: fmt.Appendf(nil, `{"id":"i%d","pk":"k%d","n":%d}`, i, i%2, i)})
		require.Equal(t, http.StatusCreated, code, "%s", body)
	}
	q := func(text string, header map[string]string) (int, http.Header, []byte) {
		return send(t, srv, rawRequest{method: "POST", path: d, header: header, body: fmt.Appendf(nil, `{"query":%q}`, text)})
	}
	var refusal struct {
		Code, Message       string
		AdditionalErrorInfo string
	}

	t.Run("no cross-partition header", func(t *testing.T) {
		h := queryHeader(nil)
		delete(h, "x-ms-documentdb-query-enablecrosspartition")
		code, hdr, body := q("SELECT * FROM c", h)
		require.Equal(t, http.StatusBadRequest, code, "%s", body)
		assert.Empty(t, hdr.Get("x-ms-substatus"))
		require.NoError(t, json.Unmarshal(body, &refusal))
		assert.Contains(t, refusal.Message, "Cross partition query is required but disabled.")
		code, _, body = q("SELECT VALUE c.n FROM c WHERE c.pk = 'k1' ORDER BY c.n", h)
		require.Equal(t, http.StatusOK, code, "a WHERE that pins the key keeps the query on one partition: %s", body)
		assert.Contains(t, string(body), `"Documents":[1,3,5]`)
	})
	t.Run("the plan in the refusal", func(t *testing.T) {
		code, hdr, body := q("SELECT VALUE c.n FROM c ORDER BY c.n DESC", queryHeader(nil))
		require.Equal(t, http.StatusBadRequest, code, "%s", body)
		assert.Equal(t, "1004", hdr.Get("x-ms-substatus"))
		require.NoError(t, json.Unmarshal(body, &refusal))
		assert.Equal(t, "BadRequest", refusal.Code)
		assert.Contains(t, refusal.Message, "The provided cross partition query can not be directly served by the gateway.")
		var plan struct {
			Version   int `json:"partitionedQueryExecutionInfoVersion"`
			QueryInfo struct {
				OrderBy            []string
				OrderByExpressions []string
				RewrittenQuery     string
				HasSelectValue     bool
			}
			QueryRanges []map[string]any
		}
		require.NoError(t, json.Unmarshal([]byte(refusal.AdditionalErrorInfo), &plan), "additionalErrorInfo is the plan as JSON text")
		assert.Equal(t, 2, plan.Version)
		assert.Equal(t, []string{"Descending"}, plan.QueryInfo.OrderBy)
		assert.Equal(t, []string{"c.n"}, plan.QueryInfo.OrderByExpressions)
		assert.True(t, plan.QueryInfo.HasSelectValue)
		assert.Contains(t, plan.QueryInfo.RewrittenQuery, "{documentdb-formattableorderbyquery-filter}")
		assert.Equal(t, []map[string]any{{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}}, plan.QueryRanges)

		// What an older SDK then sends for the one range.
		code, _, body = q(`SELECT c._rid, [{"item": c.n}] AS orderByItems, c.n AS payload FROM c WHERE (true) ORDER BY c.n DESC`,
			queryHeader(map[string]string{"x-ms-documentdb-partitionkeyrangeid": "0"}))
		require.Equal(t, http.StatusOK, code, "%s", body)
		assert.Contains(t, string(body), `{"orderByItems":[{"item":5}],"payload":5}`)
	})
	t.Run("an aggregate outside VALUE", func(t *testing.T) {
		code, hdr, body := q("SELECT COUNT(1) AS n FROM c", queryHeader(nil))
		require.Equal(t, http.StatusBadRequest, code, "%s", body)
		assert.Empty(t, hdr.Get("x-ms-substatus"))
		assert.Contains(t, string(body), "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates.")
	})
	t.Run("DISTINCT on one pinned key is the client's too", func(t *testing.T) {
		code, hdr, body := q("SELECT DISTINCT VALUE c.pk FROM c WHERE c.pk = 'k0'", queryHeader(nil))
		require.Equal(t, http.StatusBadRequest, code, "%s", body)
		assert.Equal(t, "1004", hdr.Get("x-ms-substatus"))
	})
	t.Run("whole with the extension", func(t *testing.T) {
		code, _, body := q("SELECT VALUE COUNT(1) FROM c", queryHeader(map[string]string{emulator.HeaderWholeQuery: "true"}))
		require.Equal(t, http.StatusOK, code, "%s", body)
		assert.Contains(t, string(body), `"Documents":[6]`)
	})
	t.Run("a full last page", func(t *testing.T) {
		h := queryHeader(map[string]string{"x-ms-max-item-count": "3"})
		var got []any
		pages := 0
		for cont := ""; pages == 0 || cont != ""; pages++ {
			require.Less(t, pages, 10)
			h["x-ms-continuation"] = cont
			code, hdr, body := q("SELECT VALUE c.n FROM c", h)
			require.Equal(t, http.StatusOK, code, "%s", body)
			var page struct{ Documents []any }
			require.NoError(t, json.Unmarshal(body, &page))
			got = append(got, page.Documents...)
			cont = hdr.Get("x-ms-continuation")
		}
		assert.Len(t, got, 6)
		assert.Equal(t, 3, pages, "two full pages, the second with a continuation, then an empty one")

		h[emulator.HeaderWholeQuery] = "true"
		h["x-ms-continuation"] = ""
		_, hdr, _ := q("SELECT VALUE c.n FROM c", h)
		cont := hdr.Get("x-ms-continuation")
		require.NotEmpty(t, cont)
		h["x-ms-continuation"] = cont
		_, hdr, _ = q("SELECT VALUE c.n FROM c", h)
		assert.Empty(t, hdr.Get("x-ms-continuation"), "with the extension, pages end where the results do")

		delete(h, emulator.HeaderWholeQuery)
		h["x-ms-continuation"] = ""
		_, hdr, _ = q("SELECT VALUE c.n FROM c", h)
		h["x-ms-continuation"] = hdr.Get("x-ms-continuation")
		_, hdr, _ = q("SELECT VALUE c.n FROM c", h)
		h["x-ms-continuation"] = hdr.Get("x-ms-continuation")
		code, _, body := q("SELECT VALUE c.id FROM c", h)
		assert.Equal(t, http.StatusBadRequest, code, "the last page's token belongs to its query: %s", body)
	})
}
