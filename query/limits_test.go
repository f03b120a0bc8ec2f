package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chain is "SELECT VALUE " then n terms joined by op.
func chain(term, op string, n int) string {
	return "SELECT VALUE " + strings.TrimSuffix(strings.Repeat(term+op, n), op)
}

// accessChain is "SELECT VALUE c" with n accessors.
func accessChain(acc string, n int) string {
	return "SELECT VALUE c" + strings.Repeat(acc, n) + " FROM c"
}

// The reproducers of issue 17: chains of a million terms overflowed the
// compiler's stack; now every one is refused before any work, by the text
// limit, and a chain inside the text limit by the depth limit.
func TestHostileChainsAreRefused(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		limit string
	}{
		{"plus 1e6", chain("1", "+", 1_000_000), "query text bytes"},
		{"AND 1e6", chain("true", " AND ", 1_000_000), "query text bytes"},
		{"OR 1e6", chain("true", " OR ", 1_000_000), "query text bytes"},
		{"concat 1e6", chain("'a'", "||", 1_000_000), "query text bytes"},
		{"coalesce 1e6", chain("1", "??", 1_000_000), "query text bytes"},
		{"member 1e6", accessChain(".a", 1_000_000), "query text bytes"},
		{"index 1e6", accessChain("[0]", 1_000_000), "query text bytes"},
		{"plus 100k", chain("1", "+", 100_000), "expression depth"},
		{"concat 100k", chain("'a'", "||", 60_000), "expression depth"},
		{"coalesce 100k", chain("1", "??", 100_000), "expression depth"},
		{"member 100k", accessChain(".a", 100_000), "expression depth"},
		{"index 100k", accessChain("[0]", 100_000), "expression depth"},
		{"unary 100k", "SELECT VALUE " + strings.Repeat("-~", 50_000) + "1", "nesting of brackets, calls and subqueries"},
		{"brackets", "SELECT VALUE " + strings.Repeat("(", 5000) + "1", "nesting of brackets, calls and subqueries"},
		{"AND 2001", chain("true", " AND ", 2002), "number of ANDs"},
		{"OR 2001", chain("true", " OR ", 2002), "number of ORs"},
		{"IN 6001", "SELECT * FROM c WHERE c.a IN (" + strings.TrimSuffix(strings.Repeat("1,", 6001), ",") + ")", "IN list length"},
		{"IN 1e6", "SELECT * FROM c WHERE c.a IN (" + strings.TrimSuffix(strings.Repeat("1,", 1_000_000), ",") + ")", "query text bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prepare(tc.text, nil)
			require.Error(t, err)
			require.ErrorIs(t, err, ErrLimit)
			var le *LimitError
			require.True(t, errors.As(err, &le))
			assert.Equal(t, tc.limit, le.Limit)
			assert.Contains(t, err.Error(), tc.limit)
		})
	}
}

// What is within the limits runs, and plans: Cosmos DB's 2000 ANDs, 2000
// ORs and 6000 IN values, and a chain as deep as MaxDepth allows.
func TestAtTheLimitsQueriesRun(t *testing.T) {
	docs := seqOf([]Doc{mustDoc(t, `{"id":"1","a":5}`)})
	cases := []struct {
		name, text, want string
	}{
		{"2000 ANDs", chain("true", " AND ", 2001), "true"},
		{"2000 ORs", chain("false", " OR ", 2000) + " OR true", "true"},
		{"plus 4000", chain("1", "+", 4000), "4000"},
		{"IN 6000", "SELECT VALUE c.a IN (" + strings.TrimSuffix(strings.Repeat("5,", 6000), ",") + ") FROM c", "true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := Prepare(tc.text, nil)
			require.NoError(t, err)
			rows, err := prog.Execute(context.Background(), docs)
			require.NoError(t, err)
			require.Len(t, rows, 1)
			assert.Equal(t, tc.want, string(rows[0]))
		})
	}
}

