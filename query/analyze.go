package query

import "strings"

// Clauses is a set of a query's clauses, saying where Analyze found
// something.
type Clauses uint8

// The clauses of a query that hold expressions.
const (
	ClauseSelect  Clauses = 1 << iota // the SELECT list (or SELECT VALUE)
	ClauseWhere                       // WHERE
	ClauseGroupBy                     // GROUP BY
	ClauseOrderBy                     // ORDER BY
	// ClauseFrom: the sources of FROM and JOIN, which hold a subquery
	// (FROM (SELECT ...) AS x, JOIN (SELECT ...) AS x) or a path.
	ClauseFrom
)

// String lists the clauses, joined by "|", as "SELECT|WHERE"; the empty
// set is "".
func (c Clauses) String() string {
	var names []string
	for i, name := range []string{"SELECT", "WHERE", "GROUP BY", "ORDER BY", "FROM"} {
		if c&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, "|")
}

// Features is what a query uses, read from its syntax tree (never from its
// text, so a property named c["COUNT("] or a string 'SELECT x' is just a
// name or a string). Aggregates, Subqueries and Parameters look inside
// subqueries, at any depth; the other fields describe the query's own
// clauses.
type Features struct {
	// Aggregates is the set of clauses that call an aggregate function
	// (COUNT, SUM, MIN, MAX, AVG), directly or inside a subquery there.
	Aggregates Clauses
	// Aggregated: the query itself aggregates, so its results are groups,
	// not rows: it has GROUP BY, or its SELECT calls an aggregate outside
	// any subquery (SELECT VALUE COUNT(1) FROM c). This is the compiler's
	// own rule.
	Aggregated bool
	// Subqueries is the set of clauses holding an EXISTS, ARRAY or scalar
	// subquery; a nested subquery counts in the clause of the outermost.
	Subqueries Clauses

	Distinct    bool // SELECT DISTINCT
	Top         bool // SELECT TOP n
	OffsetLimit bool // OFFSET m LIMIT n
	Where       bool // a WHERE clause
	GroupBy     bool // a GROUP BY clause
	OrderBy     bool // an ORDER BY clause
	Join        bool // one or more JOINs
	NoFrom      bool // no FROM clause: SELECT 1 + 1
	FromIn      bool // FROM x IN c.arr: one row per array element
	// FromPath: the FROM source starts below the container (FROM
	// c.children ch, FROM x IN c.arr) or is a subquery, so rows are not
	// whole documents.
	FromPath bool
	// Parameters: an @parameter appears anywhere (TOP, OFFSET and LIMIT,
	// FROM and JOIN paths, subqueries included).
	Parameters bool
}

// Analyze reports what q uses. It reads the tree only; q need not compile.
func Analyze(q *Query) Features {
	f := Features{
		Aggregated:  aggregated(q),
		Distinct:    q.Distinct,
		Top:         q.Top != nil,
		OffsetLimit: q.Limit != nil,
		Where:       q.Where != nil,
		GroupBy:     len(q.GroupBy) > 0,
		OrderBy:     len(q.OrderBy) > 0,
		Join:        len(q.Joins) > 0,
		NoFrom:      q.From == nil,
	}
	if q.From != nil {
		_, name := q.From.Source.(*Ident)
		f.FromIn, f.FromPath = q.From.In, !name
	}
	f.scanQuery(q, 0)
	return f
}

// scanQuery records what the expressions of q use; in a subquery (in
// clause c of the outermost query) every clause counts as c.
func (f *Features) scanQuery(q *Query, c Clauses) {
	in := func(own Clauses) Clauses {
		if c != 0 {
			return c
		}
		return own
	}
	f.scan(q.Top, 0)
	for _, it := range q.Items {
		f.scan(it.X, in(ClauseSelect))
	}
	if q.From != nil {
		f.scan(q.From.Source, in(ClauseFrom))
	}
	for _, j := range q.Joins {
		f.scan(j.Source, in(ClauseFrom))
	}
	f.scan(q.Where, in(ClauseWhere))
	for _, g := range q.GroupBy {
		f.scan(g, in(ClauseGroupBy))
	}
	for _, o := range q.OrderBy {
		f.scan(o.X, in(ClauseOrderBy))
	}
	f.scan(q.Offset, 0)
	f.scan(q.Limit, 0)
}

// scan records what e, in clause c, uses.
func (f *Features) scan(e Expr, c Clauses) {
	walk(e, func(x Expr) bool {
		switch n := x.(type) {
		case *ParamRef:
			f.Parameters = true
		case *Call:
			if isAggregateCall(n) {
				f.Aggregates |= c
			}
		case *Subquery:
			f.Subqueries |= c
			f.scanQuery(n.Q, c)
		}
		return true
	})
}

// GatewayCrossPartition reports whether the Cosmos DB gateway runs the
// query across partitions without a query plan, which it does for filters
// and projections only: no DISTINCT, TOP, OFFSET/LIMIT, ORDER BY, GROUP BY,
// JOIN, subquery as the FROM source or aggregate in SELECT, and a FROM
// clause. An aggregate inside a subquery of the SELECT list counts too
// (conservatively: such a query is then evaluated by the client, which is
// always correct).
func (f Features) GatewayCrossPartition() bool {
	return !f.Distinct && !f.Top && !f.OffsetLimit && !f.OrderBy && !f.GroupBy && !f.Join && !f.NoFrom &&
		f.Aggregates&ClauseSelect == 0 && f.Subqueries&ClauseFrom == 0
}

// PushableWhere reports whether the query's WHERE alone selects the
// documents the query reads, so a client evaluating the query can fetch
// them with "SELECT * FROM <container> WHERE <the same condition>": there is
// a WHERE without subqueries, and rows are the container's whole documents
// (FROM names the container; no IN, no JOIN). The FROM source is then an
// *Ident.
func (f Features) PushableWhere() bool {
	return f.Where && f.Subqueries&ClauseWhere == 0 && !f.NoFrom && !f.FromIn && !f.FromPath && !f.Join
}
