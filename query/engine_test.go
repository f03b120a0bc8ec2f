package query

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingDocs yields n documents {"id": "dI", "i": I} and counts how many
// were read.
func countingDocs(t *testing.T, n int, read *int) iter.Seq[Doc] {
	docs := make([]Doc, n)
	for i := range docs {
		d, err := NewDoc(fmt.Appendf(nil, `{"id":"d%d","i":%d}`, i, i))
		require.NoError(t, err)
		docs[i] = d
	}
	return func(yield func(Doc) bool) {
		for _, d := range docs {
			*read++
			if !yield(d) {
				return
			}
		}
	}
}

func TestEarlyStop(t *testing.T) {
	cases := []struct {
		query string
		want  []any
		read  int
	}{
		{"SELECT TOP 3 VALUE c.i FROM c WHERE c.i % 2 = 1", []any{1.0, 3.0, 5.0}, 6},
		{"SELECT VALUE c.i FROM c WHERE c.i >= 10 OFFSET 2 LIMIT 3", []any{12.0, 13.0, 14.0}, 15},
		{"SELECT TOP 1 VALUE c.i FROM c ORDER BY c.i DESC", []any{999.0}, 1000},
		{"SELECT VALUE COUNT(1) FROM c", []any{1000.0}, 1000},
		{"SELECT TOP 0 VALUE c.i FROM c", nil, 0},
		// A FROM subquery streams: the outer TOP stops the scan.
		{"SELECT TOP 2 VALUE x FROM (SELECT VALUE c.i FROM c WHERE c.i > 4) AS x", []any{5.0, 6.0}, 7},
		{"SELECT VALUE x FROM (SELECT TOP 3 VALUE c.i FROM c) AS x WHERE x > 0", []any{1.0, 2.0}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			read := 0
			got, err := mustProg(t, tc.query).Values(context.Background(), countingDocs(t, 1000, &read))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.read, read, "documents read")
		})
	}
}

func TestCancelMidScan(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	read := 0
	docs := countingDocs(t, 5000, &read)
	stopping := func(yield func(Doc) bool) {
		for d := range docs {
			if read == 1000 {
				cancel()
			}
			if !yield(d) {
				return
			}
		}
	}
	_, err := mustProg(t, "SELECT VALUE c.id FROM c").Execute(ctx, stopping)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, read, 1000+257, "the context is checked every 256 documents")

	// So is the scan of a FROM subquery.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	read = 0
	_, err = mustProg(t, "SELECT VALUE COUNT(1) FROM (SELECT VALUE c.id FROM c) AS x").Execute(ctx, stopping)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, read, 1000+257)
}

// TestIsInteger: Cosmos DB's reference examples of IS_INTEGER, and the
// types it answers false for.
func TestIsInteger(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{"IS_INTEGER(3454.123)", false},
		{"IS_INTEGER(5523432)", true},
		{"IS_INTEGER(-9223372036854775808)", true},
		{"IS_INTEGER(9223372036854775807)", true},
		{"IS_INTEGER(18446744073709551615)", false},
		{"IS_INTEGER(-1)", true},
		{"IS_INTEGER(0)", true},
		{`IS_INTEGER("10")`, false},
		{"IS_INTEGER(null)", false},
		{"IS_INTEGER(true)", false},
		{"IS_INTEGER({}.missing)", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, constValue(t, tc.expr), tc.expr)
	}
}
