package query

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/querygen"
)

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		query     string
		line, col int
		expected  string
		found     string
	}{
		{"SELECT", 1, 7, "an expression", "end of query"},
		{"SELEC * FROM c", 1, 1, "SELECT", `"SELEC"`},
		{"SELECT * FROM c WHERE", 1, 22, "an expression", "end of query"},
		{"SELECT * FROM c WHERE c.a = 'x", 1, 29, "a closing '", "end of query"},
		{"SELECT * FROM c\nWHERE c.a ==  1", 2, 12, "an expression", `"="`},
		{"SELECT * FROM c ORDER c.a", 1, 23, "BY", `"c"`},
		{"SELECT c.a FROM c OFFSET 1", 1, 27, "LIMIT", "end of query"},
		{"SELECT TOP x * FROM c", 1, 12, "a number or @parameter after TOP", `"x"`},
		{"SELECT * FROM c WHERE c.a IN 1", 1, 30, `"("`, `"1"`},
		{"SELECT * FROM c extra tokens", 1, 23, "end of query", `"tokens"`},
		{"SELECT c.a FROM c WHERE c.x BETWEEN 1 OR 2", 1, 39, "AND", "OR"},
		{"SELECT 'a\\q'", 1, 10, `one of`, `\q`},
		{"SELECT 1 # 2", 1, 10, "a token", `unexpected character '#'`},
		{"SELECT VALUE c.a, c.b FROM c", 1, 17, "SELECT VALUE takes a single expression", `","`},
		{"SELECT udf.f(1)", 1, 8, "a built-in function", "user-defined functions are not supported"},
		{"SELECT @ FROM c", 1, 8, "a parameter name", `' '`},
		{"SELECT 12abc", 1, 10, "an operator or white space after a number", `'a'`},
		// Cosmos DB's grammar: an identifier is letters, digits and '_'.
		{"SELECT VALUE $42", 1, 14, "a token", `unexpected character '$'`},
		// A test (IN, BETWEEN, LIKE) is no operand of another without brackets.
		{"SELECT VALUE 1 BETWEEN 2 AND 3 BETWEEN 4 AND 5", 1, 32, "brackets around the test before it", "BETWEEN"},
		{"SELECT VALUE 1 IN (1) NOT BETWEEN 4 AND 5", 1, 23, "brackets around the test before it", "NOT"},
		{"SELECT VALUE 'a' LIKE 'a' IN (true)", 1, 27, "brackets around the test before it", "IN"},
	}
	for _, tc := range cases {
		_, err := Parse(tc.query)
		require.Error(t, err, tc.query)
		var se *SyntaxError
		require.True(t, errors.As(err, &se), "%q: %T %v", tc.query, err, err)
		assert.Equal(t, tc.line, se.Line, "%q: %v", tc.query, err)
		assert.Equal(t, tc.col, se.Column, "%q: %v", tc.query, err)
		assert.Equal(t, tc.query, se.Query)
		assert.Contains(t, se.Expected, tc.expected, tc.query)
		assert.Contains(t, se.Found, tc.found, tc.query)
		assert.Contains(t, err.Error(), fmt.Sprintf("line %d, column %d", tc.line, tc.col))
	}
}

