package query_test

import (
	"context"
	"fmt"
	"iter"

	"github.com/docshard/docshard/query"
)

// A store decodes each document once (NewDoc) and runs compiled programs
// over them; results are JSON.
func ExamplePrepare() {
	var docs []query.Doc
	for _, raw := range []string{
		`{"id":"1","city":"Oslo","pop":700000}`,
		`{"id":"2","city":"Bergen","pop":290000}`,
		`{"id":"3","city":"Tromsø"}`,
	} {
		d, err := query.NewDoc([]byte(raw))
		if err != nil {
			panic(err)
		}
		docs = append(docs, d)
	}
	prog, err := query.Prepare(
		"SELECT c.city, c.pop FROM c WHERE c.pop > @min ORDER BY c.pop",
		map[string]any{"@min": 100000},
	)
	if err != nil {
		panic(err)
	}
	all := func(yield func(query.Doc) bool) {
		for _, d := range docs {
			if !yield(d) {
				return
			}
		}
	}
	rows, err := prog.Execute(context.Background(), all)
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Println(string(r))
	}
	// Output:
	// {"city":"Bergen","pop":290000}
	// {"city":"Oslo","pop":700000}
}

// A router plans a query once, sends Plan.Query to every collection and
// merges what they return.
func ExamplePlanFanOut() {
	q, err := query.Parse("SELECT TOP 3 VALUE c.id FROM c ORDER BY c.n DESC")
	if err != nil {
		panic(err)
	}
	plan, err := query.PlanFanOut(q, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Kind, plan.Limit)
	fmt.Println(plan.Query)

	// What two collections return for plan.Query (decoded JSON).
	row := func(n float64, id string) any {
		return map[string]any{"k": []any{map[string]any{"v": n}}, "p": id}
	}
	collections := [][]any{
		{row(9, "a"), row(4, "b"), row(1, "c")},
		{row(7, "x"), row(4, "y")},
	}
	seqs := make([]iter.Seq[any], len(collections))
	for i, rows := range collections {
		seqs[i] = func(yield func(any) bool) {
			for _, r := range rows {
				if !yield(r) {
					return
				}
			}
		}
	}
	for v, err := range plan.Merge(seqs) {
		if err != nil {
			panic(err)
		}
		fmt.Println(v)
	}
	// Output:
	// order-by 3
	// SELECT TOP 3 VALUE {"k": [{"v": c.n}], "p": c.id} FROM c AS c WHERE IS_DEFINED(c.id) ORDER BY c.n DESC
	// a
	// x
	// b
}
