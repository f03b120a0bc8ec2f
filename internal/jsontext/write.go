package jsontext

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// Policy is how a writer spells what JSON lets it spell several ways.
type Policy uint8

const (
	// Canonical is RFC 8785 (the JSON Canonicalization Scheme), the text
	// partition keys are placed and compared by: in strings only '"', '\\'
	// and control characters escaped (\b \t \n \f \r, others \u00xx), all
	// else as UTF-8, U+2028 and U+2029 included; numbers as ECMAScript
	// writes them, -0 as "0".
	Canonical Policy = iota
	// Result is how query results are written: encoding/json's text without
	// its HTML escaping. Strings escape \b and \f as \u0008 and \u000c, and
	// U+2028 and U+2029 (which JavaScript source cannot hold raw); numbers
	// as Canonical, but -0 keeps its sign ("-0").
	Result
)

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes a JSON string holds unescaped.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

// AppendString appends s as a quoted JSON string to dst, escaping as p
// says; invalid UTF-8 bytes become U+FFFD under either policy. It is the
// one string writer of the module: one loop, the policy a parameter. It
// copies runs of plain bytes whole and does not allocate when dst has room.
func AppendString(dst []byte, s string, p Policy) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b', '\f':
				if p == Canonical {
					e := byte('b')
					if c == '\f' {
						e = 'f'
					}
					dst = append(dst, '\\', e)
					break
				}
				fallthrough
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...) // the replacement character itself, as text
		case p == Result && (r == '\u2028' || r == '\u2029'):
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendNumber appends the JSON text of f to dst: ECMAScript's
// Number.prototype.toString, which RFC 8785 and encoding/json both follow:
// "1", "-1.5", "0.000001", "1e-7", "1e+21". Under Canonical -0 is "0",
// under Result "-0". f must be finite (callers decide what NaN and the
// infinities, which JSON cannot hold, mean); for them it writes null. It
// does not allocate when dst has room; integers below 2^53 take a fast path.
func AppendNumber(dst []byte, f float64, p Policy) []byte {
	if i := int64(f); float64(i) == f && i > -1<<53 && i < 1<<53 {
		// An integer, as most numbers in documents are: the same digits,
		// several times faster than the shortest-form search.
		if i == 0 && p == Result && math.Signbit(f) {
			return append(dst, '-', '0')
		}
		return strconv.AppendInt(dst, i, 10)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits in exponent form: d[.ddd]e±XX.
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	var digits [24]byte
	k := 0
	i := 0
	for ; i < len(e) && e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[k] = e[i]
			k++
		}
	}
	exp, neg := 0, e[i+1] == '-'
	for _, c := range e[i+2:] { // e±dd: AppendFloat always writes the sign
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	n := exp + 1 // value = 0.d1d2...dk × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits[:k]...)
		for j := 0; j < n-k; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:k]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := 0; j < -n; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits[:k]...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:k]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// ErrNumber is the error GoNumber gives for a json.Number that is not a
// number.
var ErrNumber = errors.New("not a valid JSON number")

// GoNumber converts any Go integer or float type, or a json.Number, to the
// float64 a JSON reader would hold: ok is false when v is not numeric. A
// float32 goes through its shortest decimal text, as encoding/json writes
// it, so float32(0.1) is 0.1; integers beyond 2^53 round to the nearest
// float64. A json.Number that does not parse is ErrNumber. It is the one
// number normaliser of the module, and allocates nothing.
func GoNumber(v any) (f float64, ok bool, err error) {
	switch n := v.(type) {
	case float64:
		return n, true, nil
	case float32:
		var buf [32]byte
		f, _ := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], float64(n), 'g', -1, 32)), 64)
		return f, true, nil
	case int:
		return float64(n), true, nil
	case int8:
		return float64(n), true, nil
	case int16:
		return float64(n), true, nil
	case int32:
		return float64(n), true, nil
	case int64:
		return float64(n), true, nil
	case uint:
		return float64(n), true, nil
	case uint8:
		return float64(n), true, nil
	case uint16:
		return float64(n), true, nil
	case uint32:
		return float64(n), true, nil
	case uint64:
		return float64(n), true, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, true, ErrNumber
		}
		return f, true, nil
	}
	return 0, false, nil
}
