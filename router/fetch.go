package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// The fetch scheduler: a query's store calls, run in goroutines, at most
// par at once, reading ahead within a row budget while the caller consumes
// pages. It knows nothing of how rows merge: its merger says which
// collection the merge cannot go on without (needed) and turns each page
// into rows (decode), in the goroutine that fetched it.

// scheduler runs the fetches of one pager. It is used by one goroutine (the
// pager's caller); fetch goroutines only read what never changes after
// set-up and report on results.
type scheduler struct {
	st    store.Store // the client's store, with retries and hooks
	sq    store.Query // what every collection runs
	scope any         // the store partition key scoping the query; nil: none
	// keys, when set, gives each collection its part of a composite
	// scope (the whole key or prefix for a hierarchical one).
	keys    *store.CollectionKeys
	partial bool // PartialResults: a failed collection is dropped, not fatal
	m       merger

	par     int // fetches at once
	maxBuf  int // rows held and reserved, at most
	reqSize int // rows asked for per fetch

	// probe, when probeK > 0, is sq with its TOP (or LIMIT) cut to probeK:
	// what each collection runs first. See probeFor.
	probe  store.Query
	probeK int

	srcs     []*source
	ctx      context.Context // of the NextPage running, for the fetches it starts
	results  chan *fetched
	inflight int
	rows     int // rows held in fetched pages
	reserved int // rows reserved for fetches in flight
	peak     int
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
	// check: the rows skipped must digest to want (see rowsDigest); got
	// is the digest of those skipped so far, across pages.
	check     bool
	want, got uint64
	size      int // page size of the next fetch, if above the pager's (resume)
	// probing: the next fetch runs the scheduler's probe; lazy: the probe
	// came back full, so the rest of the collection's rows are fetched
	// only when the merge needs them, never read ahead.
	probing, lazy bool
	pending       bool
	reserved      int
	failed        error
}

// fetched is one page from a collection, decoded for the merge by the
// goroutine that fetched it.
type fetched struct {
	src        int
	ctx        context.Context
	tok, after string
	size       int       // the page size asked for
	then       *srcState // the position past the last row, if not after's
	n          int
	rows       []json.RawMessage // what the user sees; nil entry: no result
	keys       [][]any           // ordered merge: sort keys
	dkeys      []string          // DISTINCT: queryhook.DistinctKey of the row
	vals       []any             // aggregates: decoded partial rows
	err        error
}

// rowRef is one row taken from a source.
type rowRef struct {
	raw  json.RawMessage
	keys []any
	dkey string
	val  any
}

// errFailedEarlier stands for a collection a token marks as failed.
var errFailedEarlier = errors.New("router: the collection failed on an earlier page of this query")

func newScheduler(st store.Store, links []string) *scheduler {
	s := &scheduler{st: st, srcs: make([]*source, len(links)), results: make(chan *fetched, len(links))}
	for i, l := range links {
		s.srcs[i] = &source{idx: i, link: l}
	}
	return s
}

// budget sets the parallelism and the row budget: each collection is asked
// for pages of maxBuf/(2×collections) rows (at least one), so every
// collection can hold the page being merged and the next one.
func (s *scheduler) budget(par, maxBuf int) {
	s.par, s.maxBuf = par, maxBuf
	s.reqSize = max(1, maxBuf/(2*max(len(s.srcs), 1)))
}

// consume takes the source's next row; cur must be non-nil. A page used
// up frees its room in the budget, so reading ahead starts again.
func (s *scheduler) consume(src *source) rowRef {
	f, i := src.cur, src.curPos
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
	src.curPos++
	if src.curPos == f.n {
		s.rows -= f.n
		src.cur, src.next, src.curPos = src.next, nil, 0
		if src.cur == nil {
			src.pos = after(f)
		}
		s.dispatch()
	}
	return r
}

// after is the position past the last row of a page.
func after(f *fetched) srcState {
	if f.then != nil {
		return *f.then
	}
	if f.after == "" {
		return srcState{state: srcDone}
	}
	return srcState{state: srcAt, tok: f.after}
}

// exhausted reports whether a source will give no more rows.
func (s *scheduler) exhausted(src *source) bool {
	return src.cur == nil && !src.pending && (src.end || src.failed != nil)
}

func (s *scheduler) allExhausted() bool {
	for _, src := range s.srcs {
		if !s.exhausted(src) {
			return false
		}
	}
	return true
}

func (s *scheduler) fetchable(src *source) bool {
	return !src.pending && src.failed == nil && !src.end && src.next == nil
}

// starved returns the first source with no row at hand that can be
// fetched, or nil: what a merge needing every collection's rows waits for.
func (s *scheduler) starved() *source {
	for _, src := range s.srcs {
		if src.cur == nil && s.fetchable(src) {
			return src
		}
	}
	return nil
}

func (s *scheduler) sizeFor(src *source) int { return max(s.reqSize, src.size) }