// The reproducers of the router refusing valid queries: 199 ORs and more
// were nested in brackets by the planner past its own nesting limit, and
// OFFSET+LIMIT overflowed LIMIT's range. Both plan now, and the planned
// text parses.
func TestPlannerOutputParses(t *testing.T) {
	ors := "SELECT * FROM c WHERE " + strings.TrimSuffix(strings.Repeat("c.a = 1 OR ", 1999), " OR ")
	cases := []struct {
		name, text string
		offset     int
		limit      int
	}{
		{"199 ORs", "SELECT * FROM c WHERE " + strings.TrimSuffix(strings.Repeat("c.a = 1 OR ", 199), " OR "), 0, -1},
		{"1999 ORs ordered", ors + " ORDER BY c.a", 0, -1},
		{"1999 ORs grouped", strings.Replace(ors, "SELECT *", "SELECT VALUE COUNT(1)", 1), 0, -1},
		{"OFFSET+LIMIT overflow", "SELECT * FROM c OFFSET 2147483647 LIMIT 2147483647", 2147483647, 2147483647},
		{"OFFSET+LIMIT ordered", "SELECT * FROM c ORDER BY c.a OFFSET 2147483647 LIMIT 2147483647", 2147483647, 2147483647},
		{"deep arithmetic", "SELECT VALUE " + strings.Repeat("(1 - ", 150) + "1" + strings.Repeat(")", 150) + " FROM c ORDER BY c.a", 0, -1},
		{"unary", "SELECT VALUE " + strings.Repeat("- ", 150) + "c.a FROM c ORDER BY c.a", 0, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.text)
			require.NoError(t, err)
			p, err := PlanFanOut(q, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.offset, p.Offset)
			assert.Equal(t, tc.limit, p.Limit)
			_, err = Prepare(p.Query, nil)
			require.NoError(t, err, p.Query)
		})
	}
}

// A query at the very edge of a limit, which the planner's rewrite would
// take past it, is refused by the planner with ErrLimit, never planned
// into text its parser refuses.
func TestPlannerAtTheEdgeSaysLimit(t *testing.T) {
	text := "SELECT VALUE " + chain("c.a", " AND ", 2001)[len("SELECT VALUE "):] + " FROM c ORDER BY c.b"
	q, err := Parse(text)
	require.NoError(t, err)
	_, err = PlanFanOut(q, nil)
	require.ErrorIs(t, err, ErrLimit)
}

func mustDoc(t *testing.T, s string) Doc {
	t.Helper()
	d, err := NewDoc([]byte(s))
	require.NoError(t, err)
	return d
}

// FuzzQueryLimits builds long and deep queries from a few fuzzed choices
// (an operator or accessor, a count, a nesting) and checks that each is
// either refused with a *LimitError or a *SyntaxError, or runs and plans
// into text its parser accepts: never a crash.
func FuzzQueryLimits(f *testing.F) {
	f.Add(uint8(0), uint16(5000), uint8(0))
	f.Add(uint8(1), uint16(2001), uint8(3))
	f.Add(uint8(2), uint16(199), uint8(0))
	f.Add(uint8(6), uint16(6001), uint8(1))
	f.Add(uint8(7), uint16(300), uint8(200))
	ops := []string{" + ", " AND ", " OR ", " || ", " ?? ", ".a", "[0]", ",", " - "}
	docs := seqOf([]Doc{{raw: []byte(`{"id":"1","a":1}`), val: map[string]any{"id": "1", "a": 1.0}}})
	f.Fuzz(func(t *testing.T, op uint8, n uint16, nest uint8) {
		o := ops[int(op)%len(ops)]
		var body string
		switch o {
		case ".a", "[0]":
			body = "c" + strings.Repeat(o, int(n))
		case ",":
			body = "c.a IN (" + strings.TrimSuffix(strings.Repeat("1,", int(n)+1), ",") + ")"
		default:
			body = strings.TrimSuffix(strings.Repeat("c.a"+o, int(n)+1), o)
		}
		body = strings.Repeat("(", int(nest)) + body + strings.Repeat(")", int(nest))
		text := "SELECT VALUE " + body + " FROM c ORDER BY c.a"
		q, err := Parse(text)
		if err != nil {
			var le *LimitError
			var se *SyntaxError
			if !errors.As(err, &le) && !errors.As(err, &se) {
				t.Fatalf("%.60q: %v", text, err)
			}
			return
		}
		if prog, err := Compile(q, nil); err == nil {
			_, _ = prog.Execute(context.Background(), docs)
		}
		if plan, err := PlanFanOut(q, nil); err == nil {
			if _, err := Prepare(plan.Query, nil); err != nil {
				t.Fatalf("plan of %.60q does not parse: %v", text, err)
			}
		} else if !errors.Is(err, ErrLimit) && !errors.Is(err, ErrCompile) && !errors.Is(err, ErrUnmergeable) {
			t.Fatalf("plan of %.60q: %v", text, err)
		}
	})
}

