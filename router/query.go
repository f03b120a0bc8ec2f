package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// QueryOptions qualify a query. A nil *QueryOptions means the client's
// defaults for parallelism and buffering, no partition key, 100 results a
// page.
type QueryOptions struct {
	// PartitionKey narrows the query to the collections that may hold this
	// key (ResolveForRead), and to documents with this key; nil means every
	// collection. A key that is not a single value, such as a
	// rangeresolver.Range, narrows the collections only. A composite key
	// scopes documents by its first part, the path collections are
	// partitioned by.
	PartitionKey any
	// MaxDegreeOfParallelism is how many store calls the query makes at
	// once: 0 one at a time (serially), -1 automatically (every
	// collection, up to 64), n at most n. As in the Cosmos DB SDKs the zero
	// value means serial, so set it whenever you pass options.
	MaxDegreeOfParallelism int
	// MaxBufferedItemCount bounds the rows held from all collections at
	// once, those being fetched included: each collection is asked for
	// pages of MaxBufferedItemCount/(2×collections) rows (at least one),
	// so every collection can have the page being merged and the next one.
	// 0 means the client's default. What merging needs on top is not
	// bounded by it: the groups of GROUP BY and aggregates, the distinct
	// results of DISTINCT (for DISTINCT with ORDER BY only those sharing
	// the current sort key).
	MaxBufferedItemCount int
	// PageSize is the most results a page returns; 0 means 100, -1 no
	// limit (one page holds everything).
	PageSize int
	// Continuation resumes a query after the page that returned it, in
	// this process or another, provided the query text, parameters,
	// partition key and the database's collections are the same.
	Continuation string
	// PartialResults returns what the healthy collections answered when
	// some fail, instead of failing the query: NextPage then returns the
	// page and a *PartialError (wrapping ErrPartialResults) naming the
	// failed collections; they stay out of the rest of the query, its
	// continuation tokens included. Such a token resumes only with
	// PartialResults set: without it, ErrBadContinuation.
	PartialResults bool
}

// QueryPage is one page of results.
type QueryPage struct {
	// Items are the results as JSON, as one collection holding every
	// document would write them. They may alias the store's pages: do not
	// modify them.
	Items []json.RawMessage
	// Continuation resumes after this page; empty at the end (and in the
	// pages of Client.Query, which needs none).
	Continuation string
	// Failed names the collections that failed so far, with
	// PartialResults.
	Failed map[string]error
}

// execMode is how a pager runs its plan.
type execMode uint8

const (
	// modeStream: rows in any collection order; the token records each
	// collection's position.
	modeStream execMode = iota + 1
	// modeOrdered: a k-way merge by the sort keys through a heap; the
	// token records positions, and for DISTINCT the results of the current
	// sort-key run.
	modeOrdered
	// modeDistinct: DISTINCT without ORDER BY, read collection by
	// collection (a deterministic order); the token records how many
	// results were given, and a resumed pager recomputes and skips them.
	modeDistinct
	// modeAggregate: aggregates and GROUP BY, computed whole; the token
	// records how many results were given.
	modeAggregate
)

// errFailedEarlier stands for a collection a token marks as failed.
var errFailedEarlier = errors.New("router: the collection failed on an earlier page of this query")

// Pager walks the pages of a query across collections, azcosmos style:
//
//	pager := client.NewQueryPager("dbs/app", store.Query{Text: "SELECT * FROM c ORDER BY c.ts DESC"}, nil)
//	for pager.More() {
//		page, err := pager.NextPage(ctx)
//		if err != nil { ... }
//		for _, item := range page.Items { ... }
//	}
//
// Store calls run in goroutines, at most MaxDegreeOfParallelism at once,
// and read ahead within MaxBufferedItemCount while the caller consumes
// pages; a read-ahead started under a context that ends before its result
// is used is simply made again. A Pager is not safe for concurrent use.
type Pager struct {
	c       *Client
	dbLink  string
	q       store.Query
	opts    QueryOptions
	err     error // a set-up error, returned by the first NextPage
	done    bool
	started bool
	tokens  bool // write continuation tokens

	plan    *query.Plan
	mode    execMode
	nkeys   int         // ORDER BY keys per row
	sq      store.Query // what every collection runs
	links   []string
	scope   any // the store partition key scoping the query; nil: none
	bind    [8]byte
	lh      uint32
	par     int
	maxBuf  int
	reqSize int

	srcs     []*source
	ctx      context.Context // of the NextPage running, for the fetches it starts
	results  chan *fetched
	inflight int
	rows     int // rows held in fetched pages
	reserved int // rows reserved for fetches in flight
	peak     int

	offLeft, limLeft int

	// modeOrdered
	heap      []*source
	heapReady bool
	fix       *source // the heap's top, consumed; reposition before the next row
	// DISTINCT
	seen     map[string]struct{}
	seeded   map[uint64]struct{} // modeOrdered: the run's results before the token
	seedList []uint64
	run      []uint64 // modeOrdered: hashes of the current run's results
	lastKeys []any
	haveLast bool
	// modeDistinct and modeAggregate
	skipEmit int // results given before the token
	emitted  int // results given, counting from the query's start
	ci       int // modeDistinct: the collection being read
	final    []any
	computed bool
}

