package query

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tKeyword
	tNumber
	tString
	tParam
	tOp
)

func (k tokKind) String() string {
	return [...]string{"end of query", "identifier", "keyword", "number", "string", "parameter", "operator"}[k]
}

type token struct {
	kind tokKind
	text string  // keyword (upper case), operator, identifier, parameter name with '@'
	str  string  // decoded string literal
	num  float64 // number literal
	pos  int     // byte offset
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of query"
	case tString:
		return strconv.Quote(t.str)
	case tKeyword:
		return t.text
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

// keywords are reserved: they cannot be bare identifiers.
var keywords = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "NOT": true,
	"AS": true, "IN": true, "JOIN": true, "TOP": true, "DISTINCT": true, "VALUE": true,
	"ORDER": true, "BY": true, "ASC": true, "DESC": true, "GROUP": true, "OFFSET": true,
	"LIMIT": true, "BETWEEN": true, "LIKE": true, "ESCAPE": true, "EXISTS": true, "ARRAY": true,
	"TRUE": true, "FALSE": true, "NULL": true, "UNDEFINED": true, "UDF": true,
}

// lexer reads a query's tokens one at a time, as the parser asks for
// them: a query refused early (by a limit or a syntax error) is never
// lexed past the refusal, and no slice of every token is kept.
type lexer struct {
	src string
	i   int // byte offset of what is not read yet
}

// next reads the next token; at the end of src it returns tEOF, every time.
func (l *lexer) next() (token, error) {
	src, i := l.src, l.i
	defer func() { l.i = i }() // where the token (or the error) ends
	// Skip white space and comments.
	for i < len(src) {
		c := src[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			i++
			continue
		}
		if c == '-' && i+1 < len(src) && src[i+1] == '-' {
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		}
		break
	}
	if i >= len(src) {
		return token{kind: tEOF, pos: i}, nil
	}
	start := i
	c := src[i]
	switch {
	case c == '"' || c == '\'':
		s, n, err := lexString(src, i)
		if err != nil {
			return token{}, err
		}
		i += n
		return token{kind: tString, str: s, text: src[start:i], pos: start}, nil
	case c >= '0' && c <= '9' || (c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9'):
		n, f, err := lexNumber(src, i)
		if err != nil {
			return token{}, err
		}
		i += n
		return token{kind: tNumber, num: f, text: src[start:i], pos: start}, nil
	case c == '@':
		j := i + 1
		for j < len(src) && isIdentByte(src, j) {
			_, size := utf8.DecodeRuneInString(src[j:])
			j += size
		}
		if j == i+1 {
			return token{}, &SyntaxError{Pos: i, Query: src, Expected: "a parameter name after '@'", Found: describeAt(src, j)}
		}
		i = j
		return token{kind: tParam, text: src[start:j], pos: start}, nil
	case isIdentStart(src, i):
		j := i
		for j < len(src) && isIdentByte(src, j) {
			_, size := utf8.DecodeRuneInString(src[j:])
			j += size
		}
		word := src[i:j]
		up := strings.ToUpper(word)
		i = j
		if keywords[up] {
			return token{kind: tKeyword, text: up, pos: start}, nil
		}
		return token{kind: tIdent, text: word, pos: start}, nil
	default:
		op := ""
		for _, cand := range []string{">>>", "<=", ">=", "!=", "<>", "||", "??", "<<", ">>"} {
			if strings.HasPrefix(src[i:], cand) {
				op = cand
				break
			}
		}
		if op == "" {
			if strings.IndexByte("+-*/%=<>!&|^~?:,.()[]{}", c) < 0 {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return token{}, &SyntaxError{Pos: i, Query: src, Expected: "a token", Found: fmt.Sprintf("unexpected character %q", r)}
			}
			op = src[i : i+1]
		}
		i += len(op)
		return token{kind: tOp, text: op, pos: start}, nil
	}
}

// Identifiers are letters, digits and '_', not starting with a digit; '$'
// is no part of one (Cosmos DB refuses SELECT VALUE $42).
func isIdentStart(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r)
}

