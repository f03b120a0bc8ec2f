package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/queryhook"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// QueryOptions qualify a query. A nil *QueryOptions and the zero value mean
// the same: the client's defaults for parallelism and buffering, no
// partition key, 100 results a page.
type QueryOptions struct {
	// PartitionKey narrows the query to the collections that may hold this
	// key (ResolveForRead), and to documents with this key; nil means every
	// collection. A key that is not a single value, such as a
	// rangeresolver.Range, narrows the collections only. Under a resolver
	// whose key has several paths, the whole composite key narrows to its
	// collection and, in a hierarchical collection, its documents; a prefix
	// (its first values, or a lone value) runs on every collection and
	// scopes the documents by those values. A collection partitioned by
	// the first path alone is scoped by the first value.
	PartitionKey any
	// MaxDegreeOfParallelism is how many store calls the query makes at
	// once: 0 the client's default (Options.MaxDegreeOfParallelism,
	// automatic unless set), 1 one at a time (serially), -1 automatically
	// (every collection, up to 64), n at most n.
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
//
// Inside, the pager is thin: a fetch scheduler runs the store calls, a
// merger (one per merge mode: stream, ordered, distinct, aggregate)
// combines the rows, and the pager applies OFFSET, LIMIT and page sizes
// and writes continuation tokens.
type Pager struct {
	c       *Client
	dbLink  string
	q       store.Query
	opts    QueryOptions
	err     error // a set-up error, returned by the first NextPage
	done    bool
	started bool
	tokens  bool // write continuation tokens

	entry  *dbEntry // the registration the query was placed by (its follower, if any, checks each page's lease)
	placed []string // the collections it was placed on (before SingleCollection keeps one)
	plan   *query.Plan
	links  []string
	bind   [8]byte
	lh     uint32
	sched  *scheduler
	m      merger

	clock            int64 // the instant the query's clock functions read (Unix ns), or 0
	offLeft, limLeft int   // OFFSET still to skip, LIMIT still to give (-1: none)
	skipEmit         int   // results given before the token (recomputing mergers)
	emitted          int   // results given, counting from the query's start
}

// NewQueryPager prepares a query over the database's collections. It does
// no I/O: errors (unknown database, malformed SQL, a shape that cannot be
// merged, a bad continuation token) are returned by the first NextPage.
// The fan-out and merge are planned by package query: ORDER BY merges
// stream through a heap of one row per collection, TOP and OFFSET/LIMIT
// are widened per collection and applied once here (with ORDER BY over
// many collections, each is first asked for only a few rows, and for the
// rest only when the merge reaches them), aggregates and GROUP
// BY combine partial results, DISTINCT applies again after the merge.
func (c *Client) NewQueryPager(dbLink string, q store.Query, opts *QueryOptions) *Pager {
	p := &Pager{c: c, dbLink: dbLink, q: q, limLeft: -1, tokens: true}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.MaxDegreeOfParallelism == 0 {
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
	params, err := localquery.Params(p.q.Parameters)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	parsed, err := query.Parse(p.q.Text)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	links, scope, perLink, err := e.pl.forQuery(p.opts.PartitionKey)
	if err != nil {
		return err
	}
	p.entry, p.placed = e, links
	if p.bind, err = binding(e.link, p.q, keyText(p.opts.PartitionKey)); err != nil {
		return err
	}
	if queryhook.ReadsClock(parsed) {
		// One instant per query, written into the text every collection
		// runs and into the continuation token, so every collection and
		// every page reads the same time.
		if err := p.bindClock(parsed, links); err != nil {
			return err
		}
	}
	if p.plan, err = query.PlanFanOut(parsed, params); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if p.plan.SingleCollection && len(links) > 1 {
		links = links[:1]
	}
	p.links = links
	p.lh = linksHash(links)
	width := len(links)
	maxBuf := p.opts.MaxBufferedItemCount
	if maxBuf <= 0 {
		maxBuf = c.opts.MaxBufferedItemCount
	}
	if maxBuf <= 0 {
		maxBuf = max(2000, 100*width)
	}
	s := newScheduler(c.viewFor(e), links)
	s.sq = store.Query{Text: p.plan.Query, Parameters: p.q.Parameters}
	s.scope, s.partial = scope, p.opts.PartialResults
	if perLink {
		s.keys = &c.keys
	}
	s.budget(parallelism(p.opts.MaxDegreeOfParallelism, width), maxBuf)
	s.m = newMerger(p.plan, len(parsed.OrderBy), s)
	if p.plan.Kind == query.OrderBy && !p.plan.Distinct && p.plan.Limit >= 0 && p.opts.Continuation == "" {
		s.probeFor(min(p.plan.Offset+p.plan.Limit, math.MaxInt32))
	}
	p.sched, p.m = s, s.m
	p.offLeft, p.limLeft = p.plan.Offset, p.plan.Limit
	if p.opts.Continuation != "" {
		return p.resume(p.opts.Continuation)
	}
	return nil
}

// bindClock fixes the instant the query's clock functions read: now, or
// the one recorded in the continuation token being resumed.
func (p *Pager) bindClock(parsed *query.Query, links []string) error {
	p.clock = time.Now().UnixNano()
	if p.opts.Continuation != "" {
		if len(links) > 1 {
			// A query reading no documents (no FROM) runs on one
			// collection: which one depends on the plan, but its token
			// records one either way.
			if query.ReadsNoDocuments(parsed) {
				links = links[:1]
			}
		}
		t, err := decodeToken(p.opts.Continuation, p.bind, linksHash(links), len(links))
		if err != nil {
			return err
		}
		p.clock = t.clock
	}
	queryhook.BindClock(parsed, time.Unix(0, p.clock).UTC())
	return nil
}

func (p *Pager) resume(tok string) error {
	s := p.sched
	t, err := decodeToken(tok, p.bind, p.lh, len(s.srcs))
	if err != nil {
		return err
	}
	if t.mode != p.m.mode() {
		return badToken("it belongs to another query")
	}
	for i, st := range t.srcs {
		src := s.srcs[i]
		if st.state == srcFailed {
			if !p.opts.PartialResults {
				return badToken("it records a failed collection, %s, which only a query with PartialResults goes on past; resume it with PartialResults", src.link)
			}
			src.failed, src.end, src.pos = errFailedEarlier, true, st
		}
	}
	if !p.m.byPosition() {
		p.skipEmit = t.emitted
		return nil
	}
	if t.offLeft > p.plan.Offset || t.limLeft < -1 || (p.plan.Limit < 0) != (t.limLeft < 0) || t.limLeft > p.plan.Limit {
		return badToken("its OFFSET/LIMIT state does not fit the query")
	}
	p.offLeft, p.limLeft = t.offLeft, t.limLeft
	for i, st := range t.srcs {
		s.restore(s.srcs[i], st)
	}
	return p.m.restore(t)
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
func (p *Pager) BufferedRows() int {
	if p.sched == nil {
		return 0
	}
	return p.sched.rows + p.sched.reserved
}

// PeakBufferedRows: see BufferedRows.
func (p *Pager) PeakBufferedRows() int {
	if p.sched == nil {
		return 0
	}
	return p.sched.peak
}

// placedBy checks that e, the registration in force for a followed
// database, runs the query on the collections it was placed on: a new
// version that keeps them (a reshard's heartbeat, a freeze) changes
// nothing for it; one that moves it elsewhere ends it with
// ErrPlacementChanged, since its merge stands on collections the new
// placement no longer reads (and a reshard's clean-up empties). So does
// one that keeps them but changes which of them hold copies to skip
// (resolver.Owner: a reshard's copy step published over the same
// collections) once a page was read; before the first, the query reads
// through the new placement's view instead of the one it was prepared by.
func (p *Pager) placedBy(e *dbEntry) error {
	if e == p.entry {
		return nil
	}
	links, _, _, err := e.pl.forQuery(p.opts.PartitionKey)
	if err != nil || !slices.Equal(links, p.placed) {
		return fmt.Errorf("%w: %s routes the query by version %d now, on other collections than its first page: run it again from its first page",
			ErrPlacementChanged, p.dbLink, e.version.Load())
	}
	if !slices.Equal(sharedOf(p.entry), sharedOf(e)) {
		// The same collections, but others of them hold copies to skip
		// (a reshard's copy step published, or its end): the pages read
		// so far were filtered otherwise, so a started query ends; one
		// that read nothing yet reads through the new placement's view.
		if p.started {
			return fmt.Errorf("%w: %s routes the query by version %d now, whose collections hold copies its first page did not skip (or skipped): run it again from its first page",
				ErrPlacementChanged, p.dbLink, e.version.Load())
		}
		p.sched.readThrough(p.c.viewFor(e))
	}
	p.entry = e
	return nil
}

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
	if p.entry != nil && p.entry.follow != nil {
		var e *dbEntry
		var err error
		ctx, e, err = p.c.beginRead(ctx, p.entry)
		if err == nil {
			defer e.inflight.Add(-1)
			err = p.placedBy(e)
		}
		if err != nil {
			p.done = true
			return nil, err
		}
	}
	s := p.sched
	if !p.started {
		p.started = true
		if h := p.c.opts.Hooks.FanOut; h != nil {
			h(ctx, p.dbLink, len(s.srcs))
		}
	}
	page := &QueryPage{}
	s.ctx = ctx
	err := p.fill(ctx, page)
	if err == nil && !p.finished() {
		s.dispatch() // read ahead while the caller works on this page
	}
	s.ctx = nil
	if err != nil {
		p.done = true
		return nil, err
	}
	for _, src := range s.srcs {
		if src.failed != nil {
			if page.Failed == nil {
				page.Failed = map[string]error{}
			}
			page.Failed[src.link] = src.failed
		}
	}
	if p.finished() {
		p.done = true
	} else if p.tokens {
		page.Continuation = p.token()
	}
	if h := p.c.opts.Hooks.Documents; h != nil {
		h(ctx, p.dbLink, len(page.Items))
	}
	if len(page.Failed) > 0 {
		return page, &PartialError{Failed: page.Failed}
	}
	return page, nil
}

// fill fills a page from the merger, applying OFFSET and LIMIT and, for a
// merger that recomputes on resume, skipping the results given before the
// token.
func (p *Pager) fill(ctx context.Context, page *QueryPage) error {
	for len(page.Items) < p.opts.PageSize && p.limLeft != 0 {
		r, ok, err := p.m.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if p.offLeft > 0 {
			p.offLeft--
			continue
		}
		if p.limLeft > 0 {
			p.limLeft--
		}
		if !p.m.byPosition() {
			p.emitted++
			if p.emitted <= p.skipEmit {
				continue
			}
		}
		page.Items = append(page.Items, r)
	}
	if !p.m.byPosition() && p.m.done() && p.emitted < p.skipEmit {
		return badToken("it is %d results into a query of %d: the collections changed since it was issued", p.skipEmit, p.emitted)
	}
	return nil
}

func (p *Pager) finished() bool { return p.limLeft == 0 || p.m.done() }

// token writes the pager's position.
func (p *Pager) token() string {
	t := tokenState{mode: p.m.mode(), offLeft: p.offLeft, limLeft: p.limLeft, emitted: p.emitted, clock: p.clock}
	t.srcs = make([]srcState, len(p.sched.srcs))
	for i, src := range p.sched.srcs {
		switch {
		case !p.m.byPosition() && src.failed == nil:
			t.srcs[i] = srcState{state: srcAt}
		default:
			t.srcs[i] = p.sched.position(src)
		}
	}
	p.m.save(&t)
	return t.encode(p.bind, p.lh)
}
