package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// token is the store's continuation token (localquery.Token). Service
// mode: ST is the service's token of the page being read (empty for the
// first), O the items of that page already returned and, for the read
// feed, R the _rid of the last one. Local mode: C is the cursor of the
// computed results, O the results already returned and P where the last
// one stands in the container (see localquery.Call.Page).
type token = localquery.Token

// feedHash binds a read-feed or change-feed token to its container (and
// key): FNV-64a of the parts. Queries are bound by localquery.Hash; feed
// tokens keep this hash because they outlive the process (a reshard's
// checkpoint holds them). A read-feed token of version 1, whose offset
// into a re-read page could shift, is refused (localquery.Resume).
func feedHash(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// Query runs a query; see the package documentation for where it runs.
// It is parsed once, and compiled once: here when the service runs it
// (to refuse what cannot run before a round trip), by the local evaluator
// when it runs here (on a page whose results are not kept).
func (s *Store) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	const op = "query"
	cc, c, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	o := opt.Of(opts)
	parsed, err := query.Parse(q.Text)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	keyText := ""
	if o.PartitionKey != nil {
		if keyText, err = keyIdentity(op, l, o.PartitionKey); err != nil {
			return nil, err
		}
	}
	// Only filters and projections go to the service whole. Queries with
	// ORDER BY, aggregates, DISTINCT, GROUP BY, TOP or JOIN run here even
	// within one partition: the router's rewritten forms (sort keys and
	// partial aggregates inside object constructors) are docshard's own SQL,
	// and their support by the service is not something this package could
	// test without an account. The WHERE (and partition key) still go down.
	// docshard serve answers any query whole with its query extension
	// (s.wholeQueries: x-docshard-whole-query, sent by servicePage), with
	// the same engine this package would evaluate it with: it runs there.
	// One aggregate goes to the service anyway: a plain count within one
	// partition key (keyedCount), which moves one number instead of the
	// documents it counts. A query sent to the service within one partition
	// key carries the key in its WHERE too (keyScoped), for emulators that
	// ignore the key's header; one that cannot carry it runs here.
	local := s.opts.QueryMode == QueryLocal || !s.wholeQueries && !query.Analyze(parsed).GatewayCrossPartition()
	count := local && s.opts.QueryMode != QueryLocal && o.PartitionKey != nil && o.Continuation == "" && keyedCount(parsed)
	sent := q
	if (!local || count) && o.PartitionKey != nil && !s.wholeQueries {
		scoped, ok, err := s.keyScoped(ctx, cc, c, l, parsed, q, o.PartitionKey, count)
		if err != nil {
			return nil, err
		}
		switch {
		case ok && count:
			return s.serviceCount(ctx, cc, op, l, scoped, o.PartitionKey)
		case ok:
			sent = scoped
		default:
			local = true
		}
	}
	mode := "service"
	if local {
		mode = "local"
	}
	call, err := localquery.Begin(op, l, q, c.String()+"\x00"+mode, keyText, o.Continuation)
	if err != nil {
		return nil, err
	}
	size := o.PageSize
	if size == 0 {
		size = s.opts.PageSize
	}
	if local {
		return s.localQuery(ctx, cc, l, parsed, &call, o.PartitionKey, size)
	}
	if _, err := query.Compile(parsed, call.Params); err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	ctx, pk, err := scopeKey(ctx, op, l, o.PartitionKey)
	if err != nil {
		return nil, err
	}
	return s.servicePage(ctx, cc, op, l, sent.Text, toParams(sent.Parameters), pk, size, call.Token, false)
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
// ignores them (a service page longer than the page size is kept in
// s.pages to read on from).
//
// A service page is sliced only where the server returns more items than
// asked for: Cosmos DB returns at most x-ms-max-item-count (the .NET SDK's
// reference of QueryRequestOptions.MaxItemCount: "This is a maximum"), so
// there a token is the service's own; some emulators ignore it. With byRID (documents only) each service page is
// put in _rid order before it is sliced, and a token names the _rid of the
// last document taken and a digest of the service's token after the page:
// a page whose copy is gone re-reads the service page and, if it still ends
// where it did, resumes after that _rid, which documents deleted since
// cannot shift. This needs no order of _rids across pages, which Cosmos DB
// does not document (its references call a _rid a unique, hierarchical,
// system-generated id); a re-read page that ends elsewhere (the server's
// own page size, and documents deleted or created before its end) may hold
// documents of the next page that sort before that _rid, so the token is
// refused (errPageMoved) rather than skip them
// (TestReadFeedResumeNeedsNoRIDOrder). Without byRID, an offset into a
// re-read page could shift, and such a token is refused
// (localquery.Restart).
//
// On docshard serve with its query extension (s.wholeQueries), every page
// is asked for with x-docshard-whole-query: answered whole, in pages that
// end where the results do (without it, serve pages a cross-partition
// query as the gateway does, whose full last page leads to an empty one).
func (s *Store) servicePage(ctx context.Context, cc *azcosmos.ContainerClient, op, l, text string, params []azcosmos.QueryParameter, pk azcosmos.PartitionKey, size int, tok token, byRID bool) (*store.Page, error) {
	if s.wholeQueries {
		ctx = policy.WithHTTPHeader(ctx, http.Header{headerWholeQuery: {"true"}})
	}
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
		cached, ok := s.pages.Get(tok.C, tok.Hash+"\x00"+tok.ST)
		if ok {
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
				sort.SliceStable(items, func(i, j int) bool { return rid(items[i]) < rid(items[j]) })
			}
			tok.C = 0
			if size > 0 && len(items) > tok.O+size {
				tok.C = s.pages.Put(tok.Hash+"\x00"+tok.ST, servicePageCopy{items: items, next: cont})
			}
		}
		start := tok.O
		switch {
		case ok || tok.O == 0:
		case byRID && tok.R != "":
			// Re-read (its copy is gone): resume after the last _rid
			// taken, which documents deleted since cannot shift, if the
			// page ends where it did. (A token without N, written before
			// it was kept, resumes unchecked.)
			if tok.N != "" && tok.N != nextDigest(cont) {
				return nil, errPageMoved(op, l)
			}
			start = sort.Search(len(items), func(i int) bool { return rid(items[i]) > tok.R })
		default:
			// An offset into a re-read page, which may have changed.
			return nil, localquery.Restart(op, l)
		}
		if start > len(items) {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "the continuation token points past its page"}
		}
		end := len(items)
		if size > 0 {
			end = min(start+size, len(items))
		}
		page := &store.Page{RequestCharge: charge}
		for _, it := range items[start:end] {
			page.Items = append(page.Items, json.RawMessage(it))
		}
		next := token{V: localquery.TokenVersion, Hash: tok.Hash}
		switch {
		case end < len(items):
			next.ST, next.O, next.C = tok.ST, end, tok.C
			if byRID && end > 0 {
				next.R, next.N = rid(items[end-1]), nextDigest(cont)
			}
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

// keyedCount reports whether q is a plain count, "SELECT VALUE COUNT(x)
// FROM c [WHERE ...]" without subqueries, joins or other clauses: the
// one aggregate this package sends to the service (within one partition
// key, where the service evaluates it without a query plan), so that a
// count of many documents moves one number, not the documents.
func keyedCount(q *query.Query) bool {
	if !q.Value || len(q.Items) != 1 || q.Distinct || q.Top != nil || len(q.Joins) > 0 || len(q.GroupBy) > 0 ||
		len(q.OrderBy) > 0 || q.Offset != nil || q.Limit != nil {
		return false
	}
	call, ok := q.Items[0].X.(*query.Call)
	f := query.Analyze(q)
	return ok && strings.EqualFold(call.Name, "COUNT") && len(call.Args) == 1 && f.Subqueries == 0 && !f.NoFrom && !f.FromIn && !f.FromPath
}

// keyParam begins the names keyScoped binds a partition key's values to
// (followed by each value's position).
const keyParam = "@docshard_partition_key"

// keyScoped returns q with its partition key also in its WHERE: each value
// of the key (of a hierarchical key each value given, a prefix allowed)
// equal to the document's value at its path. The service scopes a query
// by the key it is sent with; this scopes it again in its text, for emulators that ignore that header
// (Cosmium does, for queries and aggregates alike), at no cost to a
// service that honours it. ok is false where that cannot be written: the
// query's rows are not its documents under one name (no FROM, FROM x IN,
// a path below the container, a subquery as the source), its text names
// a parameter like keyParam (bound or not), the key does not fit the container's
// paths, a value of the key is null or None (emulators disagree on how
// null and a missing value compare: Cosmium takes one for the other, in =
// and in IS_DEFINED alike), or, with whole (a count, which the service
// answers without a query plan only within one partition key), the key is
// a prefix of a hierarchical key. The caller then evaluates the query
// here, scoping by key as it reads. So whether it is written depends on
// the query, the key and the container's key paths only, never on a
// transient failure: a failure to read the paths is returned, and a
// continuation token (bound to where the query runs) stays good.
func (s *Store) keyScoped(ctx context.Context, cc *azcosmos.ContainerClient, c link.Collection, l string, parsed *query.Query, q store.Query, key any, whole bool) (store.Query, bool, error) {
	f := query.Analyze(parsed)
	if f.NoFrom || f.FromIn || f.FromPath || f.Subqueries&query.ClauseFrom != 0 || parsed.From.Alias == "" ||
		strings.Contains(strings.ToLower(q.Text), keyParam) {
		return q, false, nil
	}
	cs, err := s.spec(ctx, "query", cc, c, l)
	if err != nil {
		return q, false, err
	}
	parts, err := store.KeyParts(key, len(cs.paths), true)
	if err != nil || whole && len(parts) < len(cs.paths) {
		return q, false, nil
	}
	scoped := *parsed
	params := slices.Clip(q.Parameters)
	for i, part := range parts {
		var at query.Expr = &query.Ident{Name: parsed.From.Alias}
		for _, seg := range cs.paths[i].Segments() {
			at = &query.Index{X: at, Index: &query.Literal{Value: seg}}
		}
		v, ok := sqlValue(part)
		if !ok {
			return q, false, nil
		}
		name := keyParam + strconv.Itoa(i)
		var cond query.Expr = &query.Binary{Op: "=", L: at, R: &query.ParamRef{Name: name}}
		params = append(params, store.Param{Name: name, Value: v})
		if scoped.Where == nil {
			scoped.Where = cond
		} else {
			scoped.Where = &query.Binary{Op: "AND", L: scoped.Where, R: cond}
		}
	}
	return store.Query{Text: query.FormatQuery(&scoped), Parameters: params}, true, nil
}

// sqlValue is a partition-key value as a query parameter's value that
// compares equal to the same value in a document: a string, a bool, a
// finite number as float64; ok is false for anything else (null and None
// among them, see keyScoped).
func sqlValue(v any) (any, bool) {
	switch x := v.(type) {
	case string, bool:
		return x, true
	case nil:
		return nil, false
	}
	if v == partitionkey.Null || v == partitionkey.None {
		return nil, false
	}
	f, err := finite(v)
	return f, err == nil
}

// serviceCount answers a keyedCount query within one partition key from
// the service, in one page holding the count. The service may answer an
// aggregate in several pages, each with a partial count of the documents
// it read for that page (the SDKs add them up); this adds up every value
// of every page. Cost: one request per page the service answers, charged
// by the service for what it read, but no document moved.
func (s *Store) serviceCount(ctx context.Context, cc *azcosmos.ContainerClient, op, l string, q store.Query, key any) (*store.Page, error) {
	ctx, pk, err := scopeKey(ctx, op, l, key)
	if err != nil {
		return nil, err
	}
	if s.wholeQueries {
		ctx = policy.WithHTTPHeader(ctx, http.Header{headerWholeQuery: {"true"}})
	}
	pager := cc.NewQueryItemsPager(q.Text, pk, &azcosmos.QueryOptions{QueryParameters: toParams(q.Parameters)})
	var n int64
	var charge float64
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return nil, s.containerErr(ctx, op, l, cc, err)
		}
		charge += float64(resp.RequestCharge)
		for _, it := range resp.Items {
			var v int64
			if err := json.Unmarshal(it, &v); err != nil {
				return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, Message: fmt.Sprintf("the service answered a count with %.40q, not a whole number", it)}
			}
			n += v
		}
	}
	return &store.Page{Items: []json.RawMessage{json.RawMessage(strconv.FormatInt(n, 10))}, RequestCharge: charge}, nil
}