func isIdentByte(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func describeAt(src string, i int) string {
	if i >= len(src) {
		return "end of query"
	}
	r, _ := utf8.DecodeRuneInString(src[i:])
	return fmt.Sprintf("%q", r)
}

// lexString reads a single- or double-quoted string with JSON-style escapes
// (\' is accepted in both).
func lexString(src string, i int) (string, int, error) {
	quote := src[i]
	var b strings.Builder
	j := i + 1
	for j < len(src) {
		c := src[j]
		switch {
		case c == quote:
			return b.String(), j + 1 - i, nil
		case c == '\\':
			if j+1 >= len(src) {
				return "", 0, &SyntaxError{Pos: j, Query: src, Expected: "an escape character", Found: "end of query"}
			}
			e := src[j+1]
			switch e {
			case '"', '\'', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, n, ok := lexUnicode(src, j)
				if !ok {
					return "", 0, &SyntaxError{Pos: j, Query: src, Expected: `\uXXXX with four hex digits`, Found: describeAt(src, j+2)}
				}
				b.WriteRune(r)
				j += n
				continue
			default:
				return "", 0, &SyntaxError{Pos: j, Query: src, Expected: `one of \" \' \\ \/ \b \f \n \r \t \u`, Found: fmt.Sprintf(`\%c`, e)}
			}
			j += 2
		default:
			b.WriteByte(c)
			j++
		}
	}
	return "", 0, &SyntaxError{Pos: i, Query: src, Expected: fmt.Sprintf("a closing %c", quote), Found: "end of query"}
}

// lexUnicode reads \uXXXX (and a following low surrogate) at src[j:].
func lexUnicode(src string, j int) (rune, int, bool) {
	hex4 := func(k int) (rune, bool) {
		if k+6 > len(src) || src[k] != '\\' || src[k+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(src[k+2:k+6], 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(j)
	if !ok {
		return 0, 0, false
	}
	if r >= 0xD800 && r < 0xDC00 {
		if lo, ok := hex4(j + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 12, true
		}
		return utf8.RuneError, 6, true
	}
	return r, 6, true
}

func lexNumber(src string, i int) (int, float64, error) {
	j := i
	if strings.HasPrefix(src[i:], "0x") || strings.HasPrefix(src[i:], "0X") {
		j += 2
		for j < len(src) && strings.IndexByte("0123456789abcdefABCDEF", src[j]) >= 0 {
			j++
		}
		v, err := strconv.ParseUint(src[i+2:j], 16, 64)
		if err != nil {
			return 0, 0, &SyntaxError{Pos: i, Query: src, Expected: "a hexadecimal number", Found: src[i:j]}
		}
		return j - i, float64(v), nil
	}
	for j < len(src) && src[j] >= '0' && src[j] <= '9' {
		j++
	}
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && src[k] >= '0' && src[k] <= '9' {
			for k < len(src) && src[k] >= '0' && src[k] <= '9' {
				k++
			}
			j = k
		}
	}
	if j < len(src) && isIdentStart(src, j) {
		return 0, 0, &SyntaxError{Pos: j, Query: src, Expected: "an operator or white space after a number", Found: describeAt(src, j)}
	}
	f, err := strconv.ParseFloat(src[i:j], 64)
	if err != nil {
		return 0, 0, &SyntaxError{Pos: i, Query: src, Expected: "a number", Found: src[i:j]}
	}
	return j - i, f, nil
}

// SyntaxError reports a query that does not parse: where, what was
// expected and what was found.
type SyntaxError struct {
	Pos      int    // byte offset in the query
	Line     int    // 1-based line
	Column   int    // 1-based column, in characters
	Expected string // what the parser wanted
	Found    string // what it got
	Query    string // the query text
	Hint     string // a likely fix ("did you mean FROM (not FRM)?"), or ""
}

// Error implements error: "syntax error at line 1, column 8: expected ..., found ...".
func (e *SyntaxError) Error() string {
	line, col := e.position()
	msg := fmt.Sprintf("query: syntax error at line %d, column %d: expected %s, found %s", line, col, e.Expected, e.Found)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *SyntaxError) position() (int, int) {
	if e.Line > 0 {
		return e.Line, e.Column
	}
	line, col := 1, 1
	for i, r := range e.Query {
		if i >= e.Pos {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
