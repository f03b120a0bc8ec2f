package query

import (
	"errors"
	"fmt"
	"strings"
)

// OrderByFilterPlaceholder is the text Cosmos DB puts in the WHERE of an
// ORDER BY query's rewritten form (GatewayQueryInfo.RewrittenQuery): a
// client replaces it with "true" on the first page of a range, or with a
// condition that resumes after the last sort keys it returned.
const OrderByFilterPlaceholder = "{documentdb-formattableorderbyquery-filter}"

// ErrGatewayPlan matches (errors.Is) the errors of PlanGateway for a query
// whose execution plan Cosmos DB's gateway does not give: an aggregate
// inside a larger expression of the SELECT (COUNT(1) + 1), or a query the
// client cannot merge from a plan.
var ErrGatewayPlan = errors.New("query: no cross-partition execution plan for this query")

// GatewayPlan is a query's execution plan as Cosmos DB's gateway answers a
// query-plan request (x-ms-cosmos-is-query-plan-request) and sends inside
// its refusal of a cross-partition query it cannot serve (the body's
// additionalErrorInfo): how a client runs the query on each
// partition-key range (QueryInfo.RewrittenQuery, or the query itself when
// that is empty) and merges the ranges' results. It marshals to the
// service's JSON. Build it with PlanGateway.
type GatewayPlan struct {
	Version     int              `json:"partitionedQueryExecutionInfoVersion"`
	QueryInfo   GatewayQueryInfo `json:"queryInfo"`
	QueryRanges []GatewayRange   `json:"queryRanges"`
}

// GatewayQueryInfo is the "queryInfo" of a GatewayPlan, with the service's
// member names: what the client merges (ORDER BY, aggregates, DISTINCT,
// GROUP BY, TOP, OFFSET/LIMIT) and the query each range runs.
type GatewayQueryInfo struct {
	DistinctType       string   `json:"distinctType"` // "None", "Ordered" or "Unordered"
	Top                *int     `json:"top"`
	Offset             *int     `json:"offset"`
	Limit              *int     `json:"limit"`
	OrderBy            []string `json:"orderBy"` // "Ascending" or "Descending", one per key
	OrderByExpressions []string `json:"orderByExpressions"`
	GroupByExpressions []string `json:"groupByExpressions"`
	GroupByAliases     []string `json:"groupByAliases"`
	// Aggregates names the aggregate of a SELECT VALUE aggregate query:
	// "Count", "Sum", "Min", "Max" or "Average".
	Aggregates []string `json:"aggregates"`
	// GroupByAliasToAggregateType maps every property of a grouped
	// (non-VALUE) result to its aggregate, nil for a group key.
	GroupByAliasToAggregateType map[string]*string `json:"groupByAliasToAggregateType"`
	// RewrittenQuery is what each range runs; "" means the query itself.
	RewrittenQuery         string `json:"rewrittenQuery"`
	HasSelectValue         bool   `json:"hasSelectValue"`
	DCountInfo             any    `json:"dCountInfo"`
	HasNonStreamingOrderBy bool   `json:"hasNonStreamingOrderBy"`
}

// GatewayRange is one effective-partition-key range of a GatewayPlan's
// "queryRanges".
type GatewayRange struct {
	Min            string `json:"min"`
	Max            string `json:"max"`
	IsMinInclusive bool   `json:"isMinInclusive"`
	IsMaxInclusive bool   `json:"isMaxInclusive"`
}

// GatewayOptions are what the client said it merges.
type GatewayOptions struct {
	// CompositeAggregates: the client reads MIN and MAX per range as
	// {"min"|"max": value, "count": n} (x-ms-cosmos-supported-query-features
	// lists CompositeAggregate, as the current SDKs send); otherwise, as
	// the older SDKs read a plan, as the value alone.
	CompositeAggregates bool
}

// ClientMerges reports whether the client must run the query per range and
// merge (TOP, ORDER BY, an aggregate, DISTINCT, OFFSET/LIMIT or GROUP BY):
// the queries the gateway refuses to run across partitions itself.
func (p *GatewayPlan) ClientMerges() bool {
	qi := &p.QueryInfo
	return qi.Top != nil || qi.Offset != nil || qi.Limit != nil || len(qi.OrderBy) > 0 || len(qi.Aggregates) > 0 ||
		qi.DistinctType != "None" || len(qi.GroupByExpressions) > 0 || len(qi.GroupByAliasToAggregateType) > 0
}

