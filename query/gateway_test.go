package query_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/query"
)

// TestPlanGateway: the plan of each query form, as Cosmos DB's gateway
// gives it, and what its rewritten query answers within one range (the
// placeholder replaced by "true", as a client does on a range's first
// page): the form the SDKs merge.
func TestPlanGateway(t *testing.T) {
	docs := gatewayDocs(t, `{"id":"1","pk":"a","n":3}`, `{"id":"2","pk":"b","n":1}`, `{"id":"3","pk":"a","n":2}`)
	cases := []struct {
		name, query string
		composite   bool
		params      map[string]any
		info        string // the queryInfo members checked, as JSON
		rewritten   string
		answer      string // the rewritten query's results within one range
	}{
		{name: "filter", query: "SELECT * FROM c WHERE c.n > 1",
			info: `{"distinctType":"None","orderBy":[],"aggregates":[],"rewrittenQuery":"","hasSelectValue":false}`},
		{name: "ORDER BY", query: "SELECT VALUE c.n FROM c WHERE c.pk = 'a' ORDER BY c.n DESC",
			info:      `{"orderBy":["Descending"],"orderByExpressions":["c.n"],"hasSelectValue":true}`,
			rewritten: `SELECT c._rid, [{"item": c.n}] AS orderByItems, c.n AS payload FROM c AS c WHERE (c.pk = "a") AND ({documentdb-formattableorderbyquery-filter}) ORDER BY c.n DESC`,
			answer:    `[{"orderByItems":[{"item":3}],"payload":3},{"orderByItems":[{"item":2}],"payload":2}]`},
		{name: "ORDER BY of a projection, two keys", query: "SELECT c.id, c.n * 2 FROM c ORDER BY c.pk, c.n",
			info:      `{"orderBy":["Ascending","Ascending"],"orderByExpressions":["c.pk","c.n"]}`,
			rewritten: `SELECT c._rid, [{"item": c.pk}, {"item": c.n}] AS orderByItems, {"id": c.id, "$1": c.n * 2} AS payload FROM c AS c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.pk ASC, c.n ASC`,
			answer:    `[{"orderByItems":[{"item":"a"},{"item":2}],"payload":{"id":"3","$1":4}},{"orderByItems":[{"item":"a"},{"item":3}],"payload":{"id":"1","$1":6}},{"orderByItems":[{"item":"b"},{"item":1}],"payload":{"id":"2","$1":2}}]`},
		{name: "TOP with ORDER BY keeps its TOP", query: "SELECT TOP @n * FROM c ORDER BY c.n", params: map[string]any{"@n": 1.0},
			info:      `{"top":1,"orderBy":["Ascending"]}`,
			rewritten: `SELECT TOP @n c._rid, [{"item": c.n}] AS orderByItems, c AS payload FROM c AS c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.n ASC`,
			answer:    `[{"orderByItems":[{"item":1}],"payload":{"id":"2","pk":"b","n":1}}]`},
		{name: "TOP alone runs as it is", query: "SELECT TOP 2 * FROM c", info: `{"top":2,"rewrittenQuery":""}`},
		{name: "OFFSET LIMIT widens to what the client skips", query: "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 1 LIMIT 1",
			info:      `{"offset":1,"limit":1}`,
			rewritten: `SELECT c._rid, [{"item": c.n}] AS orderByItems, c.n AS payload FROM c AS c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.n ASC OFFSET 0 LIMIT 2`,
			answer:    `[{"orderByItems":[{"item":1}],"payload":1},{"orderByItems":[{"item":2}],"payload":2}]`},
		{name: "DISTINCT sorted by what is distinct", query: "SELECT DISTINCT VALUE c.pk FROM c ORDER BY c.pk",
			info:      `{"distinctType":"Ordered"}`,
			rewritten: `SELECT DISTINCT [{"item": c.pk}] AS orderByItems, c.pk AS payload FROM c AS c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.pk ASC`,
			answer:    `[{"orderByItems":[{"item":"a"}],"payload":"a"},{"orderByItems":[{"item":"b"}],"payload":"b"}]`},
		{name: "DISTINCT alone", query: "SELECT DISTINCT c.pk FROM c", info: `{"distinctType":"Unordered","rewrittenQuery":""}`},
		{name: "COUNT", query: "SELECT VALUE COUNT(1) FROM c",
			info: `{"aggregates":["Count"],"hasSelectValue":true}`, rewritten: `SELECT VALUE [{"item": COUNT(1)}] FROM c AS c`, answer: `[[{"item":3}]]`},
		{name: "AVG as a sum and a count", query: "SELECT VALUE AVG(c.n) FROM c",
			info: `{"aggregates":["Average"]}`, rewritten: `SELECT VALUE [{"item": {"sum": SUM(c.n), "count": COUNT(c.n)}}] FROM c AS c`,
			answer: `[[{"item":{"sum":6,"count":3}}]]`},
		{name: "MIN for older clients", query: "SELECT VALUE MIN(c.n) FROM c",
			info: `{"aggregates":["Min"]}`, rewritten: `SELECT VALUE [{"item": MIN(c.n)}] FROM c AS c`, answer: `[[{"item":1}]]`},
		{name: "MAX, composite", query: "SELECT VALUE MAX(c.n) FROM c", composite: true,
			info: `{"aggregates":["Max"]}`, rewritten: `SELECT VALUE [{"item": {"max": MAX(c.n), "count": COUNT(c.n)}}] FROM c AS c`,
			answer: `[[{"item":{"max":3,"count":3}}]]`},
		{name: "GROUP BY", query: "SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk",
			info:      `{"groupByExpressions":["c.pk"],"groupByAliases":["pk","n"],"groupByAliasToAggregateType":{"n":"Count","pk":null}}`,
			rewritten: `SELECT [{"item": c.pk}] AS groupByItems, {"pk": c.pk, "n": {"item": COUNT(1)}} AS payload FROM c AS c GROUP BY c.pk`,
			answer:    `[{"groupByItems":[{"item":"a"}],"payload":{"pk":"a","n":{"item":2}}},{"groupByItems":[{"item":"b"}],"payload":{"pk":"b","n":{"item":1}}}]`},
		{name: "GROUP BY with VALUE", query: "SELECT VALUE SUM(c.n) FROM c GROUP BY c.pk",
			info:      `{"groupByExpressions":["c.pk"],"aggregates":["Sum"],"hasSelectValue":true}`,
			rewritten: `SELECT [{"item": c.pk}] AS groupByItems, [{"item": SUM(c.n)}] AS payload FROM c AS c GROUP BY c.pk`,
			answer:    `[{"groupByItems":[{"item":"a"}],"payload":[{"item":5}]},{"groupByItems":[{"item":"b"}],"payload":[{"item":1}]}]`},
		{name: "an aggregate without VALUE or GROUP BY", query: "SELECT COUNT(1) FROM c",
			info:      `{"groupByExpressions":[],"groupByAliases":["$1"],"groupByAliasToAggregateType":{"$1":"Count"}}`,
			rewritten: `SELECT [] AS groupByItems, {"$1": {"item": COUNT(1)}} AS payload FROM c AS c`,
			answer:    `[{"groupByItems":[],"payload":{"$1":{"item":3}}}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parsed, err := query.Parse(tc.query)
			require.NoError(t, err)
			plan, err := query.PlanGateway(parsed, tc.params, query.GatewayOptions{CompositeAggregates: tc.composite})
			require.NoError(t, err)
			assert.Equal(t, 2, plan.Version)
			assert.Equal(t, []query.GatewayRange{{Min: "", Max: "FF", IsMinInclusive: true}}, plan.QueryRanges)
			var info, want map[string]any
			b, err := json.Marshal(plan.QueryInfo)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &info))
			require.NoError(t, json.Unmarshal([]byte(tc.info), &want))
			for k, v := range want {
				assert.Equal(t, v, info[k], "queryInfo.%s", k)
			}
			assert.Equal(t, tc.name != "filter", plan.ClientMerges())
			if tc.rewritten == "" {
				return
			}
			assert.Equal(t, tc.rewritten, plan.QueryInfo.RewrittenQuery)
			text := strings.Replace(plan.QueryInfo.RewrittenQuery, query.OrderByFilterPlaceholder, "true", 1)
			prog, err := query.Prepare(text, tc.params)
			require.NoError(t, err, text)
			out, err := prog.Execute(context.Background(), docs)
			require.NoError(t, err, text)
			got, err := json.Marshal(out)
			require.NoError(t, err)
			assert.JSONEq(t, tc.answer, string(got), text)
		})
	}
}

// TestPlanGatewayRefuses: what the gateway has no plan for.
func TestPlanGatewayRefuses(t *testing.T) {
	for _, q := range []string{
		"SELECT VALUE COUNT(1) + 1 FROM c",
		"SELECT COUNT(1) * 2 AS n FROM c GROUP BY c.pk",
		"SELECT * FROM c GROUP BY c.pk",
	} {
		parsed, err := query.Parse(q)
		require.NoError(t, err)
		_, err = query.PlanGateway(parsed, nil, query.GatewayOptions{})
		assert.ErrorIs(t, err, query.ErrGatewayPlan, q)
	}
	parsed, err := query.Parse("SELECT TOP @n * FROM c")
	require.NoError(t, err)
	_, err = query.PlanGateway(parsed, nil, query.GatewayOptions{})
	assert.ErrorIs(t, err, query.ErrCompile, "a TOP parameter without a value")
}

// TestPinsKey: a WHERE that compares the partition key with a constant in
// one of its AND-terms keeps a query on one partition.
func TestPinsKey(t *testing.T) {
	cases := []struct {
		query string
		path  []string
		want  bool
	}{
		{"SELECT * FROM c WHERE c.pk = 'a'", []string{"pk"}, true},
		{"SELECT * FROM c WHERE 'a' = c.pk AND c.n > 1 ORDER BY c.n", []string{"pk"}, true},
		{"SELECT * FROM r WHERE r.n > 1 AND (r.x = 2 AND r['pk'] = @k)", []string{"pk"}, true},
		{"SELECT * FROM c WHERE c.a.b = 1", []string{"a", "b"}, true},
		{"SELECT * FROM c WHERE c.pk = 'a' OR c.pk = 'b'", []string{"pk"}, false},
		{"SELECT * FROM c WHERE c.pk > 'a'", []string{"pk"}, false},
		{"SELECT * FROM c WHERE c.other = 'a'", []string{"pk"}, false},
		{"SELECT * FROM c WHERE c.pk = c.other", []string{"pk"}, false},
		{"SELECT * FROM c", []string{"pk"}, false},
		{"SELECT * FROM x IN c.list WHERE x.pk = 1", []string{"pk"}, false},
		{"SELECT * FROM c WHERE c[0] = 1", []string{"pk"}, false},
	}
	for _, tc := range cases {
		parsed, err := query.Parse(tc.query)
		require.NoError(t, err)
		assert.Equal(t, tc.want, query.PinsKey(parsed, tc.path), tc.query)
	}
}

// gatewayDocs are docs as a sequence for Program.Execute.
func gatewayDocs(t *testing.T, raws ...string) func(func(query.Doc) bool) {
	t.Helper()
	var docs []query.Doc
	for _, raw := range raws {
		d, err := query.NewDoc([]byte(raw))
		require.NoError(t, err)
		docs = append(docs, d)
	}
	return func(yield func(query.Doc) bool) {
		for _, d := range docs {
			if !yield(d) {
				return
			}
		}
	}
}