// dispatch starts fetches up to the parallelism: first those the merge
// waits for (whatever the budget), then read-ahead within the budget, in
// collection order.
func (s *scheduler) dispatch() {
	for s.inflight < s.par {
		src := s.m.needed()
		if src == nil {
			for _, x := range s.srcs {
				if s.fetchable(x) && !x.lazy && s.rows+s.reserved+s.sizeFor(x) <= s.maxBuf {
					src = x
					break
				}
			}
		}
		if src == nil {
			return
		}
		s.start(src)
	}
}

func (s *scheduler) start(src *source) {
	size, q := s.sizeFor(src), s.sq
	if src.probing {
		size, q = s.probeK, s.probe
	}
	src.lazy = false
	src.pending, src.reserved = true, size
	s.reserved += size
	s.peak = max(s.peak, s.rows+s.reserved)
	s.inflight++
	go s.fetch(s.ctx, q, src.idx, src.link, src.nextTok, size)
}

// fetch runs in its own goroutine: one store call (retried by the client's
// store when throttled) and the decoding of its rows. A panic in either is
// the collection's error, not the process's end.
func (s *scheduler) fetch(ctx context.Context, q store.Query, idx int, l, tok string, size int) {
	f := &fetched{src: idx, ctx: ctx, tok: tok, size: size}
	defer func() {
		if r := recover(); r != nil {
			f.err = fmt.Errorf("router: query on %s: panic: %v", l, r)
		}
		s.results <- f // buffered for every source: never blocks
	}()
	scope := s.scope
	if s.keys != nil {
		var err error
		if scope, err = s.keys.Key(ctx, s.st, l, scope); err != nil {
			f.err = err
			return
		}
	}
	page, err := s.st.Query(ctx, l, q, &store.QueryOptions{PartitionKey: scope, PageSize: size, Continuation: tok})
	if err != nil {
		f.err = err
		return
	}
	f.after = page.Continuation
	f.n = len(page.Items)
	if err := s.m.decode(f, page.Items); err != nil {
		f.err = fmt.Errorf("router: query on %s returned a row the merge cannot read: %w", l, err)
	}
}

// waitAny waits for a fetch to finish, and files every other finished
// one too.
func (s *scheduler) waitAny(ctx context.Context) error {
	s.dispatch()
	if s.inflight == 0 {
		return errors.New("router: internal error: the query waits for a collection it does not read")
	}
	var f *fetched
	select {
	case f = <-s.results:
	case <-ctx.Done():
		return fmt.Errorf("router: query: %w", ctx.Err())
	}
	for {
		if err := s.receive(ctx, f); err != nil {
			return err
		}
		select {
		case f = <-s.results:
		default:
			return nil
		}
	}
}

// waitFor waits for fetches until cond holds.
func (s *scheduler) waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		if err := s.waitAny(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitSource waits until src has a row or will give none.
func (s *scheduler) waitSource(ctx context.Context, src *source) error {
	return s.waitFor(ctx, func() bool { return src.cur != nil || s.exhausted(src) })
}

// receive files the page of a finished fetch.
func (s *scheduler) receive(ctx context.Context, f *fetched) error {
	src := s.srcs[f.src]
	s.inflight--
	s.reserved -= src.reserved
	src.pending, src.reserved = false, 0
	if f.err != nil {
		switch {
		case f.ctx != ctx && f.ctx.Err() != nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)):
			return nil // a read-ahead of an earlier call, cancelled with it: fetch again
		case ctx.Err() != nil:
			return fmt.Errorf("router: query: %w", ctx.Err())
		case !s.partial:
			return f.err
		}
		src.failed = f.err
		return nil
	}
	skip := src.skip
	src.skip, src.size = 0, 0
	if src.check {
		src.got = rowsDigest(f, min(skip, f.n), src.got)
	}
	if skip > f.n {
		if f.after == "" {
			return badToken("%s returned %d rows where the token skips %d: the collection changed since the token was issued", src.link, f.n, skip)
		}
		// A page shorter than the rows to skip (a store may cut pages by
		// bytes, or at will): skip on into the next one. The position
		// recorded for tokens stays the one being skipped from.
		src.nextTok, src.skip = f.after, skip-f.n
		return nil
	}
	if src.check {
		src.check = false
		if src.got != src.want {
			// The store's page is not the one the token counted in (its
			// cursor is gone and documents before the position were
			// written or deleted): skipping as many rows would skip or
			// repeat some.
			return badToken("the rows of %s before its position changed since the token was issued (the store could not resume the page it was read from); run the query again from its first page", src.link)
		}
	}
	src.nextTok, src.end = f.after, f.after == ""
	if src.probing {
		src.probing = false
		if f.n >= s.probeK || f.after != "" {
			// The probe may have cut the answer short: the rest comes from
			// the full query, run from its start past the rows the probe
			// gave, when the merge needs it (a token written meanwhile
			// records the same).
			f.then = &srcState{state: srcAt, skip: f.n, sum: rowsDigest(f, f.n, digestBasis)}
			src.nextTok, src.end, src.lazy, src.skip = "", false, true, f.n
			src.check, src.want, src.got = true, f.then.sum, digestBasis
		}
	}
	if skip == f.n { // nothing left in this page
		if src.cur == nil {
			src.pos = after(f)
		}
		return nil
	}
	s.rows += f.n
	s.peak = max(s.peak, s.rows+s.reserved) // a store may return more than asked
	if src.cur == nil {
		src.cur, src.curPos = f, skip
	} else {
		src.next = f
	}
	return nil
}

