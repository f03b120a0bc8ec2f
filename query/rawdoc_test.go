package query

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadsDocuments(t *testing.T) {
	for text, want := range map[string]bool{
		`SELECT VALUE COUNT(1) FROM c`:                           false,
		`SELECT COUNT(1) AS n FROM root r WHERE @p = 1`:          false,
		`SELECT VALUE 1 FROM c`:                                  false,
		`SELECT TOP 3 VALUE "x" FROM c ORDER BY 1`:               false,
		`SELECT VALUE COUNT(c) FROM c`:                           true,
		`SELECT VALUE COUNT(1) FROM c WHERE c.x = 1`:             true,
		`SELECT * FROM c`:                                        true,
		`SELECT VALUE COUNT(1) FROM c IN c.tags`:                 true,
		`SELECT VALUE COUNT(1) FROM c.tags`:                      true,
		`SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags`:          true,
		`SELECT VALUE COUNT(1) FROM (SELECT VALUE c.x FROM c) x`: true,
		`SELECT VALUE COUNT(1) FROM c WHERE EXISTS(SELECT 1)`:    true,
		`SELECT VALUE NaN FROM NaN`:                              true,
		`SELECT 1`:                                               false,
	} {
		prog, err := Prepare(text, map[string]any{"@p": 1})
		require.NoError(t, err, text)
		assert.Equal(t, want, prog.ReadsDocuments(), text)
	}
}

// TestRawDoc: RawDocs give the same answers as decoded ones, whether the
// query reads them or not, and a malformed one is an error only for a
// query that reads it.
func TestRawDoc(t *testing.T) {
	var raws [][]byte
	for i := range 50 {
		raws = append(raws, []byte(fmt.Sprintf(`{"id":"%d","n":%d,"tags":["a","b"]}`, i, i%7)))
	}
	run := func(prog *Program, raw bool) ([]json.RawMessage, error) {
		return prog.Execute(context.Background(), func(yield func(Doc) bool) {
			for _, r := range raws {
				d := RawDoc(r)
				if !raw {
					var err error
					if d, err = NewDoc(r); err != nil {
						panic(err)
					}
				}
				if !yield(d) {
					return
				}
			}
		})
	}
	for _, text := range []string{
		`SELECT VALUE COUNT(1) FROM c`, `SELECT VALUE COUNT(1) FROM c WHERE c.n = 3`, `SELECT * FROM c WHERE c.n > 5`,
		`SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n`, `SELECT VALUE t FROM c JOIN t IN c.tags WHERE c.n = 1`,
		`SELECT TOP 2 c.id FROM c ORDER BY c.n DESC, c.id`,
	} {
		prog, err := Prepare(text, nil)
		require.NoError(t, err)
		want, err := run(prog, false)
		require.NoError(t, err, text)
		got, err := run(prog, true)
		require.NoError(t, err, text)
		assert.Equal(t, want, got, text)
	}

	raws = append(raws, []byte(`[1,2]`))
	count, err := Prepare(`SELECT VALUE COUNT(1) FROM c`, nil)
	require.NoError(t, err)
	out, err := run(count, true)
	require.NoError(t, err, "COUNT(1) never looks inside")
	assert.Equal(t, []json.RawMessage{json.RawMessage(`51`)}, out)
	filter, err := Prepare(`SELECT VALUE COUNT(1) FROM c WHERE c.n = 3`, nil)
	require.NoError(t, err)
	_, err = run(filter, true)
	assert.ErrorContains(t, err, "a document is a JSON object, got array")
}

// TestSortSharesStoredDocuments: an ORDER BY that returns whole stored
// documents (SELECT *, SELECT VALUE c) charges its memory budget for the
// sort keys only, since the documents are the store's; one that builds
// its results is charged for them. (A paged ORDER BY over 100,000 1 KB
// documents hit the 128 MB default budget before.)
func TestSortSharesStoredDocuments(t *testing.T) {
	var docs []Doc
	for i := range 200 {
		d, err := NewDoc(fmt.Appendf(nil, `{"id":"%d","n":%d,"pad":"%0900d"}`, i, i%17, i))
		require.NoError(t, err)
		docs = append(docs, d)
	}
	run := func(text string) error {
		prog, err := Prepare(text, nil)
		require.NoError(t, err)
		_, err = prog.WithMemoryBudget(64<<10).Values(context.Background(), func(yield func(Doc) bool) {
			for _, d := range docs {
				if !yield(d) {
					return
				}
			}
		})
		return err
	}
	require.NoError(t, run(`SELECT VALUE c FROM c ORDER BY c.n`), "200 documents of 1 KB, shared")
	require.NoError(t, run(`SELECT * FROM c ORDER BY c.n, c.id`))
	var le *LimitError
	require.ErrorAs(t, run(`SELECT VALUE {"p": c.pad, "n": c.n} FROM c ORDER BY c.n`), &le, "built results are held")
	require.ErrorAs(t, run(`SELECT VALUE c.pad FROM c ORDER BY c.n`), &le)
}