// source is one collection's side of a query.
type source struct {
	idx  int
	link string
	// cur is the page being consumed (nil when none), curPos its next row;
	// next is a page read ahead. cur != nil implies curPos < cur.n.
	cur, next *fetched
	curPos    int
	pos       srcState // the position of the next row when cur is nil
	nextTok   string   // the store continuation the next fetch starts at
	end       bool     // no page after the last one fetched
	skip      int      // rows of the next page fetched to skip (resume)
	size      int      // page size of the next fetch, if above the pager's (resume)
	pending   bool
	reserved  int
	failed    error
}

// fetched is one page from a collection, decoded for the merge by the
// goroutine that fetched it.
type fetched struct {
	src        int
	ctx        context.Context
	tok, after string
	size       int // the page size asked for
	n          int
	rows       []json.RawMessage // what the user sees; nil entry: no result
	keys       [][]any           // modeOrdered: sort keys
	dkeys      []string          // DISTINCT: query.DistinctKey of the row
	vals       []any             // modeAggregate: decoded partial rows
	err        error
}

// rowRef is one row taken from a source.
type rowRef struct {
	raw  json.RawMessage
	keys []any
	dkey string
	val  any
}

// NewQueryPager prepares a query over the database's collections. It does
// no I/O: errors (unknown database, malformed SQL, a shape that cannot be
// merged, a bad continuation token) are returned by the first NextPage.
// The fan-out and merge are planned by package query: ORDER BY merges
// stream through a heap of one row per collection, TOP and OFFSET/LIMIT
// are widened per collection and applied once here, aggregates and GROUP
// BY combine partial results, DISTINCT applies again after the merge.
func (c *Client) NewQueryPager(dbLink string, q store.Query, opts *QueryOptions) *Pager {
	p := &Pager{c: c, dbLink: dbLink, q: q, limLeft: -1, tokens: true}
	if opts != nil {
		p.opts = *opts
	} else {
		p.opts.MaxDegreeOfParallelism = c.opts.MaxDegreeOfParallelism
	}
	switch {
	case p.opts.PageSize == 0:
		p.opts.PageSize = 100
	case p.opts.PageSize < 0:
		p.opts.PageSize = math.MaxInt
	}
	p.err = p.setup()
	return p
}

// Query runs a query to the end and returns every result: a convenience
// over NewQueryPager for results that fit in memory. With PartialResults
// it returns what it got and a *PartialError naming the failed
// collections.
func (c *Client) Query(ctx context.Context, dbLink string, q store.Query, opts *QueryOptions) ([]json.RawMessage, error) {
	p := c.NewQueryPager(dbLink, q, opts)
	p.tokens = false
	if opts == nil || opts.PageSize == 0 {
		p.opts.PageSize = 1000
	}
	var out []json.RawMessage
	var partial *PartialError
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil && !errors.As(err, &partial) {
			return nil, err
		}
		out = append(out, page.Items...)
	}
	if out == nil {
		out = []json.RawMessage{}
	}
	if partial != nil {
		return out, partial
	}
	return out, nil
}

