package query

// The syntax tree of a Cosmos DB NoSQL query. Parse builds it; Format
// writes it back as SQL text, which is how the planner produces the query
// each collection runs.

// Query is a parsed SELECT statement (a whole query or a subquery).
type Query struct {
	Distinct bool
	Top      Expr // nil when absent; a number literal or a parameter
	Value    bool // SELECT VALUE
	Star     bool // SELECT *
	Items    []SelectItem
	From     *From // nil for a query without FROM
	Joins    []Join
	Where    Expr // nil when absent
	GroupBy  []Expr
	OrderBy  []OrderItem
	Offset   Expr // nil when absent
	Limit    Expr // nil when absent
}

// SelectItem is one projected expression with its optional alias.
type SelectItem struct {
	X     Expr
	Alias string
}

// From is the FROM clause: "FROM c", "FROM root r", "FROM c.children ch",
// "FROM c.id" (the alias inferred: id), "FROM x IN c.arr" (In set: one row
// per array element), or a subquery, "FROM (SELECT VALUE c.id FROM c) AS x"
// (one row per result; "FROM x IN (SELECT ...)" one per element of each
// array result).
type From struct {
	// Alias is the name rows are bound to: given, or inferred from a path
	// (its last property name). It is "" where there is none to infer (a
	// subquery, a path ending in a number index): the rows have no name.
	Alias string
	// Source is a path starting at the container name, or a *Subquery of
	// Kind "FROM" whose results are the rows.
	Source Expr
	In     bool
}

// Join is one JOIN, the cross product of each row with what its source
// gives for that row: "JOIN x IN source" (In set: one row per element of
// the source's array), "JOIN source [AS] x" (one row binding the source's
// value, none when it is undefined; the alias inferred as in FROM) or a
// correlated subquery, "JOIN (SELECT VALUE t FROM t IN c.tags) AS x" (one
// row per result). Source is a path from an alias of the query (or of an
// enclosing one), or a *Subquery of Kind "FROM".
type Join struct {
	Alias  string
	Source Expr
	In     bool
}

// OrderItem is one ORDER BY expression and its direction.
type OrderItem struct {
	X    Expr
	Desc bool
}

// Expr is an expression node.
type Expr interface{ exprNode() }

type (
	// Literal is a constant: a JSON value or Undefined.
	Literal struct{ Value any }
	// ParamRef is an @parameter.
	ParamRef struct{ Name string }
	// Ident is a bare name: an alias or the container name.
	Ident struct{ Name string }
	// Member is X.Name.
	Member struct {
		X    Expr
		Name string
	}
	// Index is X[Index].
	Index struct {
		X     Expr
		Index Expr
	}
	// Unary is a prefix operator: "-", "+", "~", "NOT".
	Unary struct {
		Op string
		X  Expr
	}
	// Binary is an infix operator: arithmetic, comparison, "AND", "OR",
	// "||", "??", bitwise.
	Binary struct {
		Op   string
		L, R Expr
	}
	// Between is X [NOT] BETWEEN Low AND High.
	Between struct {
		X, Low, High Expr
		Not          bool
	}
	// In is X [NOT] IN (List...).
	In struct {
		X    Expr
		List []Expr
		Not  bool
	}
	// Like is X [NOT] LIKE Pattern [ESCAPE Escape].
	Like struct {
		X, Pattern, Escape Expr
		Not                bool
	}
	// Ternary is Cond ? Then : Else.
	Ternary struct{ Cond, Then, Else Expr }
	// Call is a built-in function call; Name is upper case.
	Call struct {
		Name string
		Args []Expr
	}
	// ArrayLit is [e1, e2, ...].
	ArrayLit struct{ Elems []Expr }
	// ObjectLit is {"k": e, ...}.
	ObjectLit struct {
		Keys []string
		Vals []Expr
	}
	// Subquery is EXISTS(q), ARRAY(q), a scalar (q), or (q) as the source
	// of FROM or JOIN.
	Subquery struct {
		Kind string // "EXISTS", "ARRAY", "SCALAR" or "FROM" (a source)
		Q    *Query
	}
)

func (*Literal) exprNode()   {}
func (*ParamRef) exprNode()  {}
func (*Ident) exprNode()     {}
func (*Member) exprNode()    {}
func (*Index) exprNode()     {}
func (*Unary) exprNode()     {}
func (*Binary) exprNode()    {}
func (*Between) exprNode()   {}
func (*In) exprNode()        {}
func (*Like) exprNode()      {}
func (*Ternary) exprNode()   {}
func (*Call) exprNode()      {}
func (*ArrayLit) exprNode()  {}
func (*ObjectLit) exprNode() {}
func (*Subquery) exprNode()  {}

// eachOperand calls fn with a pointer to each of e's operand expressions,
// in source order (a nil operand, such as Like's missing Escape, included):
// the one list of an expression's children that walk and mapExpr share. A leaf and a Subquery (whose query the callers treat
// apart) have none. Cost: nothing allocated (fn does not escape; a slice
// of operands cost the compiler one allocation per node, 23 per query).
func eachOperand(e Expr, fn func(*Expr)) {
	switch n := e.(type) {
	case *Member:
		fn(&n.X)
	case *Index:
		fn(&n.X)
		fn(&n.Index)
	case *Unary:
		fn(&n.X)
	case *Binary:
		fn(&n.L)
		fn(&n.R)
	case *Between:
		fn(&n.X)
		fn(&n.Low)
		fn(&n.High)
	case *In:
		fn(&n.X)
		eachElem(n.List, fn)
	case *Like:
		fn(&n.X)
		fn(&n.Pattern)
		fn(&n.Escape)
	case *Ternary:
		fn(&n.Cond)
		fn(&n.Then)
		fn(&n.Else)
	case *Call:
		eachElem(n.Args, fn)
	case *ArrayLit:
		eachElem(n.Elems, fn)
	case *ObjectLit:
		eachElem(n.Vals, fn)
	}
}

// eachElem calls fn with a pointer to each element of xs.
func eachElem(xs []Expr, fn func(*Expr)) {
	for i := range xs {
		fn(&xs[i])
	}
}
