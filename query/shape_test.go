package query

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPropertyOrder: objects a query builds keep the order the query names
// their properties, as Cosmos DB returns them; document objects are written
// with sorted keys; SELECT * returns the stored text.
func TestPropertyOrder(t *testing.T) {
	docs := []string{
		`{"id":"1","title":"T","g":"x","addr":{"z":1,"a":2}}`,
		`{"id":"2","title":"U","g":"x"}`,
	}
	cases := []struct{ query, want string }{
		{"SELECT c.title, c.id, {z: 1, a: {y: c.id, b: 2}} AS o FROM c WHERE c.id = '1'",
			`{"title":"T","id":"1","o":{"z":1,"a":{"y":"1","b":2}}}`},
		{"SELECT VALUE {b: 1, a: 2}", `{"b":1,"a":2}`},
		{"SELECT COUNT(1) AS n, c.g FROM c GROUP BY c.g", `{"n":2,"g":"x"}`},
		{"SELECT VALUE {total: COUNT(1), group: c.g} FROM c GROUP BY c.g", `{"total":2,"group":"x"}`},
		{"SELECT c.title, c.missing, c.id FROM c WHERE c.id = '2'", `{"title":"U","id":"2"}`},
		{"SELECT c.addr FROM c WHERE c.id = '1'", `{"addr":{"a":2,"z":1}}`},
		{"SELECT * FROM c WHERE c.id = '1'", docs[0]},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			out, err := mustProg(t, tc.query).Execute(context.Background(), docsOf(t, docs...))
			require.NoError(t, err)
			require.Len(t, out, 1)
			assert.Equal(t, tc.want, string(out[0]))

			// Fanned out: the per-collection rows carry the payload in
			// that order, and Plan.Encode writes merged results in it.
			plan, err := PlanFanOut(mustParse(t, tc.query), nil)
			require.NoError(t, err)
			merged, err := referenceMergeAll(plan, partials(t, plan, docs[:1], docs[1:]))
			require.NoError(t, err)
			require.Len(t, merged, 1)
			b, err := plan.Encode(merged[0])
			require.NoError(t, err)
			if tc.query[:8] == "SELECT *" {
				assert.JSONEq(t, tc.want, string(b))
			} else {
				assert.Equal(t, tc.want, string(b))
			}
		})
	}

	// The raw payload of an ORDER BY row, as the router reads it.
	plan, err := PlanFanOut(mustParse(t, "SELECT c.title, c.id FROM c ORDER BY c.id DESC"), nil)
	require.NoError(t, err)
	rows, err := mustProg(t, plan.Query).Execute(context.Background(), docsOf(t, docs...))
	require.NoError(t, err)
	var row map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rows[0], &row))
	assert.Equal(t, `{"title":"U","id":"2"}`, string(row["p"]))
}