func (p *Pager) setup() error {
	c := p.c
	e, err := c.entry(p.dbLink)
	if err != nil {
		return err
	}
	params := make(map[string]any, len(p.q.Parameters))
	for _, prm := range p.q.Parameters {
		if len(prm.Name) < 2 || prm.Name[0] != '@' {
			return fmt.Errorf("router: parameter name %q must start with '@'", prm.Name)
		}
		if _, dup := params[prm.Name]; dup {
			return fmt.Errorf("router: parameter %s given twice", prm.Name)
		}
		params[prm.Name] = prm.Value
	}
	parsed, err := query.Parse(p.q.Text)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if p.plan, err = query.PlanFanOut(parsed, params); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	p.nkeys = len(parsed.OrderBy)
	p.sq = store.Query{Text: p.plan.Query, Parameters: p.q.Parameters}
	switch {
	case p.plan.Kind == query.Aggregate:
		p.mode = modeAggregate
	case p.plan.Kind == query.OrderBy:
		p.mode = modeOrdered
	case p.plan.Distinct:
		p.mode = modeDistinct
	default:
		p.mode = modeStream
	}
	if p.links, err = e.r.ResolveForRead(p.opts.PartitionKey); err != nil {
		return err
	}
	if p.plan.SingleCollection && len(p.links) > 1 {
		p.links = p.links[:1]
	}
	if key := p.opts.PartitionKey; key != nil {
		// A single value also scopes the documents; a key that is not one
		// (a rangeresolver.Range) only narrows the collections.
		if sk := storeKey(key); sk != nil {
			if _, err := store.KeyText(sk); err == nil {
				p.scope = sk
			}
		}
	}
	if p.bind, err = binding(e.link, p.q, keyText(p.opts.PartitionKey)); err != nil {
		return err
	}
	p.lh = linksHash(p.links)
	width := len(p.links)
	p.maxBuf = p.opts.MaxBufferedItemCount
	if p.maxBuf <= 0 {
		p.maxBuf = c.opts.MaxBufferedItemCount
	}
	if p.maxBuf <= 0 {
		p.maxBuf = max(2000, 100*width)
	}
	p.reqSize = max(1, p.maxBuf/(2*max(width, 1)))
	p.par = parallelism(p.opts.MaxDegreeOfParallelism, width)
	p.srcs = make([]*source, width)
	for i, l := range p.links {
		p.srcs[i] = &source{idx: i, link: l}
	}
	p.results = make(chan *fetched, width)
	p.offLeft, p.limLeft = p.plan.Offset, p.plan.Limit
	if p.plan.Distinct {
		p.seen = map[string]struct{}{}
	}
	if p.opts.Continuation != "" {
		return p.resume(p.opts.Continuation)
	}
	return nil
}

func (p *Pager) resume(tok string) error {
	t, err := decodeToken(tok, p.bind, p.lh, len(p.srcs))
	if err != nil {
		return err
	}
	if t.mode != p.mode {
		return badToken("it belongs to another query")
	}
	for i, st := range t.srcs {
		s := p.srcs[i]
		if st.state == srcFailed {
			if !p.opts.PartialResults {
				return badToken("it records a failed collection, %s, which only a query with PartialResults goes on past; resume it with PartialResults", s.link)
			}
			s.failed, s.end, s.pos = errFailedEarlier, true, st
		}
	}
	switch p.mode {
	case modeStream, modeOrdered:
		if t.offLeft > p.plan.Offset || t.limLeft < -1 || (p.plan.Limit < 0) != (t.limLeft < 0) || t.limLeft > p.plan.Limit {
			return badToken("its OFFSET/LIMIT state does not fit the query")
		}
		p.offLeft, p.limLeft = t.offLeft, t.limLeft
		for i, st := range t.srcs {
			s := p.srcs[i]
			switch st.state {
			case srcAt:
				s.pos, s.nextTok, s.skip, s.size = st, st.tok, st.skip, st.size
			case srcDone:
				s.pos, s.end = st, true
			}
		}
		if len(t.run) > 0 {
			if !p.plan.Distinct || p.mode != modeOrdered {
				return badToken("malformed state")
			}
			p.seeded = make(map[uint64]struct{}, len(t.run))
			for _, h := range t.run {
				p.seeded[h] = struct{}{}
			}
			p.seedList = t.run
		}
	default:
		p.skipEmit = t.emitted
	}
	return nil
}

// More reports whether NextPage has a page to return.
func (p *Pager) More() bool { return !p.done }

