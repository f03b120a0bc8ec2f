package query

import (
	"strings"
	"unicode"
)

// FormatQuery writes a query back as SQL text that Parse reads to the same
// tree. Every operand that is not a primary expression (a name, literal,
// parameter, property, call, constructor or subquery) is in brackets,
// save the links of a chain of one operator (a AND b AND c, a + b + c and
// NOT NOT x stay flat, as every parser reads them alike):
// the text goes to servers whose parsers rank operators otherwise (Cosmos
// DB's reads NOT, and &, ^, |, || against comparisons, unlike this
// package's), and read with brackets it means one thing to all of them.
// The planner uses it to produce the query each collection runs, the
// cosmos backend for what it sends the service. It costs one pass over
// the tree.
func FormatQuery(q *Query) string {
	var b strings.Builder
	formatQuery(&b, q)
	return b.String()
}

// Format writes an expression as SQL text.
func Format(e Expr) string {
	var b strings.Builder
	formatExpr(&b, e)
	return b.String()
}

func formatQuery(b *strings.Builder, q *Query) {
	b.WriteString("SELECT ")
	if q.Distinct {
		b.WriteString("DISTINCT ")
	}
	if q.Top != nil {
		b.WriteString("TOP ")
		formatExpr(b, q.Top)
		b.WriteByte(' ')
	}
	if q.Value {
		b.WriteString("VALUE ")
	}
	if q.Star {
		b.WriteByte('*')
	}
	for i, it := range q.Items {
		if i > 0 {
			b.WriteString(", ")
		}
		formatExpr(b, it.X)
		if it.Alias != "" {
			b.WriteString(" AS ")
			b.WriteString(it.Alias)
		}
	}
	if q.From != nil {
		b.WriteString(" FROM ")
		formatSource(b, q.From.Alias, q.From.Source, q.From.In)
		for _, j := range q.Joins {
			b.WriteString(" JOIN ")
			formatSource(b, j.Alias, j.Source, j.In)
		}
	}
	if q.Where != nil {
		b.WriteString(" WHERE ")
		formatExpr(b, q.Where)
	}
	if len(q.GroupBy) > 0 {
		formatExprs(b, " GROUP BY ", q.GroupBy, "")
	}
	for i, o := range q.OrderBy {
		if i == 0 {
			b.WriteString(" ORDER BY ")
		} else {
			b.WriteString(", ")
		}
		formatExpr(b, o.X)
		if o.Desc {
			b.WriteString(" DESC")
		} else {
			b.WriteString(" ASC")
		}
	}
	if q.Limit != nil {
		b.WriteString(" OFFSET ")
		formatExpr(b, q.Offset)
		b.WriteString(" LIMIT ")
		formatExpr(b, q.Limit)
	}
}

// formatSource writes a FROM or JOIN source: "alias IN src", or "src AS
// alias" ("src" alone when the rows have no name).
func formatSource(b *strings.Builder, alias string, src Expr, in bool) {
	if in {
		b.WriteString(alias)
		b.WriteString(" IN ")
		formatExpr(b, src)
		return
	}
	formatExpr(b, src)
	if alias != "" {
		b.WriteString(" AS ")
		b.WriteString(alias)
	}
}

// formatTest opens a test of x (BETWEEN, IN, LIKE): x, " NOT" when
// negated, then word.
func formatTest(b *strings.Builder, x Expr, not bool, word string) {
	switch x.(type) {
	case *Between, *In, *Like: // a test is no operand of another without brackets
		b.WriteByte('(')
		formatExpr(b, x)
		b.WriteByte(')')
	default:
		formatPrec(b, x, precCompare)
	}
	if not {
		b.WriteString(" NOT")
	}
	b.WriteString(word)
}

// formatExprs writes es separated by ", " between open and close.
func formatExprs(b *strings.Builder, open string, es []Expr, close string) {
	b.WriteString(open)
	for i, x := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		formatExpr(b, x)
	}
	b.WriteString(close)
}

func isPlainName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// Precedence levels, loosest first, as the parser reads them: an operand
// whose level is below what its place requires is parenthesised, and no
// other is, so a chain (a OR b OR c) is written flat and its text nests no
// deeper than the tree.
const (
	precTernary = iota + 1
	precCoalesce
	precOr
	precAnd
	precNot
	precCompare
	precBitOr
	precBitXor
	precBitAnd
	precShift
	precAdd
	precMul
	precUnary
	precPrimary
)

var binaryPrec = map[string]int{
	"??": precCoalesce, "OR": precOr, "AND": precAnd,
	"=": precCompare, "!=": precCompare, "<": precCompare, "<=": precCompare, ">": precCompare, ">=": precCompare,
	"|": precBitOr, "^": precBitXor, "&": precBitAnd, "<<": precShift, ">>": precShift, ">>>": precShift,
	"+": precAdd, "-": precAdd, "||": precAdd, "*": precMul, "/": precMul, "%": precMul,
}

