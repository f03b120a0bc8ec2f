package query

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/docshard/docshard/internal/querygen"
)

// The differential test: for generated queries over generated documents
// (mixed types, missing fields), evaluating on all documents equals
// merging, by the plan, the evaluations on any split of the documents into
// 1 to 32 parts.

// genDocs returns n generated documents (querygen.Docs) as Docs.
func genDocs(rng *rand.Rand, n int) []Doc {
	docs := make([]Doc, n)
	for i, m := range querygen.Docs(rng, n) {
		raw, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		if docs[i], err = NewDoc(raw); err != nil {
			panic(err)
		}
	}
	return docs
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
		text := querygen.Text(rng)
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
