package query

import "sort"

// Accumulators for COUNT, SUM, AVG, MIN and MAX with Cosmos DB's rules:
// undefined values are skipped; COUNT over no rows is 0, SUM is 0; a SUM or
// AVG that meets a non-number (string, boolean, null, array, object) is
// undefined; MIN and MAX order null < booleans < numbers < strings and are
// undefined over no values or when they meet an array or object; AVG over
// no values is undefined.

type accumulator interface {
	add(v any)
	result() any
}

func newAccumulator(name string) accumulator {
	switch name {
	case "COUNT":
		return &countAcc{}
	case "SUM":
		return &sumAcc{}
	case "AVG":
		return &sumAcc{avg: true}
	case "MIN":
		return &minMaxAcc{max: false}
	default:
		return &minMaxAcc{max: true}
	}
}

type countAcc struct{ n float64 }

func (a *countAcc) add(v any) {
	if !isUndefined(v) {
		a.n++
	}
}
func (a *countAcc) result() any { return a.n }

// sumAcc is SUM, and AVG when avg is set: both add numbers and turn
// undefined on meeting anything else.
type sumAcc struct {
	sum float64
	n   float64
	bad bool
	avg bool
}

func (a *sumAcc) add(v any) {
	switch x := v.(type) {
	case undefinedType:
	case float64:
		a.sum += x
		a.n++
	default:
		a.bad = true
	}
}

func (a *sumAcc) result() any {
	switch {
	case a.bad, a.avg && a.n == 0:
		return Undefined
	case a.avg:
		return finite(a.sum / a.n)
	}
	return finite(a.sum)
}

type minMaxAcc struct {
	max bool
	v   any
	set bool
	bad bool
}

func (a *minMaxAcc) add(v any) {
	switch v.(type) {
	case undefinedType:
		return
	case []any, map[string]any:
		a.bad = true
		return
	}
	if !a.set {
		a.v, a.set = v, true
		return
	}
	c := compareValues(v, a.v)
	if (a.max && c > 0) || (!a.max && c < 0) {
		a.v = v
	}
}

func (a *minMaxAcc) result() any {
	if a.bad || !a.set {
		return Undefined
	}
	return a.v
}

// grouper accumulates rows into groups, in first-seen order.
type grouper struct {
	mem   *budget // charged for every group
	byKey map[string]*group
	order []*group
}

type group struct {
	keys []any
	accs []accumulator
}

func newGroup(keys []any, aggs []aggSpec) *group {
	g := &group{keys: keys, accs: make([]accumulator, len(aggs))}
	for i, a := range aggs {
		g.accs[i] = newAccumulator(a.name)
	}
	return g
}

func newGrouper(p *program) *grouper {
	g := &grouper{byKey: map[string]*group{}}
	if len(p.groupBy) == 0 {
		// An aggregate without GROUP BY has one group, even over no rows.
		one := newGroup([]any{}, p.aggs)
		g.byKey[""] = one
		g.order = append(g.order, one)
	}
	return g
}

func (g *grouper) add(p *program, fr *frame) {
	keys := make([]any, len(p.groupBy))
	for i, k := range p.groupBy {
		keys[i] = k(fr)
	}
	id := ""
	if len(keys) > 0 {
		id = canonical(keys)
	}
	grp, ok := g.byKey[id]
	if !ok {
		g.mem.charge(2*int64(len(id)) + mapEntryBytes + groupBytes + accBytes*int64(len(p.aggs)))
		grp = newGroup(keys, p.aggs)
		g.byKey[id] = grp
		g.order = append(g.order, grp)
	}
	for i, a := range p.aggs {
		grp.accs[i].add(a.arg(fr))
	}
}

// sortGroups orders groups by their GROUP BY values, ascending in ORDER BY's
// order across types (undefined first). Cosmos DB does not promise an order
// for GROUP BY results; its documented example
// (nosql/query/group-by, scripts/group-by-aggregate of the query samples)
// lists the undefined group first and the others ascending, and a fixed
// order independent of the documents' order is also what lets the fan-out
// merge answer exactly as one collection would.
func sortGroups[G any](groups []G, keys func(G) []any) {
	sort.SliceStable(groups, func(i, j int) bool {
		return compareValues(keys(groups[i]), keys(groups[j])) < 0
	})
}

// results evaluates the grouped projection for every group, in group order.
func (g *grouper) results(p *program, out func(any) bool) {
	sortGroups(g.order, func(grp *group) []any { return grp.keys })
	for _, grp := range g.order {
		vals := make([]any, len(grp.accs))
		for i, a := range grp.accs {
			vals[i] = a.result()
		}
		v := p.final(&frame{vals: []any{grp.keys, vals}})
		if isUndefined(v) {
			continue
		}
		if !out(v) {
			return
		}
	}
}
