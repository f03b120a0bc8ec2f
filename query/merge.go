package query

import (
	"container/heap"
	"fmt"
	"iter"
)

// SortKeys returns the sort keys of an OrderBy row.
func (p *Plan) SortKeys(row any) ([]any, error) {
	m, ok := row.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("query: an ORDER BY row is an object, got %s", typeName(row))
	}
	wrapped, ok := m[keysProp].([]any)
	if !ok || len(wrapped) != len(p.desc) {
		return nil, fmt.Errorf("query: an ORDER BY row lacks its %d sort keys", len(p.desc))
	}
	return unwrapAll(wrapped)
}

// Payload returns what the user sees of an OrderBy row.
func (p *Plan) Payload(row any) any {
	if m, ok := row.(map[string]any); ok {
		if v, ok := m[payloadProp]; ok {
			return v
		}
	}
	return Undefined
}

// CompareKeys orders two rows' sort keys as ORDER BY does: Cosmos DB's
// order across types (undefined, null, booleans, numbers, strings), each key
// ascending or descending. Ties are left to the caller, which breaks them by
// collection so a merge is deterministic.
func (p *Plan) CompareKeys(a, b []any) int { return compareKeys(a, b, p.desc) }

// DistinctKey returns a text equal for equal results (numbers by value,
// objects whatever their key order), for DISTINCT. It costs one canonical
// encoding of v.
func DistinctKey(v any) string { return canonical(v) }

func unwrapAll(wrapped []any) ([]any, error) {
	out := make([]any, len(wrapped))
	for i, w := range wrapped {
		m, ok := w.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("query: a wrapped value is an object, got %s", typeName(w))
		}
		if v, ok := m[itemProp]; ok {
			out[i] = v
		} else {
			out[i] = Undefined
		}
	}
	return out, nil
}

// Merger combines the partial aggregate rows of an Aggregate plan. It holds
// one accumulator set per group (a single one without GROUP BY), so its
// memory grows with the number of groups, not of rows. Not safe for
// concurrent use.
type Merger struct {
	p      *Plan
	groups map[string]*mergedGroup
	order  []*mergedGroup
}

type mergedGroup struct {
	keys []any
	accs []partialAcc
}

// partialAcc merges one aggregate's partial values.
type partialAcc struct {
	name  string
	count float64
	sum   float64
	bad   bool
	mm    minMaxAcc
}

// NewMerger returns an empty merger. Without GROUP BY the result has one
// row even when no collection contributes.
func (p *Plan) NewMerger() *Merger {
	m := &Merger{p: p, groups: map[string]*mergedGroup{}}
	return m
}

func (m *Merger) group(keys []any) *mergedGroup {
	id := canonical(keys)
	g, ok := m.groups[id]
	if !ok {
		g = &mergedGroup{keys: keys, accs: make([]partialAcc, len(m.p.aggs))}
		for i, a := range m.p.aggs {
			g.accs[i].name = a.name
			g.accs[i].mm.max = a.name == "MAX"
		}
		m.groups[id] = g
		m.order = append(m.order, g)
	}
	return g
}

// Add merges one partial row from a collection (a decoded row of
// Plan.Query's results). A row of the wrong shape is an error.
func (m *Merger) Add(row any) error {
	obj, ok := row.(map[string]any)
	if !ok {
		return fmt.Errorf("query: a partial aggregate row is an object, got %s", typeName(row))
	}
	gw, ok1 := obj[groupProp].([]any)
	aw, ok2 := obj[aggProp].([]any)
	if !ok1 || !ok2 {
		return fmt.Errorf("query: a partial aggregate row lacks %q or %q", groupProp, aggProp)
	}
	keys, err := unwrapAll(gw)
	if err != nil {
		return err
	}
	parts, err := unwrapAll(aw)
	if err != nil {
		return err
	}
	want := 0
	for _, a := range m.p.aggs {
		want += len(partialNames[a.name])
	}
	if len(parts) != want || len(keys) != m.p.groupKeys {
		return fmt.Errorf("query: a partial aggregate row has %d group keys and %d values, want %d and %d", len(keys), len(parts), m.p.groupKeys, want)
	}
	g := m.group(keys)
	i := 0
	next := func() any {
		i++
		return parts[i-1]
	}
	for k := range g.accs {
		a := &g.accs[k]
		switch a.name {
		case "COUNT":
			if n, ok := next().(float64); ok {
				a.count += n
			}
		case "SUM":
			if s, ok := next().(float64); ok {
				a.sum += s
			} else {
				a.bad = true
			}
		case "AVG":
			s, sok := next().(float64)
			n, _ := next().(float64)
			if !sok {
				a.bad = true
			}
			a.sum += s
			a.count += n
		default:
			v := next()
			if bad, _ := next().(float64); bad > 0 {
				a.bad = true
			}
			a.mm.add(v)
		}
	}
	return nil
}