func TestParseShapes(t *testing.T) {
	for _, q := range []string{
		"SELECT * FROM c",
		"select distinct top 5 value c.a from root c where c.b > 1 order by c.a desc, c.b asc",
		"SELECT c.a AS x, c['b c'] y, c.arr[0], c.o.p.q FROM c",
		"SELECT VALUE [1, 'a', true, false, null, undefined, {\"k\": 1, j: 2}] FROM c",
		"SELECT * FROM c.children ch",
		"SELECT VALUE x FROM x IN c.arr JOIN y IN x.sub JOIN z IN y.deep",
		"SELECT c.a FROM c WHERE c.a LIKE 'x!%' ESCAPE '!' AND c.b NOT IN (1, 2) AND c.c NOT BETWEEN 1 AND 2 AND NOT c.d",
		"SELECT c.a ?? c.b ?? 'z', c.x ? 1 : c.y ? 2 : 3 FROM c",
		"SELECT VALUE c.value FROM c WHERE c.order = 1",
		"SELECT c.g, COUNT(1) FROM c GROUP BY c.g",
		"SELECT c.a FROM c OFFSET @o LIMIT @l",
		"SELECT VALUE -c.a + +c.b * ~c.c || 'x' FROM c",
		"SELECT EXISTS(SELECT VALUE 1 FROM t IN c.tags), ARRAY(SELECT t FROM t IN c.tags), (SELECT VALUE COUNT(1) FROM t IN c.tags) FROM c",
		"SELECT 1 -- a comment\n + 2",
		"SELECT VALUE (1 BETWEEN 2 AND 3) BETWEEN false AND true",
		"SELECT VALUE (1 IN (1)) = true",
	} {
		parsed, err := Parse(q)
		require.NoError(t, err, q)
		// Format writes text that parses to the same tree.
		text := FormatQuery(parsed)
		again, err := Parse(text)
		require.NoError(t, err, "%q formatted as %q", q, text)
		assert.Equal(t, text, FormatQuery(again), q)
	}
}

// TestFormatBrackets: the text FormatQuery writes brackets every operand
// that is not primary, so a parser that ranks operators otherwise reads
// the same tree (Cosmos DB's grammar reads NOT, and &, ^, |, || against
// comparisons, unlike this package's); chains of one operator stay flat.
func TestFormatBrackets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT * FROM c WHERE NOT (c.n > 2.5) AND c.k = 1", "SELECT * FROM c AS c WHERE (NOT (c.n > 2.5)) AND (c.k = 1)"},
		{"SELECT * FROM c WHERE (c.a & 4) = 4", "SELECT * FROM c AS c WHERE (c.a & 4) = 4"},
		{"SELECT * FROM c WHERE (c.a || c.b) = 'xy'", `SELECT * FROM c AS c WHERE (c.a || c.b) = "xy"`},
		{"SELECT * FROM c WHERE c.n BETWEEN 1 AND 5 AND c.k = 1", "SELECT * FROM c AS c WHERE (c.n BETWEEN 1 AND 5) AND (c.k = 1)"},
		{"SELECT VALUE c.a + c.b + c.c FROM c WHERE c.x OR c.y OR c.z", "SELECT VALUE c.a + c.b + c.c FROM c AS c WHERE c.x OR c.y OR c.z"},
		{"SELECT VALUE c.a - (c.b - c.c) FROM c", "SELECT VALUE c.a - (c.b - c.c) FROM c AS c"},
		{"SELECT VALUE NOT NOT c.x FROM c", "SELECT VALUE NOT NOT c.x FROM c AS c"},
		{"SELECT VALUE - -c.x * 2 FROM c", "SELECT VALUE (- -c.x) * 2 FROM c AS c"},
		{"SELECT VALUE c.a + c.b * c.c FROM c", "SELECT VALUE c.a + (c.b * c.c) FROM c AS c"},
	} {
		assert.Equal(t, tc.want, FormatQuery(mustParse(t, tc.in)), tc.in)
	}
}

// TestFormatRoundTripGenerated formats generated queries and parses them
// back: the answer over documents must not change.
func TestFormatRoundTripGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	docs := genDocs(rng, 60)
	for i := 0; i < 300; i++ {
		text := querygen.Text(rng)
		q, err := Parse(text)
		require.NoError(t, err)
		formatted := FormatQuery(q)
		a, err := Prepare(text, nil)
		require.NoError(t, err)
		b, err := Prepare(formatted, nil)
		require.NoError(t, err, "%q formatted as %q", text, formatted)
		va, err := a.Values(context.Background(), seqOf(docs))
		require.NoError(t, err)
		vb, err := b.Values(context.Background(), seqOf(docs))
		require.NoError(t, err)
		require.Equal(t, canonicalList(va), canonicalList(vb), "%q vs %q", text, formatted)
	}
}

