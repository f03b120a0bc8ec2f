package query

import (
	"container/heap"
	"context"
	"fmt"
	"iter"
)

// The reference merge: the collections' results merged by a Plan as one
// collection holding every document would answer. The router runs its own
// streaming merge (heap, continuation tokens, bounded buffering) from the
// exported pieces (CompareRows, Merger, NewDistinctFilter, Encode); this
// one, built from the same pieces, is what the differential, conformance,
// regression, shape and plan tests check the planner with, and the answer
// the router must agree with.

// referenceMerge merges the collections' result streams (decoded rows of
// the plan's per-collection Query, one stream per collection in collection
// order) into the results the user sees, with the client-side DISTINCT,
// OFFSET and LIMIT applied:
//
//   - Stream: the streams are concatenated in collection order.
//   - OrderBy: a k-way merge by CompareRows holding one row per collection
//     (a heap of stream heads); each merged row is projected to its payload.
//   - Aggregate: every partial row is combined by a Merger; the groups are
//     yielded once all streams are read.
//   - Nested: the streams merged by the plan's Inner plan, then Outer over
//     those results.
//
// It reads a stream only as far as it needs: once LIMIT is satisfied it
// stops reading. A malformed row ends the merge with an error (the second
// value of the pair).
func referenceMerge(p *Plan, parts []iter.Seq[any]) iter.Seq2[any, error] {
	return merge(p, len(parts), func(i int) iter.Seq[any] { return parts[i] }, func(i int) (func() (any, bool), func()) {
		return iter.Pull(parts[i])
	})
}

// referenceMergeAll merges whole result lists, one per collection in
// collection order, as referenceMerge does. It returns an empty, non-nil
// slice for no results.
func referenceMergeAll(p *Plan, parts [][]any) ([]any, error) {
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
	for v, err := range merge(p, len(parts), func(i int) iter.Seq[any] { return sliceSeq(parts[i], nil) }, pull) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// sortKeys returns the sort keys of an OrderBy row.
func sortKeys(p *Plan, row any) ([]any, error) {
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

// payload returns what the user sees of an OrderBy row.
func payload(row any) any {
	if m, ok := row.(map[string]any); ok {
		if v, ok := m[payloadProp]; ok {
			return v
		}
	}
	return Undefined
}

// merge is the reference merge over n collections given as sequences (seq)
// and, for the k-way merge, as pull functions (pull returns next and stop).
func merge(p *Plan, n int, seq func(int) iter.Seq[any], pull func(int) (func() (any, bool), func())) iter.Seq2[any, error] {
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
			res, err := m.Results()
			if err != nil {
				fail(err)
				return
			}
			for _, v := range res {
				if !lim.emit(v, nil) {
					return
				}
			}
		case OrderBy:
			mergeOrdered(p, n, pull, lim, fail)
		case Nested:
			// The FROM subquery's results, merged by its own plan, then the
			// query over them.
			var rows []any
			for v, err := range merge(p.Inner, n, seq, pull) {
				if err != nil {
					fail(err)
					return
				}
				rows = append(rows, v)
			}
			if err := p.Outer(context.Background(), sliceSeq(rows, nil), func(v any) bool { return lim.emit(v, nil) }); err != nil {
				fail(err)
			}
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
func mergeOrdered(p *Plan, n int, pull func(int) (func() (any, bool), func()), lim *limiter, fail func(error)) {
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
		keys, err := sortKeys(p, row)
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
		v := payload(hd.row)
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
