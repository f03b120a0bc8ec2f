package router

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/docshard/docshard/internal/queryhook"
	"github.com/docshard/docshard/query"
)

// The mergers: one per way a plan's rows combine (query.PlanKind, and
// DISTINCT without ORDER BY). Each reads rows from the scheduler's sources
// and gives the results the user sees, DISTINCT applied; the pager applies
// OFFSET, LIMIT and page sizes, the same for all.

// execMode is how a pager merges its plan's rows; tokens record it.
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
	// modeNested: a query over a FROM subquery that looks across
	// collections (query.Nested), computed whole; the token records how
	// many results were given.
	modeNested
)

// merger combines the rows of one query's collections.
type merger interface {
	// mode is what the token records.
	mode() execMode
	// byPosition reports whether a resumed pager starts each collection
	// where the token says (stream, ordered) rather than recomputing the
	// results and skipping those already given (distinct, aggregate).
	byPosition() bool
	// decode prepares a page's rows (f.n of them) for the merge. It runs
	// in the fetching goroutine and reads only what never changes.
	decode(f *fetched, items []json.RawMessage) error
	// needed returns a source the merge cannot go on without, or nil.
	needed() *source
	// next returns the next result, ok false at the end.
	next(ctx context.Context) (result json.RawMessage, ok bool, err error)
	// done reports whether next has no more results.
	done() bool
	// save and restore carry the merger's own state in a token.
	save(t *tokenState)
	restore(t *tokenState) error
}

// newMerger returns the merger for a plan.
func newMerger(plan *query.Plan, nkeys int, s *scheduler) merger {
	switch {
	case plan.Kind == query.Nested:
		return &nestedMerger{plan: plan, inner: newMerger(plan.Inner, plan.Inner.SortKeys(), s)}
	case plan.Kind == query.Aggregate:
		return &aggregateMerger{s: s, plan: plan}
	case plan.Kind == query.OrderBy:
		m := &orderedMerger{s: s, plan: plan, nkeys: nkeys}
		if plan.Distinct {
			m.seen = map[string]struct{}{}
		}
		return m
	case plan.Distinct:
		return &distinctMerger{s: s, seen: map[string]struct{}{}}
	}
	return &streamMerger{s: s}
}

// noRunState is embedded by the mergers that keep no state of their own in
// tokens.
type noRunState struct{}

func (noRunState) save(*tokenState)          {}
func (noRunState) restore(*tokenState) error { return nil }

// streamMerger gives rows in any collection order, staying on one
// collection while it has rows.
type streamMerger struct {
	noRunState
	s *scheduler
}

func (*streamMerger) mode() execMode   { return modeStream }
func (*streamMerger) byPosition() bool { return true }
func (m *streamMerger) done() bool     { return m.s.allExhausted() }

func (*streamMerger) decode(f *fetched, items []json.RawMessage) error {
	f.rows = items
	return nil
}

// needed asks for one collection at a time when nothing is buffered or in
// flight; read-ahead does the rest.
func (m *streamMerger) needed() *source {
	s := m.s
	if s.inflight > 0 {
		return nil
	}
	for _, src := range s.srcs {
		if src.cur != nil {
			return nil
		}
	}
	for _, src := range s.srcs {
		if s.fetchable(src) {
			return src
		}
	}
	return nil
}

func (m *streamMerger) next(ctx context.Context) (json.RawMessage, bool, error) {
	s := m.s
	for {
		for _, src := range s.srcs {
			if src.cur != nil {
				return s.consume(src).raw, true, nil
			}
		}
		if s.allExhausted() {
			return nil, false, nil
		}
		if err := s.waitAny(ctx); err != nil {
			return nil, false, err
		}
	}
}

// distinctMerger gives DISTINCT results without ORDER BY, reading the
// collections one after another, so the order is deterministic and a
// resumed pager finds the same results again.
type distinctMerger struct {
	noRunState
	s    *scheduler
	ci   int // the collection being read
	seen map[string]struct{}
	held int64 // bytes the seen set holds, as estimated
}

// distinctBudget bounds the memory a DISTINCT merge's set of results seen
// may hold (estimated: each key's bytes and a map entry), as the engine
// bounds its own DISTINCT (query.DefaultMemoryBudget); past it the query
// fails with a *query.LimitError.
var distinctBudget int64 = query.DefaultMemoryBudget

