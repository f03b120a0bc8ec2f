package query

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Subqueries and paths as FROM and JOIN sources, inferred aliases (issue
// #18): what one collection answers, and that the planner merges it
// exactly over several, or refuses it by name.

var sourceDocs = []string{
	`{"id":"a","n":1,"k":"x","tags":["t1","t2"],"o":{"p":1}}`,
	`{"id":"b","n":2,"k":"x","tags":[],"o":{"p":2}}`,
	`{"id":"c","k":"y","tags":["t1"]}`,
}

func TestSourceSubqueriesAndInferredAliases(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		// A FROM subquery at the top ranges over the collection.
		{"SELECT * FROM (SELECT c.id FROM c) AS x", `[{"id":"a"},{"id":"b"},{"id":"c"}]`},
		{"SELECT * FROM (SELECT VALUE c.id FROM c)", `["a","b","c"]`},
		{"SELECT VALUE x.id FROM (SELECT c.id FROM c) AS x WHERE x.id > 'a'", `["b","c"]`},
		{"SELECT VALUE x FROM (SELECT VALUE c.n FROM c) x", `[1,2]`},
		{"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.k FROM c)", `[2]`},
		{"SELECT VALUE n FROM (SELECT VALUE COUNT(1) FROM c) AS n", `[3]`},
		{"SELECT VALUE x FROM (SELECT TOP 2 VALUE c.id FROM c ORDER BY c.id DESC) x", `["c","b"]`},
		{"SELECT x.k, COUNT(1) AS n FROM (SELECT c.k FROM c) AS x GROUP BY x.k", `[{"k":"x","n":2},{"k":"y","n":1}]`},
		{"SELECT VALUE y FROM (SELECT VALUE x.id FROM (SELECT * FROM c) AS x) AS y", `["a","b","c"]`},
		{"SELECT VALUE t FROM t IN (SELECT VALUE c.tags FROM c)", `["t1","t2","t1"]`},
		{"SELECT VALUE x FROM (SELECT VALUE c.id FROM c) AS x ORDER BY x DESC", `["c","b","a"]`},
		{"SELECT TOP 1 VALUE x FROM (SELECT VALUE c.id FROM root c WHERE c.n > 1) AS x", `["b"]`},
		// FROM a path without an alias: its last property name.
		{"SELECT VALUE id FROM c.id", `["a","b","c"]`},
		{"SELECT VALUE p FROM c.o.p", `[1,2]`},
		{`SELECT VALUE p FROM c["o"]["p"]`, `[1,2]`},
		{"SELECT * FROM c.tags[0]", `["t1","t1"]`},
		// JOIN a path: one row holding its value, none when undefined.
		{"SELECT c.id, o.p FROM c JOIN c.o", `[{"id":"a","p":1},{"id":"b","p":2}]`},
		{"SELECT c.id, q FROM c JOIN c.o.p AS q", `[{"id":"a","q":1},{"id":"b","q":2}]`},
		{"SELECT c.id FROM c JOIN c.nothing", `[]`},
		// JOIN a correlated subquery: one row per result.
		{"SELECT VALUE [c.id, t] FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE t = 't1') AS t", `[["a","t1"],["c","t1"]]`},
		{"SELECT VALUE c.id FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE t = 't2')", `["a"]`},
		{"SELECT c.id, u FROM c JOIN (SELECT VALUE UPPER(c.k)) u WHERE u = 'X'", `[{"id":"a","u":"X"},{"id":"b","u":"X"}]`},
		{"SELECT VALUE t FROM c JOIN t IN (SELECT VALUE c.tags)", `["t1","t2","t1"]`},
		{"SELECT VALUE [t, n] FROM c JOIN t IN c.tags JOIN (SELECT VALUE LENGTH(t)) n WHERE c.id = 'a'", `[["t1",2],["t2",2]]`},
		{"SELECT c.id, n FROM c JOIN (SELECT VALUE COUNT(1) FROM t IN c.tags) n", `[{"id":"a","n":2},{"id":"b","n":0},{"id":"c","n":1}]`},
		{"SELECT VALUE s FROM c JOIN (SELECT VALUE t FROM t IN c.tags GROUP BY t) s WHERE c.id = 'a'", `["t1","t2"]`},
		{"SELECT VALUE c.id FROM c JOIN (SELECT VALUE c.nothing) x", `[]`},
		// A FROM subquery inside an expression's subquery is correlated.
		{"SELECT c.id, (SELECT VALUE COUNT(1) FROM (SELECT VALUE t FROM t IN c.tags) AS t) AS n FROM c", `[{"id":"a","n":2},{"id":"b","n":0},{"id":"c","n":1}]`},
		{"SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE 1 FROM (SELECT VALUE t FROM t IN c.tags) t WHERE t = 't2')", `["a"]`},
		{"SELECT VALUE ARRAY(SELECT VALUE x FROM x IN (SELECT VALUE c.tags)) FROM c WHERE c.id = 'a'", `[["t1","t2"]]`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			var want []any
			require.NoError(t, json.Unmarshal([]byte(tc.want), &want))
			got, err := mustProg(t, tc.query).Values(context.Background(), docsOf(t, sourceDocs...))
			require.NoError(t, err)
			if got == nil {
				got = []any{}
			}
			assert.True(t, EqualValues(want, got, 0), "want %s, got %s", tc.want, jsonText(got))

			// Format writes what parses to the same query.
			text := FormatQuery(mustParse(t, tc.query))
			again, err := Prepare(text, nil)
			require.NoError(t, err, text)
			got, err = again.Values(context.Background(), docsOf(t, sourceDocs...))
			require.NoError(t, err)
			if got == nil {
				got = []any{}
			}
			assert.True(t, EqualValues(want, got, 0), "formatted as %s: got %s", text, jsonText(got))
		})
	}
}

