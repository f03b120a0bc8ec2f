package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// token is the store's continuation token. Service mode: ST is the
// service's token of the page being read (empty for the first) and O the
// items of that page already returned. Local mode: C is the cursor of the
// computed results and O the results already returned.
type token struct {
	V    int    `json:"v"`
	Hash string `json:"h"`
	ST   string `json:"s,omitempty"`
	O    int    `json:"o,omitempty"`
	C    uint64 `json:"c,omitempty"`
}

func queryHash(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

func paramsJSON(ps []store.Param) string {
	sorted := append([]store.Param(nil), ps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	b, _ := json.Marshal(sorted)
	return string(b)
}

func (s *Store) decodeToken(op, l, raw, hash string) (token, error) {
	t := token{V: 1, Hash: hash}
	if raw == "" {
		return t, nil
	}
	t = token{} // what the token holds, nothing filled in
	if err := cursor.Decode(raw, &t); err != nil || t.V != 1 || t.O < 0 {
		return t, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "malformed continuation token"}
	}
	if t.Hash != hash {
		return t, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token belongs to another query, parameters, partition key or collection"}
	}
	return t, nil
}

// Query runs a query; see the package documentation for where it runs.
func (s *Store) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	const op = "query"
	cc, c, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	o := store.OptionsOf(opts)
	parsed, err := query.Parse(q.Text)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	params := make(map[string]any, len(q.Parameters))
	for _, p := range q.Parameters {
		params[p.Name] = p.Value
	}
	if _, err := query.Compile(parsed, params); err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	keyText := ""
	if o.PartitionKey != nil {
		if keyText, err = partitionkey.IdentityText(o.PartitionKey); err != nil {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: store.BadPartitionKey(err)}
		}
	}
	// Only filters and projections go to the service whole. Queries with
	// ORDER BY, aggregates, DISTINCT, GROUP BY, TOP or JOIN run here even
	// within one partition: the router's rewritten forms (sort keys and
	// partial aggregates inside object constructors) are docshard's own SQL,
	// and their support by the service is not something this package could
	// test without an account. The WHERE (and partition key) still go down.
	local := s.opts.QueryMode == QueryLocal || !query.Analyze(parsed).GatewayCrossPartition()
	mode := "service"
	if local {
		mode = "local"
	}
	hash := queryHash(c.String(), q.Text, paramsJSON(q.Parameters), keyText, mode)
	tok, err := s.decodeToken(op, l, o.Continuation, hash)
	if err != nil {
		return nil, err
	}
	size := o.PageSize
	if size == 0 {
		size = s.opts.PageSize
	}
	if local {
		return s.localQuery(ctx, cc, l, parsed, q, o.PartitionKey, size, tok)
	}
	ctx, pk, err := scopeKey(ctx, op, l, o.PartitionKey)
	if err != nil {
		return nil, err
	}
	return s.servicePage(ctx, cc, op, l, q.Text, toParams(q.Parameters), pk, size, tok, false)
}

// scopeKey returns the partition key a query is scoped to (none: across
// the container) and the context to send it with (see sdkKey).
func scopeKey(ctx context.Context, op, l string, key any) (context.Context, azcosmos.PartitionKey, error) {
	if key == nil {
		return ctx, azcosmos.NewPartitionKey(), nil
	}
	ctx, pk, err := sdkKey(ctx, key)
	if err != nil {
		return ctx, pk, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	return ctx, pk, nil
}

func toParams(ps []store.Param) []azcosmos.QueryParameter {
	out := make([]azcosmos.QueryParameter, len(ps))
	for i, p := range ps {
		out[i] = azcosmos.QueryParameter{Name: p.Name, Value: p.Value}
	}
	return out
}

// servicePage reads one page of a query the service runs, wrapping the
// service's token with an offset so page sizes hold even where the service
// ignores them.
//
// With byRID (documents only) each service page is put in _rid order before
// it is sliced, so re-reading the same page slices it the same way even
// where the service returns a page's documents in varying order.
func (s *Store) servicePage(ctx context.Context, cc *azcosmos.ContainerClient, op, l, text string, params []azcosmos.QueryParameter, pk azcosmos.PartitionKey, size int, tok token, byRID bool) (*store.Page, error) {
	for hops := 0; ; hops++ {
		if hops > 10000 {
			return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Message: "the service returned empty pages without end"}
		}
		qo := &azcosmos.QueryOptions{QueryParameters: params}
		if size > 0 {
			qo.PageSizeHint = int32(size)
		} else {
			qo.PageSizeHint = -1
		}
		if tok.ST != "" {
			st := tok.ST
			qo.ContinuationToken = &st
		}
		var items [][]byte
		var cont *string
		var charge float64
		if cached, ok := s.pages.Get(tok.C, tok.Hash+"\x00"+tok.ST); ok {
			// A page the service returned whole, past the page size (an
			// emulator that ignores it): read on from the copy kept for it,
			// since a re-read need not list the items in the same order.
			items, cont = cached.items, cached.next
		} else {
			resp, err := cc.NewQueryItemsPager(text, pk, qo).NextPage(ctx)
			if err != nil {
				return nil, s.containerErr(ctx, op, l, cc, err)
			}
			items, cont, charge = resp.Items, resp.ContinuationToken, float64(resp.RequestCharge)
			if byRID && size > 0 {
				rid := func(b []byte) string { return gjson.GetBytes(b, "_rid").String() }
				sort.SliceStable(items, func(i, j int) bool { return rid(items[i]) < rid(items[j]) })
			}
			tok.C = 0
			if size > 0 && len(items) > tok.O+size {
				tok.C = s.pages.Put(tok.Hash+"\x00"+tok.ST, servicePageCopy{items: items, next: cont})
			}
		}
		if tok.O > len(items) {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token points past its page"}
		}
		end := len(items)
		if size > 0 {
			end = min(tok.O+size, len(items))
		}
		page := &store.Page{RequestCharge: charge}
		for _, it := range items[tok.O:end] {
			page.Items = append(page.Items, json.RawMessage(it))
		}
		next := token{V: 1, Hash: tok.Hash}
		switch {
		case end < len(items):
			next.ST, next.O, next.C = tok.ST, end, tok.C
		case cont != nil && *cont != "":
			next.ST = *cont
		default:
			return page, nil
		}
		if len(page.Items) == 0 {
			tok = next // an empty page with a continuation: read on
			continue
		}
		page.Continuation = cursor.Encode(next)
		return page, nil
	}
}

