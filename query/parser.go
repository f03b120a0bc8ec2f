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
	p := &parser{src: text, lx: lexer{src: text}}
	p.toks = p.window[:0]
	q, err := p.parseQuery()
	if err == nil && p.peek().kind != tEOF {
		err = p.errorf("end of query")
	}
	if p.lexErr != nil { // the parse stopped at a token that does not lex
		return nil, p.lexErr
	}
	if err != nil {
		return nil, err
	}
	return q, nil
}

// parser is a recursive descent over the tokens its lexer reads on demand.
// It enforces the limits as it goes, so a hostile query is refused before
// the parser goes deep or reads far: brackets, calls, constructors and
// subqueries nest through nest (MaxNesting); a chain of NOTs is read in a
// loop; and every node's height (the longest path below it) is known as it
// is built, so a tree deeper than MaxDepth is refused at the node that
// takes it past, not after the whole text is parsed.
type parser struct {
	src    string
	lx     lexer
	lexErr error     // the lexer's error: the query is refused with it
	toks   []token   // tokens read and not dropped; toks[i] is the next
	window [32]token // toks' first backing array
	i      int
	depth  int // nesting, for MaxNesting
	// h is the height of the expression (or query) the parse function that
	// returned last built: 0 for a leaf, one more than its highest operand
	// for a node; a query is one more than its highest clause.
	h         int
	ands, ors int
	// maxDepth is the most frames of nest the parse has been in at once
	// and maxH the highest node it has built: what tests read to see the
	// limits are enforced while parsing.
	maxDepth, maxH int
}

// tooDeep is the refusal of a tree deeper than MaxDepth, at the token the
// parser has reached.
func (p *parser) tooDeep() error {
	return &LimitError{Limit: "expression depth", Max: MaxDepth, Pos: p.peek().pos}
}

// up records that the parser built a node over operands whose highest is
// h high, refusing it past MaxDepth.
func (p *parser) up(h int) error {
	p.h = h + 1
	p.maxH = max(p.maxH, p.h)
	if p.h > MaxDepth {
		return p.tooDeep()
	}
	return nil
}

// nest enters one level of nesting, refusing the query past MaxNesting;
// the caller leaves it with p.depth--.
func (p *parser) nest() error {
	p.depth++
	p.maxDepth = max(p.maxDepth, p.depth)
	if p.depth > MaxNesting {
		return &LimitError{Limit: "nesting of brackets, calls and subqueries", Max: MaxNesting, Pos: p.peek().pos}
	}
	return nil
}

// fill lexes until toks[i+n] exists or the query has ended, dropping the
// tokens more than one behind the next (the parser steps back one at
// most). A token that does not lex ends the query: its error is kept in
// lexErr, which parse returns.
func (p *parser) fill(n int) {
	for p.i+n >= len(p.toks) {
		if k := len(p.toks); k > 0 && p.toks[k-1].kind == tEOF {
			return
		}
		if p.i > 1 && len(p.toks) == cap(p.toks) {
			k := copy(p.toks, p.toks[p.i-1:])
			p.toks, p.i = p.toks[:k], 1
		}
		t, err := p.lx.next()
		if err != nil {
			p.lexErr = err
			t = token{kind: tEOF, pos: p.lx.i}
		}
		p.toks = append(p.toks, t)
	}
}