// NonValueAggregate reports whether the query aggregates into properties
// of an object (SELECT COUNT(1) AS n ... or a GROUP BY's SELECT list), the
// form the gateway refuses across partitions without a plan ("only
// supports 'VALUE <AggregateFunc>'").
func (p *GatewayPlan) NonValueAggregate() bool {
	for _, t := range p.QueryInfo.GroupByAliasToAggregateType {
		if t != nil {
			return true
		}
	}
	return false
}

// aggregatePlanNames are the plan's names of the aggregates.
var aggregatePlanNames = map[string]string{"COUNT": "Count", "SUM": "Sum", "MIN": "Min", "MAX": "Max", "AVG": "Average"}

// PlanGateway builds the execution plan Cosmos DB's gateway gives q over
// one range spanning every key (the plan's queryRanges are "" to "FF").
// params (Go JSON values, json.RawMessage among them, as Compile takes
// them) bind TOP, OFFSET and LIMIT given as parameters, as the gateway
// does. The rewritten forms are the service's: ORDER BY queries select
// c._rid, the sort keys as orderByItems ([{"item": key}, ...]) and the
// result as payload, with OrderByFilterPlaceholder in the WHERE; an
// aggregate is selected as [{"item": partial}] (AVG as {"sum", "count"});
// GROUP BY selects groupByItems and payload; OFFSET m LIMIT n runs as
// OFFSET 0 LIMIT m+n in each range. A query the plan cannot express is an
// error wrapping ErrGatewayPlan; a bad TOP, OFFSET or LIMIT is the
// compiler's error. It costs one pass over the tree.
func PlanGateway(q *Query, params map[string]any, opts GatewayOptions) (*GatewayPlan, error) {
	qi := GatewayQueryInfo{
		DistinctType: "None", OrderBy: []string{}, OrderByExpressions: []string{}, GroupByExpressions: []string{},
		GroupByAliases: []string{}, Aggregates: []string{}, GroupByAliasToAggregateType: map[string]*string{},
		HasSelectValue: q.Value,
	}
	plan := &GatewayPlan{Version: 2, QueryRanges: []GatewayRange{{Min: "", Max: "FF", IsMinInclusive: true}}}
	params, err := normalizeParams(params)
	if err != nil {
		return nil, err
	}
	if q.Top != nil {
		n, err := count(q.Top, params, "TOP")
		if err != nil {
			return nil, err
		}
		qi.Top = &n
	}
	var offset, limit int
	if q.Limit != nil {
		if offset, err = count(q.Offset, params, "OFFSET"); err != nil {
			return nil, err
		}
		if limit, err = count(q.Limit, params, "LIMIT"); err != nil {
			return nil, err
		}
		qi.Offset, qi.Limit = &offset, &limit
	}
	for _, o := range q.OrderBy {
		dir := "Ascending"
		if o.Desc {
			dir = "Descending"
		}
		qi.OrderBy = append(qi.OrderBy, dir)
		qi.OrderByExpressions = append(qi.OrderByExpressions, Format(o.X))
	}
	if q.Distinct {
		qi.DistinctType = "Unordered"
		if orderedDistinct(q) {
			qi.DistinctType = "Ordered"
		}
	}
	// Each range runs the query with its own clauses, OFFSET/LIMIT
	// widened to what the client skips and keeps.
	rw := *q
	if q.Limit != nil {
		rw.Offset, rw.Limit = &Literal{Value: float64(0)}, &Literal{Value: float64(offset + limit)}
	}
	switch {
	case len(q.GroupBy) > 0 || aggregated(q) && !q.Value:
		err = planGroups(q, &rw, &qi, opts)
	case aggregated(q):
		err = planValueAggregate(q, &rw, &qi, opts)
	case len(q.OrderBy) > 0:
		err = planOrderBy(q, &rw)
	case q.Limit != nil:
	default:
		plan.QueryInfo = qi
		return plan, nil // TOP, DISTINCT or nothing: each range runs the query itself
	}
	if err != nil {
		return nil, err
	}
	qi.RewrittenQuery = strings.Replace(FormatQuery(&rw), placeholderIdent, "("+OrderByFilterPlaceholder+")", 1)
	plan.QueryInfo = qi
	return plan, nil
}

// placeholderIdent stands for OrderByFilterPlaceholder in a rewritten tree
// until it is formatted (the placeholder is no SQL).
const placeholderIdent = "documentdbformattableorderbyqueryfilter"

// orderedDistinct reports whether DISTINCT results arrive sorted by what
// is distinct (SELECT DISTINCT VALUE x ... ORDER BY x), so a client
// removes repeats by comparing neighbours.
func orderedDistinct(q *Query) bool {
	return q.Value && len(q.OrderBy) == 1 && len(q.Items) == 1 && Format(q.OrderBy[0].X) == Format(q.Items[0].X)
}