// precOf is the level of e's outermost operator.
func precOf(e Expr) int {
	switch n := e.(type) {
	case *Ternary:
		return precTernary
	case *Binary:
		if p, ok := binaryPrec[n.Op]; ok {
			return p
		}
		return precTernary // unknown: always parenthesised
	case *Between, *In, *Like:
		return precCompare
	case *Unary:
		if n.Op == "NOT" {
			return precNot
		}
		return precUnary
	}
	return precPrimary
}

func formatExpr(b *strings.Builder, e Expr) { formatPrec(b, e, 0) }

// formatPrec writes e where the grammar reads an operand of at least level
// min, in brackets when its own level is lower.
func formatPrec(b *strings.Builder, e Expr, min int) {
	if p := precOf(e); p < min || min > 0 && p < precPrimary {
		b.WriteByte('(')
		formatPrec(b, e, 0)
		b.WriteByte(')')
		return
	}
	switch n := e.(type) {
	case *Literal:
		writeValue(b, n.Value, literalText)
	case *ParamRef:
		b.WriteString(n.Name)
	case *Ident:
		b.WriteString(n.Name)
	case *Member:
		formatOperand(b, n.X)
		if isPlainName(n.Name) {
			b.WriteByte('.')
			b.WriteString(n.Name)
		} else {
			b.WriteByte('[')
			writeString(b, n.Name)
			b.WriteByte(']')
		}
	case *Index:
		formatOperand(b, n.X)
		b.WriteByte('[')
		formatExpr(b, n.Index)
		b.WriteByte(']')
	case *Unary:
		// A chain of NOTs, or of signs, stays unbracketed: every parser
		// reads "NOT NOT x" and "- -x" alike (and a long chain must not
		// nest deeper than Parse allows).
		min := precUnary
		if n.Op == "NOT" {
			b.WriteString("NOT ")
			min = precNot
		} else {
			b.WriteString(n.Op)
		}
		if u, ok := n.X.(*Unary); ok {
			if n.Op != "NOT" {
				b.WriteByte(' ') // "- -x", not the comment "--x"
			}
			if (u.Op == "NOT") == (n.Op == "NOT") {
				min = 0
			}
		}
		formatPrec(b, n.X, min)
	case *Binary:
		p := precOf(n)
		if p == precTernary { // not an operator the parser knows
			b.WriteByte('(')
			formatExpr(b, n.L)
			b.WriteString(" " + n.Op + " ")
			formatExpr(b, n.R)
			b.WriteByte(')')
			return
		}
		// A chain of one operator stays flat (every level is
		// left-associative); any other operand that is not primary is
		// bracketed by formatPrec.
		if l, ok := n.L.(*Binary); ok && l.Op == n.Op {
			formatPrec(b, n.L, 0)
		} else {
			formatPrec(b, n.L, p)
		}
		b.WriteByte(' ')
		b.WriteString(n.Op)
		b.WriteByte(' ')
		formatPrec(b, n.R, p+1)
	case *Between:
		formatTest(b, n.X, n.Not, " BETWEEN ")
		formatPrec(b, n.Low, precBitOr)
		b.WriteString(" AND ")
		formatPrec(b, n.High, precBitOr)
	case *In:
		formatTest(b, n.X, n.Not, "")
		formatExprs(b, " IN (", n.List, ")")
	case *Like:
		formatTest(b, n.X, n.Not, " LIKE ")
		formatPrec(b, n.Pattern, precBitOr)
		if n.Escape != nil {
			b.WriteString(" ESCAPE ")
			formatPrec(b, n.Escape, precBitOr)
		}
	case *Ternary:
		formatPrec(b, n.Cond, precCoalesce)
		b.WriteString(" ? ")
		formatExpr(b, n.Then)
		b.WriteString(" : ")
		formatExpr(b, n.Else)
	case *Call:
		b.WriteString(n.Name)
		formatExprs(b, "(", n.Args, ")")
	case *ArrayLit:
		formatExprs(b, "[", n.Elems, "]")
	case *ObjectLit:
		b.WriteByte('{')
		for i, k := range n.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeString(b, k)
			b.WriteString(": ")
			formatExpr(b, n.Vals[i])
		}
		b.WriteByte('}')
	case *Subquery:
		if n.Kind != "SCALAR" && n.Kind != "FROM" {
			b.WriteString(n.Kind)
		}
		b.WriteByte('(')
		formatQuery(b, n.Q)
		b.WriteByte(')')
	}
}

// formatOperand writes the object of a property access; a literal is
// parenthesised so "(0).a" does not read as the number "0.".
func formatOperand(b *strings.Builder, x Expr) {
	if _, ok := x.(*Literal); ok || precOf(x) < precPrimary {
		b.WriteByte('(')
		formatExpr(b, x)
		b.WriteByte(')')
		return
	}
	formatExpr(b, x)
}

// writeString writes a double-quoted string literal the lexer reads back:
// JSON's escapes are a subset of the lexer's.
func writeString(b *strings.Builder, s string) {
	b.Write(appendJSONString(nil, s))
}