// distinctEntryBytes estimates a map entry of the seen set besides its key.
const distinctEntryBytes = 48

func (*distinctMerger) mode() execMode   { return modeDistinct }
func (*distinctMerger) byPosition() bool { return false }
func (m *distinctMerger) done() bool     { return m.s.allExhausted() }

func (*distinctMerger) decode(f *fetched, items []json.RawMessage) error {
	f.rows = items
	var err error
	f.dkeys, err = distinctKeys(items)
	return err
}

func (m *distinctMerger) needed() *source {
	if m.ci < len(m.s.srcs) {
		if src := m.s.srcs[m.ci]; src.cur == nil && m.s.fetchable(src) {
			return src
		}
	}
	return nil
}

func (m *distinctMerger) next(ctx context.Context) (json.RawMessage, bool, error) {
	s := m.s
	for m.ci < len(s.srcs) {
		src := s.srcs[m.ci]
		if src.cur != nil {
			r := s.consume(src)
			if _, dup := m.seen[r.dkey]; dup {
				continue
			}
			if m.held += int64(len(r.dkey)) + distinctEntryBytes; m.held > distinctBudget {
				return nil, false, fmt.Errorf("router: DISTINCT across collections: %w",
					&query.LimitError{Limit: "memory held by DISTINCT across collections (bytes, estimated)", Max: distinctBudget, Got: m.held, Pos: -1})
			}
			m.seen[r.dkey] = struct{}{}
			return r.raw, true, nil
		}
		if s.exhausted(src) {
			m.ci++
			continue
		}
		if err := s.waitSource(ctx, src); err != nil {
			return nil, false, err
		}
	}
	return nil, false, nil
}

// orderedMerger is the k-way merge of ORDER BY rows: a heap holding each
// collection's current row, ordered by the plan's sort keys, ties broken by
// collection so a merge resumed from the same positions gives the same
// sequence. With DISTINCT, equal results have equal sort keys, so only the
// current run of equal keys is remembered (and carried in tokens as
// hashes).
type orderedMerger struct {
	s     *scheduler
	plan  *query.Plan
	nkeys int // sort keys per row

	heap  []*source
	ready bool
	fix   *source // the heap's top, consumed; reposition before the next row

	seen     map[string]struct{} // DISTINCT: the current run's results
	seeded   map[uint64]struct{} // the run's results before the token
	seedList []uint64
	run      []uint64 // hashes of the current run's results
	lastKeys []any
	haveLast bool
}

func (*orderedMerger) mode() execMode   { return modeOrdered }
func (*orderedMerger) byPosition() bool { return true }

// done: the sources in the heap hold rows, so are not exhausted; the one
// taken from last is exhausted only if it is done.
func (m *orderedMerger) done() bool { return m.s.allExhausted() }

func (m *orderedMerger) save(t *tokenState) {
	if m.plan.Distinct {
		t.run = append(append([]uint64(nil), m.seedList...), m.run...)
	}
}

func (m *orderedMerger) restore(t *tokenState) error {
	if len(t.run) == 0 {
		return nil
	}
	if !m.plan.Distinct {
		return badToken("malformed state")
	}
	m.seeded = make(map[uint64]struct{}, len(t.run))
	for _, h := range t.run {
		m.seeded[h] = struct{}{}
	}
	m.seedList = t.run
	return nil
}

func (m *orderedMerger) decode(f *fetched, items []json.RawMessage) error {
	f.rows = make([]json.RawMessage, len(items))
	f.keys = make([][]any, len(items))
	n := m.nkeys
	slab := make([]any, len(items)*n) // every row's keys in one allocation
	for i, it := range items {
		// The rows are read-only (store.Page), so strings taken from them
		// may alias their bytes.
		keys := slab[i*n : (i+1)*n : (i+1)*n]
		payload, err := orderedRow(it, keys)
		if err != nil {
			return err
		}
		f.keys[i], f.rows[i] = keys, payload
	}
	if m.plan.Distinct {
		var err error
		f.dkeys, err = distinctKeys(f.rows)
		return err
	}
	return nil
}

// needed: the heap needs a row from every collection that has one.
func (m *orderedMerger) needed() *source { return m.s.starved() }