// Collections returns the links the query runs on, in merge order.
func (p *Pager) Collections() []string { return slices.Clone(p.links) }

// BufferedRows returns how many rows the pager holds from its collections
// now, counting a fetch in flight as the page it asked for, and
// PeakBufferedRows the most it held at once: at most MaxBufferedItemCount,
// or two rows per collection when there are more collections than that
// (a page resumed from a token may ask for as many rows as the page it
// resumes). For monitoring memory.
func (p *Pager) BufferedRows() int { return p.rows + p.reserved }

// PeakBufferedRows: see BufferedRows.
func (p *Pager) PeakBufferedRows() int { return p.peak }

// NextPage returns the next page. An error ends the pager, except a
// *PartialError, which comes with its page. Calling it after the last page
// is an error.
func (p *Pager) NextPage(ctx context.Context) (*QueryPage, error) {
	if p.done {
		return nil, errors.New("router: NextPage called after the last page (check More)")
	}
	if p.err != nil {
		p.done = true
		return nil, p.err
	}
	if !p.started {
		p.started = true
		if h := p.c.opts.Hooks.FanOut; h != nil {
			h(p.dbLink, len(p.srcs))
		}
	}
	page := &QueryPage{}
	var err error
	p.ctx = ctx
	if p.mode == modeAggregate {
		err = p.fillAggregate(ctx, page)
	} else {
		err = p.fillRows(ctx, page)
	}
	if err == nil && !p.finished() {
		p.dispatch() // read ahead while the caller works on this page
	}
	p.ctx = nil
	if err != nil {
		p.done = true
		return nil, err
	}
	for _, s := range p.srcs {
		if s.failed != nil {
			if page.Failed == nil {
				page.Failed = map[string]error{}
			}
			page.Failed[s.link] = s.failed
		}
	}
	if p.finished() {
		p.done = true
	} else if p.tokens {
		page.Continuation = p.token()
	}
	if h := p.c.opts.Hooks.Documents; h != nil {
		h(p.dbLink, len(page.Items))
	}
	if len(page.Failed) > 0 {
		return page, &PartialError{Failed: page.Failed}
	}
	return page, nil
}

// fillRows fills a page for the streamed modes.
func (p *Pager) fillRows(ctx context.Context, page *QueryPage) error {
	for len(page.Items) < p.opts.PageSize && p.limLeft != 0 {
		r, ok, err := p.nextRow(ctx)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if r.raw == nil || (p.plan.Distinct && !p.first(r)) {
			continue
		}
		if p.offLeft > 0 {
			p.offLeft--
			continue
		}
		if p.limLeft > 0 {
			p.limLeft--
		}
		if p.mode == modeDistinct {
			p.emitted++
			if p.emitted <= p.skipEmit {
				continue
			}
		}
		page.Items = append(page.Items, r.raw)
	}
	return nil
}

// first applies DISTINCT: it reports whether the row is new. Under ORDER
// BY equal results have equal sort keys, so only the current run of equal
// keys is remembered.
func (p *Pager) first(r rowRef) bool {
	if p.mode == modeOrdered {
		if p.haveLast && p.plan.CompareKeys(p.lastKeys, r.keys) != 0 {
			clear(p.seen)
			p.seeded, p.seedList, p.run = nil, nil, p.run[:0]
		}
		p.lastKeys, p.haveLast = r.keys, true
	}
	if _, dup := p.seen[r.dkey]; dup {
		return false
	}
	var h uint64
	if p.mode == modeOrdered {
		h = runHash(r.dkey)
		if _, dup := p.seeded[h]; dup {
			return false
		}
		p.run = append(p.run, h)
	}
	p.seen[r.dkey] = struct{}{}
	return true
}

func runHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// nextRow returns the next merged row, or ok false at the end.
func (p *Pager) nextRow(ctx context.Context) (rowRef, bool, error) {
	switch p.mode {
	case modeOrdered:
		return p.nextOrdered(ctx)
	case modeDistinct:
		for p.ci < len(p.srcs) {
			s := p.srcs[p.ci]
			if s.cur != nil {
				return p.consume(s), true, nil
			}
			if p.exhausted(s) {
				p.ci++
				continue
			}
			if err := p.waitFor(ctx, func() bool { return s.cur != nil || p.exhausted(s) }); err != nil {
				return rowRef{}, false, err
			}
		}
		return rowRef{}, false, nil
	}
	// modeStream: whatever is there, staying on one collection while it
	// has rows.
	for {
		for _, s := range p.srcs {
			if s.cur != nil {
				return p.consume(s), true, nil
			}
		}
		if p.allExhausted() {
			return rowRef{}, false, nil
		}
		if err := p.waitAny(ctx); err != nil {
			return rowRef{}, false, err
		}
	}
}

func (p *Pager) nextOrdered(ctx context.Context) (rowRef, bool, error) {
	if !p.heapReady {
		err := p.waitFor(ctx, func() bool {
			for _, s := range p.srcs {
				if s.cur == nil && !p.exhausted(s) {
					return false
				}
			}
			return true
		})
		if err != nil {
			return rowRef{}, false, err
		}
		for _, s := range p.srcs {
			if s.cur != nil {
				p.heap = append(p.heap, s)
			}
		}
		for i := len(p.heap)/2 - 1; i >= 0; i-- {
			p.down(i)
		}
		p.heapReady = true
	}
	if s := p.fix; s != nil {
		p.fix = nil
		if s.cur == nil && !p.exhausted(s) {
			if err := p.waitFor(ctx, func() bool { return s.cur != nil || p.exhausted(s) }); err != nil {
				p.fix = s
				return rowRef{}, false, err
			}
		}
		if s.cur != nil {
			p.down(0)
		} else {
			last := len(p.heap) - 1
			p.heap[0] = p.heap[last]
			p.heap = p.heap[:last]
			if last > 0 {
				p.down(0)
			}
		}
	}
	if len(p.heap) == 0 {
		return rowRef{}, false, nil
	}
	s := p.heap[0]
	r := p.consume(s)
	p.fix = s
	return r, true, nil
}

func (p *Pager) less(a, b *source) bool {
	return p.plan.CompareRows(a.cur.keys[a.curPos], a.idx, b.cur.keys[b.curPos], b.idx) < 0
}

