package query

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAnalyze(t *testing.T) {
	cases := []struct {
		q          string
		aggregates string // Features.Aggregates.String()
		subqueries string // Features.Subqueries.String()
		aggregated bool
		gateway    bool // GatewayCrossPartition
		pushable   bool // PushableWhere
	}{
		// Filters and projections: the gateway runs them.
		{q: "SELECT * FROM c", gateway: true},
		{q: "SELECT c.id, c.n * 2 AS d FROM c WHERE c.n > 1", gateway: true, pushable: true},
		{q: "SELECT VALUE {\"a\": c.a, \"b\": [c.b, 1]} FROM root r WHERE r.a = 1", gateway: true, pushable: true},
		{q: "SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'x') AND NOT IS_NULL(c.y)", gateway: true, pushable: true},

		// Aggregates.
		{q: "SELECT VALUE COUNT(1) FROM c", aggregates: "SELECT", aggregated: true},
		{q: "SELECT COUNT(1) AS n, SUM(c.n) AS s FROM c WHERE c.k = 1", aggregates: "SELECT", aggregated: true, pushable: true},
		{q: "SELECT VALUE AVG(c.n) + 1 FROM c", aggregates: "SELECT", aggregated: true},
		{q: "SELECT c.k, MAX(c.n) AS m FROM c GROUP BY c.k", aggregates: "SELECT", aggregated: true},
		{q: "SELECT VALUE c.k FROM c GROUP BY c.k", aggregated: true},
		{q: "SELECT VALUE count(1) FROM c", aggregates: "SELECT", aggregated: true},

		// Aggregates inside subqueries: the query itself does not aggregate.
		{q: "SELECT c.id, (SELECT VALUE COUNT(1) FROM t IN c.tags) AS n FROM c", aggregates: "SELECT", subqueries: "SELECT"},
		{q: "SELECT c.id, ARRAY(SELECT VALUE MIN(t) FROM t IN c.tags) AS m FROM c", aggregates: "SELECT", subqueries: "SELECT"},
		{q: "SELECT * FROM c WHERE (SELECT VALUE SUM(t) FROM t IN c.n) > 1", aggregates: "WHERE", subqueries: "WHERE", gateway: true},
		{q: "SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'x')", subqueries: "WHERE", gateway: true},
		{q: "SELECT c.id FROM c ORDER BY (SELECT VALUE COUNT(1) FROM t IN c.tags)", aggregates: "ORDER BY", subqueries: "ORDER BY"},
		{q: "SELECT VALUE COUNT(1) FROM c GROUP BY (SELECT VALUE MAX(t) FROM t IN c.tags)", aggregates: "SELECT|GROUP BY", subqueries: "GROUP BY", aggregated: true},
		{q: "SELECT VALUE SUM((SELECT VALUE COUNT(1) FROM t IN c.tags)) FROM c WHERE EXISTS(SELECT VALUE 1 FROM t IN c.tags)", aggregates: "SELECT", subqueries: "SELECT|WHERE", aggregated: true},

		// Nested subqueries count in the clause of the outermost.
		{q: "SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE ARRAY_LENGTH(ARRAY(SELECT VALUE COUNT(1) FROM u IN t.u)) > 0)", aggregates: "WHERE", subqueries: "WHERE", gateway: true},
		{q: "SELECT ARRAY(SELECT VALUE t FROM t IN c.tags WHERE EXISTS(SELECT VALUE 1 FROM u IN t.u WHERE u = 1)) AS a FROM c", subqueries: "SELECT", gateway: true},
		{q: "SELECT VALUE (SELECT VALUE (SELECT VALUE AVG(u) FROM u IN t.u) FROM t IN c.tags) FROM c", aggregates: "SELECT", subqueries: "SELECT"},

		// Names and strings that merely look like aggregates or subqueries.
		{q: `SELECT c["COUNT("] FROM c`, gateway: true},
		{q: `SELECT c["SUM(x)"], c.MAX FROM c WHERE c["AVG("] = 'MIN(1)'`, gateway: true, pushable: true},
		{q: "SELECT c.id FROM c WHERE c.s = 'SELECT x'", gateway: true, pushable: true},
		{q: `SELECT VALUE "SELECT COUNT(1) FROM c" FROM c WHERE c["SELECT "] = 1`, gateway: true, pushable: true},
		{q: "SELECT * FROM c WHERE STARTSWITH(c.q, 'SELECT VALUE COUNT(1)')", gateway: true, pushable: true},

		// Clauses that need a query plan across partitions.
		{q: "SELECT DISTINCT c.a FROM c WHERE c.b = 1", pushable: true},
		{q: "SELECT TOP 3 * FROM c WHERE c.b = 1", pushable: true},
		{q: "SELECT * FROM c WHERE c.b = 1 OFFSET 1 LIMIT 2", pushable: true},
		{q: "SELECT * FROM c WHERE c.b = 1 ORDER BY c.n DESC", pushable: true},
		{q: "SELECT c.id, t FROM c JOIN t IN c.tags WHERE t = 'x'"},
		{q: "SELECT VALUE 1 + 1"},
		{q: "SELECT VALUE COUNT(1)", aggregates: "SELECT", aggregated: true},

		// Rows that are not whole documents: the WHERE cannot filter a scan.
		{q: "SELECT VALUE t FROM t IN c.tags WHERE t = 'x'", gateway: true},
		{q: "SELECT ch.name FROM c.children ch WHERE ch.age > 3", gateway: true},
		{q: "SELECT * FROM c WHERE c.a = (SELECT VALUE 1)", subqueries: "WHERE", gateway: true},

		// Subqueries as FROM and JOIN sources: the client evaluates them.
		{q: "SELECT * FROM (SELECT c.id FROM c) AS x", subqueries: "FROM"},
		{q: "SELECT VALUE x FROM (SELECT VALUE c.id FROM c WHERE c.n > 1) AS x WHERE x > 'a'", subqueries: "FROM"},
		{q: "SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.k FROM c)", aggregates: "SELECT", subqueries: "FROM", aggregated: true},
		{q: "SELECT VALUE n FROM (SELECT VALUE COUNT(1) FROM c) AS n", aggregates: "FROM", subqueries: "FROM"},
		{q: "SELECT c.id, t FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE t > 'a') AS t", subqueries: "FROM"},
		{q: "SELECT c.id FROM c JOIN c.child", gateway: false},
		{q: "SELECT VALUE id FROM c.id WHERE id > 'a'", gateway: true},
	}
	for _, tc := range cases {
		f := Analyze(mustParse(t, tc.q))
		assert.Equal(t, tc.aggregates, f.Aggregates.String(), "Aggregates of %s", tc.q)
		assert.Equal(t, tc.subqueries, f.Subqueries.String(), "Subqueries of %s", tc.q)
		assert.Equal(t, tc.aggregated, f.Aggregated, "Aggregated of %s", tc.q)
		assert.Equal(t, tc.gateway, f.GatewayCrossPartition(), "GatewayCrossPartition of %s", tc.q)
		assert.Equal(t, tc.pushable, f.PushableWhere(), "PushableWhere of %s", tc.q)
	}
}