// localQuery evaluates a query here over the container's documents (the
// partition key's and, in QueryAuto, those a simple WHERE pushed down
// selects), with the one local evaluator.
func (s *Store) localQuery(ctx context.Context, cc *azcosmos.ContainerClient, l string, parsed *query.Query, call *localquery.Call, key any, size int) (*store.Page, error) {
	const op = "query"
	ctx, pk, err := scopeKey(ctx, op, l, key)
	if err != nil {
		return nil, err
	}
	src := localquery.Source{
		ScanAll: s.opts.QueryMode != QueryAuto,
		Read: func(ctx context.Context, scan store.Query, cont string) (*store.Page, error) {
			tok := token{V: localquery.TokenVersion}
			if cont != "" {
				if err := cursor.Decode(cont, &tok); err != nil {
					return nil, err
				}
			}
			return s.servicePage(ctx, cc, op, l, scan.Text, toParams(scan.Parameters), pk, -1, tok, false)
		},
	}
	if key != nil {
		// Scope here too: an emulator may ignore the partition key.
		var under func([]byte) bool
		src.Keep = func(raw json.RawMessage) (bool, error) {
			if under == nil {
				_, c, _ := s.container(op, l)
				cs, err := s.spec(ctx, op, cc, c, l)
				if err == nil {
					under, err = cs.keyMatcher(op, l, key)
				}
				if err != nil {
					return false, err
				}
			}
			return under(raw), nil
		}
	}
	return call.Page(ctx, parsed, s.cursors, size, src)
}

// ReadFeed walks every document of the container, page by page, with the
// service's own order.
func (s *Store) ReadFeed(ctx context.Context, l string, opts *store.FeedOptions) (*store.Page, error) {
	const op = "read feed"
	cc, c, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	o := opt.Of(opts)
	tok, err := localquery.Resume(op, l, o.Continuation, feedHash("feed", c.String()))
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

// nextDigest is a token's N: a digest of the service's token for the page
// after the one being read (nil or empty at the end).
func nextDigest(cont *string) string {
	if cont == nil || *cont == "" {
		return feedHash("next")
	}
	return feedHash("next", *cont)
}

// errPageMoved refuses a read-feed token whose service page, read again,
// no longer ends where it did.
func errPageMoved(op, l string) error {
	return store.Errorf(store.ErrBadRequest, op, l, "", "continuation token: the server returned more documents than asked for, and the page this token was issued in no longer ends where it did (documents deleted or created in it since), so the walk cannot resume there without skipping some: read again from its first page")
}

// rid is a stored document's "_rid".
func rid(b []byte) string { return gjson.GetBytes(b, "_rid").String() }

// servicePageCopy is a service page kept for reading on from it.
type servicePageCopy struct {
	items [][]byte
	next  *string
}
