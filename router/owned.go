package router

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/query"
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
	cursors *cursor.Cache[[]json.RawMessage]
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

// ownedCursors returns the client's cache of shared collections' results,
// made on first use.
func (c *Client) ownedCursors() *cursor.Cache[[]json.RawMessage] {
	c.ownedOnce.Do(func() { c.owned = cursor.NewSizedCache(ownedCursors, ownedCursorBytes, cursor.RowsSize) })
	return c.owned
}

// ownedToken is the continuation token of a shared collection's results.
type ownedToken struct {
	V    int    `json:"v"`
	Hash string `json:"h"`
	C    uint64 `json:"c,omitempty"`
	O    int    `json:"o,omitempty"`
}

// Query answers one collection's part of a fan-out.
func (v *ownedView) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	if !v.shared[strings.Trim(l, "/")] {
		return v.Store.Query(ctx, l, q, opts)
	}
	const op = "query"
	o := store.OptionsOf(opts)
	hash, err := ownedHash(l, q, o.PartitionKey)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	tok := ownedToken{V: 1, Hash: hash}
	if o.Continuation != "" {
		if err := cursor.Decode(o.Continuation, &tok); err != nil || tok.V != 1 || tok.Hash != hash || tok.O < 0 {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token belongs to another query or is malformed"}
		}
	}
	results, cached := v.cursors.Get(tok.C, hash)
	if !cached {
		if results, err = v.evaluate(ctx, l, q, o.PartitionKey); err != nil {
			return nil, err
		}
	}
	if tok.O > len(results) {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token points past the results"}
	}
	end := len(results)
	if o.PageSize > 0 {
		end = min(tok.O+o.PageSize, len(results))
	}
	page := &store.Page{Items: results[tok.O:end:end]}
	if end < len(results) {
		next := ownedToken{V: 1, Hash: hash, C: tok.C, O: end}
		if !cached || next.C == 0 {
			next.C = v.cursors.Put(hash, results)
		}
		page.Continuation = cursor.Encode(next)
	}
	return page, nil
}

// ownedHash binds a token to the collection, the query, its parameters and
// the partition key: the router's own token binding (binding), which
// length-prefixes each part and normalises the parameters.
func ownedHash(l string, q store.Query, key any) (string, error) {
	b, err := binding(l, q, keyText(key))
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// evaluate reads the documents of l the query may need, keeps those l
// owns, and runs the query on them.
func (v *ownedView) evaluate(ctx context.Context, l string, q store.Query, key any) ([]json.RawMessage, error) {
	const op = "query"
	parsed, err := query.Parse(q.Text)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	params := make(map[string]any, len(q.Parameters))
	for _, p := range q.Parameters {
		params[p.Name] = p.Value
	}
	prog, err := query.Compile(parsed, params)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	scan := store.Query{Text: "SELECT * FROM c"}
	if text, pushed := query.PushdownScan(parsed); pushed {
		scan = store.Query{Text: text, Parameters: q.Parameters}
	}
	var docs []query.Doc
	opts := &store.QueryOptions{PartitionKey: key, PageSize: -1}
	for {
		page, err := v.Store.Query(ctx, l, scan, opts)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.Items {
			owned, err := v.owns(l, raw)
			if err != nil {
				return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Message: "a stored document's partition key cannot be placed", Err: err}
			}
			if !owned {
				continue
			}
			d, err := query.NewDoc(raw)
			if err != nil {
				return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Message: "the store returned a malformed document", Err: err}
			}
			docs = append(docs, d)
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	out, err := prog.Execute(ctx, slices.Values(docs))
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	return out, nil
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
