package cosmos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/store"
)

// TestTieOrder: the check every store that pages a query itself runs, on
// the local evaluation (cosmium returns documents in an order that changes
// from one read to the next).
func TestTieOrder(t *testing.T) {
	srv := cosmostest.Shared(t)
	ctx := cosmostest.Context(t)
	for _, mode := range []QueryMode{QueryLocal, QueryAuto} {
		s, err := New(ctx, &Options{Account: Account{Endpoint: srv.Endpoint, Key: cosmostest.Key}, HTTPClient: srv.HTTPClient(), QueryMode: mode})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		l := "dbs/ties/colls/c" + time.Now().Format("150405.000000")
		require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
		localquerytest.TieDocs(t, s, l, 40)
		localquerytest.TieOrder(t, s, l, func() { s.cursors = cursor.NewSizedCache(s.opts.Cursors, maxCursorBytes, cursor.RowsSize) })
	}
}
