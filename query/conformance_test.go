package query

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpus is one file of testdata/conformance: documents, and queries with
// the results Cosmos DB gives (from its documentation) or hand-checked ones.
type corpus struct {
	Source string            `json:"source"`
	Docs   []json.RawMessage `json:"docs"`
	Cases  []struct {
		Query  string            `json:"query"`
		Docs   []json.RawMessage `json:"docs"` // when set, instead of the file's documents
		Params map[string]any    `json:"params"`
		Want   json.RawMessage   `json:"want"`
		Error  string            `json:"error"`
		Note   string            `json:"note"`
	} `json:"cases"`
}

func TestConformance(t *testing.T) {
	files, err := filepath.Glob("testdata/conformance/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var c corpus
		require.NoError(t, json.Unmarshal(data, &c), file)
		var docs []Doc
		for _, raw := range c.Docs {
			d, err := NewDoc(raw)
			require.NoError(t, err)
			docs = append(docs, d)
		}
		for _, tc := range c.Cases {
			docs := docs
			if tc.Docs != nil {
				docs = nil
				for _, raw := range tc.Docs {
					d, err := NewDoc(raw)
					require.NoError(t, err)
					docs = append(docs, d)
				}
			}
			t.Run(filepath.Base(file)+"/"+tc.Query, func(t *testing.T) {
				prog, err := Prepare(tc.Query, tc.Params)
				if tc.Error != "" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.Error)
					return
				}
				require.NoError(t, err)
				got, err := prog.Execute(context.Background(), seqOf(docs))
				require.NoError(t, err)
				gotJSON, err := json.Marshal(got)
				require.NoError(t, err)
				if got == nil {
					gotJSON = []byte("[]")
				}
				assert.JSONEq(t, string(tc.Want), string(gotJSON), tc.Note)

				// The same query fanned out over every split of the documents
				// into two collections gives the same answer.
				q, err := Parse(tc.Query)
				require.NoError(t, err)
				plan, err := PlanFanOut(q, tc.Params)
				require.NoError(t, err)
				part, err := Prepare(plan.Query, tc.Params)
				require.NoError(t, err)
				for cut := 0; cut <= len(docs); cut++ {
					a, err := part.Values(context.Background(), seqOf(docs[:cut]))
					require.NoError(t, err)
					b, err := part.Values(context.Background(), seqOf(docs[cut:]))
					require.NoError(t, err)
					merged, err := referenceMergeAll(plan, [][]any{a, b})
					require.NoError(t, err)
					var want any
					require.NoError(t, json.Unmarshal(tc.Want, &want))
					assert.True(t, EqualValues(want, merged, 1e-12), "fanned out at %d: %s\nwant %s\ngot  %v", cut, plan.Query, tc.Want, merged)
				}
			})
		}
	}
}
