package router

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestDistinctBudget: a DISTINCT merged across collections whose set of
// results seen outgrows the budget fails with a *query.LimitError rather
// than holding every result.
func TestDistinctBudget(t *testing.T) {
	defer func(b int64) { distinctBudget = b }(distinctBudget)
	distinctBudget = 4000
	ctx := context.Background()
	c := threeCollections(t)
	_, err := c.Query(ctx, "dbs/a", store.Query{Text: "SELECT DISTINCT VALUE c.v FROM c"}, nil)
	require.ErrorIs(t, err, query.ErrLimit)
	var le *query.LimitError
	require.ErrorAs(t, err, &le)
	require.Contains(t, le.Limit, "DISTINCT across collections")

	distinctBudget = query.DefaultMemoryBudget
	rows, err := c.Query(ctx, "dbs/a", store.Query{Text: "SELECT DISTINCT VALUE c.v FROM c"}, nil)
	require.NoError(t, err)
	require.Len(t, rows, 300)
}

// TestNestedBudget: a query over a FROM subquery merged across collections
// holds its results within a budget, and fails with a *query.LimitError
// past it.
func TestNestedBudget(t *testing.T) {
	defer func(b int64) { nestedBudget = b }(nestedBudget)
	nestedBudget = 4000
	ctx := context.Background()
	c := threeCollections(t)
	q := store.Query{Text: "SELECT VALUE x FROM (SELECT DISTINCT VALUE c.v FROM c) AS x"}
	_, err := c.Query(ctx, "dbs/a", q, nil)
	require.ErrorIs(t, err, query.ErrLimit)
	var le *query.LimitError
	require.ErrorAs(t, err, &le)
	require.Contains(t, le.Limit, "FROM subquery merged across collections")

	// A count holds one result, whatever the subquery gives.
	rows, err := c.Query(ctx, "dbs/a", store.Query{Text: "SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.v FROM c)"}, nil)
	require.NoError(t, err)
	require.Equal(t, "300", string(rows[0]))

	nestedBudget = query.DefaultMemoryBudget
	rows, err = c.Query(ctx, "dbs/a", q, nil)
	require.NoError(t, err)
	require.Len(t, rows, 300)
}

// threeCollections returns a client over three collections of an embedded
// store holding 300 documents with distinct values of v.
func threeCollections(t *testing.T) *Client {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { st.Close() })
	r, err := hashring.New([]string{"dbs/a/colls/x", "dbs/a/colls/y", "dbs/a/colls/z"}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/k")})
	require.NoError(t, err)
	c := New(st, nil)
	require.NoError(t, c.Register("dbs/a", r))
	_, err = c.EnsureCollections(ctx, "dbs/a", nil)
	require.NoError(t, err)
	for i := range 300 {
		_, err := c.Create(ctx, "dbs/a", fmt.Sprintf(`{"id":"%d","k":"k%d","v":"value number %d"}`, i, i, i), nil)
		require.NoError(t, err)
	}
	return c
}
