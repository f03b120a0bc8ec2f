package query

import (
	"errors"
	"fmt"
)

// ErrUnmergeable is wrapped by the planner's errors for queries whose
// results cannot be merged exactly across collections; the message names
// the construct.
var ErrUnmergeable = errors.New("query: cannot be merged across collections")

// PlanKind says how the client merges the collections' results.
type PlanKind int

const (
	// Stream: concatenate the collections' results (in collection order),
	// then apply DISTINCT, OFFSET and LIMIT.
	Stream PlanKind = iota
	// OrderBy: every row is {"k": sort keys, "p": payload}; merge the
	// collections' sorted streams by CompareRows, emit payloads, then apply
	// DISTINCT, OFFSET and LIMIT.
	OrderBy
	// Aggregate: every row is a partial aggregate ({"g": group keys, "a":
	// partial values}); combine them with a Merger, then apply DISTINCT,
	// OFFSET and LIMIT to its results.
	Aggregate
)

func (k PlanKind) String() string {
	return [...]string{"stream", "order-by", "aggregate"}[k]
}

// Plan says what every collection runs and how the client merges. A Plan is
// immutable and safe for concurrent use.
type Plan struct {
	// Query is the SQL text every collection runs, with the same
	// parameters as the original query.
	Query string
	// Kind is how results merge.
	Kind PlanKind
	// SingleCollection is set for a query without FROM, whose answer does
	// not depend on documents: run it on one collection only.
	SingleCollection bool
	// Distinct, Offset and Limit are applied by the client after merging
	// (Limit -1: none).
	Distinct bool
	Offset   int
	Limit    int

	desc    []bool
	aggs    []aggSpec
	final   evalFn
	groupBy bool
}

// Wrapper property names of rewritten rows.
const (
	keysProp    = "k"
	payloadProp = "p"
	groupProp   = "g"
	aggProp     = "a"
	itemProp    = "v"
)

// PlanFanOut plans q for running on many collections and merging on the
// client exactly as one collection holding every document would answer.
// params are needed for TOP, OFFSET and LIMIT given as parameters. Shapes
// that cannot be merged exactly are errors wrapping ErrUnmergeable.
func PlanFanOut(q *Query, params map[string]any) (*Plan, error) {
	prog, err := Compile(q, params) // validates the query as a whole
	if err != nil {
		return nil, err
	}
	p := &Plan{Distinct: q.Distinct, Offset: prog.p.offset, Limit: prog.p.limit, SingleCollection: q.From == nil}
	rq := *q // shallow copy: the clauses replaced below are new values
	rq.Distinct, rq.Top, rq.Offset, rq.Limit = false, nil, nil, nil
	widen := func() {
		if p.Limit >= 0 {
			if q.Top != nil {
				rq.Top = &Literal{Value: float64(p.Limit)}
			} else {
				rq.Offset = &Literal{Value: 0.0}
				rq.Limit = &Literal{Value: float64(p.Offset + p.Limit)}
			}
		}
	}
	wrap := func(e Expr) Expr { return &ObjectLit{Keys: []string{itemProp}, Vals: []Expr{e}} }

	switch {
	case prog.p.grouped:
		p.Kind = Aggregate
		p.aggs, p.final, p.groupBy = prog.p.aggs, prog.p.final, len(q.GroupBy) > 0
		keys := &ArrayLit{}
		for _, g := range q.GroupBy {
			keys.Elems = append(keys.Elems, wrap(g))
		}
		partials := &ArrayLit{}
		for _, a := range p.aggs {
			for _, e := range partialExprs(a) {
				partials.Elems = append(partials.Elems, wrap(e))
			}
		}
		rq.Star, rq.Value = false, true
		rq.Items = []SelectItem{{X: &ObjectLit{Keys: []string{groupProp, aggProp}, Vals: []Expr{keys, partials}}}}
	case len(q.OrderBy) > 0:
		p.Kind = OrderBy
		var payload Expr
		switch {
		case q.Star:
			payload = &Ident{Name: q.From.Alias}
		case q.Value:
			payload = q.Items[0].X
			// A row whose value is undefined is no result: drop it before the
			// collection counts rows for TOP/LIMIT, as one collection would.
			def := &Call{Name: "IS_DEFINED", Args: []Expr{payload}}
			if q.Where != nil {
				rq.Where = &Binary{Op: "AND", L: q.Where, R: def}
			} else {
				rq.Where = def
			}
		default:
			names, err := itemNames(q.Items)
			if err != nil {
				return nil, err
			}
			obj := &ObjectLit{}
			for i, it := range q.Items {
				obj.Keys = append(obj.Keys, names[i])
				obj.Vals = append(obj.Vals, it.X)
			}
			payload = obj
		}
		if q.Distinct && !q.Star {
			projected := map[string]bool{}
			for _, it := range q.Items {
				projected[Format(it.X)] = true
			}
			for _, o := range q.OrderBy {
				if !projected[Format(o.X)] {
					return nil, fmt.Errorf("%w: DISTINCT with ORDER BY %s: the ORDER BY expression must be projected", ErrUnmergeable, Format(o.X))
				}
			}
		}
		keys := &ArrayLit{}
		for _, o := range q.OrderBy {
			keys.Elems = append(keys.Elems, wrap(o.X))
			p.desc = append(p.desc, o.Desc)
		}
		rq.Star, rq.Value = false, true
		rq.Items = []SelectItem{{X: &ObjectLit{Keys: []string{keysProp, payloadProp}, Vals: []Expr{keys, payload}}}}
		rq.Distinct = q.Distinct
		widen()
	default:
		p.Kind = Stream
		rq.Distinct = q.Distinct
		widen()
	}
	p.Query = FormatQuery(&rq)
	// The rewritten query must itself compile; a failure here is a bug in
	// the planner, reported rather than hidden.
	if _, err := Prepare(p.Query, params); err != nil {
		return nil, fmt.Errorf("query: planner produced an invalid query %q: %w", p.Query, err)
	}
	return p, nil
}