func (m *orderedMerger) next(ctx context.Context) (json.RawMessage, bool, error) {
	for {
		r, ok, err := m.nextRow(ctx)
		if err != nil || !ok {
			return nil, ok, err
		}
		// An undefined payload is no result; DISTINCT keeps first results.
		if r.raw == nil || (m.plan.Distinct && !m.first(r)) {
			continue
		}
		return r.raw, true, nil
	}
}

// nextRow takes the row at the top of the heap.
func (m *orderedMerger) nextRow(ctx context.Context) (rowRef, bool, error) {
	s := m.s
	if !m.ready {
		err := s.waitFor(ctx, func() bool {
			for _, src := range s.srcs {
				if src.cur == nil && !s.exhausted(src) {
					return false
				}
			}
			return true
		})
		if err != nil {
			return rowRef{}, false, err
		}
		for _, src := range s.srcs {
			if src.cur != nil {
				m.heap = append(m.heap, src)
			}
		}
		for i := len(m.heap)/2 - 1; i >= 0; i-- {
			m.down(i)
		}
		m.ready = true
	}
	if src := m.fix; src != nil {
		m.fix = nil
		if src.cur == nil && !s.exhausted(src) {
			if err := s.waitSource(ctx, src); err != nil {
				m.fix = src
				return rowRef{}, false, err
			}
		}
		if src.cur != nil {
			m.down(0)
		} else {
			last := len(m.heap) - 1
			m.heap[0] = m.heap[last]
			m.heap = m.heap[:last]
			if last > 0 {
				m.down(0)
			}
		}
	}
	if len(m.heap) == 0 {
		return rowRef{}, false, nil
	}
	src := m.heap[0]
	r := s.consume(src)
	m.fix = src
	return r, true, nil
}

func (m *orderedMerger) less(a, b *source) bool {
	return m.plan.CompareRows(a.cur.keys[a.curPos], a.idx, b.cur.keys[b.curPos], b.idx) < 0
}

