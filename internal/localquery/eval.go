package localquery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// Call is one page request of a query a store pages through itself: its
// parameters, checked, and where its continuation token says to resume.
type Call struct {
	op, link string
	q        store.Query
	// Params are the query's parameters by name (Params).
	Params map[string]any
	// Token is where the page starts; Token.Hash is the query's binding.
	Token Token
}

// Begin is what every page of a query starts with: the parameters checked
// (Params), the query bound to scope (the collection, as the caller
// identifies it) and key (the partition key's text, "" for none) by Hash,
// and the continuation token read against that binding (Resume). Every
// error is a *store.Error of kind store.ErrBadRequest. It costs a hash of
// the query's text and parameters; nothing is parsed.
func Begin(op, l string, q store.Query, scope, key, continuation string) (Call, error) {
	params, err := Params(q.Parameters)
	if err != nil {
		return Call{}, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	b, err := Hash(scope, q, key)
	if err != nil {
		return Call{}, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	tok, err := Resume(op, l, continuation, b.String())
	if err != nil {
		return Call{}, err
	}
	return Call{op: op, link: l, q: q, Params: params, Token: tok}, nil
}

// Source is where a query evaluated here reads the collection's documents.
type Source struct {
	// Read returns one page of scan's results over the collection (scoped
	// to the query's partition key, if any), resuming at continuation (""
	// for the first page). Its errors end the query as they are.
	Read func(ctx context.Context, scan store.Query, continuation string) (*store.Page, error)
	// Keep reports whether a document read takes part in the query (nil:
	// every one does). Its errors end the query as they are.
	Keep func(raw json.RawMessage) (bool, error)
	// ScanAll reads every document (SELECT * FROM c) instead of pushing
	// the query's WHERE down to Read when it can be.
	ScanAll bool
}

// Page answers the call with the page of at most size results (all for
// size <= 0) at its token's offset: from the results cursors keeps for
// its token, or else by evaluating the query. An evaluation compiles
// parsed (nil: the call's text, parsed here) once, reads the documents
// through src with the query's WHERE pushed down where it can be, puts
// them in a fixed order (FixedOrder) and runs the query over them; when
// more pages follow, the results are kept in cursors for their token.
//
// Cost of an evaluation: every document that passes the pushed-down WHERE
// travels from src and is held, decoded, until the results are computed;
// the results stay in cursors (bounded by it) for the later pages.
func (c *Call) Page(ctx context.Context, parsed *query.Query, cursors *cursor.Cache[[]json.RawMessage], size int, src Source) (*store.Page, error) {
	results, cached := cursors.Get(c.Token.C, c.Token.Hash)
	if !cached {
		var err error
		if results, err = c.evaluate(ctx, parsed, src); err != nil {
			return nil, err
		}
	}
	o := c.Token.O
	if o > len(results) {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: c.op, Link: c.link, Message: "the continuation token points past the results"}
	}
	end := len(results)
	if size > 0 {
		end = min(o+size, len(results))
	}
	page := &store.Page{Items: results[o:end:end]}
	if end < len(results) {
		id := c.Token.C
		if !cached || id == 0 {
			id = cursors.Put(c.Token.Hash, results)
		}
		page.Continuation = c.Token.Next(id, end)
	}
	return page, nil
}

// evaluate reads the documents the query may need from src and runs the
// query on them.
func (c *Call) evaluate(ctx context.Context, parsed *query.Query, src Source) ([]json.RawMessage, error) {
	var err error
	if parsed == nil {
		if parsed, err = query.Parse(c.q.Text); err != nil {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: c.op, Link: c.link, Err: err}
		}
	}
	prog, err := query.Compile(parsed, c.Params)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: c.op, Link: c.link, Err: err}
	}
	scan := store.Query{Text: "SELECT * FROM c"}
	if text, pushed := query.PushdownScan(parsed); pushed && !src.ScanAll {
		scan = store.Query{Text: text, Parameters: c.q.Parameters}
	}
	var docs []query.Doc
	for cont := ""; ; {
		page, err := src.Read(ctx, scan, cont)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.Items {
			if src.Keep != nil {
				keep, err := src.Keep(raw)
				if err != nil {
					return nil, err
				}
				if !keep {
					continue
				}
			}
			d, err := query.NewDoc(raw)
			if err != nil {
				return nil, &store.Error{Kind: store.ErrUnavailable, Op: c.op, Link: c.link, Message: "the store returned a malformed document", Err: err}
			}
			docs = append(docs, d)
		}
		if page.Continuation == "" {
			break
		}
		cont = page.Continuation
	}
	FixedOrder(docs)
	out, err := prog.Execute(ctx, slices.Values(docs))
	if err != nil {
		return nil, RunErr(c.op, c.link, err)
	}
	return out, nil
}

// FixedOrder sorts decoded documents by "_rid", then "id", then their
// text: an order that depends on the documents alone, not on the order a
// store returned them in. Evaluating over it makes ties (ORDER BY, TOP
// without ORDER BY) come out the same on every run, which pages resumed
// after their cursor was evicted rely on; a store does not promise an
// order across partitions (and cosmium changes it from one read to the
// next). It costs one sort of n keys.
func FixedOrder(docs []query.Doc) {
	type keyed struct {
		rid, id string
		d       query.Doc
	}
	ks := make([]keyed, len(docs))
	for i, d := range docs {
		rid, _ := d.Value()["_rid"].(string)
		id, _ := d.Value()["id"].(string)
		ks[i] = keyed{rid, id, d}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := cmp.Compare(a.rid, b.rid); c != 0 {
			return c
		}
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		return bytes.Compare(a.d.Raw(), b.d.Raw())
	})
	for i := range ks {
		docs[i] = ks[i].d
	}
}
