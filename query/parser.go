package query

import (
	"fmt"
	"strings"
)

// Parse parses a Cosmos DB NoSQL query. Keywords are case-insensitive.
// A malformed query is a *SyntaxError with the position, what was expected
// and what was found; nothing is silently ignored.
func Parse(text string) (*Query, error) {
	q, err := parse(text)
	if se, ok := err.(*SyntaxError); ok {
		se.Line, se.Column = se.position()
	}
	return q, err
}

func parse(text string) (*Query, error) {
	if len(text) > MaxQueryBytes {
		return nil, &LimitError{Limit: "query text bytes", Max: MaxQueryBytes, Got: int64(len(text)), Pos: -1}
	}
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{src: text, toks: toks}
	q, err := p.parseQuery()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tEOF {
		return nil, p.errorf("end of query")
	}
	if err := checkDepth(q); err != nil {
		return nil, err
	}
	return q, nil
}

type parser struct {
	src       string
	toks      []token
	i         int
	depth     int
	ands, ors int
}

// nest enters one level of nesting, refusing the query past MaxNesting;
// the caller leaves it with p.depth--.
func (p *parser) nest() error {
	p.depth++
	if p.depth > MaxNesting {
		return &LimitError{Limit: "nesting of brackets, calls and subqueries", Max: MaxNesting, Pos: p.peek().pos}
	}
	return nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errorf(expected string) error {
	t := p.peek()
	return &SyntaxError{Pos: t.pos, Query: p.src, Expected: expected, Found: t.describe()}
}

// is reports whether the next token is of this kind with this text;
// accept consumes it if so; expect consumes it or fails naming it.
func (p *parser) is(kind tokKind, text string) bool {
	t := p.peek()
	return t.kind == kind && t.text == text
}

func (p *parser) accept(kind tokKind, text string) bool {
	if p.is(kind, text) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(kind tokKind, text, name string) error {
	if !p.accept(kind, text) {
		return p.errorf(name)
	}
	return nil
}

func (p *parser) isKeyword(k string) bool     { return p.is(tKeyword, k) }
func (p *parser) acceptKeyword(k string) bool { return p.accept(tKeyword, k) }
func (p *parser) expectKeyword(k string) error {
	return p.expect(tKeyword, k, k)
}
func (p *parser) isOp(op string) bool     { return p.is(tOp, op) }
func (p *parser) acceptOp(op string) bool { return p.accept(tOp, op) }
func (p *parser) expectOp(op string) error {
	return p.expect(tOp, op, fmt.Sprintf("%q", op))
}

func (p *parser) parseQuery() (*Query, error) {
	defer func() { p.depth-- }()
	if err := p.nest(); err != nil {
		return nil, err
	}
	if err := p.expectKeyword("SELECT"); err != nil {
		return nil, err
	}
	q := &Query{}
	if p.acceptKeyword("DISTINCT") {
		q.Distinct = true
	}
	if p.acceptKeyword("TOP") {
		t := p.next()
		switch t.kind {
		case tNumber:
			q.Top = &Literal{Value: t.num}
		case tParam:
			q.Top = &ParamRef{Name: t.text}
		default:
			p.i--
			return nil, p.errorf("a number or @parameter after TOP")
		}
	}
	if p.acceptKeyword("VALUE") {
		q.Value = true
	}
	if p.acceptOp("*") {
		if q.Value {
			return nil, p.errorf("an expression after VALUE (not *)")
		}
		q.Star = true
	} else {
		for {
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			item := SelectItem{X: x}
			if p.acceptKeyword("AS") {
				name, err := p.parseName("an alias after AS")
				if err != nil {
					return nil, err
				}
				item.Alias = name
			} else if p.peek().kind == tIdent {
				item.Alias = p.next().text
			}
			q.Items = append(q.Items, item)
			if q.Value && p.isOp(",") {
				return nil, p.errorf("FROM or the end of query (SELECT VALUE takes a single expression)")
			}
			if !p.acceptOp(",") {
				break
			}
		}
		if q.Value && q.Items[0].Alias != "" {
			return nil, &SyntaxError{Pos: p.toks[p.i-1].pos, Query: p.src, Expected: "no alias after SELECT VALUE expression", Found: q.Items[0].Alias}
		}
	}
	if p.acceptKeyword("FROM") {
		f, err := p.parseFrom()
		if err != nil {
			return nil, err
		}
		q.From = f
		for p.acceptKeyword("JOIN") {
			j, err := p.parseFrom()
			if err != nil {
				return nil, err
			}
			q.Joins = append(q.Joins, Join(*j))
		}
	}
	if p.acceptKeyword("WHERE") {
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		q.Where = x
	}
	if p.acceptKeyword("GROUP") {
		if err := p.expectKeyword("BY"); err != nil {
			return nil, err
		}
		var err error
		if q.GroupBy, err = p.exprs(); err != nil {
			return nil, err
		}
	}
	if p.acceptKeyword("ORDER") {
		if err := p.expectKeyword("BY"); err != nil {
			return nil, err
		}
		for {
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			item := OrderItem{X: x}
			if p.acceptKeyword("DESC") {
				item.Desc = true
			} else {
				p.acceptKeyword("ASC")
			}
			q.OrderBy = append(q.OrderBy, item)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKeyword("OFFSET") {
		off, err := p.parseCount("OFFSET")
		if err != nil {
			return nil, err
		}
		if err := p.expectKeyword("LIMIT"); err != nil {
			return nil, err
		}
		lim, err := p.parseCount("LIMIT")
		if err != nil {
			return nil, err
		}
		q.Offset, q.Limit = off, lim
	}
	return q, nil
}

func (p *parser) parseCount(what string) (Expr, error) {
	t := p.next()
	switch t.kind {
	case tNumber:
		return &Literal{Value: t.num}, nil
	case tParam:
		return &ParamRef{Name: t.text}, nil
	}
	p.i--
	return nil, p.errorf("a number or @parameter after " + what)
}

// parseName reads an identifier (a keyword is not a name).
func (p *parser) parseName(expected string) (string, error) {
	t := p.peek()
	if t.kind != tIdent {
		return "", p.errorf(expected)
	}
	p.i++
	return t.text, nil
}

// parseFrom reads a FROM or JOIN source, as Cosmos DB's grammar has them:
// "alias IN collection" or "collection [[AS] alias]", where a collection is
// a path from a name or a parenthesised subquery. Without an alias, a path
// names its rows by its last property name (FROM c.children: children);
// a subquery, or a path ending in a number index, leaves them unnamed.
func (p *parser) parseFrom() (*From, error) {
	if p.peek().kind == tIdent && p.peekAt(1).kind == tKeyword && p.peekAt(1).text == "IN" {
		alias := p.next().text
		p.next()
		src, err := p.parseCollection()
		if err != nil {
			return nil, err
		}
		return &From{Alias: alias, Source: src, In: true}, nil
	}
	src, err := p.parseCollection()
	if err != nil {
		return nil, err
	}
	f := &From{Source: src}
	if p.acceptKeyword("AS") {
		if f.Alias, err = p.parseName("an alias after AS"); err != nil {
			return nil, err
		}
	} else if p.peek().kind == tIdent {
		f.Alias = p.next().text
	} else {
		f.Alias, _ = inferredAlias(src)
	}
	return f, nil
}

// parseCollection reads what FROM or JOIN ranges over: a path, or a
// subquery in brackets.
func (p *parser) parseCollection() (Expr, error) {
	if p.acceptOp("(") {
		if !p.isKeyword("SELECT") {
			return nil, p.errorf("a subquery (SELECT ...) as the source")
		}
		return p.subquery("FROM")
	}
	return p.parsePath()
}

// parsePath reads name(.name | [literal])*: a source in FROM or JOIN.
func (p *parser) parsePath() (Expr, error) {
	name, err := p.parseName("a container name or alias")
	if err != nil {
		return nil, err
	}
	return p.accessors(&Ident{Name: name}, p.pathIndex)
}

// pathIndex reads what a path's brackets hold: a string, a number or a
// parameter.
func (p *parser) pathIndex() (Expr, error) {
	t := p.next()
	switch t.kind {
	case tString:
		return &Literal{Value: t.str}, nil
	case tNumber:
		return &Literal{Value: t.num}, nil
	case tParam:
		return &ParamRef{Name: t.text}, nil
	}
	p.i--
	return nil, p.errorf("a string, number or @parameter inside [ ]")
}

// accessors reads the .name and [index] accessors after x; index reads
// what the brackets hold.
func (p *parser) accessors(x Expr, index func() (Expr, error)) (Expr, error) {
	for {
		switch {
		case p.acceptOp("."):
			n, err := p.parsePropertyName()
			if err != nil {
				return nil, err
			}
			x = &Member{X: x, Name: n}
		case p.acceptOp("["):
			idx, err := index()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &Index{X: x, Index: idx}
		default:
			return x, nil
		}
	}
}

// parsePropertyName reads the name after '.', where keywords are allowed
// (c.value, c.order).
func (p *parser) parsePropertyName() (string, error) {
	t := p.peek()
	switch t.kind {
	case tIdent:
		p.i++
		return t.text, nil
	case tKeyword:
		p.i++
		// Keywords were upper-cased by the lexer; recover the spelling.
		return p.src[t.pos : t.pos+len(t.text)], nil
	}
	return "", p.errorf("a property name after '.'")
}

func (p *parser) parseExpr() (Expr, error) {
	defer func() { p.depth-- }()
	if err := p.nest(); err != nil {
		return nil, err
	}
	return p.parseTernary()
}

func (p *parser) parseTernary() (Expr, error) {
	cond, err := p.parseCoalesce()
	if err != nil {
		return nil, err
	}
	if !p.acceptOp("?") {
		return cond, nil
	}
	then, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(":"); err != nil {
		return nil, err
	}
	els, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	return &Ternary{Cond: cond, Then: then, Else: els}, nil
}

func (p *parser) parseCoalesce() (Expr, error) {
	return p.binaryLevel(tOp, []string{"??"}, p.parseOr)
}

func (p *parser) parseOr() (Expr, error) {
	return p.binaryLevel(tKeyword, []string{"OR"}, p.parseAnd)
}

func (p *parser) parseAnd() (Expr, error) {
	return p.binaryLevel(tKeyword, []string{"AND"}, p.parseNot)
}

func (p *parser) parseNot() (Expr, error) {
	if p.isKeyword("NOT") && !(p.peekAt(1).kind == tKeyword && (p.peekAt(1).text == "IN" || p.peekAt(1).text == "BETWEEN" || p.peekAt(1).text == "LIKE")) {
		p.next()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &Unary{Op: "NOT", X: x}, nil
	}
	return p.parseComparison()
}

var comparisonOps = map[string]bool{"=": true, "!=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *parser) parseComparison() (Expr, error) {
	l, err := p.parseBitOr()
	if err != nil {
		return nil, err
	}
	// tested: l is an IN, BETWEEN or LIKE test, which Cosmos DB's grammar
	// does not take as the operand of another test
	// (1 BETWEEN 2 AND 3 BETWEEN 4 AND 5 is refused; brackets make it one).
	tested := false
	for {
		t := p.peek()
		if t.kind == tOp && comparisonOps[t.text] {
			p.next()
			r, err := p.parseBitOr()
			if err != nil {
				return nil, err
			}
			op := t.text
			if op == "<>" {
				op = "!="
			}
			l = &Binary{Op: op, L: l, R: r}
			tested = false
			continue
		}
		not := false
		if p.isKeyword("NOT") {
			nt := p.peekAt(1)
			if nt.kind == tKeyword && (nt.text == "IN" || nt.text == "BETWEEN" || nt.text == "LIKE") {
				p.next()
				not = true
			}
		}
		if tested && (p.isKeyword("IN") || p.isKeyword("BETWEEN") || p.isKeyword("LIKE")) {
			if not {
				p.i--
			}
			return nil, p.errorf("brackets around the test before it (an IN, BETWEEN or LIKE test cannot be the operand of another)")
		}
		tested = true
		switch {
		case p.acceptKeyword("IN"):
			if err := p.expectOp("("); err != nil {
				return nil, err
			}
			at := p.peek().pos
			list, err := p.exprs()
			if err != nil {
				return nil, err
			}
			if len(list) > MaxInList {
				return nil, &LimitError{Limit: "IN list length", Max: MaxInList, Got: int64(len(list)), Pos: at}
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			l = &In{X: l, List: list, Not: not}
		case p.acceptKeyword("BETWEEN"):
			lo, err := p.parseBitOr()
			if err != nil {
				return nil, err
			}
			if err := p.expectKeyword("AND"); err != nil {
				return nil, err
			}
			hi, err := p.parseBitOr()
			if err != nil {
				return nil, err
			}
			l = &Between{X: l, Low: lo, High: hi, Not: not}
		case p.acceptKeyword("LIKE"):
			pat, err := p.parseBitOr()
			if err != nil {
				return nil, err
			}
			lk := &Like{X: l, Pattern: pat, Not: not}
			if p.acceptKeyword("ESCAPE") {
				if lk.Escape, err = p.parseBitOr(); err != nil {
					return nil, err
				}
			}
			l = lk
		default:
			return l, nil
		}
	}
}

// binaryLevel parses left-associative operators of one precedence level:
// tokens of the kind (an operator, or a keyword such as AND) whose text is
// one of ops.
func (p *parser) binaryLevel(kind tokKind, ops []string, next func() (Expr, error)) (Expr, error) {
	l, err := next()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		matched := ""
		if t.kind == kind {
			for _, op := range ops {
				if t.text == op {
					matched = op
					break
				}
			}
		}
		if matched == "" {
			return l, nil
		}
		if err := p.count(matched, t.pos); err != nil {
			return nil, err
		}
		p.next()
		r, err := next()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: matched, L: l, R: r}
	}
}

// count counts the query's ANDs and ORs, refusing more than MaxAnds or
// MaxOrs.
func (p *parser) count(op string, pos int) error {
	switch op {
	case "AND":
		if p.ands++; p.ands > MaxAnds {
			return &LimitError{Limit: "number of ANDs", Max: MaxAnds, Got: int64(p.ands), Pos: pos}
		}
	case "OR":
		if p.ors++; p.ors > MaxOrs {
			return &LimitError{Limit: "number of ORs", Max: MaxOrs, Got: int64(p.ors), Pos: pos}
		}
	}
	return nil
}

func (p *parser) parseBitOr() (Expr, error) {
	return p.binaryLevel(tOp, []string{"|"}, p.parseBitXor)
}
func (p *parser) parseBitXor() (Expr, error) {
	return p.binaryLevel(tOp, []string{"^"}, p.parseBitAnd)
}
func (p *parser) parseBitAnd() (Expr, error) {
	return p.binaryLevel(tOp, []string{"&"}, p.parseShift)
}
func (p *parser) parseShift() (Expr, error) {
	return p.binaryLevel(tOp, []string{"<<", ">>", ">>>"}, p.parseAdditive)
}
func (p *parser) parseAdditive() (Expr, error) {
	return p.binaryLevel(tOp, []string{"+", "-", "||"}, p.parseMultiplicative)
}
func (p *parser) parseMultiplicative() (Expr, error) {
	return p.binaryLevel(tOp, []string{"*", "/", "%"}, p.parseUnary)
}

func (p *parser) parseUnary() (Expr, error) {
	t := p.peek()
	if t.kind == tOp && (t.text == "-" || t.text == "+" || t.text == "~") {
		p.next()
		defer func() { p.depth-- }()
		if err := p.nest(); err != nil {
			return nil, err
		}
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		if lit, ok := x.(*Literal); ok && t.text == "-" {
			if f, ok := lit.Value.(float64); ok {
				return &Literal{Value: -f}, nil
			}
		}
		return &Unary{Op: t.text, X: x}, nil
	}
	return p.parsePostfix()
}

func (p *parser) parsePostfix() (Expr, error) {
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	return p.accessors(x, p.parseExpr)
}

// exprs reads one expression or more, separated by commas.
func (p *parser) exprs() ([]Expr, error) {
	var out []Expr
	for {
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		out = append(out, x)
		if !p.acceptOp(",") {
			return out, nil
		}
	}
}

// exprsUntil reads expressions separated by commas, possibly none, and the
// closing operator.
func (p *parser) exprsUntil(close string) ([]Expr, error) {
	if p.acceptOp(close) {
		return nil, nil
	}
	out, err := p.exprs()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(close); err != nil {
		return nil, err
	}
	return out, nil
}

// subquery reads a query and the ')' that closes it, after its '('.
func (p *parser) subquery(kind string) (Expr, error) {
	q, err := p.parseQuery()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &Subquery{Kind: kind, Q: q}, nil
}

func (p *parser) parsePrimary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.next()
		return &Literal{Value: t.num}, nil
	case tString:
		p.next()
		return &Literal{Value: t.str}, nil
	case tParam:
		p.next()
		return &ParamRef{Name: t.text}, nil
	case tKeyword:
		switch t.text {
		case "TRUE":
			p.next()
			return &Literal{Value: true}, nil
		case "FALSE":
			p.next()
			return &Literal{Value: false}, nil
		case "NULL":
			p.next()
			return &Literal{Value: nil}, nil
		case "UNDEFINED":
			p.next()
			return &Literal{Value: Undefined}, nil
		case "EXISTS", "ARRAY":
			p.next()
			if err := p.expectOp("("); err != nil {
				return nil, err
			}
			return p.subquery(t.text)
		case "UDF":
			return nil, &SyntaxError{Pos: t.pos, Query: p.src, Expected: "a built-in function", Found: "udf. (user-defined functions are not supported)"}
		}
		return nil, p.errorf("an expression")
	case tIdent:
		p.next()
		if p.isOp("(") {
			p.next()
			args, err := p.exprsUntil(")")
			if err != nil {
				return nil, err
			}
			return &Call{Name: strings.ToUpper(t.text), Args: args}, nil
		}
		return &Ident{Name: t.text}, nil
	case tOp:
		switch t.text {
		case "(":
			p.next()
			if p.isKeyword("SELECT") {
				return p.subquery("SCALAR")
			}
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return x, nil
		case "[":
			p.next()
			elems, err := p.exprsUntil("]")
			if err != nil {
				return nil, err
			}
			return &ArrayLit{Elems: elems}, nil
		case "{":
			p.next()
			obj := &ObjectLit{}
			if !p.acceptOp("}") {
				for {
					kt := p.next()
					var key string
					switch kt.kind {
					case tString:
						key = kt.str
					case tIdent:
						key = kt.text
					case tKeyword:
						key = p.src[kt.pos : kt.pos+len(kt.text)]
					default:
						p.i--
						return nil, p.errorf("a property name in an object")
					}
					if err := p.expectOp(":"); err != nil {
						return nil, err
					}
					v, err := p.parseExpr()
					if err != nil {
						return nil, err
					}
					obj.Keys = append(obj.Keys, key)
					obj.Vals = append(obj.Vals, v)
					if !p.acceptOp(",") {
						break
					}
				}
				if err := p.expectOp("}"); err != nil {
					return nil, err
				}
			}
			return obj, nil
		}
	}
	return nil, p.errorf("an expression")
}
