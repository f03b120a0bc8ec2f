package query

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
)

// ErrUnmergeable matches (errors.Is) the planner's *UnmergeableError for
// queries whose results cannot be merged exactly across collections.
var ErrUnmergeable = errors.New("query: cannot be merged across collections")

// UnmergeableError is the planner's error for a query shape that cannot be
// merged exactly on the client. It matches ErrUnmergeable with errors.Is.
type UnmergeableError struct {
	Construct string // the clause or expression at fault, e.g. "DISTINCT with ORDER BY c.a"
	Reason    string // why it cannot be merged, and what would
}

// Error implements error.
func (e *UnmergeableError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrUnmergeable, e.Construct, e.Reason)
}

// Is reports whether target is ErrUnmergeable.
func (e *UnmergeableError) Is(target error) bool { return target == ErrUnmergeable }

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
	// Nested: the query's FROM subquery depends on documents in several
	// collections (DISTINCT, TOP, OFFSET/LIMIT, an aggregate or GROUP BY in
	// it, as in SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.k FROM
	// c)). The collections run the subquery's own plan (Plan.Inner, whose
	// Query is Plan.Query); merge their rows by Inner, apply Inner's
	// DISTINCT, OFFSET and LIMIT, then run the query over those results on
	// the client with Plan.Outer. The plan's own Distinct, Offset and Limit
	// are off: Outer applies the query's.
	Nested
)

// String names the kind: "stream", "order-by", "aggregate" or "nested".
func (k PlanKind) String() string {
	if k < Stream || k > Nested {
		return fmt.Sprintf("PlanKind(%d)", int(k))
	}
	return [...]string{"stream", "order-by", "aggregate", "nested"}[k]
}

// Plan says what every collection runs and how the client merges. A Plan is
// immutable and safe for concurrent use.
type Plan struct {
	// Query is the SQL text every collection runs, with the same
	// parameters as the original query.
	Query string
	// Kind is how results merge.
	Kind PlanKind
	// SingleCollection is set for a query without FROM (or whose FROM
	// subquery has none), whose answer does not depend on documents: run it
	// on one collection only.
	SingleCollection bool
	// Distinct, Offset and Limit are applied by the client after merging
	// (Limit -1: none).
	Distinct bool
	Offset   int
	Limit    int
	// Inner is, for a Nested plan, the plan of the FROM subquery: how the
	// collections' rows merge into the subquery's results (itself Nested
	// when a FROM subquery inside it is). Nil for the other kinds.
	Inner *Plan

	outer     *program // Nested: the query, run over Inner's results
	desc      []bool
	shape     *shape // property order of the user's results
	aggs      []aggSpec
	final     evalFn
	groupBy   bool
	groupKeys int
}

