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
// or "FROM x IN c.arr" (In set: one row per array element).
type From struct {
	Alias  string // the name rows are bound to
	Source Expr   // starts at the container name
	In     bool
}

// Join is "JOIN x IN source": the cross product with the elements of source.
type Join struct {
	Alias  string
	Source Expr
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
	// Subquery is EXISTS(q), ARRAY(q) or a scalar (q).
	Subquery struct {
		Kind string // "EXISTS", "ARRAY" or "SCALAR"
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