// planOrderBy rewrites rw, a copy of q, to select the sort keys and the
// result apart: c._rid (without DISTINCT, which it would defeat), the keys
// as orderByItems and the result as payload.
func planOrderBy(q *Query, rw *Query) error {
	payload, err := payloadOf(q)
	if err != nil {
		return err
	}
	keys := &ArrayLit{}
	for _, o := range q.OrderBy {
		keys.Elems = append(keys.Elems, itemObject(o.X))
	}
	rw.Value, rw.Star = false, false
	rw.Items = nil
	if q.From == nil {
		return fmt.Errorf("%w: ORDER BY without FROM", ErrGatewayPlan)
	}
	if _, container := q.From.Source.(*Ident); container && !q.Distinct && !q.From.In {
		rw.Items = append(rw.Items, SelectItem{X: &Member{X: &Ident{Name: q.From.Alias}, Name: "_rid"}})
	}
	rw.Items = append(rw.Items, SelectItem{X: keys, Alias: "orderByItems"}, SelectItem{X: payload, Alias: "payload"})
	filter := Expr(&Ident{Name: placeholderIdent})
	if q.Where != nil {
		filter = &Binary{Op: "AND", L: q.Where, R: filter}
	}
	rw.Where = filter
	return nil
}

// payloadOf is the result of one row of q as one expression: the VALUE,
// the FROM alias for SELECT * (with JOINs, an object of every alias), or
// an object of the SELECT list's named items.
func payloadOf(q *Query) (Expr, error) {
	switch {
	case q.Value:
		return q.Items[0].X, nil
	case q.Star && q.From != nil && q.From.Alias != "":
		if len(q.Joins) == 0 {
			return &Ident{Name: q.From.Alias}, nil
		}
		obj := &ObjectLit{Keys: []string{q.From.Alias}, Vals: []Expr{&Ident{Name: q.From.Alias}}}
		for _, j := range q.Joins {
			if j.Alias == "" {
				return nil, fmt.Errorf("%w: SELECT * over a JOIN without an alias", ErrGatewayPlan)
			}
			obj.Keys = append(obj.Keys, j.Alias)
			obj.Vals = append(obj.Vals, &Ident{Name: j.Alias})
		}
		return obj, nil
	case q.Star:
		return nil, fmt.Errorf("%w: SELECT * over rows without a name", ErrGatewayPlan)
	}
	return itemsObject(q.Items)
}

// itemsObject is the object a SELECT list makes of a row: {name: item,
// ...}, named as the results are (itemNames).
func itemsObject(items []SelectItem) (*ObjectLit, error) {
	names, err := itemNames(items)
	if err != nil {
		return nil, err
	}
	obj := &ObjectLit{}
	for i, it := range items {
		obj.Keys = append(obj.Keys, names[i])
		obj.Vals = append(obj.Vals, it.X)
	}
	return obj, nil
}

// itemObject is {"item": x}.
func itemObject(x Expr) Expr { return &ObjectLit{Keys: []string{"item"}, Vals: []Expr{x}} }

// partialAggregate is what a range returns for aggregate call x, which the
// client combines: {"item": x}, AVG as {"item": {"sum": SUM, "count":
// COUNT}}, and with composite aggregates MIN and MAX as {"item": {"min"|
// "max": x, "count": COUNT}}. It also returns the plan's name of the
// aggregate.
func partialAggregate(x Expr, opts GatewayOptions) (Expr, string, error) {
	call, ok := x.(*Call)
	if !ok || !aggregateNames[call.Name] || hasAggregateIn(call.Args) {
		return nil, "", fmt.Errorf("%w: %s: a cross-partition query selects an aggregate only on its own (VALUE COUNT(1), COUNT(1) AS n), not inside another expression", ErrGatewayPlan, Format(x))
	}
	name := aggregatePlanNames[call.Name]
	countOf := &Call{Name: "COUNT", Args: call.Args}
	switch {
	case call.Name == "AVG":
		return itemObject(&ObjectLit{Keys: []string{"sum", "count"}, Vals: []Expr{&Call{Name: "SUM", Args: call.Args}, countOf}}), name, nil
	case (call.Name == "MIN" || call.Name == "MAX") && opts.CompositeAggregates:
		return itemObject(&ObjectLit{Keys: []string{strings.ToLower(call.Name), "count"}, Vals: []Expr{call, countOf}}), name, nil
	}
	return itemObject(call), name, nil
}

// hasAggregateIn reports whether any of xs calls an aggregate.
func hasAggregateIn(xs []Expr) bool {
	for _, x := range xs {
		if hasAggregate(x) {
			return true
		}
	}
	return false
}

