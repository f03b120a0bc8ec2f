package resolver

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/docshard/docshard/link"
)

// CompositeKey is the key of a resolver whose partitionKey lists several
// paths: the values at those paths, in order. It is placed by the canonical
// JSON text of the array (RFC 8785), e.g. ["eu",42].
type CompositeKey []any

// KeyString returns the canonical text a key is placed by: a string as
// itself; a number (any Go integer or float type, json.Number) in its RFC
// 8785 form ("1", "1.5", "1e+21"); a CompositeKey (or []any) as the RFC 8785
// JSON text of the array. Any other type is an error wrapping ErrKeyType; nil
// is an error wrapping ErrNoPartitionKey. It allocates the result only.
func KeyString(key any) (string, error) {
	if s, ok := key.(string); ok {
		return s, nil
	}
	var buf [32]byte
	b, err := AppendKey(buf[:0], key)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendKey appends the canonical text of key (see KeyString) to dst. It
// does not allocate when dst has room.
func AppendKey(dst []byte, key any) ([]byte, error) {
	switch k := key.(type) {
	case nil:
		return dst, &KeyError{Err: ErrNoPartitionKey}
	case string:
		return append(dst, k...), nil
	case CompositeKey:
		return appendComposite(dst, k)
	case []any:
		return appendComposite(dst, k)
	}
	if f, ok, err := Number(key); ok {
		if err != nil {
			return dst, err
		}
		return AppendNumber(dst, f)
	}
	return dst, &KeyError{Key: key, Err: ErrKeyType, Reason: "want a string, a number or a composite key"}
}

// Number converts any Go numeric type, or a json.Number, to float64. ok is
// false when key is not numeric. A float32 is converted through its shortest
// decimal text, as encoding/json writes it, so 0.1 stays 0.1. Integers beyond
// 2^53 are rounded to the nearest float64, as every JSON reader does.
func Number(key any) (f float64, ok bool, err error) {
	switch n := key.(type) {
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
			return 0, true, &KeyError{Key: key, Err: ErrKeyType, Reason: "not a valid JSON number"}
		}
		return f, true, nil
	}
	return 0, false, nil
}

// AppendNumber appends the RFC 8785 (ECMAScript Number.prototype.toString)
// text of f to dst: "0", "1", "-1.5", "1e+21", "1e-7". NaN and infinities
// have no JSON form and are an error wrapping ErrKeyType.
func AppendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &KeyError{Key: f, Err: ErrKeyType, Reason: "NaN and infinities have no JSON form"}
	}
	if f == 0 {
		return append(dst, '0'), nil
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
	return dst, nil
}

func appendComposite(dst []byte, parts []any) ([]byte, error) {
	if len(parts) == 0 {
		return dst, &KeyError{Key: parts, Err: ErrKeyType, Reason: "empty composite key"}
	}
	dst = append(dst, '[')
	for i, p := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		dst, err = appendCanonicalScalar(dst, p)
		if err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendCanonicalScalar appends one component of a composite key as RFC 8785
// JSON: strings quoted, numbers canonical, booleans and null (nil or Null) as
// literals.
func appendCanonicalScalar(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil, nullKey:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return AppendJSONString(dst, x), nil
	}
	if f, ok, err := Number(v); ok {
		if err != nil {
			return dst, err
		}
		return AppendNumber(dst, f)
	}
	return dst, &KeyError{Key: v, Err: ErrKeyType, Reason: "a composite key holds strings, numbers, booleans and nulls"}
}

// AppendJSONString appends s as an RFC 8785 JSON string: '"' and '\\'
// escaped, control characters as \b \t \n \f \r or \u00xx, everything else
// (non-ASCII included) as UTF-8. Invalid UTF-8 bytes become U+FFFD.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				dst = append(dst, c)
			}
		}
		i++
	}
	return append(dst, '"')
}

// ValidateLink checks that s is a collection link "dbs/{db}/colls/{coll}"
// (a leading or trailing slash allowed; the link is kept verbatim). The error
// is a *ConfigError.
func ValidateLink(s string) error {
	if _, err := link.ParseCollection(s); err != nil {
		return &ConfigError{Value: s, Reason: "not a collection link dbs/{db}/colls/{coll}"}
	}
	return nil
}
