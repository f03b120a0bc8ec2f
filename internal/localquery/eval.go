package localquery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/queryhook"
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

// Results are a query's results evaluated here, kept in a Cursors cache
// for the later pages of its token: the rows and, for a query whose rows
// have positions (Shape), where each comes from.
type Results struct {
	rows []json.RawMessage
	at   []string    // Feed, Sorted: each row's document (DocKey)
	ord  []int32     // Feed: each row's place among its document's rows
	docs []query.Doc // Sorted: each row's document, for its sort values
	// sortKey returns a Sorted row's sort values.
	sortKey *query.Program
	// limit is how many results the query's TOP or LIMIT allows from the
	// first row on (-1: no bound).
	limit int
	// state names the documents a Whole query ran over (a hash of their
	// text), for a re-run that must find them unchanged.
	state string
}

// Cursors keeps Results for their continuation tokens.
type Cursors = cursor.Cache[*Results]

// NewCursors returns a cache of at most n results, holding at most
// maxBytes of them in all (their rows' JSON and positions).
func NewCursors(n int, maxBytes int64) *Cursors {
	return cursor.NewSizedCache(n, maxBytes, (*Results).bytes)
}

func (r *Results) bytes() int64 {
	n := cursor.RowsSize(r.rows) + 4*int64(len(r.ord)) + 16*int64(len(r.docs))
	for _, a := range r.at {
		n += 16 + int64(len(a))
	}
	return n
}

// place returns where a page that ended after the first end rows stands.
func (r *Results) place(ctx context.Context, end int) (Place, error) {
	at := Place{Left: -1, State: r.state}
	if r.limit >= 0 {
		at.Left = max(r.limit-end, 0)
	}
	if r.at == nil || end == 0 {
		return at, nil
	}
	i := end - 1
	at.P = &Pos{Doc: r.at[i]}
	if r.docs == nil {
		at.P.Rows = int(r.ord[i]) + 1
		return at, nil
	}
	keys, err := r.sortKey.Execute(ctx, slices.Values(r.docs[i:i+1]))
	if err == nil && len(keys) != 1 {
		err = errors.New("localquery: internal error: a document's sort values are not one row")
	}
	if err != nil {
		return at, err
	}
	at.P.Keys = keys[0]
	return at, nil
}

// Page answers the call with the page of at most size results (all for
// size <= 0): from the results cursors keeps for its token, or else by
// evaluating the query. An evaluation compiles parsed (nil: the call's
// text, parsed here; a tree of the caller's own, not one other goroutines
// compile, since queryhook.ReadsClock walks it) once, reads the documents through src with the
// query's WHERE pushed down where it can be, puts them in a fixed order
// (FixedOrder) and runs the query over them; when more pages follow, the
// results are kept in cursors for their token.
//
// A token whose results are gone resumes by position (see Shape): a
// Feed query evaluates only the documents from its last row's on, a
// Sorted one returns the rows strictly after its last row's sort values
// and document, each taking what its TOP or LIMIT still allows; a Whole
// query re-runs by offset only over the same documents (its token names
// them by a hash) and is refused otherwise (Restart).
//
// Cost of an evaluation: every document that passes the pushed-down WHERE
// travels from src and is held, decoded, until the results are computed;
// the results stay in cursors (bounded by it) for the later pages. A Feed
// query with a JOIN (or another source than the container) runs a
// document at a time, an engine run per document.
func (c *Call) Page(ctx context.Context, parsed *query.Query, cursors *Cursors, size int, src Source) (*store.Page, error) {
	results, cached := cursors.Get(c.Token.C, c.Token.Hash)
	o := c.Token.O
	if !cached {
		var err error
		if results, o, err = c.evaluate(ctx, parsed, src); err != nil {
			return nil, err
		}
	}
	if o > len(results.rows) {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: c.op, Link: c.link, Message: "the continuation token points past the results"}
	}
	end := len(results.rows)
	if size > 0 {
		end = min(o+size, len(results.rows))
	}
	page := &store.Page{Items: results.rows[o:end:end]}
	if end < len(results.rows) {
		id := c.Token.C
		if !cached || id == 0 {
			id = cursors.Put(c.Token.Hash, results)
		}
		at, err := results.place(ctx, end)
		if err != nil {
			return nil, RunErr(c.op, c.link, err)
		}
		page.Continuation = c.Token.Next(id, end, at)
	}
	return page, nil
}

