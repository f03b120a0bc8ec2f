package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStringResultLimits(t *testing.T) {
	big := strings.Repeat("x", MaxStringBytes/2+1) // two of them exceed the limit
	doc := fmt.Sprintf(`{"id":"1","big":%q,"a":"a","k":"%s"}`, big, strings.Repeat("a", 1000))
	tests := []struct {
		name  string
		query string
		fn    string // the function named by the error; "" for a result
		want  string // JSON of the results
	}{
		{"CONCAT over the limit", `SELECT VALUE CONCAT(c.big, c.big) FROM c`, "CONCAT", ""},
		{"CONCAT of three", `SELECT VALUE CONCAT(c.a, c.big, c.big) FROM c`, "CONCAT", ""},
		{"|| over the limit", `SELECT VALUE c.big || c.big FROM c`, "||", ""},
		{"REPLACE growing past the limit", `SELECT VALUE REPLACE(c.big, "x", "yy") FROM c`, "REPLACE", ""},
		// The reproducer of issue #17: a nested REPLACE of REPLICATE
		// reached 24 GB; now it fails before building 100 MB.
		{"REPLACE of REPLICATE", `SELECT VALUE REPLACE(REPLICATE("a", 10000), "a", REPLICATE("b", 10000)) FROM c`, "REPLACE", ""},
		{"REPLACE nested", `SELECT VALUE REPLACE(REPLACE(c.k, "a", c.k), "a", c.k) FROM c`, "REPLACE", ""},
		{"REPLACE shrinking", `SELECT VALUE LENGTH(REPLACE(c.big, "x", "")) FROM c`, "", `[0]`},
		{"CONCAT under the limit", `SELECT VALUE LENGTH(CONCAT(c.big, c.a)) FROM c`, "", fmt.Sprintf("[%d]", len(big)+1)},
		{"REPLACE of the empty string is undefined", `SELECT VALUE REPLACE("Hello", "", "World") FROM c`, "", `[]`},
		{"REPLICATE at 10,000 characters", `SELECT VALUE LENGTH(REPLICATE("ab", 5000)) FROM c`, "", `[10000]`},
		{"REPLICATE past 10,000 characters is undefined", `SELECT VALUE REPLICATE("ab", 5001) FROM c`, "", `[]`},
		{"REPLICATE counts characters, not bytes", `SELECT VALUE LENGTH(REPLICATE("é", 10000)) FROM c`, "", `[10000]`},
		{"REPLICATE of a huge count", `SELECT VALUE REPLICATE("a", 1e300) FROM c`, "", `[]`},
		{"REPLICATE of the empty string", `SELECT VALUE REPLICATE("", 1e300) FROM c`, "", `[""]`},
		{"REPLICATE truncates the count", `SELECT VALUE REPLICATE("Hello", 1.5) FROM c`, "", `["Hello"]`},
		{"REPLICATE of a negative count", `SELECT VALUE REPLICATE("Hello", -1) FROM c`, "", `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := Prepare(tc.query, nil)
			require.NoError(t, err)
			got, err := prog.Execute(context.Background(), docsOf(t, doc))
			if tc.fn == "" {
				require.NoError(t, err)
				assert.JSONEq(t, tc.want, jsonText(rawValues(t, got)))
				return
			}
			require.ErrorIs(t, err, ErrStringTooLong)
			var e *StringTooLongError
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tc.fn, e.Function)
			assert.Greater(t, e.Length, MaxStringBytes)
			assert.Equal(t, MaxStringBytes, e.Limit)
			assert.Contains(t, err.Error(), tc.fn)
			assert.Empty(t, got)

			// Values reports it the same way.
			_, err = prog.Values(context.Background(), docsOf(t, doc))
			require.ErrorIs(t, err, ErrStringTooLong)
		})
	}
}

// A string function evaluated by the client after merging aggregates
// reports the limit through Merger.Err.
func TestStringLimitInMerger(t *testing.T) {
	half := strings.Repeat("y", MaxStringBytes/2+1)
	q := mustParse(t, `SELECT VALUE CONCAT(MAX(c.s), MAX(c.s)) FROM c`)
	plan, err := PlanFanOut(q, nil)
	require.NoError(t, err)
	part, err := Prepare(plan.Query, nil)
	require.NoError(t, err)
	rows, err := part.Values(context.Background(), docsOf(t, fmt.Sprintf(`{"id":"1","s":%q}`, half)))
	require.NoError(t, err)
	m := plan.NewMerger()
	for _, r := range rows {
		require.NoError(t, m.Add(r))
	}
	res, err := m.Results()
	assert.Empty(t, res)
	require.ErrorIs(t, err, ErrStringTooLong)

	_, err = referenceMergeAll(plan, [][]any{rows})
	require.ErrorIs(t, err, ErrStringTooLong)
}

func rawValues(t *testing.T, raws []json.RawMessage) []any {
	t.Helper()
	out := []any{}
	for _, r := range raws {
		v, err := decodeJSON(r)
		require.NoError(t, err)
		out = append(out, v)
	}
	return out
}
