package query

import (
	"context"
	"encoding/json"
	"iter"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanShapes(t *testing.T) {
	cases := []struct {
		query    string
		kind     PlanKind
		text     string
		offset   int
		limit    int
		distinct bool
		single   bool
	}{
		{"SELECT c.id FROM c ORDER BY c.n DESC", OrderBy,
			`SELECT VALUE {"k": [{"v": c.n}], "p": {"id": c.id}} FROM c AS c ORDER BY c.n DESC`, 0, -1, false, false},
		{"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n", OrderBy,
			`SELECT TOP 2 VALUE {"k": [{"v": c.n}], "p": c.id} FROM c AS c WHERE IS_DEFINED(c.id) ORDER BY c.n ASC`, 0, 2, false, false},
		{"SELECT * FROM c ORDER BY c.a, c.b DESC OFFSET 3 LIMIT 4", OrderBy,
			`SELECT VALUE {"k": [{"v": c.a}, {"v": c.b}], "p": c} FROM c AS c ORDER BY c.a ASC, c.b DESC OFFSET 0 LIMIT 7`, 3, 4, false, false},
		{"SELECT VALUE COUNT(1) FROM c", Aggregate,
			`SELECT VALUE {"g": [], "a": [{"v": COUNT(1)}]} FROM c AS c`, 0, -1, false, false},
		{"SELECT c.g, AVG(c.n) AS a FROM c GROUP BY c.g", Aggregate,
			`SELECT VALUE {"g": [{"v": c.g}], "a": [{"v": SUM(c.n)}, {"v": COUNT(c.n)}]} FROM c AS c GROUP BY c.g`, 0, -1, false, false},
		{"SELECT TOP 3 c.g, COUNT(1) AS n FROM c GROUP BY c.g", Aggregate,
			`SELECT VALUE {"g": [{"v": c.g}], "a": [{"v": COUNT(1)}]} FROM c AS c GROUP BY c.g`, 0, 3, false, false},
		{"SELECT VALUE c.id FROM c OFFSET 1 LIMIT 2", Stream,
			`SELECT VALUE c.id FROM c AS c OFFSET 0 LIMIT 3`, 1, 2, false, false},
		{"SELECT DISTINCT TOP 5 VALUE c.g FROM c", Stream,
			`SELECT DISTINCT TOP 5 VALUE c.g FROM c AS c`, 0, 5, true, false},
		{"SELECT 1 AS x", Stream, `SELECT 1 AS x`, 0, -1, false, true},
		{"SELECT TOP @n c.id FROM c", Stream, `SELECT TOP 4 c.id FROM c AS c`, 0, 4, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			p, err := PlanFanOut(mustParse(t, tc.query), map[string]any{"@n": 4})
			require.NoError(t, err)
			assert.Equal(t, tc.kind, p.Kind)
			assert.Equal(t, tc.text, p.Query)
			assert.Equal(t, tc.offset, p.Offset)
			assert.Equal(t, tc.limit, p.Limit)
			assert.Equal(t, tc.distinct, p.Distinct)
			assert.Equal(t, tc.single, p.SingleCollection)
		})
	}
}

func TestPlanUnmergeable(t *testing.T) {
	_, err := PlanFanOut(mustParse(t, "SELECT DISTINCT VALUE c.a FROM c ORDER BY c.b"), nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnmergeable)
	var ue *UnmergeableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "DISTINCT with ORDER BY c.b", ue.Construct)
	assert.Contains(t, err.Error(), "ORDER BY c.b")

	// Projecting the sort key makes the same query mergeable.
	_, err = PlanFanOut(mustParse(t, "SELECT DISTINCT c.a, c.b FROM c ORDER BY c.b"), nil)
	assert.NoError(t, err)

	// A query that does not compile is a compile error, not a plan.
	_, err = PlanFanOut(mustParse(t, "SELECT NOSUCH(c.a) FROM c"), nil)
	assert.ErrorIs(t, err, ErrCompile)
}

