package query

import (
	"fmt"
	"time"

	"github.com/docshard/docshard/internal/queryhook"
)

// CompareKeys orders two rows' sort keys as ORDER BY does: Cosmos DB's
// order across types (undefined, null, booleans, numbers, strings), each key
// ascending or descending. Ties are left to the caller, which breaks them by
// collection so a merge is deterministic.
func (p *Plan) CompareKeys(a, b []any) int { return compareKeys(a, b, p.desc) }

// CompareKeys orders two rows' sort values as ORDER BY does, each value
// ascending or descending as desc says (one per value), without a Plan:
// for a store that resumes an ORDER BY after a row's values.
func CompareKeys(a, b []any, desc []bool) int { return compareKeys(a, b, desc) }

func init() {
	// The router, the local evaluator and the embedded store need these;
	// a user does not (see internal/queryhook).
	queryhook.ReadsClock = func(q any) bool { return readsClock(q.(*Query)) }
	queryhook.BindClock = func(q any, now time.Time) bool { return bindClock(q.(*Query), now) }
	queryhook.DistinctKey = canonical
}

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
// memory grows with the number of groups, not of rows; past
// DefaultMemoryBudget (as estimated) Add fails with a *LimitError. Not safe for
// concurrent use.
type Merger struct {
	p      *Plan
	mem    budget // DefaultMemoryBudget for its groups
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
	m := &Merger{p: p, mem: budget{max: DefaultMemoryBudget}, groups: map[string]*mergedGroup{}}
	return m
}

func (m *Merger) group(keys []any) (*mergedGroup, error) {
	id := canonical(keys)
	g, ok := m.groups[id]
	if !ok {
		if err := m.mem.add(2*int64(len(id)) + mapEntryBytes + groupBytes + accBytes*int64(len(m.p.aggs))); err != nil {
			return nil, err
		}
		g = &mergedGroup{keys: keys, accs: make([]partialAcc, len(m.p.aggs))}
		for i, a := range m.p.aggs {
			g.accs[i].name = a.name
			g.accs[i].mm.max = a.name == "MAX"
		}
		m.groups[id] = g
		m.order = append(m.order, g)
	}
	return g, nil
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
	g, err := m.group(keys)
	if err != nil {
		return err
	}
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
// OFFSET and LIMIT, or the error that stopped computing them (a string
// result over MaxStringBytes: a *StringTooLongError), with no rows. It
// costs one final evaluation per group, after sorting the groups.
func (m *Merger) Results() (out []any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, evalError(r)
		}
	}()
	groups := m.order
	if len(groups) == 0 && !m.p.groupBy {
		one, _ := m.group([]any{}) // the first group: within any budget
		groups = []*mergedGroup{one}
	}
	sortGroups(groups, func(g *mergedGroup) []any { return g.keys })
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
	return out, nil
}

// CompareRows orders two ORDER BY rows from different collections for a
// k-way merge: by their sort keys (CompareKeys), ties broken by collection
// index, so the merged order is deterministic and a merge resumed from the
// same per-collection positions yields the same sequence. A row's keys are
// the "v" of each element of its "k" array, in order, and Undefined where an
// element has no "v"; coll is the collection's index in the fan-out.
func (p *Plan) CompareRows(aKeys []any, aColl int, bKeys []any, bColl int) int {
	if c := compareKeys(aKeys, bKeys, p.desc); c != 0 {
		return c
	}
	return cmpInt(aColl, bColl)
}

// Encode writes one merged result (a row of a Stream plan, the "p" payload
// of an OrderBy row, or one of Merger.Results' rows) as JSON the way a single
// collection would: the properties of objects the query builds in the
// order the query names them, other objects with sorted keys. It costs one
// pass over v.
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
