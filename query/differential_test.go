package query

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// The differential test: for generated queries over generated documents
// (mixed types, missing fields), evaluating on all documents equals
// merging, by the plan, the evaluations on any split of the documents into
// 1 to 32 parts.

func genDocs(rng *rand.Rand, n int) []Doc {
	docs := make([]Doc, n)
	strs := []string{"apple", "Banana", "cherry", "apple pie", "", "zebra", "Éclair", "42"}
	val := func() any {
		switch rng.IntN(12) {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2:
			return strs[rng.IntN(len(strs))]
		case 3:
			return []any{1.0, "x"}
		case 4:
			return map[string]any{"x": 1.0}
		default:
			return float64(rng.IntN(40) - 10)
		}
	}
	for i := range docs {
		m := map[string]any{"id": fmt.Sprintf("d%03d", i)}
		if rng.IntN(8) != 0 {
			m["n"] = val()
		}
		if rng.IntN(6) != 0 {
			if rng.IntN(5) == 0 {
				m["s"] = val()
			} else {
				m["s"] = strs[rng.IntN(len(strs))]
			}
		}
		if rng.IntN(5) != 0 {
			m["g"] = []any{"red", "green", "blue", 1.0, nil}[rng.IntN(5)]
		}
		if rng.IntN(3) != 0 {
			m["b"] = rng.IntN(2) == 0
		}
		if rng.IntN(3) != 0 {
			tags := []any{}
			for k := rng.IntN(4); k > 0; k-- {
				tags = append(tags, []any{"t1", "t2", "t3", 7.0}[rng.IntN(4)])
			}
			m["tags"] = tags
		}
		if rng.IntN(2) == 0 {
			o := map[string]any{}
			if rng.IntN(4) != 0 {
				o["x"] = float64(rng.IntN(10)) / 2
			}
			m["o"] = o
		}
		raw, _ := json.Marshal(m)
		d, err := NewDoc(raw)
		if err != nil {
			panic(err)
		}
		docs[i] = d
	}
	return docs
}

type queryGen struct{ rng *rand.Rand }