func TestCompareRows(t *testing.T) {
	p, err := PlanFanOut(mustParse(t, "SELECT c.id FROM c ORDER BY c.n DESC, c.s"), nil)
	require.NoError(t, err)
	cases := []struct {
		a, b   []any
		ac, bc int
		want   int
	}{
		{[]any{2.0, "a"}, []any{1.0, "a"}, 5, 0, -1},       // DESC on the first key
		{[]any{1.0, "a"}, []any{1.0, "b"}, 5, 0, -1},       // ASC on the second
		{[]any{1.0, "a"}, []any{1.0, "a"}, 0, 5, -1},       // tie: lower collection first
		{[]any{1.0, "a"}, []any{1.0, "a"}, 5, 0, 1},        //
		{[]any{1.0, "a"}, []any{1.0, "a"}, 3, 3, 0},        //
		{[]any{Undefined, "a"}, []any{nil, "a"}, 0, 1, 1},  // DESC: null before undefined
		{[]any{"x", "a"}, []any{true, "a"}, 0, 1, -1},      // DESC: strings before booleans
		{[]any{1.0, Undefined}, []any{1.0, nil}, 1, 0, -1}, // ASC: undefined before null
	}
	for i, tc := range cases {
		assert.Equal(t, tc.want, p.CompareRows(tc.a, tc.ac, tc.b, tc.bc), "case %d", i)
	}
}

func TestDistinctFilter(t *testing.T) {
	d := NewDistinctFilter()
	for _, v := range []any{1.0, "1", nil, map[string]any{"a": 1.0, "b": []any{true}}, []any{1.0, "x"}} {
		assert.True(t, d.First(v), "%v", v)
	}
	for _, v := range []any{1.0, "1", nil, map[string]any{"b": []any{true}, "a": 1.0}, []any{1.0, "x"}} {
		assert.False(t, d.First(v), "%v again", v)
	}
	assert.True(t, d.First([]any{"x", 1.0}), "arrays are ordered")
	assert.True(t, d.First(map[string]any{}), "an empty object")
}

// partials runs a plan's per-collection query over each part of docs.
func partials(t *testing.T, p *Plan, parts ...[]string) [][]any {
	t.Helper()
	prog := mustProg(t, p.Query)
	out := make([][]any, len(parts))
	for i, part := range parts {
		v, err := prog.Values(context.Background(), docsOf(t, part...))
		require.NoError(t, err)
		out[i] = v
	}
	return out
}

