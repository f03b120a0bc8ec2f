package query

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCosmiumV0120Regressions pins the four wrong answers of cosmium
// v0.1.20's executor that made docshard write its own engine (issue 3).
// Each runs on the embedded engine and on its fan-out plan over every
// two-way split, and checks Cosmos DB's documented answer.
func TestCosmiumV0120Regressions(t *testing.T) {
	docs := []string{
		`{"id":"a","n":50,"tags":["red","blue"],"name":"x"}`,
		`{"id":"b","n":7,"tags":["green"],"name":"y"}`,
		`{"id":"c","n":100.0,"tags":[],"name":"x"}`,
		`{"id":"d","n":5e1,"name":"z"}`,
	}
	cases := []struct {
		bug, query, want string
	}{
		{"an integer literal never compares less or equal to a document's number",
			"SELECT VALUE c.id FROM c WHERE c.n > 50", `["c"]`},
		{"an integer literal never compares less or equal to a document's number",
			"SELECT VALUE c.id FROM c WHERE c.n = 50", `["a","d"]`},
		{"an integer literal never compares less or equal to a document's number",
			"SELECT VALUE c.id FROM c WHERE c.n <= 50 AND c.n >= 7", `["a","b","d"]`},
		{"COUNT over no matching document returns nothing instead of [0]",
			"SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000", `[0]`},
		{"COUNT over no matching document returns nothing instead of [0]",
			"SELECT COUNT(1) AS n FROM c WHERE c.id = 'none'", `[{"n":0}]`},
		{"ARRAY_CONTAINS(c.tags, \"red\") panics",
			`SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, "red")`, `["a"]`},
		{"ARRAY_CONTAINS(c.tags, \"red\") panics",
			`SELECT VALUE ARRAY_CONTAINS(c.tags, "red") FROM c`, `[true,false,false]`},
		{"a single-quoted string literal silently turns the WHERE clause into another query",
			"SELECT VALUE c.id FROM c WHERE c.name = 'x'", `["a","c"]`},
		{"a single-quoted string literal silently turns the WHERE clause into another query",
			"SELECT VALUE c.id FROM c WHERE c.name != 'x' AND c.n < 60", `["b","d"]`},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			q, err := Parse(tc.query)
			require.NoError(t, err)
			prog, err := Compile(q, nil)
			require.NoError(t, err)
			got, err := prog.Execute(context.Background(), docsOf(t, docs...))
			require.NoError(t, err)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			if got == nil {
				b = []byte("[]")
			}
			assert.JSONEq(t, tc.want, string(b), "cosmium v0.1.20: %s", tc.bug)

			plan, err := PlanFanOut(q, nil)
			require.NoError(t, err)
			for cut := 0; cut <= len(docs); cut++ {
				parts := partials(t, plan, docs[:cut], docs[cut:])
				merged, err := referenceMergeAll(plan, parts)
				require.NoError(t, err)
				mb, err := json.Marshal(merged)
				require.NoError(t, err)
				assert.JSONEq(t, tc.want, string(mb), "fanned out at %d", cut)
			}
		})
	}
}

// TestHugeIndexesAreNotCrashes: index and length arguments far outside
// int range are clamped, never a slice panic.
func TestHugeIndexesAreNotCrashes(t *testing.T) {
	for _, q := range []string{
		"SELECT VALUE SUBSTRING('abc', 3, 9.223372036854775e18)",
		"SELECT VALUE SUBSTRING('abc', -1e300, 1e300)",
		"SELECT VALUE [LEFT('abc', 1e300), RIGHT('abc', -1e300), INDEX_OF('abc', 'c', 1e300)]",
		"SELECT VALUE ARRAY_SLICE([1, 2, 3], 9.223372036854775e18, 9.223372036854775e18)",
		"SELECT VALUE ARRAY_SLICE([1, 2, 3], -1e300, NaN)",
		"SELECT VALUE [[1, 2][1e300], [1, 2][-0.5], [1, 2][NaN], REPLICATE('a', 1e300)]",
	} {
		prog, err := Prepare(q, nil)
		require.NoError(t, err, q)
		assert.NotPanics(t, func() {
			_, err := prog.Execute(context.Background(), docsOf(t))
			assert.NoError(t, err, q)
		}, q)
	}
}