// Results returns the merged rows as the user sees them, before DISTINCT,
// OFFSET and LIMIT.
func (m *Merger) Results() []any {
	groups := m.order
	if len(groups) == 0 && !m.p.groupBy {
		groups = []*mergedGroup{m.group([]any{})}
	}
	sortGroups(groups, func(g *mergedGroup) []any { return g.keys })
	var out []any
	for _, g := range groups {
		vals := make([]any, len(g.accs))
		for i, a := range g.accs {
			switch a.name {
			case "COUNT":
				vals[i] = a.count
			case "SUM":
				if a.bad {
					vals[i] = Undefined
				} else {
					vals[i] = finite(a.sum)
				}
			case "AVG":
				if a.bad || a.count == 0 {
					vals[i] = Undefined
				} else {
					vals[i] = finite(a.sum / a.count)
				}
			default:
				if a.bad {
					vals[i] = Undefined
				} else {
					vals[i] = a.mm.result()
				}
			}
		}
		if v := m.p.final(&frame{vals: []any{g.keys, vals}}); !isUndefined(v) {
			out = append(out, v)
		}
	}
	return out
}

// CompareRows orders two ORDER BY rows from different collections for a
// k-way merge: by their sort keys (CompareKeys), ties broken by collection
// index, so the merged order is deterministic and a merge resumed from the
// same per-collection positions yields the same sequence. keys are what
// SortKeys returned; coll is the collection's index in the fan-out.
func (p *Plan) CompareRows(aKeys []any, aColl int, bKeys []any, bColl int) int {
	if c := compareKeys(aKeys, bKeys, p.desc); c != 0 {
		return c
	}
	return cmpInt(aColl, bColl)
}

// Encode writes one merged result (from Merge, MergeAll, Merger.Results or
// Payload) as JSON the way a single collection would: the properties of
// objects the query builds in the order the query names them, other
// objects with sorted keys. It costs one pass over v.
func (p *Plan) Encode(v any) ([]byte, error) {
	return appendShaped(make([]byte, 0, 64), v, p.shape)
}

// DistinctFilter remembers the results it has seen, by value (numbers by
// value, objects whatever their key order), for the client-side DISTINCT.
// It keeps one canonical text per distinct result. The zero value is not
// usable; make one with NewDistinctFilter. Not safe for concurrent use.
type DistinctFilter struct{ seen map[string]struct{} }

// NewDistinctFilter returns an empty filter.
func NewDistinctFilter() *DistinctFilter {
	return &DistinctFilter{seen: map[string]struct{}{}}
}

// First reports whether v is seen for the first time, and remembers it.
// It costs one canonical encoding of v.
func (d *DistinctFilter) First(v any) bool {
	k := canonical(v)
	if _, ok := d.seen[k]; ok {
		return false
	}
	d.seen[k] = struct{}{}
	return true
}

// Merge merges the collections' result streams (decoded rows of the plan's
// per-collection Query, one stream per collection in collection order) into
// the results the user sees, as one collection holding every document would
// answer, with the client-side DISTINCT, OFFSET and LIMIT applied:
//
//   - Stream: the streams are concatenated in collection order.
//   - OrderBy: a k-way merge by CompareRows holding one row per collection
//     (a heap of stream heads); each merged row is projected to its payload.
//   - Aggregate: every partial row is combined by a Merger; the groups are
//     yielded once all streams are read.
//
// Merge reads a stream only as far as it needs: once LIMIT is satisfied it
// stops reading. A malformed row ends the merge with an error (the second
// value of the pair).
func (p *Plan) Merge(parts []iter.Seq[any]) iter.Seq2[any, error] {
	return p.merge(len(parts), func(i int) iter.Seq[any] { return parts[i] }, func(i int) (func() (any, bool), func()) {
		return iter.Pull(parts[i])
	})
}