func (m *orderedMerger) down(i int) {
	h := m.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && m.less(h[r], h[l]) {
			c = r
		}
		if !m.less(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// first applies DISTINCT: it reports whether the row is new in the current
// run of equal sort keys.
func (m *orderedMerger) first(r rowRef) bool {
	if m.haveLast && m.plan.CompareKeys(m.lastKeys, r.keys) != 0 {
		clear(m.seen)
		m.seeded, m.seedList, m.run = nil, nil, m.run[:0]
	}
	m.lastKeys, m.haveLast = r.keys, true
	if _, dup := m.seen[r.dkey]; dup {
		return false
	}
	h := runHash(r.dkey)
	if _, dup := m.seeded[h]; dup {
		return false
	}
	m.run = append(m.run, h)
	m.seen[r.dkey] = struct{}{}
	return true
}

func runHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// aggregateMerger combines partial aggregates (and GROUP BY groups) from
// every collection once all have answered, then gives the merged results.
type aggregateMerger struct {
	noRunState
	s        *scheduler
	plan     *query.Plan
	results  []any // merged, DISTINCT applied
	pos      int
	computed bool
}

func (*aggregateMerger) mode() execMode   { return modeAggregate }
func (*aggregateMerger) byPosition() bool { return false }
func (m *aggregateMerger) done() bool     { return m.computed && m.pos >= len(m.results) }

func (*aggregateMerger) decode(f *fetched, items []json.RawMessage) error {
	f.vals = make([]any, len(items))
	for i, it := range items {
		v, err := decodeJSON(it)
		if err != nil {
			return err
		}
		f.vals[i] = v
	}
	return nil
}

// needed: every collection's partial rows are needed.
func (m *aggregateMerger) needed() *source { return m.s.starved() }

func (m *aggregateMerger) next(ctx context.Context) (json.RawMessage, bool, error) {
	if !m.computed {
		if err := m.compute(ctx); err != nil {
			return nil, false, err
		}
	}
	if m.pos >= len(m.results) {
		return nil, false, nil
	}
	v := m.results[m.pos]
	m.pos++
	b, err := m.plan.Encode(v)
	if err != nil {
		return nil, false, fmt.Errorf("router: %w", err)
	}
	return b, true, nil
}

// compute reads every partial row and merges them.
func (m *aggregateMerger) compute(ctx context.Context) error {
	s := m.s
	mg := m.plan.NewMerger()
	for {
		for _, src := range s.srcs {
			for src.cur != nil {
				if err := mg.Add(s.consume(src).val); err != nil {
					return fmt.Errorf("router: %s: %w", src.link, err)
				}
			}
		}
		if s.allExhausted() {
			break
		}
		if err := s.waitAny(ctx); err != nil {
			return err
		}
	}
	res, err := mg.Results()
	if err != nil {
		return fmt.Errorf("router: merging the aggregates: %w", err)
	}
	if m.plan.Distinct {
		df := query.NewDistinctFilter()
		kept := res[:0]
		for _, v := range res {
			if df.First(v) {
				kept = append(kept, v)
			}
		}
		res = kept
	}
	m.results, m.computed = res, true
	return nil
}

// nestedMerger gives the results of a query whose FROM subquery looks
// across collections (query.Nested): the collections' rows merge by the
// subquery's own plan (the inner merger, with the subquery's OFFSET and
// LIMIT applied here) into the subquery's results, which the query reads
// as they come (Plan.Outer, on the client). It holds the query's results
// until the last is given, within nestedBudget (the query's own sorting,
// grouping and DISTINCT have the engine's budgets); a resumed pager
// recomputes them and skips those already given.
type nestedMerger struct {
	noRunState
	plan     *query.Plan
	inner    merger
	results  []json.RawMessage
	held     int64 // bytes results hold, as estimated
	pos      int
	computed bool
}

// nestedBudget bounds the memory a nested merge's results may hold
// (estimated: each result's bytes and a slice entry), as the engine bounds
// its own steps (query.DefaultMemoryBudget); past it the query fails with a
// *query.LimitError.
var nestedBudget int64 = query.DefaultMemoryBudget

func (*nestedMerger) mode() execMode   { return modeNested }
func (*nestedMerger) byPosition() bool { return false }
func (m *nestedMerger) done() bool     { return m.computed && m.pos >= len(m.results) }

func (m *nestedMerger) decode(f *fetched, items []json.RawMessage) error {
	return m.inner.decode(f, items)
}

func (m *nestedMerger) needed() *source { return m.inner.needed() }

func (m *nestedMerger) next(ctx context.Context) (json.RawMessage, bool, error) {
	if !m.computed {
		if err := m.compute(ctx); err != nil {
			return nil, false, err
		}
	}
	if m.pos >= len(m.results) {
		return nil, false, nil
	}
	m.pos++
	return m.results[m.pos-1], true, nil
}

// compute runs the query over the subquery's merged results, read to the
// end as the query asks for them.
func (m *nestedMerger) compute(ctx context.Context) error {
	var innerErr, err error
	rows := func(yield func(any) bool) {
		skip, left := m.plan.Inner.Offset, m.plan.Inner.Limit
		for left != 0 {
			raw, ok, err := m.inner.next(ctx)
			if err != nil || !ok {
				innerErr = err
				return
			}
			if skip > 0 {
				skip--
				continue
			}
			v, err := decodeJSON(raw)
			if err != nil {
				innerErr = fmt.Errorf("router: a result of the FROM subquery: %w", err)
				return
			}
			if left > 0 {
				left--
			}
			if !yield(v) {
				return
			}
		}
	}
	outerErr := m.plan.Outer(ctx, rows, func(v any) bool {
		b, encErr := m.plan.Encode(v)
		if encErr != nil {
			err = fmt.Errorf("router: %w", encErr)
			return false
		}
		if m.held += int64(len(b)) + 24; m.held > nestedBudget {
			err = fmt.Errorf("router: a FROM subquery merged across collections: %w",
				&query.LimitError{Limit: "memory held by the results of a query over a FROM subquery merged across collections (bytes, estimated)", Max: nestedBudget, Got: m.held, Pos: -1})
			return false
		}
		m.results = append(m.results, b)
		return true
	})
	switch {
	case innerErr != nil:
		return innerErr
	case err != nil:
		return err
	case outerErr != nil:
		return fmt.Errorf("router: the query over its FROM subquery: %w", outerErr)
	}
	m.computed = true
	return nil
}

// distinctKeys returns queryhook.DistinctKey of each row; a nil row (an
// undefined ORDER BY payload) has none.
func distinctKeys(rows []json.RawMessage) ([]string, error) {
	out := make([]string, len(rows))
	for i, r := range rows {
		if r == nil {
			continue
		}
		v, err := decodeJSON(r)
		if err != nil {
			return nil, err
		}
		out[i] = queryhook.DistinctKey(v)
	}
	return out, nil
}

func decodeJSON(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}
