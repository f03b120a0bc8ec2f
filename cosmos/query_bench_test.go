package cosmos_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/store"
)

// BenchmarkServeCrossPartitionQuery: a cross-partition ORDER BY (the first
// page of 100) and a COUNT over 2,000 documents through the backend
// against docshard serve (the test binary's shared server, over HTTP),
// evaluated here (mode=local: the backend reads every matching document
// and runs the query itself, as against Cosmos DB's gateway) and answered
// whole by the server with its query extension (mode=whole, what Open
// picks against serve).
//
//	go test -run '^$' -bench ServeCrossPartitionQuery -count 6 ./cosmos | benchstat -col /mode -
func BenchmarkServeCrossPartitionQuery(b *testing.B) {
	st := emulatorStore(b)
	ctx := context.Background()
	benchRuns++ // -count runs the benchmark again on the same server
	l := fmt.Sprintf("dbs/benchq/colls/items%d", benchRuns)
	require.NoError(b, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	for i := range 2000 {
		_, err := st.Create(ctx, l, fmt.Appendf(nil, `{"id":"i%d","pk":"k%d","n":%d,"pad":"%0200d"}`, i, i%50, (i*7919)%2000, i), nil)
		require.NoError(b, err)
	}
	inner := cosmosStore(b, st)
	for _, q := range []struct{ name, text string }{
		{"order-by", "SELECT c.id, c.n FROM c ORDER BY c.n DESC"},
		{"count", "SELECT VALUE COUNT(1) FROM c WHERE c.n >= 100"},
	} {
		for _, mode := range []string{"local", "whole"} {
			b.Run(fmt.Sprintf("query=%s/mode=%s", q.name, mode), func(b *testing.B) {
				cosmos.SetWholeQueries(inner, mode == "whole")
				b.Cleanup(func() { cosmos.SetWholeQueries(inner, true) })
				for b.Loop() {
					page, err := st.Query(ctx, l, store.Query{Text: q.text}, &store.QueryOptions{PageSize: 100})
					require.NoError(b, err)
					require.NotEmpty(b, page.Items)
				}
			})
		}
	}
}

// benchRuns counts BenchmarkServeCrossPartitionQuery's runs.
var benchRuns int

// cosmosStore is the *cosmos.Store inside what Open returned.
func cosmosStore(tb testing.TB, st store.Store) *cosmos.Store {
	switch s := st.(type) {
	case *cosmos.Store:
		return s
	case *cosmos.FencedStore:
		return s.Store
	}
	tb.Fatalf("%T is not the cosmos backend", st)
	return nil
}
