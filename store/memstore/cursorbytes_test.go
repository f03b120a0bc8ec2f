package memstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// The reproducer of issue 17: abandoned GROUP BY and DISTINCT queries
// whose first page was read kept their whole results in the cursor cache
// (256 of them, ~88 MB each for a million groups). The cache is bounded in
// bytes now; a result past the bound is not kept, and its pages re-run
// the query, reading on correctly.
func TestCursorsBoundedInBytes(t *testing.T) {
	ctx := context.Background()
	const bound = 64 << 10
	s := New(&Options{CursorBytes: bound})
	const l = "dbs/c/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range 3000 {
		_, err := s.Create(ctx, l, []byte(fmt.Sprintf(`{"id":"%d","pk":"p%d","g":"group-%05d"}`, i, i%10, i)), nil)
		require.NoError(t, err)
	}
	queries := []string{
		"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g",
		"SELECT DISTINCT VALUE c.g FROM c",
		"SELECT DISTINCT VALUE c.id FROM c",
		"SELECT VALUE c.g FROM c WHERE c.id != 'x' GROUP BY c.g",
	}
	for i := range 40 { // abandoned after their first page
		q := store.Query{Text: queries[i%len(queries)], Parameters: []store.Param{{Name: "@i", Value: i}}}
		page, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: 10})
		require.NoError(t, err)
		require.NotEmpty(t, page.Continuation)
		assert.LessOrEqual(t, s.cursors.Bytes(), int64(bound))
	}
	// A result too large to keep still pages through, re-run per page.
	var got int
	o := &store.QueryOptions{PageSize: 1000}
	for {
		page, err := s.Query(ctx, l, store.Query{Text: queries[0]}, o)
		require.NoError(t, err)
		got += len(page.Items)
		if page.Continuation == "" {
			break
		}
		o.Continuation = page.Continuation
	}
	assert.Equal(t, 3000, got)
}
