package query

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deepShapes are the hostile queries of issue 27 (finding 7): each a few
// hundred KB of nesting or chaining, far past a limit, and what refuses it.
var deepShapes = []struct {
	name, text, limit string
}{
	{"100,000 NOTs", "SELECT * FROM c WHERE " + strings.Repeat("NOT ", 100_000) + "true", "expression depth"},
	{"NOTs in brackets", "SELECT * FROM c WHERE " + strings.Repeat("(NOT ", 50_000) + "true" + strings.Repeat(")", 50_000), "nesting of brackets, calls and subqueries"},
	{"brackets", "SELECT VALUE " + strings.Repeat("(", 200_000) + "1" + strings.Repeat(")", 200_000), "nesting of brackets, calls and subqueries"},
	{"unary minus", "SELECT VALUE " + strings.Repeat("-~", 100_000) + "1", "nesting of brackets, calls and subqueries"},
	{"calls", "SELECT VALUE " + strings.Repeat("ABS(", 60_000) + "1" + strings.Repeat(")", 60_000), "nesting of brackets, calls and subqueries"},
	{"arrays", "SELECT VALUE " + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000), "nesting of brackets, calls and subqueries"},
	{"objects", "SELECT VALUE " + strings.Repeat("{a:", 80_000) + "1" + strings.Repeat("}", 80_000), "nesting of brackets, calls and subqueries"},
	{"subqueries", "SELECT VALUE " + strings.Repeat("(SELECT VALUE ", 20_000) + "1" + strings.Repeat(")", 20_000), "nesting of brackets, calls and subqueries"},
	{"EXISTS", "SELECT * FROM c WHERE " + strings.Repeat("EXISTS(SELECT VALUE ", 20_000) + "1" + strings.Repeat(")", 20_000), "nesting of brackets, calls and subqueries"},
	{"FROM subqueries", "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", 20_000) + "c" + strings.Repeat(")", 20_000), "nesting of brackets, calls and subqueries"},
	{"ternaries", "SELECT VALUE " + strings.Repeat("true ? 1 : ", 40_000) + "2", "nesting of brackets, calls and subqueries"},
	{"plus", chain("1", "+", 200_000), "expression depth"},
	{"comparisons", chain("1", "=", 200_000), "expression depth"},
	{"members", accessChain(".a", 200_000), "expression depth"},
	{"indexes", accessChain("[0]", 100_000), "expression depth"},
	{"IN over IN", "SELECT VALUE " + strings.Repeat("1 IN (", 60_000) + "1" + strings.Repeat(")", 60_000), "nesting of brackets, calls and subqueries"},
}

// The parser refuses a hostile query where it goes past the limit, not
// after reading all of it: the error names the limit and a position early
// in the text. Before issue 27 a chain of NOTs (and every chain) was
// parsed to its end, recursing once per NOT, and refused afterwards by a
// walk of the whole tree (Pos -1).
func TestDeepQueriesAreRefusedWhileParsing(t *testing.T) {
	for _, tc := range deepShapes {
		t.Run(tc.name, func(t *testing.T) {
			require.Less(t, len(tc.text), MaxQueryBytes)
			_, err := Parse(tc.text)
			require.ErrorIs(t, err, ErrLimit)
			var le *LimitError
			require.True(t, errors.As(err, &le))
			assert.Equal(t, tc.limit, le.Limit)
			assert.GreaterOrEqual(t, le.Pos, 0, "the refusal says where the query went past the limit")
			assert.Less(t, le.Pos, 64<<10, "refused where the query went past the limit, not after parsing all of it")
		})
	}
}

// The parser's own counters show the limits held while it parsed: it never
// nested deeper than MaxNesting (plus the frame that refused), never built
// a node higher than MaxDepth (plus the one refused), and never lexed past
// where it refused; so a refused query costs its parser a bounded stack and
// bounded memory, however long the text.
func TestDeepQueriesStayBoundedInTheParser(t *testing.T) {
	for _, tc := range deepShapes {
		t.Run(tc.name, func(t *testing.T) {
			p := &parser{src: tc.text, lx: lexer{src: tc.text}}
			p.toks = p.window[:0]
			_, err := p.parseQuery()
			var le *LimitError
			require.True(t, errors.As(err, &le), "%v", err)
			assert.LessOrEqual(t, p.depth, MaxNesting+1)
			assert.LessOrEqual(t, p.maxDepth, MaxNesting+1)
			assert.LessOrEqual(t, p.maxH, MaxDepth+1)
			assert.LessOrEqual(t, p.lx.i, le.Pos+64, "lexed up to the refusal, not the rest of the text")
			assert.LessOrEqual(t, cap(p.toks), len(p.window), "the parser keeps a window of tokens, not all of them")
		})
	}
}

// Many hostile queries at once, as 32 clients of serve sent them, are all
// refused (the memory they cost is bounded by the test above; this checks
// the parser shares nothing between them).
func TestConcurrentDeepQueriesAreRefused(t *testing.T) {
	text := "SELECT * FROM c WHERE " + strings.Repeat("NOT ", 130_000) + "true"
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Parse(text)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, ErrLimit)
	}
}

// What is at the limits still parses: MaxDepth-1 NOTs (the clause and the
// operand make the tree MaxDepth+... high), MaxNesting brackets less the
// levels the query itself takes.
func TestAtTheDepthLimitsQueriesParse(t *testing.T) {
	cases := []struct {
		name, text string
		ok         bool
	}{
		{"NOTs at the limit", "SELECT VALUE " + strings.Repeat("NOT ", MaxDepth-1) + "true", true},
		{"NOTs past the limit", "SELECT VALUE " + strings.Repeat("NOT ", MaxDepth) + "true", false},
		{"members at the limit", accessChain(".a", MaxDepth-1), true},
		{"members past the limit", accessChain(".a", MaxDepth), false},
		{"brackets at the limit", "SELECT VALUE " + strings.Repeat("(", MaxNesting-2) + "1" + strings.Repeat(")", MaxNesting-2), true},
		{"brackets past the limit", "SELECT VALUE " + strings.Repeat("(", MaxNesting-1) + "1" + strings.Repeat(")", MaxNesting-1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrLimit)
		})
	}
}