// GROUP BY, DISTINCT and ORDER BY hold what they must keep within a
// budget: past it the query fails with a *LimitError, not with the
// process's memory.
func TestMemoryBudget(t *testing.T) {
	docs := make([]Doc, 5000)
	for i := range docs {
		docs[i] = mustDoc(t, fmt.Sprintf(`{"id":"%d","g":%d,"s":"%s"}`, i, i, strings.Repeat("x", 100)))
	}
	cases := []struct {
		name, text string
	}{
		{"GROUP BY", "SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g"},
		{"DISTINCT", "SELECT DISTINCT VALUE c.g FROM c"},
		{"ORDER BY", "SELECT * FROM c ORDER BY c.g"},
		{"ORDER BY values", "SELECT VALUE {\"a\": c.s} FROM c ORDER BY c.g"},
		{"DISTINCT in a subquery", "SELECT VALUE ARRAY(SELECT DISTINCT VALUE x FROM x IN c.arr) FROM c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := Prepare(tc.text, nil)
			require.NoError(t, err)
			_, err = prog.WithMemoryBudget(0).Execute(context.Background(), seqOf(docs))
			require.NoError(t, err, "the default budget holds 5000 rows")
			if tc.name == "DISTINCT in a subquery" {
				return // per-row subqueries keep the default
			}
			_, err = prog.WithMemoryBudget(64<<10).Execute(context.Background(), seqOf(docs))
			require.ErrorIs(t, err, ErrLimit)
			assert.ErrorContains(t, err, "memory held by GROUP BY, DISTINCT or ORDER BY")
			_, err = prog.WithMemoryBudget(64<<10).Values(context.Background(), seqOf(docs))
			require.ErrorIs(t, err, ErrLimit)
		})
	}
	// TOP keeps a bounded heap: within a small budget.
	prog, err := Prepare("SELECT TOP 10 * FROM c ORDER BY c.g DESC", nil)
	require.NoError(t, err)
	rows, err := prog.WithMemoryBudget(64<<10).Execute(context.Background(), seqOf(docs))
	require.NoError(t, err)
	assert.Len(t, rows, 10)
}

// The merger of an Aggregate plan charges its groups too.
func TestMergerBudget(t *testing.T) {
	p, err := PlanFanOut(mustParse(t, "SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g"), nil)
	require.NoError(t, err)
	m := p.NewMerger()
	m.mem.max = 16 << 10
	var last error
	for i := 0; i < 1000 && last == nil; i++ {
		last = m.Add(map[string]any{"g": []any{map[string]any{"v": float64(i)}}, "a": []any{map[string]any{"v": 1.0}}})
	}
	require.ErrorIs(t, last, ErrLimit)
}

// The reproducer of issue 17: a GROUP BY of a million groups. With the
// default budget it fails with ErrLimit. It takes seconds:
// DOCSHARD_BIG_TESTS=1 runs it.
func TestMillionGroups(t *testing.T) {
	if os.Getenv("DOCSHARD_BIG_TESTS") == "" {
		t.Skip("DOCSHARD_BIG_TESTS=1 runs it")
	}
	docs := func(yield func(Doc) bool) {
		for i := range 1_000_000 {
			if !yield(Doc{raw: nil, val: map[string]any{"id": strconv.Itoa(i), "g": strconv.Itoa(i)}}) {
				return
			}
		}
	}
	prog, err := Prepare("SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", nil)
	require.NoError(t, err)
	_, err = prog.Execute(context.Background(), docs)
	require.ErrorIs(t, err, ErrLimit)
}

// FuzzMemoryBudget: under any budget a grouping, deduplicating or sorting
// query either fails with ErrLimit or answers exactly as without one.
func FuzzMemoryBudget(f *testing.F) {
	f.Add(uint16(100), uint16(1000), uint8(0))
	f.Add(uint16(5000), uint16(64), uint8(2))
	queries := []string{
		"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g",
		"SELECT DISTINCT VALUE c.g FROM c",
		"SELECT VALUE c.g FROM c ORDER BY c.g DESC",
		"SELECT TOP 5 VALUE c.g FROM c ORDER BY c.g",
		"SELECT DISTINCT VALUE c.g FROM c ORDER BY c.g",
	}
	f.Fuzz(func(t *testing.T, n, kb uint16, which uint8) {
		docs := make([]Doc, int(n)%3000)
		for i := range docs {
			docs[i] = Doc{raw: []byte(`{}`), val: map[string]any{"id": strconv.Itoa(i), "g": float64(i % 700)}}
		}
		prog, err := Prepare(queries[int(which)%len(queries)], nil)
		require.NoError(t, err)
		want, err := prog.Execute(context.Background(), seqOf(docs))
		require.NoError(t, err)
		got, err := prog.WithMemoryBudget(int64(kb)<<6).Execute(context.Background(), seqOf(docs))
		if err != nil {
			require.ErrorIs(t, err, ErrLimit)
			return
		}
		require.Equal(t, want, got)
	})
}