// evaluate reads the documents the query may need from src and runs the
// query on them; start is the offset the call's page starts at in them.
func (c *Call) evaluate(ctx context.Context, parsed *query.Query, src Source) (*Results, int, error) {
	var err error
	if parsed == nil {
		if parsed, err = query.Parse(c.q.Text); err != nil {
			return nil, 0, &store.Error{Kind: store.ErrBadRequest, Op: c.op, Link: c.link, Err: err}
		}
	}
	prog, err := query.Compile(parsed, c.Params)
	if err != nil {
		return nil, 0, &store.Error{Kind: store.ErrBadRequest, Op: c.op, Link: c.link, Err: err}
	}
	sh := Split(c.q.Text, parsed, c.Params, queryhook.ReadsClock(parsed))
	tok := c.Token
	resumed := tok.O > 0 || tok.P != nil
	if resumed && tok.P == nil && tok.W == "" || tok.P != nil && sh.Kind == Whole {
		return nil, 0, Restart(c.op, c.link)
	}
	docs, err := c.read(ctx, parsed, src)
	if err != nil {
		return nil, 0, err
	}
	var r *Results
	switch sh.Kind {
	case Feed:
		r, err = c.feed(ctx, sh, parsed, docs)
	case Sorted:
		r, err = c.sorted(ctx, sh, parsed, docs)
	default:
		r = &Results{limit: -1, state: stateOf(docs)}
		if r.rows, err = prog.Execute(ctx, slices.Values(docs)); err == nil && resumed && r.state != tok.W {
			return nil, 0, Restart(c.op, c.link)
		}
		if err == nil {
			return r, tok.O, nil
		}
	}
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) {
			return nil, 0, err
		}
		return nil, 0, RunErr(c.op, c.link, err)
	}
	return r, 0, nil
}

// read returns the documents the query may need from src, decoded, in
// FixedOrder.
func (c *Call) read(ctx context.Context, parsed *query.Query, src Source) ([]query.Doc, error) {
	scan := store.Query{Text: "SELECT * FROM c"}
	if text, pushed := pushdownScan(parsed); pushed && !src.ScanAll {
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
	return docs, nil
}

// feed evaluates a Feed query over docs, from the call's position on (a
// first page: from the start, past the query's OFFSET).
func (c *Call) feed(ctx context.Context, sh Shape, parsed *query.Query, docs []query.Doc) (*Results, error) {
	offset, limit, err := Bounds(parsed, c.Params)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(docs))
	for i, d := range docs {
		keys[i] = DocKey(d)
	}
	skipRows := 0
	if p := c.Token.P; p != nil {
		i, _ := slices.BinarySearch(keys, p.Doc)
		if i < len(keys) && keys[i] == p.Doc {
			skipRows = p.Rows
		}
		docs, keys = docs[i:], keys[i:]
		offset, limit = 0, c.Token.Left()
	}
	r := &Results{limit: limit}
	if sh.Filter != nil {
		err = c.split(ctx, sh, docs, keys, r)
	} else {
		err = c.each(ctx, sh, docs, keys, r)
	}
	if err != nil {
		return nil, err
	}
	k := 0
	for k < len(r.rows) && c.Token.P != nil && r.at[k] == c.Token.P.Doc && int(r.ord[k]) < skipRows {
		k++
	}
	k = min(k+offset, len(r.rows))
	r.rows, r.at, r.ord = r.rows[k:], r.at[k:], r.ord[k:]
	if limit >= 0 && limit < len(r.rows) {
		r.rows, r.at, r.ord = r.rows[:limit], r.at[:limit], r.ord[:limit]
	}
	return r, nil
}

// split runs a Feed query whose documents give a row each at most as its
// filter (the documents, matched to their places by their maps) and its
// projection of those.
func (c *Call) split(ctx context.Context, sh Shape, docs []query.Doc, keys []string, r *Results) error {
	filter, err := query.Compile(sh.Filter, c.Params)
	if err != nil {
		return err
	}
	project, err := query.Compile(sh.Project, c.Params)
	if err != nil {
		return err
	}
	vals, err := filter.Values(ctx, slices.Values(docs))
	if err != nil {
		return err
	}
	matched := make([]query.Doc, 0, len(vals))
	j := 0
	for _, v := range vals {
		p := MapPointer(v)
		for j < len(docs) && MapPointer(docs[j].Value()) != p {
			j++
		}
		if j == len(docs) || p == nil {
			return errors.New("localquery: internal error: a filtered document is not one of those read")
		}
		matched = append(matched, docs[j])
		r.at = append(r.at, keys[j])
		j++
	}
	if r.rows, err = project.Execute(ctx, slices.Values(matched)); err == nil && len(r.rows) != len(matched) {
		err = errors.New("localquery: internal error: a projection lost rows")
	}
	r.ord = make([]int32, len(r.rows))
	return err
}

// each runs a Feed query a document at a time: each row is known by its
// document and its place among that document's rows.
func (c *Call) each(ctx context.Context, sh Shape, docs []query.Doc, keys []string, r *Results) error {
	base, err := query.Compile(sh.Base, c.Params)
	if err != nil {
		return err
	}
	for i := range docs {
		rows, err := base.Execute(ctx, slices.Values(docs[i:i+1]))
		if err != nil {
			return err
		}
		for k := range rows {
			r.at = append(r.at, keys[i])
			r.ord = append(r.ord, int32(k))
		}
		r.rows = append(r.rows, rows...)
	}
	return nil
}