func (p *parser) peek() token {
	p.fill(0)
	return p.toks[p.i]
}
func (p *parser) peekAt(n int) token {
	p.fill(n)
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.peek()
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errorf(expected string) error {
	t := p.peek()
	e := &SyntaxError{Pos: t.pos, Query: p.src, Expected: expected, Found: t.describe()}
	// A misspelt keyword reads as an identifier (an alias, say), and the
	// error falls on the token after it: look at both.
	cands := []token{t}
	if p.i > 0 {
		cands = append(cands, p.toks[p.i-1])
	}
	for _, c := range cands {
		if kw := nearKeyword(c); kw != "" {
			e.Hint = fmt.Sprintf("did you mean %s (not %s)?", kw, c.text)
			break
		}
	}
	return e
}

// nearKeyword returns the keyword an identifier token of three letters or
// more is one edit (a letter added, dropped, changed or two swapped) away
// from, or "".
func nearKeyword(t token) string {
	if t.kind != tIdent || len(t.text) < 3 {
		return ""
	}
	up := strings.ToUpper(t.text)
	for _, kw := range keywordList {
		if oneEdit(up, kw) {
			return kw
		}
	}
	return ""
}

// keywordList is keywords in a fixed order (the clause keywords first), so
// a hint is the same every run.
var keywordList = []string{"SELECT", "FROM", "WHERE", "ORDER", "GROUP", "OFFSET", "LIMIT", "VALUE", "DISTINCT",
	"JOIN", "BETWEEN", "EXISTS", "ARRAY", "ESCAPE", "LIKE", "DESC", "TRUE", "FALSE", "NULL", "UNDEFINED", "AND", "NOT", "TOP", "ASC"}

// oneEdit reports whether a and b differ by exactly one edit: a letter
// inserted, deleted or substituted, or two neighbours swapped.
func oneEdit(a, b string) bool {
	if a == b {
		return false
	}
	switch len(a) - len(b) {
	case 0:
		diff := -1
		for i := range len(a) {
			if a[i] != b[i] {
				if diff >= 0 {
					// a second difference: only a swap of neighbours
					return i == diff+1 && a[diff] == b[i] && a[i] == b[diff] && a[i+1:] == b[i+1:]
				}
				diff = i
			}
		}
		return true
	case 1, -1:
		if len(a) < len(b) {
			a, b = b, a
		}
		for i := range len(b) {
			if a[i] != b[i] {
				return a[i+1:] == b[i:]
			}
		}
		return true
	}
	return false
}

// is reports whether the next token is of this kind with this text;
// accept consumes it if so; expect consumes it or fails naming it.
func (p *parser) is(kind tokKind, text string) bool {
	t := p.peek()
	return t.kind == kind && t.text == text
}

func (p *parser) accept(kind tokKind, text string) bool {
	if p.is(kind, text) {
		p.i++ // is peeked it
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
	kids := -1 // the highest clause's height; -1 while there is none
	if p.acceptKeyword("DISTINCT") {
		q.Distinct = true
	}
	if p.acceptKeyword("TOP") {
		t := p.next()
		switch t.kind {
		case tNumber:
			q.Top, kids = &Literal{Value: t.num}, 0
		case tParam:
			q.Top, kids = &ParamRef{Name: t.text}, 0
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
			kids = max(kids, p.h)
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
		q.From, kids = f, max(kids, p.h)
		for p.acceptKeyword("JOIN") {
			j, err := p.parseFrom()
			if err != nil {
				return nil, err
			}
			q.Joins, kids = append(q.Joins, Join(*j)), max(kids, p.h)
		}
	}
	if p.acceptKeyword("WHERE") {
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		q.Where, kids = x, max(kids, p.h)
	}
	if p.acceptKeyword("GROUP") {
		if err := p.expectKeyword("BY"); err != nil {
			return nil, err
		}
		var err error
		if q.GroupBy, err = p.exprs(); err != nil {
			return nil, err
		}
		kids = max(kids, p.h)
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
			kids = max(kids, p.h)
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
		q.Offset, q.Limit, kids = off, lim, max(kids, 0)
	}
	if kids < 0 {
		p.h = 0
		return q, nil
	}
	if err := p.up(kids); err != nil {
		return nil, err
	}
	return q, nil
}

func (p *parser) parseCount(what string) (Expr, error) {
	p.h = 0
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
	p.h = 0
	return p.accessors(&Ident{Name: name}, p.pathIndex)
}

// pathIndex reads what a path's brackets hold: a string, a number or a
// parameter.
func (p *parser) pathIndex() (Expr, error) {
	p.h = 0
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

// accessors reads the .name and [index] accessors after x, whose height
// is p.h; index reads what the brackets hold.
func (p *parser) accessors(x Expr, index func() (Expr, error)) (Expr, error) {
	for {
		switch {
		case p.acceptOp("."):
			n, err := p.parsePropertyName()
			if err != nil {
				return nil, err
			}
			x = &Member{X: x, Name: n}
			if err := p.up(p.h); err != nil {
				return nil, err
			}
		case p.acceptOp("["):
			hx := p.h
			idx, err := index()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &Index{X: x, Index: idx}
			if err := p.up(max(hx, p.h)); err != nil {
				return nil, err
			}
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
	hc := p.h
	then, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	ht := p.h
	if err := p.expectOp(":"); err != nil {
		return nil, err
	}
	els, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if err := p.up(max(hc, ht, p.h)); err != nil {
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

// parseNot reads NOTs in a loop, not by recursion: a chain of them past
// MaxDepth is refused as soon as it is read.
func (p *parser) parseNot() (Expr, error) {
	nots := 0
	for p.isKeyword("NOT") && !(p.peekAt(1).kind == tKeyword && (p.peekAt(1).text == "IN" || p.peekAt(1).text == "BETWEEN" || p.peekAt(1).text == "LIKE")) {
		p.next()
		if nots++; nots > MaxDepth { // each is a node over the next
			return nil, p.tooDeep()
		}
	}
	x, err := p.parseComparison()
	if err != nil {
		return nil, err
	}
	for ; nots > 0; nots-- {
		x = &Unary{Op: "NOT", X: x}
		if err := p.up(p.h); err != nil {
			return nil, err
		}
	}
	return x, nil
}

var comparisonOps = map[string]bool{"=": true, "!=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *parser) parseComparison() (Expr, error) {
	l, err := p.parseBitOr()
	if err != nil {
		return nil, err
	}
	hl := p.h // l's height
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
			if err := p.up(max(hl, p.h)); err != nil {
				return nil, err
			}
			hl = p.h
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
			if err := p.up(max(hl, p.h)); err != nil {
				return nil, err
			}
		case p.acceptKeyword("BETWEEN"):
			lo, err := p.parseBitOr()
			if err != nil {
				return nil, err
			}
			hl = max(hl, p.h)
			if err := p.expectKeyword("AND"); err != nil {
				return nil, err
			}
			hi, err := p.parseBitOr()
			if err != nil {
				return nil, err
			}
			l = &Between{X: l, Low: lo, High: hi, Not: not}
			if err := p.up(max(hl, p.h)); err != nil {
				return nil, err
			}
		case p.acceptKeyword("LIKE"):
			pat, err := p.parseBitOr()
			if err != nil {
				return nil, err
			}
			hl = max(hl, p.h)
			lk := &Like{X: l, Pattern: pat, Not: not}
			if p.acceptKeyword("ESCAPE") {
				if lk.Escape, err = p.parseBitOr(); err != nil {
					return nil, err
				}
				hl = max(hl, p.h)
			}
			l = lk
			if err := p.up(hl); err != nil {
				return nil, err
			}
		default:
			p.h = hl
			return l, nil
		}
		hl = p.h
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
	hl := p.h // l's height
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
			p.h = hl
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
		if err := p.up(max(hl, p.h)); err != nil {
			return nil, err
		}
		hl = p.h
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
				p.h = 0
				return &Literal{Value: -f}, nil
			}
		}
		if err := p.up(p.h); err != nil {
			return nil, err
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

// exprs reads one expression or more, separated by commas; p.h is the
// height of the highest.
func (p *parser) exprs() ([]Expr, error) {
	var out []Expr
	h := 0
	for {
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		out, h = append(out, x), max(h, p.h)
		if !p.acceptOp(",") {
			p.h = h
			return out, nil
		}
	}
}

// exprsUntil reads expressions separated by commas, possibly none (p.h is
// then -1), and the closing operator.
func (p *parser) exprsUntil(close string) ([]Expr, error) {
	if p.acceptOp(close) {
		p.h = -1
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
	if err := p.up(p.h); err != nil {
		return nil, err
	}
	return &Subquery{Kind: kind, Q: q}, nil
}

// parsePrimary reads an operand; p.h is 0 for a leaf.
func (p *parser) parsePrimary() (Expr, error) {
	p.h = 0
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
			if err := p.up(p.h); err != nil {
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
			if err := p.up(p.h); err != nil {
				return nil, err
			}
			return &ArrayLit{Elems: elems}, nil
		case "{":
			p.next()
			obj := &ObjectLit{}
			h := -1
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
					h = max(h, p.h)
					if !p.acceptOp(",") {
						break
					}
				}
				if err := p.expectOp("}"); err != nil {
					return nil, err
				}
			}
			if err := p.up(h); err != nil {
				return nil, err
			}
			return obj, nil
		}
	}
	return nil, p.errorf("an expression")
}
