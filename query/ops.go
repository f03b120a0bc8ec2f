package query

import (
	"math"
	"regexp"
	"strings"
	"sync"
)

// Operators with Cosmos DB's semantics: an operand of the wrong type makes
// the result undefined, never an error.

func arith(op string, a, b any) any {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	if !ok1 || !ok2 {
		return Undefined
	}
	var r float64
	switch op {
	case "+":
		r = x + y
	case "-":
		r = x - y
	case "*":
		r = x * y
	case "/":
		if y == 0 {
			return Undefined
		}
		r = x / y
	case "%":
		if y == 0 {
			return Undefined
		}
		r = math.Mod(x, y)
	case "&", "|", "^", "<<", ">>", ">>>":
		// Bitwise operators work on 32-bit integers, as in JavaScript.
		xi, yi := toInt32(x), toInt32(y)
		switch op {
		case "&":
			return float64(xi & yi)
		case "|":
			return float64(xi | yi)
		case "^":
			return float64(xi ^ yi)
		case "<<":
			return float64(xi << (uint32(yi) & 31))
		case ">>":
			return float64(xi >> (uint32(yi) & 31))
		default:
			return float64(uint32(xi) >> (uint32(yi) & 31))
		}
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return Undefined
	}
	return r
}

func toInt32(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return int32(uint32(int64(math.Trunc(f))))
}

// compareOp evaluates =, !=, <, <=, >, >=. Operands of different types (or
// undefined) give undefined; arrays and objects support only = and !=.
func compareOp(op string, a, b any) any {
	ra, rb := rank(a), rank(b)
	if ra == rankUndefined || rb == rankUndefined || ra != rb {
		return Undefined
	}
	if ra == rankArray || ra == rankObject {
		switch op {
		case "=":
			return equalValues(a, b)
		case "!=":
			return !equalValues(a, b)
		}
		return Undefined
	}
	c := compareValues(a, b)
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return Undefined
}

// and3 and or3 are three-valued logic: a non-boolean operand is unknown.
func and3(a, b any) any {
	x, okx := a.(bool)
	y, oky := b.(bool)
	if (okx && !x) || (oky && !y) {
		return false
	}
	if okx && oky {
		return true
	}
	return Undefined
}

func or3(a, b any) any {
	x, okx := a.(bool)
	y, oky := b.(bool)
	if (okx && x) || (oky && y) {
		return true
	}
	if okx && oky {
		return false
	}
	return Undefined
}

func not3(a any) any {
	if x, ok := a.(bool); ok {
		return !x
	}
	return Undefined
}

// likeCache holds compiled LIKE patterns.
var likeCache sync.Map // string -> *regexp.Regexp (nil value stored as error marker)

// likeMatch reports whether s matches a LIKE pattern: % any run, _ one
// character, [abc] / [a-z] / [^a-z] a class; escape (if not 0) makes the
// next character literal.
func likeMatch(s, pattern string, escape rune) (bool, bool) {
	key := string(escape) + "\x00" + pattern
	if re, ok := likeCache.Load(key); ok {
		if re == nil {
			return false, false
		}
		return re.(*regexp.Regexp).MatchString(s), true
	}
	var b strings.Builder
	b.WriteString("(?s)^")
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case escape != 0 && r == escape:
			if i+1 < len(rs) {
				i++
				b.WriteString(regexp.QuoteMeta(string(rs[i])))
			}
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteString(".")
		case r == '[':
			j := i + 1
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j == len(rs) {
				b.WriteString(`\[`)
				continue
			}
			class := string(rs[i+1 : j])
			b.WriteByte('[')
			if strings.HasPrefix(class, "^") {
				b.WriteByte('^')
				class = class[1:]
			}
			for _, c := range class {
				if c == '-' {
					b.WriteRune(c)
				} else {
					b.WriteString(regexp.QuoteMeta(string(c)))
				}
			}
			b.WriteByte(']')
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		likeCache.Store(key, nil)
		return false, false
	}
	likeCache.Store(key, re)
	return re.MatchString(s), true
}