func (g queryGen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

func (g queryGen) scalar() string {
	return g.pick("c.id", "c.n", "c.s", "c.g", "c.b", "c.o.x", "c.tags[0]", "c.n + 1", "UPPER(c.s)",
		"LENGTH(c.s)", "IS_NUMBER(c.n)", "c.n ?? -1", `{"a": c.n}`, "[c.n, c.s]", "ARRAY_LENGTH(c.tags)",
		"c.n * 2", "c.s || '!'", "(c.b ? 1 : 0)", "ROUND(c.o.x)", "SUBSTRING(c.s, 1, 2)")
}

func (g queryGen) orderable() string {
	return g.pick("c.n", "c.s", "c.id", "c.g", "c.o.x", "c.b", "LENGTH(c.s)", "c.n + 1")
}

func (g queryGen) predicate(depth int) string {
	if depth < 2 && g.rng.IntN(3) == 0 {
		op := g.pick("AND", "OR")
		return fmt.Sprintf("(%s %s %s)", g.predicate(depth+1), op, g.predicate(depth+1))
	}
	if depth < 2 && g.rng.IntN(8) == 0 {
		return "NOT (" + g.predicate(depth+1) + ")"
	}
	return g.pick(
		fmt.Sprintf("c.n > %d", g.rng.IntN(30)-5),
		fmt.Sprintf("c.n <= %d", g.rng.IntN(30)-5),
		fmt.Sprintf("c.n = %d", g.rng.IntN(10)),
		"c.s = 'apple'", `c.s != "zebra"`, "c.s < 'c'",
		"IS_DEFINED(c.n)", "NOT IS_DEFINED(c.s)", "IS_NULL(c.n)", "IS_STRING(c.s)",
		"c.n BETWEEN 0 AND 10", "c.s IN ('apple', 'cherry', 42)", "c.g IN ('red', 1)",
		"ARRAY_CONTAINS(c.tags, 't1')", "STARTSWITH(c.s, 'a')", "CONTAINS(c.s, 'an', true)",
		"c.b = true", "c.b", "(c.n ?? 0) > 3", "c.o.x >= 1.5", "c.s LIKE 'a%'",
		"EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 't2')", "c.n % 2 = 0",
	)
}

func (g queryGen) query() string {
	rng := g.rng
	var b strings.Builder
	where := ""
	if rng.IntN(3) != 0 {
		where = " WHERE " + g.predicate(0)
	}
	join := ""
	if rng.IntN(8) == 0 {
		join = g.pick(" JOIN t IN c.tags", " JOIN (SELECT VALUE t FROM t IN c.tags) AS t",
			" JOIN t IN (SELECT VALUE c.tags)", " JOIN (SELECT VALUE t FROM t IN c.tags WHERE t != 7) t",
			" JOIN c.tags[0] AS t")
	}
	// The rows of FROM: the documents, a subquery giving one row per
	// document (which the planner merges like the documents themselves), or
	// one looking across documents (merged by its own plan, then the query
	// runs over its results: a Nested plan).
	from := " FROM c"
	if rng.IntN(5) == 0 {
		from = g.pick(" FROM (SELECT * FROM c) AS c", " FROM (SELECT VALUE c FROM c WHERE IS_DEFINED(c.n)) c",
			" FROM (SELECT VALUE x FROM (SELECT * FROM root) AS x) AS c",
			" FROM (SELECT TOP 40 * FROM c ORDER BY c.id DESC) AS c", " FROM (SELECT DISTINCT c.g, c.n, c.s, c.tags FROM c) AS c",
			" FROM (SELECT c.g, COUNT(1) AS n, MAX(c.s) AS s FROM c GROUP BY c.g) c")
	}
	switch rng.IntN(10) {
	case 0, 1: // aggregates without GROUP BY
		aggs := []string{"COUNT(1)", "COUNT(c.n)", "SUM(c.n)", "AVG(c.n)", "MIN(c.n)", "MAX(c.s)", "MIN(c.g)", "MAX(c.o.x)", "SUM(c.o.x)", "AVG(c.o.x)"}
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "SELECT VALUE %s%s%s%s", g.pick(aggs...), from, join, where)
		} else {
			fmt.Fprintf(&b, "SELECT %s AS a, %s AS b%s%s%s", g.pick(aggs...), g.pick(aggs...), from, join, where)
		}
		return b.String()
	case 2: // GROUP BY
		key := g.pick("c.g", "c.b", "c.s", "c.o.x")
		second := ""
		if rng.IntN(3) == 0 {
			second = ", c.b"
		}
		top := ""
		if rng.IntN(4) == 0 {
			top = fmt.Sprintf("TOP %d ", rng.IntN(4))
		}
		fmt.Fprintf(&b, "SELECT %s%s AS k, COUNT(1) AS n, %s AS x%s%s%s GROUP BY %s%s", top, key,
			g.pick("SUM(c.n)", "AVG(c.n)", "MIN(c.n)", "MAX(c.s)", "COUNT(c.s)"), from, join, where, key, second)
		return b.String()
	}
	b.WriteString("SELECT ")
	distinct := rng.IntN(6) == 0
	if distinct {
		b.WriteString("DISTINCT ")
	}
	limitKind := rng.IntN(4) // 0 TOP, 1 OFFSET/LIMIT, else none
	if limitKind == 0 {
		fmt.Fprintf(&b, "TOP %d ", rng.IntN(12))
	}
	var order []string
	if rng.IntN(2) == 0 {
		for k := 1 + rng.IntN(2); k > 0; k-- {
			order = append(order, g.orderable())
		}
	}
	var items []string
	switch {
	case distinct && len(order) > 0:
		// DISTINCT with ORDER BY needs the sort keys projected.
		for i, o := range order {
			items = append(items, fmt.Sprintf("%s AS o%d", o, i))
		}
	case join != "" && rng.IntN(2) == 0:
		items = []string{"VALUE t"}
	case rng.IntN(4) == 0 && join == "":
		items = []string{"*"}
	case rng.IntN(3) == 0:
		items = []string{"VALUE " + g.scalar()}
	default:
		for k := 1 + rng.IntN(3); k > 0; k-- {
			items = append(items, fmt.Sprintf("%s AS p%d", g.scalar(), k))
		}
	}
	b.WriteString(strings.Join(items, ", "))
	b.WriteString(from)
	b.WriteString(join)
	b.WriteString(where)
	if len(order) > 0 {
		b.WriteString(" ORDER BY ")
		for i, o := range order {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(o)
			if rng.IntN(2) == 0 {
				b.WriteString(" DESC")
			}
		}
	}
	if limitKind == 1 {
		fmt.Fprintf(&b, " OFFSET %d LIMIT %d", rng.IntN(6), rng.IntN(12))
	}
	return b.String()
}

