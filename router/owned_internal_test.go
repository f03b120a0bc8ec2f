package router

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/localquery/localquerytest"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// soleOwner is a resolver under which one shared collection owns every
// key.
type soleOwner struct {
	*hashring.Resolver
	l string
}

func (o soleOwner) SharedCollections() []string   { return []string{o.l} }
func (o soleOwner) Owner(any) (string, error)     { return o.l, nil }
func (o soleOwner) Holders(any) ([]string, error) { return []string{o.l}, nil }

// TestOwnedViewTieOrder: a shared collection's pages, each evaluated again
// (its kept results dropped) over a store that returns the documents in a
// new order on every read, concatenate to the whole answer: the owned view
// evaluates in a fixed document order (it did not, before the one local
// evaluator).
func TestOwnedViewTieOrder(t *testing.T) {
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	l := "dbs/d/colls/c"
	require.NoError(t, mem.CreateCollection(t.Context(), l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	localquerytest.TieDocs(t, mem, l, 40)
	ring, err := hashring.New([]string{l}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
	require.NoError(t, err)
	o := soleOwner{ring, l}
	fresh := func() *localquery.Cursors { return localquery.NewCursors(4, 1<<30) }
	v := &ownedView{Store: localquerytest.Shuffled(mem, 3), r: o, owner: o, shared: map[string]bool{l: true}, cursors: fresh()}
	localquerytest.TieOrder(t, v, l, func() { v.cursors = fresh() })
}

// TestOwnedViewResumesByPosition: a shared collection's pages resume
// after their last row once the results kept for them are gone, whatever
// was deleted since (localquerytest.ResumeByPosition).
func TestOwnedViewResumesByPosition(t *testing.T) {
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	l := "dbs/d/colls/c"
	require.NoError(t, mem.CreateCollection(t.Context(), l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	ring, err := hashring.New([]string{l}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
	require.NoError(t, err)
	o := soleOwner{ring, l}
	fresh := func() *localquery.Cursors { return localquery.NewCursors(4, 1<<30) }
	v := &ownedView{Store: localquerytest.Shuffled(mem, 5), r: o, owner: o, shared: map[string]bool{l: true}, cursors: fresh()}
	localquerytest.ResumeByPosition(t, func() store.Store { return v }, l, func() { v.cursors = fresh() })
}
