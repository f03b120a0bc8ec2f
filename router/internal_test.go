package router

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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

// TestFeedTokenRoundTrip: a change-feed token decodes to what was encoded,
// small and compressed (many collections), and is refused when it is
// another database's, a query's, corrupt, or its links are out of order.
func TestFeedTokenRoundTrip(t *testing.T) {
	bind := changeBinding("dbs/app")
	for _, n := range []int{0, 1, 3, 60} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tok := &feedToken{ver: int64(n * 7)}
			for i := range n {
				tok.colls = append(tok.colls, feedPos{link: fmt.Sprintf("dbs/app/colls/c%03d", i),
					tok: strings.Repeat("x", i), caught: int64(i), joined: int64(n - i)})
			}
			s := tok.encode(bind)
			got, err := decodeFeedToken(s, bind)
			require.NoError(t, err)
			assert.Equal(t, tok.ver, got.ver)
			if n > 0 {
				assert.Equal(t, tok.colls, got.colls)
			} else {
				assert.Empty(t, got.colls)
			}
			_, err = decodeFeedToken(s, changeBinding("dbs/other"))
			assert.ErrorIs(t, err, ErrBadContinuation, "another database's")
			bad := []byte(s)
			bad[len(bad)/2] ^= 1
			_, err = decodeFeedToken(string(bad), bind)
			assert.ErrorIs(t, err, ErrBadContinuation, "corrupt")
		})
	}
	unsorted := &feedToken{colls: []feedPos{{link: "dbs/app/colls/b"}, {link: "dbs/app/colls/a"}}}
	_, err := decodeFeedToken(unsorted.encode(bind), bind)
	assert.ErrorIs(t, err, ErrBadContinuation, "links out of order")
	q := (&tokenState{srcs: []srcState{{state: srcDone}}}).encode(bind, 7)
	_, err = decodeFeedToken(q, bind)
	assert.True(t, errors.Is(err, ErrBadContinuation), "a query's token")
}

// TestFeedCatchUpOrder: after a change of placement, the collections not
// read to their present since are read left first, then a transition's
// current placement alone, both, next alone, then by the epoch they
// joined at; collections caught up at the epoch are not among them.
func TestFeedCatchUpOrder(t *testing.T) {
	v := &feedView{epoch: 5, rank: map[string]int{
		"cur": rankCurrent, "both1": rankBoth, "both0": rankBoth, "next": rankNext, "fresh": rankBoth,
	}}
	tok := &feedToken{colls: []feedPos{
		{link: "both0", caught: 4, joined: 3},
		{link: "both1", caught: 4, joined: 1},
		{link: "cur", caught: 4, joined: 1},
		{link: "fresh", caught: 5, joined: 1},
		{link: "gone", caught: 5, joined: 1},
		{link: "next", caught: 0, joined: 4},
	}}
	fr := &feedRead{v: v, tok: tok}
	var order []string
	for _, i := range fr.behind() {
		order = append(order, tok.colls[i].link)
	}
	assert.Equal(t, []string{"gone", "cur", "both1", "both0", "next"}, order)
}