// position returns where a source stands, for a continuation token: at the
// row being consumed (the page's token, its size and the row's index),
// finished, failed, or past its last page.
func (s *scheduler) position(src *source) srcState {
	switch {
	case src.failed != nil:
		return srcState{state: srcFailed}
	case src.cur != nil:
		return srcState{state: srcAt, tok: src.cur.tok, size: src.cur.size, skip: src.curPos, sum: rowsDigest(src.cur, src.curPos, digestBasis)}
	}
	return src.pos
}

// restore puts a source where a token says it stood.
func (s *scheduler) restore(src *source, st srcState) {
	switch st.state {
	case srcAt:
		src.pos, src.nextTok, src.skip, src.size = st, st.tok, st.skip, st.size
		// A position at the start of a page skips nothing: nothing to check.
		src.check, src.want, src.got = st.skip > 0, st.sum, digestBasis
	case srcDone:
		src.pos, src.end = st, true
	}
}

// probeFor sets up probing, when it pays: an ORDER BY whose merge gives
// at most limit rows (TOP, or OFFSET + LIMIT) over many collections needs
// only a few rows from most of them, yet each collection asked for the
// query as written computes, writes and returns up to limit rows of its
// own. Each collection is first asked for the same query cut to a few
// rows (twice an even share of limit and four more, at most a page of the
// budget); only a collection whose probe came back full is asked for the
// rest (the full query, past the rows the probe gave), and only when the
// merge reaches its last probed row. This relies on a collection giving
// equal sort keys in the same order whatever the query's TOP, as the
// embedded store and Cosmos DB do. It costs one parse and format of the
// query text; a query it cannot rewrite runs as written.
func (s *scheduler) probeFor(limit int) {
	n := len(s.srcs)
	k := min(2*((limit+n-1)/n)+4, s.reqSize)
	if n < 2 || k >= limit {
		return
	}
	q, err := query.Parse(s.sq.Text)
	if err != nil {
		return
	}
	cut := &query.Literal{Value: float64(k)}
	switch {
	case q.Top != nil:
		q.Top = cut
	case q.Limit != nil:
		q.Limit = cut // the plan's OFFSET is 0: the merge applies the query's
	default:
		return
	}
	s.probe = store.Query{Text: query.FormatQuery(q), Parameters: s.sq.Parameters}
	s.probeK = k
	s.markProbing()
}

// markProbing marks the collections a probe asks first, once probeFor set
// one: all but those evaluated whole by the router.
func (s *scheduler) markProbing() {
	if s.probeK <= 0 {
		return
	}
	view, _ := s.st.(*ownedView)
	for _, src := range s.srcs {
		// A collection shared during a reshard is evaluated whole by the
		// router (ownedView), its results cached by query text: a probe
		// there would evaluate it twice and save nothing.
		src.probing = view == nil || !view.shared[strings.Trim(src.link, "/")]
	}
}

// readThrough makes the scheduler, before its first fetch, read through
// st (another placement's view, see Client.viewFor).
func (s *scheduler) readThrough(st store.Store) {
	s.st = st
	s.markProbing()
}

// digestBasis is FNV-64a's offset basis: the digest of no rows.
const digestBasis uint64 = 14695981039346656037

// rowsDigest continues h, an FNV-64a digest, over the first n rows of a
// page, each by its identity: a row that is an object with a string "id"
// by that id (so a replace that keeps a document's place does not change
// it), any other row by its JSON; an empty row (no result) and a page
// without user rows (partial aggregates) add nothing. A token records the
// digest of the rows its position skips, and a resume checks it against
// the page it fetches again: a store that re-runs the query on a changed
// collection (its cursor evicted, or a service without one) can shift a
// page, and skipping a count of rows would then skip or repeat documents.
// Cost: a scan for "id" in each row skipped, when a token is written or
// read, never per row merged.
func rowsDigest(f *fetched, n int, h uint64) uint64 {
	if f.rows == nil {
		return h
	}
	mix := func(b []byte) {
		for _, c := range b {
			h ^= uint64(c)
			h *= 1099511628211
		}
	}
	for _, raw := range f.rows[:n] {
		if raw == nil {
			continue
		}
		if id := gjson.GetBytes(raw, "id"); id.Type == gjson.String { // only an object has members
			mix([]byte{'i'})
			mix([]byte(id.Str))
		} else {
			mix([]byte{'r'})
			mix(raw)
		}
		mix([]byte{0})
	}
	return h
}