func TestSourceErrors(t *testing.T) {
	for _, tc := range []struct{ query, err string }{
		{"SELECT * FROM (c)", "a subquery (SELECT ...) as the source"},
		{"SELECT * FROM (SELECT * FROM c", `")"`},
		{"SELECT * FROM c JOIN", "a container name or alias"},
		{"SELECT VALUE x FROM (SELECT VALUE c.id FROM c)", `identifier "x" could not be resolved`},
		{"SELECT c.id FROM c JOIN (SELECT VALUE t FROM t IN d.tags) t", `identifier "d" could not be resolved`},
		{"SELECT c.id FROM c JOIN (SELECT VALUE t2 FROM t IN c.tags) t JOIN t2 IN c.tags", `identifier "t2" could not be resolved`},
		{"SELECT * FROM c JOIN (SELECT VALUE 1) one", "SELECT * needs a single input"},
		{"SELECT VALUE x FROM (SELECT VALUE NOSUCH(c.id) FROM c) x", "unknown function NOSUCH"},
	} {
		_, err := Prepare(tc.query, nil)
		require.Error(t, err, tc.query)
		assert.Contains(t, err.Error(), tc.err, tc.query)
	}
}

// The planner merges a FROM subquery whose every result comes from one
// document (and any JOIN subquery, which is per row) exactly; it refuses,
// naming it, one whose results depend on several documents.
func TestPlanSourceSubqueries(t *testing.T) {
	docs := []string{}
	for i, k := range []string{"x", "y", "x", "z", "y", "x", "w"} {
		raw, _ := json.Marshal(map[string]any{"id": string(rune('a' + i)), "k": k, "n": i, "tags": []any{"t1", k}})
		docs = append(docs, string(raw))
	}
	for _, tc := range []struct {
		query    string
		anyOrder bool // no ORDER BY, or ties only: the merge may order otherwise
	}{
		{"SELECT * FROM (SELECT c.id, c.k FROM c WHERE c.n > 1) AS x", true},
		{"SELECT VALUE x.id FROM (SELECT * FROM c) AS x ORDER BY x.n DESC", false},
		{"SELECT * FROM (SELECT VALUE c.k FROM c) ORDER BY 1", true},
		{"SELECT TOP 3 VALUE x FROM (SELECT VALUE c.id FROM c ORDER BY c.id) AS x ORDER BY x DESC", false},
		{"SELECT x.k, COUNT(1) AS n FROM (SELECT c.k FROM c ORDER BY c.n) AS x GROUP BY x.k", false},
		{"SELECT VALUE COUNT(1) FROM (SELECT VALUE t FROM c JOIN t IN c.tags) AS t WHERE t = 'x'", false},
		{"SELECT DISTINCT VALUE k FROM c.k", true},
		{"SELECT c.id, n FROM c JOIN (SELECT VALUE COUNT(1) FROM t IN c.tags WHERE t != 'x') n ORDER BY c.id", false},
		{"SELECT VALUE COUNT(1) FROM c JOIN (SELECT DISTINCT VALUE t FROM t IN c.tags) t", false},
		{"SELECT t, COUNT(1) AS n FROM c JOIN c.k AS t GROUP BY t", false},
		// Rows from no document: one collection answers.
		{"SELECT * FROM (SELECT VALUE 1) AS x", false},
		{"SELECT VALUE y FROM (SELECT VALUE [1, 2]) AS x JOIN y IN x", false},
		{"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE z FROM (SELECT VALUE 1) AS z)", false},
	} {
		t.Run(tc.query, func(t *testing.T) { checkFanOut(t, tc.query, docs, tc.anyOrder) })
	}
	// A FROM subquery whose results depend on several documents merges in
	// two stages (Nested): its own plan, then the query over its results on
	// the client.
	for _, tc := range []struct {
		query string
		inner PlanKind
	}{
		{"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.k FROM c)", Stream},
		{"SELECT * FROM (SELECT TOP 2 * FROM c ORDER BY c.id) x", OrderBy},
		{"SELECT VALUE x.id FROM (SELECT c.id FROM c ORDER BY c.n DESC OFFSET 1 LIMIT 3) x", OrderBy},
		{"SELECT VALUE n FROM (SELECT VALUE COUNT(1) FROM c) n", Aggregate},
		{"SELECT VALUE k FROM (SELECT VALUE c.k FROM c GROUP BY c.k) k ORDER BY k DESC", Aggregate},
		{"SELECT TOP 2 VALUE x.id FROM (SELECT * FROM c ORDER BY c.n DESC) x", OrderBy},
		{"SELECT DISTINCT VALUE x.k FROM (SELECT * FROM (SELECT TOP 5 * FROM c ORDER BY c.n) y) x", Nested},
		{"SELECT g.k, COUNT(1) AS n FROM (SELECT c.k, COUNT(1) AS m FROM c GROUP BY c.k) g WHERE g.m > 1 GROUP BY g.k", Aggregate},
		{"SELECT VALUE AVG(n) FROM (SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags GROUP BY c.k) n", Aggregate},
	} {
		t.Run(tc.query, func(t *testing.T) {
			p, err := PlanFanOut(mustParse(t, tc.query), nil)
			require.NoError(t, err)
			require.Equal(t, Nested, p.Kind)
			require.Equal(t, tc.inner, p.Inner.Kind)
			assert.Equal(t, p.Inner.Query, p.Query)
			checkFanOut(t, tc.query, docs, !strings.Contains(tc.query, "ORDER BY"))
		})
	}
	p, err := PlanFanOut(mustParse(t, "SELECT * FROM c"), nil)
	require.NoError(t, err)
	assert.ErrorContains(t, p.Outer(context.Background(), nil, nil), "Outer runs a nested plan, this one is stream")

}

// checkFanOut checks that query, fanned out over 1 to 4 collections (docs
// dealt round-robin) and merged by its plan, answers as one collection
// does: in the same order, or with anyOrder in any.
func checkFanOut(t *testing.T, query string, docs []string, anyOrder bool) {
	t.Helper()
	want, err := mustProg(t, query).Values(context.Background(), docsOf(t, docs...))
	require.NoError(t, err)
	ds := make([]Doc, len(docs))
	for i, d := range docs {
		ds[i], err = NewDoc([]byte(d))
		require.NoError(t, err)
	}
	for n := 1; n <= 4; n++ {
		got, err := runFanOut(query, nil, ds, n)
		require.NoError(t, err, "over %d collections", n)
		same := EqualValues(want, got, 0)
		if anyOrder {
			same = sameMultiset(want, got, 0)
		}
		assert.True(t, same, "over %d collections: want %s, got %s", n, jsonText(want), jsonText(got))
	}
}