// SortKeys returns how many sort keys each row of an OrderBy plan carries
// (its ORDER BY's length); 0 for the other kinds. It costs nothing.
func (p *Plan) SortKeys() int { return len(p.desc) }

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
	if sq, ok := fromSubquery(q); ok && !perDocument(sq, prog.p.grouped || len(q.OrderBy) > 0) {
		// Each collection would cut, deduplicate or aggregate its own
		// documents only: merge the subquery by its own plan, then run the
		// query over its results on the client.
		inner, err := PlanFanOut(sq, params)
		if err != nil {
			return nil, err
		}
		return &Plan{Query: inner.Query, Kind: Nested, Limit: -1, Inner: inner, SingleCollection: inner.SingleCollection, outer: prog.p, shape: prog.p.shape}, nil
	}
	p := &Plan{Distinct: q.Distinct, Offset: prog.p.offset, Limit: prog.p.limit, SingleCollection: ReadsNoDocuments(q), shape: prog.p.shape}
	rq := *q // shallow copy: the clauses replaced below are new values
	rq.Distinct, rq.Top, rq.Offset, rq.Limit = false, nil, nil, nil
	widen := func() {
		if p.Limit >= 0 {
			if q.Top != nil {
				rq.Top = &Literal{Value: float64(p.Limit)}
			} else {
				rq.Offset = &Literal{Value: 0.0}
				// Saturated: OFFSET and LIMIT each reach 2^31-1, their sum
				// must still be a LIMIT the parser and Cosmos DB accept.
				rq.Limit = &Literal{Value: float64(min(int64(p.Offset)+int64(p.Limit), math.MaxInt32))}
			}
		}
	}
	wrap := func(e Expr) Expr { return &ObjectLit{Keys: []string{itemProp}, Vals: []Expr{e}} }

	switch {
	case prog.p.grouped:
		p.Kind = Aggregate
		p.aggs, p.final, p.groupBy, p.groupKeys = prog.p.aggs, prog.p.final, len(q.GroupBy) > 0, len(q.GroupBy)
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
		rq.OrderBy = nil // one row per group: an aggregate without GROUP BY orders nothing
	case len(q.OrderBy) > 0:
		p.Kind = OrderBy
		var payload Expr
		switch {
		case q.Star:
			if q.From.Alias == "" {
				// Unnamed rows (FROM (SELECT ...)): name them to return them.
				// Nothing else can read the name: q compiled without it.
				from := *q.From
				from.Alias = "_row"
				rq.From = &from
			}
			payload = &Ident{Name: rq.From.Alias}
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
			obj, err := itemsObject(q.Items)
			if err != nil {
				return nil, err
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
					return nil, &UnmergeableError{
						Construct: "DISTINCT with ORDER BY " + Format(o.X),
						Reason:    "the ORDER BY expression must also be projected, or rows that differ only in it could not be deduplicated after the merge",
					}
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
	// the planner, reported rather than hidden, except at the edge of a
	// limit: the rewrite adds a few levels, one AND (ORDER BY with SELECT
	// VALUE) and one OR per MIN or MAX, so a query at the limit itself
	// cannot be planned.
	if _, err := Prepare(p.Query, params); err != nil {
		if errors.Is(err, ErrLimit) {
			return nil, fmt.Errorf("query: planned for many collections, the query exceeds a limit (it is within a few levels or operators of it): %w", err)
		}
		return nil, fmt.Errorf("query: planner produced an invalid query %q: %w", p.Query, err)
	}
	return p, nil
}

// fromSubquery returns the subquery q's FROM reads, if it is one.
func fromSubquery(q *Query) (*Query, bool) {
	if q.From == nil {
		return nil, false
	}
	sq, ok := q.From.Source.(*Subquery)
	if !ok {
		return nil, false
	}
	return sq.Q, true
}

// ReadsNoDocuments reports whether q's rows come from no document: it has
// no FROM, or its FROM subquery (at any depth) has none
// (SELECT * FROM (SELECT VALUE 1) AS x). Such a query answers alike on
// every collection, so it runs on one (Plan.SingleCollection). It costs a
// walk down q's FROM subqueries.
func ReadsNoDocuments(q *Query) bool {
	for q.From != nil {
		sq, ok := fromSubquery(q)
		if !ok {
			return false
		}
		q = sq
	}
	return true
}

// perDocument reports whether every result of the FROM subquery sq (and of
// any FROM subquery inside it) comes from one document, so the query over
// it runs on each collection as over a path: the union of its results over
// the collections is its result over all documents. DISTINCT, TOP,
// OFFSET/LIMIT, aggregates and GROUP BY look across documents; ORDER BY
// only orders them, which matters only when sorted is false (the query
// over them neither sorts nor aggregates).
func perDocument(sq *Query, sorted bool) bool {
	for {
		if aggregated(sq) || sq.Distinct || sq.Top != nil || sq.Limit != nil || (len(sq.OrderBy) > 0 && !sorted) {
			return false
		}
		sorted = sorted || len(sq.OrderBy) > 0
		next, ok := fromSubquery(sq)
		if !ok {
			return true
		}
		sq = next
	}
}

// Outer runs a Nested plan's query on the client over the merged results of
// its FROM subquery (decoded JSON values, in the order Inner merges them,
// after Inner's DISTINCT, OFFSET and LIMIT), reading rows as it needs them
// and handing each of the query's results to yield until it returns false;
// Encode writes them. It costs what the query costs over as many rows: a
// query that sorts, aggregates or deduplicates holds its rows (or groups)
// until rows ends, within DefaultMemoryBudget (past it, a *LimitError). ctx
// is checked every 256 rows. It fails on a plan of another kind.
func (p *Plan) Outer(ctx context.Context, rows iter.Seq[any], yield func(v any) bool) (err error) {
	if p.Kind != Nested {
		return fmt.Errorf("query: Outer runs a nested plan, this one is %s", p.Kind)
	}
	pr := p.outer
	defer func() {
		if r := recover(); r != nil {
			err = evalError(r)
		}
	}()
	var ctxErr error
	input := func(emit func(*frame) bool) {
		fr := &frame{vals: make([]any, pr.nslots)}
		n := 0
		for v := range rows {
			if n++; n&255 == 0 {
				if ctxErr = ctx.Err(); ctxErr != nil {
					return
				}
			}
			if !pr.rowsOf(fr, v, emit) {
				return
			}
		}
		ctxErr = ctx.Err()
	}
	pr.pipeline(input, noRaw, nil, func(v any, _ []byte) bool { return yield(v) })
	return ctxErr
}

// partialNames lists, per aggregate, the partial values a collection
// returns for it (see partialExprs).
var partialNames = map[string][]string{
	"COUNT": {"COUNT"},
	"SUM":   {"SUM"},
	"AVG":   {"SUM", "COUNT"},
	"MIN":   {"MIN", "COUNT of arrays and objects"},
	"MAX":   {"MAX", "COUNT of arrays and objects"},
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