// localQuery evaluates a query here over the container's documents.
func (s *Store) localQuery(ctx context.Context, cc *azcosmos.ContainerClient, l string, parsed *query.Query, q store.Query, key any, size int, tok token) (*store.Page, error) {
	const op = "query"
	results, ok := s.cursors.Get(tok.C, tok.Hash)
	if !ok {
		var err error
		if results, err = s.evaluate(ctx, cc, l, parsed, q, key); err != nil {
			return nil, err
		}
	}
	if tok.O > len(results) {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token points past the results"}
	}
	end := len(results)
	if size > 0 {
		end = min(tok.O+size, len(results))
	}
	page := &store.Page{Items: results[tok.O:end:end]}
	if end < len(results) {
		next := token{V: 1, Hash: tok.Hash, C: tok.C, O: end}
		if !ok || next.C == 0 {
			next.C = s.cursors.Put(tok.Hash, results)
		}
		page.Continuation = cursor.Encode(next)
	}
	return page, nil
}

// evaluate reads the documents the query may need (the partition key and,
// in QueryAuto, a simple WHERE pushed down) and runs the query on them.
func (s *Store) evaluate(ctx context.Context, cc *azcosmos.ContainerClient, l string, parsed *query.Query, q store.Query, key any) ([]json.RawMessage, error) {
	const op = "query"
	params := make(map[string]any, len(q.Parameters))
	for _, p := range q.Parameters {
		params[p.Name] = p.Value
	}
	prog, err := query.Compile(parsed, params)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	scan, pushed := query.PushdownScan(parsed)
	var scanParams []azcosmos.QueryParameter
	if pushed && s.opts.QueryMode == QueryAuto {
		scanParams = toParams(q.Parameters)
	} else {
		scan = "SELECT * FROM c"
	}
	ctx, pk, err := scopeKey(ctx, op, l, key)
	if err != nil {
		return nil, err
	}
	var keyText string
	var path partitionkey.Path
	if key != nil {
		keyText, _ = partitionkey.IdentityText(key)
		_, c, _ := s.container(op, l)
		cs, err := s.spec(ctx, op, cc, c, l)
		if err != nil {
			return nil, err
		}
		path = cs.path
	}
	var docs []query.Doc
	tok := token{V: 1}
	for {
		page, err := s.servicePage(ctx, cc, op, l, scan, scanParams, pk, -1, tok, false)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if key != nil {
				// Scope here too: an emulator may ignore the partition key.
				v, err := bodyKey(path, it)
				if t, _ := partitionkey.IdentityText(v); err != nil || t != keyText {
					continue
				}
			}
			d, err := query.NewDoc(it)
			if err != nil {
				return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Message: "the service returned a malformed document", Err: err}
			}
			docs = append(docs, d)
		}
		if page.Continuation == "" {
			break
		}
		if err := cursor.Decode(page.Continuation, &tok); err != nil {
			return nil, err
		}
	}
	// A fixed document order makes ties (ORDER BY, TOP without ORDER BY)
	// come out the same on every run, which resumed pages rely on; the
	// service does not promise an order across partitions (and cosmium
	// changes it from one read to the next).
	sort.SliceStable(docs, func(i, j int) bool {
		ri, rj := gjson.GetBytes(docs[i].Raw(), "_rid").String(), gjson.GetBytes(docs[j].Raw(), "_rid").String()
		if ri != rj {
			return ri < rj
		}
		return gjson.GetBytes(docs[i].Raw(), "id").String() < gjson.GetBytes(docs[j].Raw(), "id").String()
	})
	out, err := prog.Execute(ctx, slices.Values(docs))
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	return out, nil
}

// ReadFeed walks every document of the container, page by page, with the
// service's own order.
func (s *Store) ReadFeed(ctx context.Context, l string, opts *store.FeedOptions) (*store.Page, error) {
	const op = "read feed"
	cc, c, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	o := store.OptionsOf(opts)
	hash := queryHash("feed", c.String())
	tok, err := s.decodeToken(op, l, o.Continuation, hash)
	if err != nil {
		return nil, err
	}
	size := o.PageSize
	if size <= 0 {
		size = s.opts.PageSize
	}
	return s.servicePage(ctx, cc, op, l, "SELECT * FROM c", nil, azcosmos.NewPartitionKey(), size, tok, true)
}

// containerErr maps a query error; when the container does not exist it is
// store.ErrCollectionNotFound, whatever status the service chose.
func (s *Store) containerErr(ctx context.Context, op, l string, cc *azcosmos.ContainerClient, err error) error {
	if _, cerr := cc.Read(ctx, nil); notFound(cerr) {
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l, Status: 404}
	}
	return mapErr(op, l, "", err)
}

// servicePageCopy is a service page kept for reading on from it.
type servicePageCopy struct {
	items [][]byte
	next  *string
}
