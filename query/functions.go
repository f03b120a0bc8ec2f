package query

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// builtin is a scalar function: arity bounds and the implementation. Every
// implementation returns Undefined for arguments of the wrong type, as
// Cosmos DB does; arity is checked when the query is compiled.
type builtin struct {
	min, max int // max -1: variadic
	fn       func(args []any) any
}

// aggregateNames are the aggregate functions.
var aggregateNames = map[string]bool{"COUNT": true, "SUM": true, "MIN": true, "MAX": true, "AVG": true}

var builtins map[string]builtin

func init() {
	num1 := func(f func(float64) float64) builtin {
		return builtin{1, 1, func(a []any) any {
			x, ok := a[0].(float64)
			if !ok {
				return Undefined
			}
			return finite(f(x))
		}}
	}
	is := func(pred func(any) bool) builtin {
		return builtin{1, 1, func(a []any) any { return pred(a[0]) }}
	}
	builtins = map[string]builtin{
		// Type checks.
		"IS_DEFINED":   is(func(v any) bool { return !isUndefined(v) }),
		"IS_NULL":      is(func(v any) bool { return v == nil }),
		"IS_BOOL":      is(func(v any) bool { _, ok := v.(bool); return ok }),
		"IS_NUMBER":    is(func(v any) bool { _, ok := v.(float64); return ok }),
		"IS_STRING":    is(func(v any) bool { _, ok := v.(string); return ok }),
		"IS_ARRAY":     is(func(v any) bool { _, ok := v.([]any); return ok }),
		"IS_OBJECT":    is(func(v any) bool { _, ok := v.(map[string]any); return ok }),
		"IS_PRIMITIVE": is(func(v any) bool { r := rank(v); return r >= rankNull && r <= rankString }),
		// IS_INTEGER: a whole number within int64's range. Numbers are
		// float64 here, so the range is -2^63 to 2^63 inclusive: the
		// literal 9223372036854775807 reads as 2^63, and Cosmos DB's
		// reference answers true for it (and false for 2^64 - 1).
		"IS_INTEGER": is(func(v any) bool {
			f, ok := v.(float64)
			return ok && f == math.Trunc(f) && f >= -(1<<63) && f <= 1<<63
		}),
		"IS_FINITE_NUMBER": is(func(v any) bool {
			f, ok := v.(float64)
			return ok && !math.IsInf(f, 0) && !math.IsNaN(f)
		}),

		// Math.
		"ABS":     num1(math.Abs),
		"CEILING": num1(math.Ceil),
		"FLOOR":   num1(math.Floor),
		"ROUND":   num1(math.Round), // half away from zero, as Cosmos DB
		"TRUNC":   num1(math.Trunc),
		"SQRT":    num1(math.Sqrt),
		"SQUARE":  num1(func(x float64) float64 { return x * x }),
		"EXP":     num1(math.Exp),
		"LOG10":   num1(math.Log10),
		"SIN":     num1(math.Sin),
		"COS":     num1(math.Cos),
		"TAN":     num1(math.Tan),
		"ASIN":    num1(math.Asin),
		"ACOS":    num1(math.Acos),
		"ATAN":    num1(math.Atan),
		"COT":     num1(func(x float64) float64 { return 1 / math.Tan(x) }),
		"DEGREES": num1(func(x float64) float64 { return x * 180 / math.Pi }),
		"RADIANS": num1(func(x float64) float64 { return x * math.Pi / 180 }),
		"SIGN": num1(func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		}),
		"PI":   {0, 0, func([]any) any { return math.Pi }},
		"RAND": {0, 0, func([]any) any { return rand.Float64() }},
		"POWER": {2, 2, func(a []any) any {
			x, ok1 := a[0].(float64)
			y, ok2 := a[1].(float64)
			if !ok1 || !ok2 {
				return Undefined
			}
			return finite(math.Pow(x, y))
		}},
		"ATN2": {2, 2, func(a []any) any {
			y, ok1 := a[0].(float64)
			x, ok2 := a[1].(float64)
			if !ok1 || !ok2 {
				return Undefined
			}
			return finite(math.Atan2(x, y))
		}},
		"LOG": {1, 2, func(a []any) any {
			x, ok := a[0].(float64)
			if !ok {
				return Undefined
			}
			if len(a) == 2 {
				base, ok := a[1].(float64)
				if !ok {
					return Undefined
				}
				return finite(math.Log(x) / math.Log(base))
			}
			return finite(math.Log(x))
		}},
		"NUMBERBIN": {1, 2, func(a []any) any {
			x, ok := a[0].(float64)
			size := 1.0
			if len(a) == 2 {
				s, ok2 := a[1].(float64)
				if !ok2 || s == 0 {
					return Undefined
				}
				size = s
			}
			if !ok {
				return Undefined
			}
			return finite(math.Floor(x/size) * size)
		}},

		// Strings.
		"CONCAT": {2, -1, func(a []any) any {
			n := 0
			for _, v := range a {
				s, ok := v.(string)
				if !ok {
					return Undefined
				}
				n += len(s)
				checkStringLen("CONCAT", n)
			}
			var b strings.Builder
			b.Grow(n)
			for _, v := range a {
				b.WriteString(v.(string))
			}
			return b.String()
		}},
		"CONTAINS":   {2, 3, stringTest(strings.Contains)},
		"STARTSWITH": {2, 3, stringTest(strings.HasPrefix)},
		"ENDSWITH":   {2, 3, stringTest(strings.HasSuffix)},
		"STRINGEQUALS": {2, 3, stringTest(func(a, b string) bool {
			return a == b
		})},
		"LOWER": str1("LOWER", strings.ToLower),
		"UPPER": str1("UPPER", strings.ToUpper),
		// The optional second argument is the set of characters to trim
		// (nosql/query/trim: TRIM("-_-x-_-", "-_") is "x").
		"LTRIM": trimmer(strings.TrimLeftFunc, strings.TrimLeft),
		"RTRIM": trimmer(strings.TrimRightFunc, strings.TrimRight),
		"TRIM":  trimmer(strings.TrimFunc, strings.Trim),
		"REVERSE": str1("REVERSE", func(s string) string {
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return string(rs)
		}),
		"LENGTH": {1, 1, func(a []any) any {
			s, ok := a[0].(string)
			if !ok {
				return Undefined
			}
			return float64(utf8.RuneCountInString(s))
		}},
		"SUBSTRING": {3, 3, func(a []any) any {
			s, ok := a[0].(string)
			start, ok2 := a[1].(float64)
			n, ok3 := a[2].(float64)
			if !ok || !ok2 || !ok3 {
				return Undefined
			}
			if start < 0 {
				// A negative start is the empty string (Cosmos DB's offline
				// engine: SUBSTRING("Hello", -3, 5) is "").
				return ""
			}
			rs := []rune(s)
			lo := clampIndex(toIndex(start), len(rs))
			hi := clampIndex(lo+max(toIndex(n), 0), len(rs))
			return string(rs[lo:hi])
		}},
		"LEFT": {2, 2, func(a []any) any {
			s, ok := a[0].(string)
			n, ok2 := a[1].(float64)
			if !ok || !ok2 || n != math.Trunc(n) { // a length that is not an integer is undefined
				return Undefined
			}
			rs := []rune(s)
			return string(rs[:clampIndex(toIndex(n), len(rs))])
		}},
		"RIGHT": {2, 2, func(a []any) any {
			s, ok := a[0].(string)
			n, ok2 := a[1].(float64)
			if !ok || !ok2 || n != math.Trunc(n) { // a length that is not an integer is undefined
				return Undefined
			}
			rs := []rune(s)
			return string(rs[len(rs)-clampIndex(toIndex(n), len(rs)):])
		}},
		"INDEX_OF": {2, 3, func(a []any) any {
			s, ok := a[0].(string)
			sub, ok2 := a[1].(string)
			if !ok || !ok2 {
				return Undefined
			}
			rs := []rune(s)
			from := 0
			if len(a) == 3 {
				f, ok := a[2].(float64)
				if !ok {
					return Undefined
				}
				from = toIndex(f)
				if from < 0 || from > len(rs) {
					return -1.0
				}
			}
			i := strings.Index(string(rs[from:]), sub)
			if i < 0 {
				return -1.0
			}
			return float64(from + utf8.RuneCountInString(string(rs[from:])[:i]))
		}},
		"REPLACE": {3, 3, func(a []any) any {
			s, ok := a[0].(string)
			old, ok2 := a[1].(string)
			repl, ok3 := a[2].(string)
			// Replacing the empty string is undefined in Cosmos DB (its
			// offline engine's tests; SQL Server returns the input).
			if !ok || !ok2 || !ok3 || old == "" {
				return Undefined
			}
			if len(repl) > len(old) {
				// The result's length, known before building it.
				grow := strings.Count(s, old) * (len(repl) - len(old))
				checkStringLen("REPLACE", len(s)+grow)
			}
			return strings.ReplaceAll(s, old, repl)
		}},
		"REPLICATE": {2, 2, func(a []any) any {
			s, ok := a[0].(string)
			n, ok2 := a[1].(float64)
			if !ok || !ok2 || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
				return Undefined
			}
			chars := utf8.RuneCountInString(s)
			if chars == 0 {
				return ""
			}
			// Checked before the string is built: a count past the limit
			// needs no multiplication that could overflow.
			if n > MaxReplicateChars || chars*int(n) > MaxReplicateChars {
				return Undefined
			}
			return strings.Repeat(s, int(n))
		}},
		"TOSTRING": {1, 1, func(a []any) any {
			switch x := a[0].(type) {
			case undefinedType:
				return Undefined
			case string:
				return x
			case float64:
				switch {
				case math.IsNaN(x):
					return "NaN"
				case math.IsInf(x, 1):
					return "Infinity"
				case math.IsInf(x, -1):
					return "-Infinity"
				}
			}
			b, err := encodeValue(a[0])
			if err != nil {
				return Undefined
			}
			return string(b)
		}},
		"STRINGTONUMBER": {1, 1, func(a []any) any {
			s, ok := a[0].(string)
			if !ok {
				return Undefined
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return Undefined
			}
			return finite(f)
		}},
		"STRINGTOBOOLEAN": parseJSONOf(func(v any) bool { _, ok := v.(bool); return ok }),
		"STRINGTONULL":    parseJSONOf(func(v any) bool { return v == nil }),
		"STRINGTOARRAY":   parseJSONOf(func(v any) bool { _, ok := v.([]any); return ok }),
		"STRINGTOOBJECT":  parseJSONOf(func(v any) bool { _, ok := v.(map[string]any); return ok }),
		"REGEXMATCH": {2, 3, func(a []any) any {
			s, ok := a[0].(string)
			pat, ok2 := a[1].(string)
			if !ok || !ok2 {
				return Undefined
			}
			mods := ""
			if len(a) == 3 {
				if mods, ok = a[2].(string); !ok {
					return Undefined
				}
			}
			re := compileRegex(pat, mods)
			if re == nil {
				return Undefined
			}
			return re.MatchString(s)
		}},

		// Dates and times (datetime.go).
		"DATETIMEADD":         {3, 3, dateTimeAdd},
		"DATETIMEDIFF":        {3, 3, dateTimeDiff},
		"DATETIMEPART":        {2, 2, dateTimePart},
		"DATETIMEFROMPARTS":   {3, 7, dateTimeFromParts},
		"DATETIMEBIN":         {2, 4, dateTimeBin},
		"DATETIMETOTICKS":     {1, 1, dateTimeTo(1)},
		"DATETIMETOTIMESTAMP": {1, 1, dateTimeTo(ticksPerMillisecond)},
		"TICKSTODATETIME":     {1, 1, dateTimeFrom(1)},
		"TIMESTAMPTODATETIME": {1, 1, dateTimeFrom(ticksPerMillisecond)},

		// Arrays.
		"ARRAY_LENGTH": {1, 1, func(a []any) any {
			arr, ok := a[0].([]any)
			if !ok {
				return Undefined
			}
			return float64(len(arr))
		}},
		"ARRAY_CONCAT": {2, -1, func(a []any) any {
			var out []any
			for _, v := range a {
				arr, ok := v.([]any)
				if !ok {
					return Undefined
				}
				out = append(out, arr...)
			}
			if out == nil {
				out = []any{}
			}
			return out
		}},
		"ARRAY_SLICE": {2, 3, func(a []any) any {
			arr, ok := a[0].([]any)
			start, ok2 := a[1].(float64)
			if !ok || !ok2 {
				return Undefined
			}
			lo := toIndex(start)
			if lo < 0 {
				lo = max(len(arr)+lo, 0)
			}
			lo = min(lo, len(arr))
			hi := len(arr)
			if len(a) == 3 {
				n, ok := a[2].(float64)
				if !ok {
					return Undefined
				}
				hi = min(lo+max(toIndex(n), 0), len(arr))
			}
			return append([]any{}, arr[lo:hi]...)
		}},
		"ARRAY_CONTAINS": {2, 3, func(a []any) any {
			arr, ok := a[0].([]any)
			if !ok || isUndefined(a[1]) {
				return Undefined
			}
			partial := false
			if len(a) == 3 {
				// Anything but true (undefined included) is a full match.
				p, ok := a[2].(bool)
				if !ok && !isUndefined(a[2]) {
					return Undefined
				}
				partial = p
			}
			for _, e := range arr {
				if partial {
					if containsPartial(e, a[1]) {
						return true
					}
				} else if equalValues(e, a[1]) {
					return true
				}
			}
			return false
		}},

		// Full-text search (see fullTextContains).
		"FULLTEXTCONTAINS":    {2, 2, fullTextContains(false)},
		"FULLTEXTCONTAINSALL": {2, -1, fullTextContains(false)},
		"FULLTEXTCONTAINSANY": {2, -1, fullTextContains(true)},
	}
}

