package emulator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// pkRangeScope checks x-ms-documentdb-partitionkeyrangeid: the one range
// ("0", or "{collection rid},0") or none. Another id is a range that does
// not exist, 410 Gone with sub-status 1002 as Cosmos DB answers for a range
// that split, so a client refreshes its ranges.
func (c *call) pkRangeScope(ref collRef) *apiError {
	h := strings.TrimSpace(c.r.Header.Get("x-ms-documentdb-partitionkeyrangeid"))
	if h == "" || h == pkRangeID || h == ridString(ref.rid)+","+pkRangeID {
		return nil
	}
	e := errorf(http.StatusGone, "partition-key range %q does not exist: the collection has one range, %q", h, pkRangeID)
	e.substatus = 1002
	return e
}

// query answers a query over a collection's documents, run by the store's
// engine over the whole collection (or, with x-ms-documentdb-partitionkey,
// the documents under that key): one page of x-ms-max-item-count results,
// resumed from x-ms-continuation. The collection is one partition-key
// range, so a query scoped to a key or to the range (sent per range by the
// SDKs that merge, often as a plan's rewritten query) is answered whole,
// as the service answers it within one range. A query sent across
// partitions is answered as Cosmos DB's gateway answers it (gatewayScope),
// unless it carries docshard's HeaderWholeQuery. A query-plan request
// (x-ms-cosmos-is-query-plan-request) is answered with the query's plan
// (queryPlan).
func (s *Server) query(c *call, ref collRef) *apiError {
	q, e := c.queryBody()
	if e != nil {
		return e
	}
	if isTrue(c.r.Header.Get("x-ms-cosmos-is-query-plan-request")) {
		return c.queryPlan(q)
	}
	ps, e := c.pageScope(ref)
	if e == nil {
		e = ps.wholeRange("a query")
	}
	if e != nil {
		return e
	}
	stream := false
	if !ps.keyed && c.r.Header.Get("x-ms-documentdb-partitionkeyrangeid") == "" && !isTrue(c.r.Header.Get(HeaderWholeQuery)) {
		if stream, e = s.gatewayScope(c, ref, q); e != nil {
			return e
		}
	}
	if stream {
		end, e := endOfPages(ref, q, ps.continuation)
		if e != nil {
			return e
		}
		if end {
			c.queryMetrics(0, nil)
			c.writePage(ref, nil, "")
			return nil
		}
	}
	began := time.Now()
	page, err := s.st.Query(c.r.Context(), ref.link, q, ps.queryOptions())
	if err != nil {
		return fromStore(err)
	}
	var items [][]byte
	if selectsDocuments(q.Text) {
		// Whole documents carry the system properties, as point reads do.
		if items, e = s.withSystem(c, ref, page.Items); e != nil {
			return e
		}
	} else {
		items = make([][]byte, len(page.Items))
		for i, it := range page.Items {
			items[i] = it
		}
	}
	next := page.Continuation
	if stream && next == "" && ps.size > 0 && len(items) == ps.size {
		if next, e = fullPageEnd(ref, q); e != nil {
			return e
		}
	}
	c.queryMetrics(time.Since(began), items)
	c.writePage(ref, items, next)
	return nil
}

// noIndexesUsed is the index-utilization answer of every query: the store
// scans documents and keeps no indexes, so none was used and it suggests
// none (the service's four lists, empty), base64 as the service sends it.
var noIndexesUsed = base64.StdEncoding.EncodeToString([]byte(
	`{"UtilizedSingleIndexes":[],"PotentialSingleIndexes":[],"UtilizedCompositeIndexes":[],"PotentialCompositeIndexes":[]}`))

// queryMetrics answers the two metrics requests of a query page, as the
// service does: x-ms-documentdb-populatequerymetrics gets
// x-ms-documentdb-query-metrics, the service's "name=value;..." list, with
// what this server measures (the page's execution time, its result count
// and size; the service's other entries, such as index lookup time and the
// documents retrieved, are left out rather than made up: clients read a
// missing entry as 0), and x-ms-cosmos-populateindexmetrics gets
// x-ms-cosmos-index-utilization (see noIndexesUsed).
func (c *call) queryMetrics(took time.Duration, items [][]byte) {
	h := c.w.Header()
	if isTrue(c.r.Header.Get("x-ms-documentdb-populatequerymetrics")) {
		size := 0
		for _, it := range items {
			size += len(it)
		}
		ms := strconv.FormatFloat(float64(took)/float64(time.Millisecond), 'f', 2, 64)
		h.Set("x-ms-documentdb-query-metrics", "totalExecutionTimeInMs="+ms+
			";outputDocumentCount="+strconv.Itoa(len(items))+";outputDocumentSize="+strconv.Itoa(size))
	}
	if isTrue(c.r.Header.Get("x-ms-cosmos-populateindexmetrics")) {
		h.Set("x-ms-cosmos-index-utilization", noIndexesUsed)
	}
}

// pageScope is what a page of a query or of the feed asks for.
type pageScope struct {
	key          any
	keyed        bool // x-ms-documentdb-partitionkey was given
	size         int  // x-ms-max-item-count; 0 the store's default, -1 all a page holds
	continuation string
	epk          epkRange // x-ms-start-epk and x-ms-end-epk; the whole range without them
}

