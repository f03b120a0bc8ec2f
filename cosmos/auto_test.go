package cosmos_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/store"
)

// TestQueryAuto exercises the default mode on cosmium with filters it
// answers correctly (string equality in double quotes): a filter and
// projection goes to the service whole, paged by the store's wrapped
// tokens; an ORDER BY query has its WHERE pushed down and is evaluated here.
func TestQueryAuto(t *testing.T) {
	ctx := cosmostest.Context(t)
	st := cosmiumWith(t, cosmos.QueryAuto)
	l := "dbs/auto/colls/c" + time.Now().Format("150405.000000")
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := 0; i < 20; i++ {
		doc := fmt.Sprintf(`{"id":"d%02d","pk":"p%d","s":%q,"n":%d}`, i, i%3, []string{"red", "blue"}[i%2], i)
		_, err := st.Create(ctx, l, []byte(doc), nil)
		require.NoError(t, err)
	}
	read := func(q string, opts store.QueryOptions) []any {
		var out []any
		for i := 0; ; i++ {
			require.Less(t, i, 100)
			page, err := st.Query(ctx, l, store.Query{Text: q}, &opts)
			require.NoError(t, err, q)
			for _, it := range page.Items {
				var v any
				require.NoError(t, json.Unmarshal(it, &v))
				out = append(out, v)
			}
			if page.Continuation == "" {
				return out
			}
			opts.Continuation = page.Continuation
		}
	}
	got := read(`SELECT VALUE c.id FROM c WHERE c.s = "red"`, store.QueryOptions{PageSize: 3})
	sort.Slice(got, func(i, j int) bool { return got[i].(string) < got[j].(string) })
	want := []any{}
	for i := 0; i < 20; i += 2 {
		want = append(want, fmt.Sprintf("d%02d", i))
	}
	assert.Equal(t, want, got, "pushed to the service, paged by 3")
	got = read(`SELECT TOP 3 VALUE c.n FROM c WHERE c.s = "red" ORDER BY c.n DESC`, store.QueryOptions{})
	assert.Equal(t, []any{18.0, 16.0, 14.0}, got, "WHERE pushed down, ORDER BY and TOP evaluated here")
	got = read(`SELECT TOP 2 VALUE r.n FROM root r WHERE r.s = "red" ORDER BY r.n`, store.QueryOptions{})
	assert.Equal(t, []any{0.0, 2.0}, got, "the pushed-down WHERE keeps the query's alias")
	got = read(`SELECT VALUE COUNT(1) FROM c WHERE c.s = "blue"`, store.QueryOptions{PartitionKey: "p1"})
	assert.Equal(t, []any{4.0}, got, "scoped to a partition key: d01, d07, d13, d19")
}