func TestAnalyzeClauses(t *testing.T) {
	cases := []struct {
		q    string
		want Features
	}{
		{"SELECT * FROM c", Features{}},
		{"SELECT DISTINCT TOP 2 c.a FROM c WHERE c.b = 1 ORDER BY c.a", Features{Distinct: true, Top: true, Where: true, OrderBy: true}},
		{"SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k OFFSET 0 LIMIT 5", Features{Aggregates: ClauseSelect, Aggregated: true, GroupBy: true, OffsetLimit: true}},
		{"SELECT t FROM c JOIN t IN c.tags", Features{Join: true}},
		{"SELECT VALUE t FROM t IN c.tags", Features{FromIn: true, FromPath: true}},
		{"SELECT VALUE t FROM t IN c", Features{FromIn: true}},
		{"SELECT ch FROM c.children ch", Features{FromPath: true}},
		{"SELECT VALUE 1", Features{NoFrom: true}},
		{"SELECT * FROM c WHERE EXISTS(SELECT VALUE 1 FROM t IN c.tags)", Features{Where: true, Subqueries: ClauseWhere}},
		{"SELECT * FROM (SELECT * FROM c)", Features{FromPath: true, Subqueries: ClauseFrom}},
		{"SELECT VALUE x FROM x IN (SELECT VALUE c.tags FROM c)", Features{FromIn: true, FromPath: true, Subqueries: ClauseFrom}},
		{"SELECT c.id FROM c JOIN (SELECT VALUE 1) AS one", Features{Join: true, Subqueries: ClauseFrom}},
		{"SELECT VALUE id FROM c.id", Features{FromPath: true}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Analyze(mustParse(t, tc.q)), tc.q)
	}
}

func TestAnalyzeParameters(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT * FROM c":                               false,
		"SELECT * FROM c WHERE c.a = '@x'":              false,
		"SELECT * FROM c WHERE c.a = @x":                true,
		"SELECT TOP @n * FROM c":                        true,
		"SELECT * FROM c OFFSET @o LIMIT 1":             true,
		"SELECT * FROM c OFFSET 1 LIMIT @l":             true,
		"SELECT t FROM c JOIN t IN c.tags[@i]":          true,
		"SELECT VALUE x FROM x IN c[@p]":                true,
		"SELECT VALUE ARRAY(SELECT VALUE @v) FROM c":    true,
		"SELECT c.a FROM c ORDER BY c[@k]":              true,
		"SELECT VALUE COUNT(1) FROM c GROUP BY c[@g]":   true,
		"SELECT * FROM c WHERE EXISTS(SELECT TOP @n 1)": true,
	} {
		assert.Equal(t, want, Analyze(mustParse(t, q)).Parameters, q)
	}
}

func TestClausesString(t *testing.T) {
	assert.Equal(t, "", Clauses(0).String())
	assert.Equal(t, "SELECT|WHERE|GROUP BY|ORDER BY|FROM", (ClauseSelect | ClauseWhere | ClauseGroupBy | ClauseOrderBy | ClauseFrom).String())
}

// The compiler and Analyze agree on which queries aggregate.
func TestAnalyzeAggregatedAgreesWithCompile(t *testing.T) {
	for _, q := range []string{
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT c.k FROM c GROUP BY c.k",
		"SELECT c.id, (SELECT VALUE COUNT(1) FROM t IN c.tags) AS n FROM c",
		"SELECT VALUE MAX(c.n) ?? 0 FROM c",
		`SELECT c["COUNT("] FROM c`,
		"SELECT * FROM c",
	} {
		prog := mustProg(t, q)
		assert.Equal(t, prog.p.grouped, Analyze(mustParse(t, q)).Aggregated, q)
	}
}