// planValueAggregate rewrites SELECT VALUE AGG(x) to SELECT VALUE
// [{"item": partial}].
func planValueAggregate(q *Query, rw *Query, qi *GatewayQueryInfo, opts GatewayOptions) error {
	partial, name, err := partialAggregate(q.Items[0].X, opts)
	if err != nil {
		return err
	}
	qi.Aggregates = append(qi.Aggregates, name)
	rw.Items = []SelectItem{{X: &ArrayLit{Elems: []Expr{partial}}}}
	return nil
}

// planGroups rewrites a GROUP BY query, or one aggregating into an object
// without GROUP BY, to select the group's keys as groupByItems and its
// partial result as payload: for SELECT VALUE, the value ([{"item":
// partial}] for an aggregate); otherwise an object of the SELECT list's
// names, each aggregate as its partial.
func planGroups(q *Query, rw *Query, qi *GatewayQueryInfo, opts GatewayOptions) error {
	keys := &ArrayLit{Elems: []Expr{}}
	for _, g := range q.GroupBy {
		qi.GroupByExpressions = append(qi.GroupByExpressions, Format(g))
		keys.Elems = append(keys.Elems, itemObject(g))
	}
	var payload Expr
	switch {
	case q.Star:
		return fmt.Errorf("%w: SELECT * with GROUP BY", ErrGatewayPlan)
	case q.Value && hasAggregate(q.Items[0].X):
		partial, name, err := partialAggregate(q.Items[0].X, opts)
		if err != nil {
			return err
		}
		qi.Aggregates = append(qi.Aggregates, name)
		payload = &ArrayLit{Elems: []Expr{partial}}
	case q.Value:
		payload = q.Items[0].X
	default:
		names, err := itemNames(q.Items)
		if err != nil {
			return err
		}
		obj := &ObjectLit{}
		for i, it := range q.Items {
			var kind *string
			x := it.X
			if hasAggregate(x) {
				partial, name, err := partialAggregate(x, opts)
				if err != nil {
					return err
				}
				x, kind = partial, &name
			}
			qi.GroupByAliases = append(qi.GroupByAliases, names[i])
			qi.GroupByAliasToAggregateType[names[i]] = kind
			obj.Keys = append(obj.Keys, names[i])
			obj.Vals = append(obj.Vals, x)
		}
		payload = obj
	}
	rw.Value, rw.Star = false, false
	rw.Items = []SelectItem{{X: keys, Alias: "groupByItems"}, {X: payload, Alias: "payload"}}
	return nil
}

// PinsKey reports whether q reads one partition-key value only: its FROM
// is the container, and an AND-term of its WHERE compares each of paths
// (a partition key's property names, one list per path of the key) for
// equality with a constant or a parameter, as in WHERE c.pk = 'a' AND ...
// Cosmos DB's gateway runs such a query on that key's partition, as if the
// key were given (x-ms-documentdb-partitionkey). It reads the tree only.
func PinsKey(q *Query, paths ...[]string) bool {
	if q.From == nil || q.From.In || q.Where == nil || len(paths) == 0 {
		return false
	}
	if _, container := q.From.Source.(*Ident); !container {
		return false
	}
	for _, path := range paths {
		if !pinned(q.Where, q.From.Alias, path) {
			return false
		}
	}
	return true
}

// pinned reports whether an AND-term of where is alias.path = constant.
func pinned(where Expr, alias string, path []string) bool {
	b, ok := where.(*Binary)
	if !ok {
		return false
	}
	switch b.Op {
	case "AND":
		return pinned(b.L, alias, path) || pinned(b.R, alias, path)
	case "=":
		return isPath(b.L, alias, path) && isConstant(b.R) || isPath(b.R, alias, path) && isConstant(b.L)
	}
	return false
}

// isConstant reports whether x is a literal or a parameter.
func isConstant(x Expr) bool {
	switch x.(type) {
	case *Literal, *ParamRef:
		return true
	}
	return false
}

// isPath reports whether x reads alias.path (dots or string indexes).
func isPath(x Expr, alias string, path []string) bool {
	for i := len(path) - 1; i >= 0; i-- {
		switch n := x.(type) {
		case *Member:
			if n.Name != path[i] {
				return false
			}
			x = n.X
		case *Index:
			lit, ok := n.Index.(*Literal)
			if !ok || lit.Value != any(path[i]) {
				return false
			}
			x = n.X
		default:
			return false
		}
	}
	id, ok := x.(*Ident)
	return ok && id.Name == alias
}