// sorted evaluates a Sorted query over docs: its documents in result
// order (from the call's position on, for a resumed page), projected.
func (c *Call) sorted(ctx context.Context, sh Shape, parsed *query.Query, docs []query.Doc) (*Results, error) {
	keysQ := sh.Keys
	_, limit, err := Bounds(parsed, c.Params)
	if err != nil {
		return nil, err
	}
	p := c.Token.P
	if p != nil {
		keysQ, limit = sh.KeysAll, c.Token.Left()
	}
	keys, err := query.Compile(keysQ, c.Params)
	if err != nil {
		return nil, err
	}
	page, err := query.Compile(sh.Page, c.Params)
	if err != nil {
		return nil, err
	}
	r := &Results{limit: limit}
	if r.sortKey, err = query.Compile(sh.SortKey, c.Params); err != nil {
		return nil, err
	}
	vals, err := keys.Values(ctx, slices.Values(docs))
	if err != nil {
		return nil, err
	}
	index := make(map[unsafe.Pointer]int, len(docs))
	for i, d := range docs {
		index[MapPointer(d.Value())] = i
	}
	for _, v := range vals {
		i, ok := index[MapPointer(v)]
		if !ok {
			return nil, errors.New("localquery: internal error: a sorted document is not one of those read")
		}
		r.docs = append(r.docs, docs[i])
		r.at = append(r.at, DocKey(docs[i]))
	}
	if p != nil {
		after, err := SortedAfter(p, sh.Desc, strings.Compare)
		if err != nil {
			return nil, BadToken(c.op, c.link, string(p.Keys), err.Error())
		}
		var searchErr error
		i := sort.Search(len(r.docs), func(i int) bool {
			v, err := r.sortKey.Values(ctx, slices.Values(r.docs[i:i+1]))
			if err == nil && len(v) != 1 {
				err = errors.New("localquery: internal error: a document's sort values are not one value")
			}
			var k []any
			if err == nil {
				k, err = UnwrapKeys(v[0])
			}
			if err != nil {
				searchErr = err
				return true
			}
			return after(k, r.at[i])
		})
		if searchErr != nil {
			return nil, searchErr
		}
		r.docs, r.at = r.docs[i:], r.at[i:]
		if limit >= 0 && limit < len(r.docs) {
			r.docs, r.at = r.docs[:limit], r.at[:limit]
		}
	}
	if r.rows, err = page.Execute(ctx, slices.Values(r.docs)); err == nil && len(r.rows) != len(r.docs) {
		err = errors.New("localquery: internal error: a projection lost rows")
	}
	return r, err
}

// DocKey is a document's place in FixedOrder, as a position names it:
// its "_rid", its "id" and a hash of its text, each ended by a 0 byte.
func DocKey(d query.Doc) string {
	rid, _ := d.Value()["_rid"].(string)
	id, _ := d.Value()["id"].(string)
	return rid + "\x00" + id + "\x00" + strconv.FormatUint(textHash(d.Raw()), 16)
}

func textHash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// stateOf names docs by a hash of their text, in order.
func stateOf(docs []query.Doc) string {
	h := fnv.New64a()
	for _, d := range docs {
		h.Write(d.Raw())
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// MapPointer identifies a decoded document by its map (nil for anything
// else): a query's SELECT VALUE of its FROM alias returns the documents'
// own maps.
func MapPointer(v any) unsafe.Pointer {
	m, ok := v.(map[string]any)
	if !ok || m == nil {
		return nil
	}
	return reflect.ValueOf(m).UnsafePointer()
}

// FixedOrder sorts decoded documents by DocKey ("_rid", then "id", then
// a hash of their text), then their text: an order that depends on the
// documents alone, not on the order a store returned them in. Evaluating
// over it makes ties (ORDER BY, TOP without ORDER BY) come out the same on
// every run, and gives every document a place a position can name (a
// page resumed after its results were dropped relies on both); a store
// does not promise an order across partitions (and cosmium changes it
// from one read to the next). It costs one sort of n keys.
func FixedOrder(docs []query.Doc) {
	type keyed struct {
		key string
		d   query.Doc
	}
	ks := make([]keyed, len(docs))
	for i, d := range docs {
		ks[i] = keyed{DocKey(d), d}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return bytes.Compare(a.d.Raw(), b.d.Raw())
	})
	for i := range ks {
		docs[i] = ks[i].d
	}
}

// pushdownScan returns the query that fetches the documents q reads, for a
// client that evaluates q itself over them: "SELECT VALUE alias FROM
// <q's FROM> WHERE <q's WHERE>" when the WHERE alone selects them
// (query.Features.PushableWhere), else "SELECT * FROM c" (every document).
// pushed says which; the pushed form takes q's parameters.
func pushdownScan(q *query.Query) (text string, pushed bool) {
	if query.Analyze(q).PushableWhere() {
		if _, ok := q.From.Source.(*query.Ident); ok {
			// The query's own FROM (alias included: its WHERE names rows
			// by it); the value is the whole document whatever the alias.
			return query.FormatQuery(&query.Query{Value: true, Items: []query.SelectItem{{X: &query.Ident{Name: q.From.Alias}}}, From: q.From, Where: q.Where}), true
		}
	}
	return "SELECT * FROM c", false
}
