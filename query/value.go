package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/docshard/docshard/internal/jsontext"
)

// Values are Go JSON values as encoding/json decodes them (nil for null,
// bool, float64, string, []any, map[string]any) plus Undefined, Cosmos DB's
// "no value" (a missing property, a failed comparison), which is distinct
// from null and never appears inside an array or object.

type undefinedType struct{}

// Undefined is the value of a missing property or of an operation whose
// operand types do not fit (Cosmos DB's undefined).
var Undefined any = undefinedType{}

func (undefinedType) String() string { return "undefined" }

func isUndefined(v any) bool { _, ok := v.(undefinedType); return ok }

// Type ranks for ORDER BY across types (ascending): undefined, null,
// booleans, numbers, strings, then arrays and objects.
//
// Sources: the ORDER BY reference of Azure Cosmos DB for NoSQL
// (learn.microsoft.com/azure/cosmos-db/nosql/query/order-by) states that
// null sorts as the lowest value and that queries with ORDER BY return all
// items, including those whose ORDER BY property is undefined; those come
// first in ascending order (last in descending), below null. The MIN and MAX
// references (.../nosql/query/min, .../max) give the order null < boolean <
// number < string for values of different types. Arrays after strings and
// objects last follow the .NET SDK's "ORDER BY Arrays and Objects" change
// (Azure/azure-cosmos-dotnet-v3 pull request 853); within arrays this engine
// compares element-wise and objects by canonical text, a total order where
// Cosmos DB compares hashes (any fixed order merges exactly).
const (
	rankUndefined = iota
	rankNull
	rankBool
	rankNumber
	rankString
	rankArray
	rankObject
)

func rank(v any) int {
	switch v.(type) {
	case undefinedType:
		return rankUndefined
	case nil:
		return rankNull
	case bool:
		return rankBool
	case float64:
		return rankNumber
	case string:
		return rankString
	case []any:
		return rankArray
	case map[string]any:
		return rankObject
	}
	return rankObject
}

// compareValues orders any two values: by type rank, then by value. Arrays
// compare element-wise, objects by their canonical text; the order is total
// and deterministic, which ORDER BY and the fan-out merge rely on.
func compareValues(a, b any) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case float64:
		y := b.(float64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case string:
		return strings.Compare(x, b.(string))
	case []any:
		y := b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := compareValues(x[i], y[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(x), len(y))
	case map[string]any:
		return strings.Compare(canonical(x), canonical(b))
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// equalValues is deep equality of defined values; numbers by value.
func equalValues(a, b any) bool { return EqualValues(a, b, 0) }

// EqualValues reports whether two decoded JSON values (nil, bool, float64,
// string, []any, map[string]any, as a query returns them decoded) are
// deeply equal, numbers within a relative tolerance: |x-y| <= tolerance ×
// max(|x|, |y|), so 0 means exactly equal. Sums and averages merged across
// collections may differ from one collection's answer in the last bits
// (floating-point addition depends on order); compare them with a
// tolerance such as 1e-12. Undefined equals nothing. It costs one walk of
// both values and allocates nothing.
func EqualValues(a, b any, tolerance float64) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || tolerance > 0 && math.Abs(x-y) <= tolerance*math.Max(math.Abs(x), math.Abs(y)))
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !EqualValues(x[i], y[i], tolerance) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !EqualValues(v, w, tolerance) {
				return false
			}
		}
		return true
	}
	return false
}

// canonical returns a text that is equal for equal values: JSON with
// sorted object keys and shortest numbers; "undefined" for Undefined. It
// keys DISTINCT and GROUP BY.
func canonical(v any) string {
	var b strings.Builder
	writeValue(&b, v, canonicalText)
	return b.String()
}

// valueText is how writeValue spells a value: canonicalText for keys that
// are equal for equal values, literalText for a query literal the lexer
// reads back (Format).
type valueText struct {
	comma, colon string
	// literal puts a negative number in brackets, so "-1" after an operator
	// reads as one operand, and writes strings in JSON quoting; otherwise -0
	// is written as 0 (one value) and strings are Go-quoted.
	literal bool
}

var (
	canonicalText = valueText{comma: ",", colon: ":"}
	literalText   = valueText{comma: ", ", colon: ": ", literal: true}
)

// quote writes s quoted as t spells strings.
func (t valueText) quote(b *strings.Builder, s string) {
	if t.literal {
		writeString(b, s)
		return
	}
	b.WriteString(strconv.Quote(s))
}

// writeValue writes v as t spells it; an object's keys are sorted. It is
// the one walk behind canonical and Format's literals.
func writeValue(b *strings.Builder, v any, t valueText) {
	switch x := v.(type) {
	case undefinedType:
		b.WriteString("undefined")
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		switch {
		case t.literal && x < 0:
			b.WriteString("(-")
			b.WriteString(strconv.FormatFloat(-x, 'g', -1, 64))
			b.WriteByte(')')
			return
		case !t.literal && x == 0:
			x = 0 // -0 and 0 are one value
		}
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		t.quote(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(t.comma)
			}
			writeValue(b, e, t)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(t.comma)
			}
			t.quote(b, k)
			b.WriteString(t.colon)
			writeValue(b, x[k], t)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", x)
	}
}

// Normalize converts a Go value to the engine's JSON values: integers and
// other number types to float64, json.Number and json.RawMessage decoded,
// typed slices and maps and structs through encoding/json. It is how
// parameters enter a query.
func Normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, float64, string:
		return x, nil
	case undefinedType:
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := Normalize(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := Normalize(e)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case json.RawMessage:
		return decodeJSON(x)
	}
	if f, ok, err := jsontext.GoNumber(v); ok {
		if err != nil {
			return nil, fmt.Errorf("invalid number %q", v)
		}
		return f, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value of type %T has no JSON form: %w", v, err)
	}
	return decodeJSON(data)
}

// decodeJSON decodes one JSON value.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// encodeValue writes a defined value as JSON, object keys sorted (as
// encoding/json does), numbers as encoding/json writes float64. It is
// written by hand because results are encoded on the hot path and the
// reflection-based encoder costs several times more. Non-finite numbers,
// which JSON cannot hold, are written as null.
func encodeValue(v any) ([]byte, error) {
	return appendJSON(make([]byte, 0, 64), v)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(b, "null"...), nil
		}
		return appendFloat(b, x), nil
	case string:
		return appendJSONString(b, x), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case undefinedType:
		return nil, fmt.Errorf("query: undefined has no JSON form")
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, data...), nil
}

// appendFloat writes a finite number as encoding/json does (ECMAScript
// style, -0 as "-0").
func appendFloat(b []byte, f float64) []byte { return jsontext.AppendNumber(b, f, jsontext.Result) }

// appendJSONString writes s quoted, escaping what JSON requires (and
// U+2028, U+2029, but not <, > and & as encoding/json does: results are
// data, not HTML).
func appendJSONString(b []byte, s string) []byte { return jsontext.AppendString(b, s, jsontext.Result) }

// typeName names a value's type in messages.
func typeName(v any) string {
	switch v.(type) {
	case undefinedType:
		return "undefined"
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
