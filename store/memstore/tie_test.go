package memstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/store"
)

// TestTieOrder: the check every store that pages a query itself runs; the
// embedded store evaluates over its snapshot, in feed order, so a page
// evaluated again ties rows as the first evaluation did.
func TestTieOrder(t *testing.T) {
	s := New(nil)
	t.Cleanup(func() { _ = s.Close() })
	l := "dbs/d/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	localquerytest.TieDocs(t, s, l, 40)
	localquerytest.TieOrder(t, s, l, func() { s.cursors = cursor.NewSizedCache(s.opts.Cursors, s.opts.CursorBytes, (*resultSet).bytes) })
}
