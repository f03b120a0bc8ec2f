package store

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParsePartitionKeyPath splits a collection's partition-key path
// ("/userId", "/a/b", `/"name with space"`) into property names. Empty
// means "/id". Errors wrap ErrBadRequest.
func ParsePartitionKeyPath(path string) ([]string, error) {
	if path == "" {
		return []string{"id"}, nil
	}
	bad := func(reason string) error {
		return &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("partition-key path %q: %s", path, reason)}
	}
	var segs []string
	for i := 0; i < len(path); {
		if path[i] != '/' {
			return nil, bad("want '/' before every property name")
		}
		i++
		if i < len(path) && path[i] == '"' {
			var b strings.Builder
			i++
			closed := false
			for i < len(path) {
				if path[i] == '\\' && i+1 < len(path) {
					b.WriteByte(path[i+1])
					i += 2
					continue
				}
				if path[i] == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(path[i])
				i++
			}
			if !closed {
				return nil, bad("unterminated quoted name")
			}
			segs = append(segs, b.String())
			continue
		}
		j := i
		for j < len(path) && path[j] != '/' {
			j++
		}
		if j == i {
			return nil, bad("empty property name")
		}
		segs = append(segs, path[i:j])
		i = j
	}
	return segs, nil
}

// KeyText returns the canonical text of a partition-key value, which is
// equal for equal values: a JSON string for strings, the shortest form for
// numbers (any Go number type), true/false, null for Null (or a JSON null
// value), and NoneText (not JSON, so unlike every other text) for None.
// Backends use it to compare and index keys. Other types wrap
// ErrBadRequest.
func KeyText(v any) (string, error) {
	switch x := v.(type) {
	case noneKey:
		return NoneText, nil
	case string:
		if plainASCII(x) {
			return `"` + x + `"`, nil
		}
		b, _ := json.Marshal(x)
		return string(b), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nullKey:
		return "null", nil
	case nil:
		return "null", nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return "", &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("partition key %q is not a number", string(x))}
		}
		return numberText(f), nil
	case fmt.Stringer:
		if x.String() == "null" {
			return "null", nil
		}
	}
	if f, ok := toFloat(v); ok {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", &Error{Kind: ErrBadRequest, Message: "partition key is not a finite number"}
		}
		return numberText(f), nil
	}
	return "", &Error{Kind: ErrBadRequest, Message: fmt.Sprintf("partition key of type %T: want a string, number, bool or null", v)}
}

func numberText(f float64) string {
	if f == 0 {
		return "0"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(n), 'g', -1, 32), 64)
		return f, true
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// plainASCII reports whether s needs no escaping in JSON (and none from
// encoding/json's HTML-safe rules), so quoting it is concatenation.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
