package cosmos_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/store"
)

// TestTieOrder: the check every store that pages a query itself runs, on
// the local evaluation, whole (QueryLocal) and with the WHERE pushed down
// (QueryAuto); cosmium returns documents in an order that changes from one
// read to the next.
func TestTieOrder(t *testing.T) {
	for _, mode := range []cosmos.QueryMode{cosmos.QueryLocal, cosmos.QueryAuto} {
		s := cosmiumWith(t, mode)
		l := "dbs/ties/colls/c" + time.Now().Format("150405.000000")
		require.NoError(t, s.CreateCollection(t.Context(), l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
		localquerytest.TieDocs(t, s, l, 40)
		localquerytest.TieOrder(t, s, l, func() { cosmos.ForgetCursors(s) })
	}
}