// fullTextContains builds FullTextContains, FullTextContainsAll (anyOf
// false) and FullTextContainsAny (anyOf true): whether the text of the
// first argument holds the keywords of the others, all of them or any.
// Text and keywords are split into words (runs of letters and digits) and
// compared without case; a keyword of several words matches them in
// sequence. Cosmos DB also stems words by the container's full-text
// policy (its language); this engine does not, so "searching" does not
// match "search". A first argument that is not a string is false; a
// keyword that is not a string is undefined. Cost: a pass over the text
// per keyword.
func fullTextContains(anyOf bool) func([]any) any {
	return func(a []any) any {
		text, ok := a[0].(string)
		words := fullTextWords(text)
		for _, k := range a[1:] {
			kw, isStr := k.(string)
			if !isStr {
				return Undefined
			}
			found := ok && containsWords(words, fullTextWords(kw))
			if found == anyOf {
				return anyOf
			}
		}
		return !anyOf
	}
}

// fullTextWords splits a text into its words, in lower case.
func fullTextWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// containsWords reports whether words holds seq in sequence (an empty
// seq is not held).
func containsWords(words, seq []string) bool {
	for i := 0; len(seq) > 0 && i+len(seq) <= len(words); i++ {
		if slices.Equal(words[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}

func init() {
	for name, b := range spatialBuiltins {
		builtins[name] = b
	}
}

func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Undefined
	}
	return f
}

func clampIndex(i, n int) int { return max(0, min(i, n)) }

// toIndex converts a number argument to an index or length, truncating,
// and bounded to ±2^31 so that sums of indexes cannot overflow (NaN is 0).
func toIndex(f float64) int {
	switch {
	case f != f:
		return 0
	case f > math.MaxInt32:
		return math.MaxInt32
	case f < math.MinInt32:
		return math.MinInt32
	}
	return int(f)
}

// str1 builds a function of one string; name is its name for the result
// limit. A case mapping can lengthen a string by a bounded factor (a rune
// of 2 bytes may map to 3), so its result is checked once built.
func str1(name string, f func(string) string) builtin {
	return builtin{1, 1, func(a []any) any {
		s, ok := a[0].(string)
		if !ok {
			return Undefined
		}
		out := f(s)
		checkStringLen(name, len(out))
		return out
	}}
}

// trimmer builds TRIM, LTRIM and RTRIM: white space by default, or the
// characters of the optional second argument.
func trimmer(space func(string, func(rune) bool) string, set func(string, string) string) builtin {
	return builtin{1, 2, func(a []any) any {
		s, ok := a[0].(string)
		if !ok {
			return Undefined
		}
		if len(a) == 1 {
			return space(s, unicode.IsSpace)
		}
		chars, ok := a[1].(string)
		if !ok {
			return Undefined
		}
		return set(s, chars)
	}}
}

// stringTest builds CONTAINS, STARTSWITH, ENDSWITH and STRINGEQUALS with
// their optional third argument, ignore case.
func stringTest(f func(s, t string) bool) func([]any) any {
	return func(a []any) any {
		s, ok := a[0].(string)
		t, ok2 := a[1].(string)
		if !ok || !ok2 {
			return Undefined
		}
		if len(a) == 3 {
			ic, ok := a[2].(bool)
			if !ok {
				return Undefined
			}
			if ic {
				s, t = strings.ToLower(s), strings.ToLower(t)
			}
		}
		return f(s, t)
	}
}

func parseJSONOf(want func(any) bool) builtin {
	return builtin{1, 1, func(a []any) any {
		s, ok := a[0].(string)
		if !ok {
			return Undefined
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil || !want(v) {
			return Undefined
		}
		return v
	}}
}

// containsPartial reports whether elem is an object holding every property
// of want (ARRAY_CONTAINS with partial match), or equals want otherwise.
func containsPartial(elem, want any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return equalValues(elem, want)
	}
	e, ok := elem.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range w {
		ev, ok := e[k]
		if !ok || !equalValues(ev, v) {
			return false
		}
	}
	return true
}

var regexCache sync.Map // mods + "\x00" + pattern -> *regexp.Regexp or nil

// compileRegex compiles a REGEXMATCH pattern with Cosmos DB's modifiers
// (m, s, i, x); an invalid pattern or modifier yields nil.
func compileRegex(pat, mods string) *regexp.Regexp {
	key := mods + "\x00" + pat
	if re, ok := regexCache.Load(key); ok {
		r, _ := re.(*regexp.Regexp)
		return r
	}
	flags := ""
	for _, m := range mods {
		switch m {
		case 'i', 'm', 's':
			flags += string(m)
		case 'x':
			// Go's RE2 has no extended mode: drop unescaped white space.
			pat = strings.Join(strings.Fields(pat), "")
		default:
			regexCache.Store(key, nil)
			return nil
		}
	}
	if flags != "" {
		pat = "(?" + flags + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		regexCache.Store(key, nil)
		return nil
	}
	regexCache.Store(key, re)
	return re
}