// pageScope reads a page request's range (and effective-partition-key
// range), partition key, page size and continuation.
func (c *call) pageScope(ref collRef) (pageScope, *apiError) {
	var ps pageScope
	if e := c.pkRangeScope(ref); e != nil {
		return ps, e
	}
	var e *apiError
	if ps.epk, e = c.epkRange(); e != nil {
		return ps, e
	}
	if ps.key, ps.keyed, e = c.partitionKey(); e != nil {
		return ps, e
	}
	if ps.size, e = c.pageSize(); e != nil {
		return ps, e
	}
	ps.continuation = c.r.Header.Get("x-ms-continuation")
	return ps, nil
}

// wholeRange refuses a query or read feed narrowed to part of the one
// range (x-ms-start-epk, x-ms-end-epk), which the SDKs send only for
// ranges a split made: the change feed alone offers it (changeFeed).
func (ps pageScope) wholeRange(what string) *apiError {
	if ps.epk.narrowed() {
		return unsupported(what + " under part of the partition-key range (x-ms-start-epk " + strconv.Quote(ps.epk.min) + ", x-ms-end-epk " + strconv.Quote(ps.epk.max) + "; only the change feed takes one)")
	}
	return nil
}

func (ps pageScope) queryOptions() *store.QueryOptions {
	o := &store.QueryOptions{PageSize: ps.size, Continuation: ps.continuation}
	if ps.keyed {
		o.PartitionKey = ps.key
	}
	return o
}

// writePage answers one page of documents or query results.
func (c *call) writePage(ref collRef, items [][]byte, continuation string) {
	h := c.w.Header()
	h.Set("x-ms-item-count", strconv.Itoa(len(items)))
	if continuation != "" {
		h.Set("x-ms-continuation", continuation)
	}
	c.session(false)
	c.json(http.StatusOK, feedJSON(ridString(ref.rid), "Documents", items), chargeRead+0.1*float64(len(items)))
}

// readFeed answers GET on a collection's documents: every document, page
// by page in the store's feed order (with x-ms-documentdb-partitionkey,
// those under the key), with the system properties point reads carry; with
// A-IM, the change feed (see changeFeed).
func (s *Server) readFeed(c *call, ref collRef) *apiError {
	if c.r.Header.Get("A-IM") != "" {
		return s.changeFeed(c, ref)
	}
	ps, e := c.pageScope(ref)
	if e == nil {
		e = ps.wholeRange("a read feed")
	}
	if e != nil {
		return e
	}
	var page *store.Page
	var err error
	if ps.keyed {
		page, err = s.st.Query(c.r.Context(), ref.link, store.Query{Text: "SELECT * FROM c"}, ps.queryOptions())
	} else {
		size := ps.size
		if size < 0 {
			size = math.MaxInt32 // as many as a page holds
		}
		page, err = s.st.ReadFeed(c.r.Context(), ref.link, &store.FeedOptions{PageSize: size, Continuation: ps.continuation})
	}
	if err != nil {
		return fromStore(err)
	}
	items, e := s.withSystem(c, ref, page.Items)
	if e != nil {
		return e
	}
	c.writePage(ref, items, page.Continuation)
	return nil
}

// selectsDocuments reports whether a query's results are its documents
// whole (SELECT * or SELECT VALUE of the FROM alias, over the container
// itself, without JOIN or GROUP BY), which the service returns with their
// system properties (_rid, _self, _attachments) as a point read does. It
// costs a parse of the text.
func selectsDocuments(text string) bool {
	q, err := query.Parse(text)
	if err != nil || q.From == nil || q.From.In || len(q.Joins) > 0 || len(q.GroupBy) > 0 {
		return false
	}
	if _, root := q.From.Source.(*query.Ident); !root {
		return false
	}
	if q.Star {
		return true
	}
	if !q.Value || len(q.Items) != 1 {
		return false
	}
	x, ok := q.Items[0].X.(*query.Ident)
	return ok && x.Name == q.From.Alias
}

// seqStore is a store that says the read-feed place (store.Document.Seq)
// of documents it returned as JSON: memstore.Store.Seqs.
type seqStore interface {
	Seqs(ctx context.Context, l string, keys, ids []string) ([]uint64, error)
}

// withSystem returns stored documents with the system properties the store
// does not keep (see collRef.withSystem), their _rids as a point read
// answers them: from their places in the read feed where the store says
// them (a seqStore; one look-up per document), else from key and id.
func (s *Server) withSystem(c *call, ref collRef, docs []json.RawMessage) ([][]byte, *apiError) {
	path, e := s.pathOf(c.r.Context(), ref)
	if e != nil {
		return nil, e
	}
	keys, ids := make([]string, len(docs)), make([]string, len(docs))
	for i, it := range docs {
		keys[i], ids[i] = keyTextOf(it, path), gjson.GetBytes(it, "id").String()
	}
	var seqs []uint64
	if ss, ok := s.st.(seqStore); ok && len(docs) > 0 {
		var err error
		if seqs, err = ss.Seqs(c.r.Context(), ref.link, keys, ids); err != nil {
			return nil, fromStore(err)
		}
	}
	items := make([][]byte, len(docs))
	for i, it := range docs {
		var seq uint64
		if seqs != nil {
			seq = seqs[i]
		}
		items[i] = ref.withSystem(it, keys[i], ids[i], seq)
	}
	return items, nil
}