func (p *Pager) down(i int) {
	h := p.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && p.less(h[r], h[l]) {
			m = r
		}
		if !p.less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// consume takes the source's next row; cur must be non-nil.
func (p *Pager) consume(s *source) rowRef {
	f, i := s.cur, s.curPos
	var r rowRef
	if f.rows != nil {
		r.raw = f.rows[i]
	}
	if f.keys != nil {
		r.keys = f.keys[i]
	}
	if f.dkeys != nil {
		r.dkey = f.dkeys[i]
	}
	if f.vals != nil {
		r.val = f.vals[i]
	}
	s.curPos++
	if s.curPos == f.n {
		p.rows -= f.n
		s.cur, s.next, s.curPos = s.next, nil, 0
		if s.cur == nil {
			s.pos = after(f)
		}
		p.dispatch() // the page's room in the buffer is free: read ahead
	}
	return r
}

// after is the position past the last row of a page.
func after(f *fetched) srcState {
	if f.after == "" {
		return srcState{state: srcDone}
	}
	return srcState{state: srcAt, tok: f.after}
}

// exhausted reports whether a source will give no more rows.
func (p *Pager) exhausted(s *source) bool {
	return s.cur == nil && !s.pending && (s.end || s.failed != nil)
}

func (p *Pager) allExhausted() bool {
	for _, s := range p.srcs {
		if !p.exhausted(s) {
			return false
		}
	}
	return true
}

func (p *Pager) finished() bool {
	switch {
	case p.mode == modeAggregate:
		return p.computed && p.emitted >= len(p.final)
	case p.limLeft == 0:
		return true
	}
	// Under ORDER BY the sources in the heap hold rows, so are not
	// exhausted; the one taken from last is exhausted only if it is done.
	return p.allExhausted()
}

func (p *Pager) fetchable(s *source) bool {
	return !s.pending && s.failed == nil && !s.end && s.next == nil
}

func (p *Pager) sizeFor(s *source) int { return max(p.reqSize, s.size) }

// dispatch starts fetches up to the parallelism: first those the merge
// waits for (whatever the buffer), then read-ahead within the buffer, in
// collection order.
func (p *Pager) dispatch() {
	for p.inflight < p.par {
		s := p.needed()
		if s == nil {
			for _, x := range p.srcs {
				if p.fetchable(x) && p.rows+p.reserved+p.sizeFor(x) <= p.maxBuf {
					s = x
					break
				}
			}
		}
		if s == nil {
			return
		}
		p.start(s)
	}
}

// needed returns a source the merge cannot go on without.
func (p *Pager) needed() *source {
	switch p.mode {
	case modeOrdered, modeAggregate:
		for _, s := range p.srcs {
			if s.cur == nil && p.fetchable(s) {
				return s
			}
		}
	case modeDistinct:
		if p.ci < len(p.srcs) {
			if s := p.srcs[p.ci]; s.cur == nil && p.fetchable(s) {
				return s
			}
		}
	default:
		if p.inflight > 0 {
			return nil
		}
		for _, s := range p.srcs {
			if s.cur != nil {
				return nil
			}
		}
		for _, s := range p.srcs {
			if p.fetchable(s) {
				return s
			}
		}
	}
	return nil
}

func (p *Pager) start(s *source) {
	size := p.sizeFor(s)
	s.pending, s.reserved = true, size
	p.reserved += size
	p.peak = max(p.peak, p.rows+p.reserved)
	p.inflight++
	go p.fetch(p.ctx, s.idx, s.link, s.nextTok, size)
}

// fetch runs in its own goroutine: one store call (with retries) and the
// decoding of its rows. It reads only what never changes after set-up.
func (p *Pager) fetch(ctx context.Context, idx int, l, tok string, size int) {
	f := &fetched{src: idx, ctx: ctx, tok: tok, size: size}
	defer func() {
		if r := recover(); r != nil {
			f.err = fmt.Errorf("router: query on %s: panic: %v", l, r)
		}
		p.results <- f // buffered for every source: never blocks
	}()
	opts := &store.QueryOptions{PartitionKey: p.scope, PageSize: size, Continuation: tok}
	var page *store.Page
	f.err = p.c.call(ctx, l, "query", func() (err error) {
		page, err = p.c.st.Query(ctx, l, p.sq, opts)
		return err
	})
	if f.err != nil {
		return
	}
	f.after = page.Continuation
	if err := p.decode(f, page.Items); err != nil {
		f.err = fmt.Errorf("router: query on %s returned a row the merge cannot read: %w", l, err)
	}
}

// decode prepares a page's rows for the merge.
func (p *Pager) decode(f *fetched, items []json.RawMessage) error {
	f.n = len(items)
	switch p.mode {
	case modeStream:
		f.rows = items
	case modeDistinct:
		f.rows = items
		f.dkeys = make([]string, len(items))
		for i, it := range items {
			v, err := decodeJSON(it)
			if err != nil {
				return err
			}
			f.dkeys[i] = query.DistinctKey(v)
		}
	case modeAggregate:
		f.vals = make([]any, len(items))
		for i, it := range items {
			v, err := decodeJSON(it)
			if err != nil {
				return err
			}
			f.vals[i] = v
		}
	case modeOrdered:
		f.rows = make([]json.RawMessage, len(items))
		f.keys = make([][]any, len(items))
		slab := make([]any, len(items)*p.nkeys) // every row's keys in one allocation
		if p.plan.Distinct {
			f.dkeys = make([]string, len(items))
		}
		for i, it := range items {
			// The rows are read-only (store.Page), so strings taken from
			// them may alias their bytes.
			keys := slab[i*p.nkeys : (i+1)*p.nkeys : (i+1)*p.nkeys]
			payload, err := orderedRow(it, keys)
			if err != nil {
				return err
			}
			f.keys[i], f.rows[i] = keys, payload
			if payload != nil && p.plan.Distinct {
				v, err := decodeJSON(payload)
				if err != nil {
					return err
				}
				f.dkeys[i] = query.DistinctKey(v)
			}
		}
	}
	return nil
}

func decodeJSON(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// waitAny waits for a fetch to finish, and files every other finished
// one too.
func (p *Pager) waitAny(ctx context.Context) error {
	p.dispatch()
	if p.inflight == 0 {
		return errors.New("router: internal error: the query waits for a collection it does not read")
	}
	var f *fetched
	select {
	case f = <-p.results:
	case <-ctx.Done():
		return fmt.Errorf("router: query: %w", ctx.Err())
	}
	for {
		if err := p.receive(ctx, f); err != nil {
			return err
		}
		select {
		case f = <-p.results:
		default:
			return nil
		}
	}
}

// waitFor waits for fetches until cond holds.
func (p *Pager) waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		if err := p.waitAny(ctx); err != nil {
			return err
		}
	}
	return nil
}