// partialExprs is what a collection computes for one aggregate.
func partialExprs(a aggSpec) []Expr {
	arg := a.call.Args[0]
	switch a.name {
	case "AVG":
		return []Expr{&Call{Name: "SUM", Args: []Expr{arg}}, &Call{Name: "COUNT", Args: []Expr{arg}}}
	case "MIN", "MAX":
		// MIN and MAX are undefined when they meet an array or object; the
		// count of such values tells the client, since an undefined partial
		// alone could also mean "no values here".
		bad := &Ternary{
			Cond: &Binary{Op: "OR", L: &Call{Name: "IS_ARRAY", Args: []Expr{arg}}, R: &Call{Name: "IS_OBJECT", Args: []Expr{arg}}},
			Then: &Literal{Value: 1.0},
			Else: &Literal{Value: Undefined},
		}
		return []Expr{a.call, &Call{Name: "COUNT", Args: []Expr{bad}}}
	}
	return []Expr{a.call}
}

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

// DistinctKey returns a text equal for equal results, for DISTINCT.
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

// Merger combines the partial aggregate rows of an Aggregate plan.
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

// Add merges one partial row from a collection.
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
	g := m.group(keys)
	i := 0
	next := func() any {
		if i >= len(parts) {
			return Undefined
		}
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
	if i != len(parts) {
		return fmt.Errorf("query: a partial aggregate row has %d values, want %d", len(parts), i)
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

// MergeAll merges whole result lists, one per collection in collection
// order, as one collection holding every document would answer: the
// reference the router's streaming merge must agree with. Rows are decoded
// JSON values as the collections returned them.
func (p *Plan) MergeAll(parts [][]any) ([]any, error) {
	var out []any
	lim := newLimiter(p.Distinct, p.Offset, p.Limit, func(v any, _ []byte) bool {
		out = append(out, v)
		return true
	})
	if p.Limit == 0 {
		return []any{}, nil
	}
	if p.SingleCollection && len(parts) > 1 {
		parts = parts[:1]
	}
	switch p.Kind {
	case Stream:
		for _, part := range parts {
			for _, v := range part {
				if !lim.emit(v, nil) {
					return out, nil
				}
			}
		}
	case Aggregate:
		m := p.NewMerger()
		for _, part := range parts {
			for _, row := range part {
				if err := m.Add(row); err != nil {
					return nil, err
				}
			}
		}
		for _, v := range m.Results() {
			if !lim.emit(v, nil) {
				break
			}
		}
	case OrderBy:
		keys := make([][][]any, len(parts))
		for i, part := range parts {
			keys[i] = make([][]any, len(part))
			for j, row := range part {
				k, err := p.SortKeys(row)
				if err != nil {
					return nil, err
				}
				keys[i][j] = k
			}
		}
		pos := make([]int, len(parts))
		for {
			best := -1
			for i := range parts {
				if pos[i] >= len(parts[i]) {
					continue
				}
				if best < 0 || p.CompareKeys(keys[i][pos[i]], keys[best][pos[best]]) < 0 {
					best = i
				}
			}
			if best < 0 {
				break
			}
			v := p.Payload(parts[best][pos[best]])
			pos[best]++
			if isUndefined(v) {
				continue
			}
			if !lim.emit(v, nil) {
				break
			}
		}
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}