func seqOf(docs []Doc) func(func(Doc) bool) {
	return func(yield func(Doc) bool) {
		for _, d := range docs {
			if !yield(d) {
				return
			}
		}
	}
}

func canonicalList(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = canonical(v)
	}
	return out
}

func TestDifferentialFanOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 11))
	queries := 1500
	if testing.Short() {
		queries = 300
	}
	ctx := context.Background()
	for qi := 0; qi < queries; qi++ {
		docs := genDocs(rng, 20+rng.IntN(120))
		text := queryGen{rng}.query()
		q, err := Parse(text)
		if err != nil {
			t.Fatalf("generated query %q does not parse: %v", text, err)
		}
		whole, err := Compile(q, nil)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		want, err := whole.Values(ctx, seqOf(docs))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		plan, err := PlanFanOut(q, nil)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		part, err := Prepare(plan.Query, nil)
		if err != nil {
			t.Fatalf("%q planned as %q: %v", text, plan.Query, err)
		}
		k := 1 + rng.IntN(32)
		// Contiguous split: merged ties and concatenations follow document
		// order, so the answer must be identical, order included.
		cuts := make([]int, 0, k+1)
		cuts = append(cuts, 0)
		for i := 1; i < k; i++ {
			cuts = append(cuts, rng.IntN(len(docs)+1))
		}
		cuts = append(cuts, len(docs))
		sort.Ints(cuts)
		var parts [][]any
		for i := 0; i+1 < len(cuts); i++ {
			v, err := part.Values(ctx, seqOf(docs[cuts[i]:cuts[i+1]]))
			if err != nil {
				t.Fatalf("%q: %v", plan.Query, err)
			}
			parts = append(parts, v)
		}
		// Half the queries merge through the reference merge over streams,
		// half over whole lists: both must agree with the single collection.
		var got []any
		if qi%2 == 0 {
			got, err = referenceMergeAll(plan, parts)
		} else {
			got, err = mergeStreaming(plan, parts)
		}
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if fmt.Sprint(canonicalList(want)) != fmt.Sprint(canonicalList(got)) {
			t.Fatalf("query %q over %d docs in %d contiguous parts\nplan %s: %s\nwant %v\ngot  %v", text, len(docs), k, plan.Kind, plan.Query, canonicalList(want), canonicalList(got))
		}

		// Scattered split: documents dealt to parts at random. Without
		// ORDER BY or with ties the order may differ, so compare multisets,
		// and under TOP/LIMIT check the count and that every row belongs.
		scattered := make([][]Doc, k)
		for _, d := range docs {
			i := rng.IntN(k)
			scattered[i] = append(scattered[i], d)
		}
		parts = parts[:0]
		for _, ds := range scattered {
			v, err := part.Values(ctx, seqOf(ds))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, v)
		}
		got, err = referenceMergeAll(plan, parts)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		w, gs := canonicalList(want), canonicalList(got)
		if q.Top == nil && q.Limit == nil { // unlimited (a Nested plan leaves TOP and LIMIT to its query)
			sort.Strings(w)
			sort.Strings(gs)
			if fmt.Sprint(w) != fmt.Sprint(gs) {
				t.Fatalf("query %q over %d docs in %d scattered parts\nplan %s: %s\nwant %v\ngot  %v", text, len(docs), k, plan.Kind, plan.Query, w, gs)
			}
			continue
		}
		if len(w) != len(gs) {
			t.Fatalf("query %q in %d scattered parts: want %d rows, got %d\nwant %v\ngot  %v", text, k, len(w), len(gs), w, gs)
		}
		unlimited := *q
		unlimited.Top, unlimited.Offset, unlimited.Limit = nil, nil, nil
		up, err := Compile(&unlimited, nil)
		if err != nil {
			t.Fatal(err)
		}
		full, err := up.Values(ctx, seqOf(docs))
		if err != nil {
			t.Fatal(err)
		}
		pool := map[string]int{}
		for _, s := range canonicalList(full) {
			pool[s]++
		}
		for _, s := range gs {
			if pool[s] == 0 {
				t.Fatalf("query %q in %d scattered parts returned %s, which the full answer lacks", text, k, s)
			}
			pool[s]--
		}
	}
}

// mergeStreaming merges through referenceMerge, one pulled stream per part.
func mergeStreaming(plan *Plan, parts [][]any) ([]any, error) {
	seqs := make([]iter.Seq[any], len(parts))
	for i, part := range parts {
		seqs[i] = sliceSeq(part, nil)
	}
	out := []any{}
	for v, err := range referenceMerge(plan, seqs) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