// receive files the page of a finished fetch.
func (p *Pager) receive(ctx context.Context, f *fetched) error {
	s := p.srcs[f.src]
	p.inflight--
	p.reserved -= s.reserved
	s.pending, s.reserved = false, 0
	if f.err != nil {
		switch {
		case f.ctx != ctx && f.ctx.Err() != nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)):
			return nil // a read-ahead of an earlier call, cancelled with it: fetch again
		case ctx.Err() != nil:
			return fmt.Errorf("router: query: %w", ctx.Err())
		case !p.opts.PartialResults:
			return f.err
		}
		s.failed = f.err
		return nil
	}
	skip := s.skip
	s.skip, s.size = 0, 0
	if skip > f.n {
		return badToken("%s returned %d rows where the token skips %d: the collection changed since the token was issued", s.link, f.n, skip)
	}
	s.nextTok, s.end = f.after, f.after == ""
	if skip == f.n { // nothing left in this page
		if s.cur == nil {
			s.pos = after(f)
		}
		return nil
	}
	p.rows += f.n
	p.peak = max(p.peak, p.rows+p.reserved) // a store may return more than asked
	if s.cur == nil {
		s.cur, s.curPos = f, skip
	} else {
		s.next = f
	}
	return nil
}

// token writes the pager's position.
func (p *Pager) token() string {
	t := tokenState{mode: p.mode, offLeft: p.offLeft, limLeft: p.limLeft, emitted: p.emitted}
	t.srcs = make([]srcState, len(p.srcs))
	for i, s := range p.srcs {
		switch {
		case s.failed != nil:
			t.srcs[i] = srcState{state: srcFailed}
		case p.mode == modeAggregate || p.mode == modeDistinct:
			t.srcs[i] = srcState{state: srcAt}
		case s.cur != nil:
			t.srcs[i] = srcState{state: srcAt, tok: s.cur.tok, size: s.cur.size, skip: s.curPos}
		default:
			t.srcs[i] = s.pos
		}
	}
	if p.mode == modeOrdered && p.plan.Distinct {
		t.run = append(append([]uint64(nil), p.seedList...), p.run...)
	}
	return t.encode(p.bind, p.lh)
}

// fillAggregate computes the whole result once (and again in a pager
// resumed from a token) and pages through it.
func (p *Pager) fillAggregate(ctx context.Context, page *QueryPage) error {
	if !p.computed {
		m := p.plan.NewMerger()
		for {
			for _, s := range p.srcs {
				for s.cur != nil {
					if err := m.Add(p.consume(s).val); err != nil {
						return fmt.Errorf("router: %s: %w", s.link, err)
					}
				}
			}
			if p.allExhausted() {
				break
			}
			if err := p.waitAny(ctx); err != nil {
				return err
			}
		}
		res := m.Results()
		var df *query.DistinctFilter
		if p.plan.Distinct {
			df = query.NewDistinctFilter()
		}
		off, lim := p.plan.Offset, p.plan.Limit
		for _, v := range res {
			if lim == 0 {
				break
			}
			if df != nil && !df.First(v) {
				continue
			}
			if off > 0 {
				off--
				continue
			}
			p.final = append(p.final, v)
			if lim > 0 {
				lim--
			}
		}
		p.computed = true
		if p.skipEmit > len(p.final) {
			return badToken("it is %d results into a query of %d: the collections changed since it was issued", p.skipEmit, len(p.final))
		}
		p.emitted = p.skipEmit
	}
	end := p.emitted + min(p.opts.PageSize, len(p.final)-p.emitted)
	for _, v := range p.final[p.emitted:end] {
		b, err := p.plan.Encode(v)
		if err != nil {
			return fmt.Errorf("router: %w", err)
		}
		page.Items = append(page.Items, b)
	}
	p.emitted = end
	return nil
}