func TestMergeAggregates(t *testing.T) {
	a := []string{`{"id":"1","g":"x","n":1}`, `{"id":"2","g":"y","n":2}`}
	b := []string{`{"id":"3","g":"x","n":3}`, `{"id":"4","g":"x"}`}
	c := []string{`{"id":"5","g":"y","n":"s"}`}
	cases := []struct {
		query string
		parts [][]string
		want  string
	}{
		{"SELECT VALUE COUNT(1) FROM c", [][]string{{}, {}}, `[0]`},
		{"SELECT COUNT(1) AS n FROM c", nil, `[{"n":0}]`},
		{"SELECT VALUE COUNT(1) FROM c", [][]string{a, b, c}, `[5]`},
		{"SELECT VALUE AVG(c.n) FROM c", [][]string{a, b}, `[2]`},
		{"SELECT VALUE AVG(c.n) FROM c", [][]string{a, b, c}, `[]`},
		{"SELECT AVG(c.n) AS a, SUM(c.n) AS s FROM c", [][]string{a, c}, `[{}]`},
		{"SELECT VALUE SUM(c.n) FROM c WHERE c.id = 'none'", [][]string{a, b}, `[0]`},
		{"SELECT MIN(c.n) AS lo, MAX(c.n) AS hi FROM c", [][]string{a, b, c}, `[{"lo":1,"hi":"s"}]`},
		{"SELECT c.g, COUNT(1) AS n, AVG(c.n) AS avg FROM c GROUP BY c.g", [][]string{a, b},
			`[{"g":"x","n":3,"avg":2},{"g":"y","n":1,"avg":2}]`},
		{"SELECT VALUE {g: c.g, total: SUM(c.n) + 1} FROM c WHERE IS_NUMBER(c.n) GROUP BY c.g", [][]string{b, a, c},
			`[{"g":"x","total":5},{"g":"y","total":3}]`},
		{"SELECT TOP 1 c.g FROM c GROUP BY c.g", [][]string{b, a}, `[{"g":"x"}]`},
		{"SELECT c.g FROM c GROUP BY c.g", [][]string{{}, {}}, `[]`},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			p, err := PlanFanOut(mustParse(t, tc.query), nil)
			require.NoError(t, err)
			require.Equal(t, Aggregate, p.Kind)
			got, err := referenceMergeAll(p, partials(t, p, tc.parts...))
			require.NoError(t, err)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestMergeReadsOnlyWhatItNeeds(t *testing.T) {
	rows := func(p *Plan, docs ...string) []any {
		return partials(t, p, docs)[0]
	}
	many := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			b, _ := json.Marshal(map[string]any{"id": prefix + string(rune('a'+i)), "n": i})
			out = append(out, string(b))
		}
		return out
	}
	t.Run("order-by", func(t *testing.T) {
		p, err := PlanFanOut(mustParse(t, "SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n"), nil)
		require.NoError(t, err)
		var read int
		var parts []iter.Seq[any]
		for _, pre := range []string{"x", "y", "z"} {
			// Each collection returns everything it has (TOP ignored here),
			// so the merge alone decides how much is read.
			all, err := PlanFanOut(mustParse(t, "SELECT VALUE c.id FROM c ORDER BY c.n"), nil)
			require.NoError(t, err)
			parts = append(parts, sliceSeq(rows(all, many(pre, 10)...), &read))
		}
		var got []any
		for v, err := range referenceMerge(p, parts) {
			require.NoError(t, err)
			got = append(got, v)
		}
		assert.Equal(t, []any{"xa", "ya"}, got, "ties on n broken by collection index")
		assert.LessOrEqual(t, read, 3+2, "one head per collection plus one per emitted row")
	})
	t.Run("stream", func(t *testing.T) {
		p, err := PlanFanOut(mustParse(t, "SELECT VALUE c.id FROM c OFFSET 1 LIMIT 2"), nil)
		require.NoError(t, err)
		var read int
		parts := []iter.Seq[any]{sliceSeq([]any{"a", "b"}, &read), sliceSeq([]any{"c", "d", "e"}, &read), sliceSeq([]any{"f"}, &read)}
		var got []any
		for v, err := range referenceMerge(p, parts) {
			require.NoError(t, err)
			got = append(got, v)
		}
		assert.Equal(t, []any{"b", "c"}, got)
		assert.Equal(t, 3, read)
	})
	t.Run("consumer stops", func(t *testing.T) {
		p, err := PlanFanOut(mustParse(t, "SELECT VALUE c.id FROM c ORDER BY c.n"), nil)
		require.NoError(t, err)
		parts := []iter.Seq[any]{sliceSeq(rows(p, many("x", 5)...), nil), sliceSeq(rows(p, many("y", 5)...), nil)}
		n := 0
		for range referenceMerge(p, parts) {
			n++
			if n == 3 {
				break
			}
		}
		assert.Equal(t, 3, n)
	})
}

func TestMergeMalformedRows(t *testing.T) {
	ob, err := PlanFanOut(mustParse(t, "SELECT VALUE c.id FROM c ORDER BY c.n"), nil)
	require.NoError(t, err)
	_, err = referenceMergeAll(ob, [][]any{{map[string]any{"p": "x"}}})
	assert.ErrorContains(t, err, "sort keys")
	_, err = referenceMergeAll(ob, [][]any{{"not an object"}})
	assert.ErrorContains(t, err, "object")

	ag, err := PlanFanOut(mustParse(t, "SELECT VALUE COUNT(1) FROM c"), nil)
	require.NoError(t, err)
	_, err = referenceMergeAll(ag, [][]any{{1.0}})
	assert.ErrorContains(t, err, "partial aggregate")
	_, err = referenceMergeAll(ag, [][]any{{map[string]any{"g": []any{}, "a": []any{}}}})
	assert.ErrorContains(t, err, "values")
}

func TestMergeSingleCollection(t *testing.T) {
	p, err := PlanFanOut(mustParse(t, "SELECT VALUE 1 + 1"), nil)
	require.NoError(t, err)
	require.True(t, p.SingleCollection)
	got, err := referenceMergeAll(p, [][]any{{2.0}, {2.0}, {2.0}})
	require.NoError(t, err)
	assert.Equal(t, []any{2.0}, got, "a query without FROM is answered once")
}
