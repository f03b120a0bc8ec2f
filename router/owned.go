package router

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// ownedView is the store a query's fan-out reads through when the
// resolver's collections may hold documents they do not own
// (resolver.Owner: copies on their way in or out during a transition). A
// shared collection's part of the query is evaluated here, over the
// documents the collection owns: they are read with the query's WHERE
// pushed down when it can be, each row's key is placed, and rows the
// collection does not own are dropped before the query runs on the rest.
// So the merge sees every document once, from its owner, as it would
// without the copies. Other collections answer through the store as usual.
//
// Cost, for a shared collection only: its documents that pass the WHERE
// travel to the router and are held until the query's results are
// computed; the results are kept in the client's cursor cache for the
// collection's continuation tokens.
type ownedView struct {
	store.Store
	r       resolver.Resolver
	owner   resolver.Owner
	shared  map[string]bool // by link, slashes trimmed
	cursors *localquery.Cursors
}

// ownedCursors is how many shared collections' results a client keeps for
// their continuation tokens.
const ownedCursors = 64

// ownedCursorBytes bounds what those results hold in all (their JSON); a
// larger one is not kept, and each of its pages re-runs the query.
const ownedCursorBytes = 64 << 20

// viewFor returns the store a fan-out over e reads through: the client's,
// or an ownedView when e's resolver names shared collections.
func (c *Client) viewFor(e *dbEntry) store.Store {
	o, ok := e.r.(resolver.Owner)
	if !ok {
		return c.st
	}
	links := o.SharedCollections()
	if len(links) == 0 {
		return c.st
	}
	v := &ownedView{Store: c.st, r: e.r, owner: o, shared: make(map[string]bool, len(links)), cursors: c.ownedCursors()}
	for _, l := range links {
		v.shared[strings.Trim(l, "/")] = true
	}
	return v
}

// sharedOf returns the collections whose part of a fan-out over e is read
// through an ownedView (see viewFor), slashes trimmed, sorted; nil for
// none.
func sharedOf(e *dbEntry) []string {
	o, ok := e.r.(resolver.Owner)
	if !ok {
		return nil
	}
	var out []string
	for _, l := range o.SharedCollections() {
		out = append(out, strings.Trim(l, "/"))
	}
	slices.Sort(out)
	return out
}

// ownedCursors returns the client's cache of shared collections' results,
// made on first use.
func (c *Client) ownedCursors() *localquery.Cursors {
	c.ownedOnce.Do(func() { c.owned = localquery.NewCursors(ownedCursors, ownedCursorBytes) })
	return c.owned
}

// Query answers one collection's part of a fan-out: a shared collection's
// through the one local evaluator (localquery), over the documents the
// collection owns.
func (v *ownedView) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	if !v.shared[strings.Trim(l, "/")] {
		return v.Store.Query(ctx, l, q, opts)
	}
	o := opt.Of(opts)
	call, err := localquery.Begin("query", l, q, l, keyText(o.PartitionKey), o.Continuation)
	if err != nil {
		return nil, err
	}
	return call.Page(ctx, nil, v.cursors, o.PageSize, localquery.Source{
		Read: func(ctx context.Context, scan store.Query, cont string) (*store.Page, error) {
			return v.Store.Query(ctx, l, scan, &store.QueryOptions{PartitionKey: o.PartitionKey, PageSize: -1, Continuation: cont})
		},
		Keep: func(raw json.RawMessage) (bool, error) {
			owned, err := v.owns(l, raw)
			if err != nil {
				return false, &store.Error{Kind: store.ErrUnavailable, Op: "query", Link: l, Message: "a stored document's partition key cannot be placed", Err: err}
			}
			return owned, nil
		},
	})
}

// owns reports whether collection l owns the stored document raw.
func (v *ownedView) owns(l string, raw []byte) (bool, error) {
	key, err := v.r.PartitionKey(raw)
	if err != nil {
		return false, err
	}
	owner, err := v.owner.Owner(key)
	if err != nil {
		return false, err
	}
	return link.Same(owner, l), nil
}