func TestDeepNestingIsAnErrorNotACrash(t *testing.T) {
	deep := "SELECT VALUE "
	for i := 0; i < 5000; i++ {
		deep += "("
	}
	_, err := Parse(deep + "1")
	require.Error(t, err)
	var le *LimitError
	require.True(t, errors.As(err, &le))
	assert.Equal(t, int64(MaxNesting), le.Max)
}

func TestTopKeepsAHeapOfN(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	docs := genDocs(rng, 5000)
	var peak int
	sortHeapHook = func(h *sortHeap) { peak = h.peak }
	defer func() { sortHeapHook = nil }()
	for _, tc := range []struct {
		query string
		max   int
	}{
		{"SELECT TOP 7 c.id FROM c ORDER BY c.n", 7},
		{"SELECT c.id FROM c ORDER BY c.s DESC OFFSET 10 LIMIT 5", 15},
		{"SELECT c.id FROM c ORDER BY c.s", 5000},
	} {
		p, err := Prepare(tc.query, nil)
		require.NoError(t, err)
		_, err = p.Values(context.Background(), seqOf(docs))
		require.NoError(t, err)
		assert.LessOrEqual(t, peak, tc.max, tc.query)
		assert.Positive(t, peak)
	}
}

func TestContextCancel(t *testing.T) {
	docs := genDocs(rand.New(rand.NewPCG(3, 3)), 2000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := Prepare("SELECT * FROM c", nil)
	require.NoError(t, err)
	_, err = p.Execute(ctx, seqOf(docs))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestNewDocErrors(t *testing.T) {
	_, err := NewDoc([]byte(`[1]`))
	assert.ErrorContains(t, err, "JSON object")
	_, err = NewDoc([]byte(`{"a":`))
	assert.ErrorContains(t, err, "malformed JSON")
	_, err = NewDoc([]byte(`{"a":1} x`))
	assert.ErrorContains(t, err, "malformed JSON")
}

func TestParametersOfEveryGoType(t *testing.T) {
	docs := []Doc{}
	for _, raw := range []string{`{"id":"1","n":5,"s":"x","tags":["a"]}`} {
		d, err := NewDoc([]byte(raw))
		require.NoError(t, err)
		docs = append(docs, d)
	}
	type tagged struct {
		S string `json:"s"`
	}
	for _, v := range []any{5, int64(5), uint8(5), float32(5), 5.0, "x", []string{"a"}, map[string]any{"s": "x"}, tagged{S: "x"}, []any{"a"}} {
		p, err := Prepare("SELECT VALUE @v", map[string]any{"@v": v})
		require.NoError(t, err, "%T", v)
		out, err := p.Values(context.Background(), seqOf(docs))
		require.NoError(t, err)
		require.Len(t, out, 1)
	}
	_, err := Prepare("SELECT VALUE @v", map[string]any{"@v": make(chan int)})
	assert.ErrorIs(t, err, ErrCompile)
}

// TestSyntaxErrorHints: a misspelt keyword gets "did you mean" (issue 29:
// "FRM" for FROM said only `expected end of query, found "c"`).
func TestSyntaxErrorHints(t *testing.T) {
	for _, tc := range []struct{ q, hint string }{
		{"SELECT * FRM c", "did you mean FROM (not FRM)?"},
		{"SELEC * FROM c", "did you mean SELECT (not SELEC)?"},
		{"SELECT c.id FROM c WHER c.x = 1", "did you mean WHERE (not WHER)?"},
		{"SELECT * FROM c ORDR BY c.x", "did you mean ORDER (not ORDR)?"},
		{"SELECT * FROM c WHERE c.x = 1 ADN c.y = 2", "did you mean AND (not ADN)?"},
		{"SELECT * FROM c x y", ""},
		{"SELECT * FROM c WHERE", ""},
	} {
		_, err := Parse(tc.q)
		require.Error(t, err, tc.q)
		var se *SyntaxError
		require.ErrorAs(t, err, &se, tc.q)
		assert.Equal(t, tc.hint, se.Hint, tc.q)
		if tc.hint != "" {
			assert.Contains(t, err.Error(), tc.hint)
		}
	}
}