// merge is Merge over n collections given as sequences (seq) and, for the
// k-way merge, as pull functions (pull returns next and stop).
func (p *Plan) merge(n int, seq func(int) iter.Seq[any], pull func(int) (func() (any, bool), func())) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		if p.Limit == 0 {
			return
		}
		if p.SingleCollection && n > 1 {
			n = 1
		}
		stopped := false
		lim := newLimiter(p.Distinct, p.Offset, p.Limit, func(v any, _ []byte) bool {
			if !yield(v, nil) {
				stopped = true
				return false
			}
			return true
		})
		fail := func(err error) {
			if !stopped {
				stopped = true
				yield(nil, err)
			}
		}
		switch p.Kind {
		case Stream:
			for i := range n {
				for v := range seq(i) {
					if !lim.emit(v, nil) {
						return
					}
				}
			}
		case Aggregate:
			m := p.NewMerger()
			for i := range n {
				for row := range seq(i) {
					if err := m.Add(row); err != nil {
						fail(err)
						return
					}
				}
			}
			for _, v := range m.Results() {
				if !lim.emit(v, nil) {
					return
				}
			}
		case OrderBy:
			p.mergeOrdered(n, pull, lim, fail)
		}
	}
}

// head is one collection's next ORDER BY row in a k-way merge.
type head struct {
	row  any
	keys []any
	coll int
	next func() (any, bool)
}

type headHeap struct {
	p     *Plan
	heads []*head
}

func (h *headHeap) Len() int { return len(h.heads) }
func (h *headHeap) Less(i, j int) bool {
	a, b := h.heads[i], h.heads[j]
	return h.p.CompareRows(a.keys, a.coll, b.keys, b.coll) < 0
}
func (h *headHeap) Swap(i, j int) { h.heads[i], h.heads[j] = h.heads[j], h.heads[i] }
func (h *headHeap) Push(x any)    { h.heads = append(h.heads, x.(*head)) }
func (h *headHeap) Pop() any {
	x := h.heads[len(h.heads)-1]
	h.heads = h.heads[:len(h.heads)-1]
	return x
}

// mergeOrdered is the k-way merge of OrderBy streams: it holds one row per
// collection, so its memory does not grow with the results.
func (p *Plan) mergeOrdered(n int, pull func(int) (func() (any, bool), func()), lim *limiter, fail func(error)) {
	h := &headHeap{p: p}
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	// advance loads a collection's next row; false means it is exhausted
	// or failed.
	advance := func(hd *head) (bool, error) {
		row, ok := hd.next()
		if !ok {
			return false, nil
		}
		keys, err := p.SortKeys(row)
		if err != nil {
			return false, fmt.Errorf("collection %d: %w", hd.coll, err)
		}
		hd.row, hd.keys = row, keys
		return true, nil
	}
	for i := range n {
		next, stop := pull(i)
		stops = append(stops, stop)
		hd := &head{coll: i, next: next}
		ok, err := advance(hd)
		if err != nil {
			fail(err)
			return
		}
		if ok {
			h.heads = append(h.heads, hd)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		hd := h.heads[0]
		v := p.Payload(hd.row)
		ok, err := advance(hd)
		if err != nil {
			fail(err)
			return
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
		if isUndefined(v) {
			continue
		}
		if !lim.emit(v, nil) {
			return
		}
	}
}

// MergeAll merges whole result lists, one per collection in collection
// order, as Merge does: the reference the router's own streaming merge
// must agree with. Rows are decoded JSON values as the collections
// returned them. It returns an empty, non-nil slice for no results.
func (p *Plan) MergeAll(parts [][]any) ([]any, error) {
	seq := func(i int) iter.Seq[any] {
		return func(yield func(any) bool) {
			for _, v := range parts[i] {
				if !yield(v) {
					return
				}
			}
		}
	}
	// Slices need no coroutine (iter.Pull) to be read one row at a time.
	pull := func(i int) (func() (any, bool), func()) {
		pos := 0
		return func() (any, bool) {
			if pos >= len(parts[i]) {
				return nil, false
			}
			pos++
			return parts[i][pos-1], true
		}, func() {}
	}
	out := []any{}
	for v, err := range p.merge(len(parts), seq, pull) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
