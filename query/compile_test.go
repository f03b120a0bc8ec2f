package query

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A grouped SELECT that reads the row outside GROUP BY and the aggregates
// is refused naming the whole expression the user wrote (issue #19: it
// named "c", not "c.userId").
func TestUngroupedNamesTheExpression(t *testing.T) {
	for _, tc := range []struct{ query, names string }{
		{"SELECT c.id, c.userId, SUM(c.x) FROM c GROUP BY c.id", "c.userId must appear in GROUP BY"},
		{"SELECT c.id, c.a.b FROM c GROUP BY c.id", "c.a.b must appear in GROUP BY"},
		{"SELECT c.id, c['user id'] FROM c GROUP BY c.id", `c["user id"] must appear in GROUP BY`},
		{"SELECT c.id, c.arr[0].x FROM c GROUP BY c.id", "c.arr[0].x must appear in GROUP BY"},
		{"SELECT UPPER(c.name), COUNT(1) FROM c GROUP BY c.id", "c.name must appear in GROUP BY"},
		{"SELECT c, COUNT(1) FROM c GROUP BY c.id", "c must appear in GROUP BY"},
		{"SELECT VALUE c.n + 1 FROM c GROUP BY c.m", "c.n must appear in GROUP BY"},
	} {
		_, err := Prepare(tc.query, nil)
		require.ErrorIs(t, err, ErrCompile, tc.query)
		assert.Contains(t, err.Error(), tc.names, tc.query)
	}
	// A path below a GROUP BY expression reads the group's key.
	for _, q := range []string{
		"SELECT c.a.b, COUNT(1) FROM c GROUP BY c.a",
		"SELECT c.a['b'], c.a FROM c GROUP BY c.a",
	} {
		_, err := Prepare(q, nil)
		assert.NoError(t, err, q)
	}
}
