package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

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
// merges what they return: here an ORDER BY, whose rows carry their sort
// keys ("k") beside what the user sees ("p").
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

	// What two collections return for plan.Query, each sorted.
	collections := [][]string{
		{`{"k":[{"v":9}],"p":"a"}`, `{"k":[{"v":4}],"p":"b"}`, `{"k":[{"v":1}],"p":"c"}`},
		{`{"k":[{"v":7}],"p":"x"}`, `{"k":[{"v":4}],"p":"y"}`},
	}
	type row struct {
		keys    []any
		coll    int
		payload any
	}
	var rows []row
	for coll, results := range collections {
		for _, text := range results {
			var r map[string]any
			if err := json.Unmarshal([]byte(text), &r); err != nil {
				panic(err)
			}
			payload, ok := r["p"]
			if !ok {
				continue // the payload is undefined: no result
			}
			var keys []any
			for _, k := range r["k"].([]any) {
				v, ok := k.(map[string]any)["v"]
				if !ok {
					v = query.Undefined // this sort key is undefined
				}
				keys = append(keys, v)
			}
			rows = append(rows, row{keys, coll, payload})
		}
	}
	// A router merges the sorted streams k-way, holding one row per
	// collection; over whole lists a stable sort by CompareRows gives the
	// same order (ties go to the lower collection index).
	sort.SliceStable(rows, func(i, j int) bool {
		return plan.CompareRows(rows[i].keys, rows[i].coll, rows[j].keys, rows[j].coll) < 0
	})
	// Then DISTINCT, OFFSET and LIMIT (-1: none), and each result written
	// as one collection would write it.
	distinct := query.NewDistinctFilter()
	skip, left := plan.Offset, plan.Limit
	for _, r := range rows {
		if plan.Distinct && !distinct.First(r.payload) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if left == 0 {
			break
		}
		left--
		b, err := plan.Encode(r.payload)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(b))
	}
	// Output:
	// order-by 3
	// SELECT TOP 3 VALUE {"k": [{"v": c.n}], "p": c.id} FROM c AS c WHERE IS_DEFINED(c.id) ORDER BY c.n DESC
	// "a"
	// "x"
	// "b"
}

// Aggregates come back from every collection as partial values per group,
// which a Merger combines: AVG as a sum and a count.
func ExamplePlan_NewMerger() {
	q, err := query.Parse("SELECT c.city, AVG(c.pop) AS avg FROM c GROUP BY c.city")
	if err != nil {
		panic(err)
	}
	plan, err := query.PlanFanOut(q, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Kind)
	fmt.Println(plan.Query)

	// What two collections return for plan.Query: per city, the sum and
	// the count of populations.
	collections := [][]string{
		{`{"g":[{"v":"Oslo"}],"a":[{"v":1000},{"v":2}]}`, `{"g":[{"v":"Bergen"}],"a":[{"v":290},{"v":1}]}`},
		{`{"g":[{"v":"Oslo"}],"a":[{"v":800},{"v":1}]}`},
	}
	m := plan.NewMerger()
	for _, results := range collections {
		for _, text := range results {
			var row any
			if err := json.Unmarshal([]byte(text), &row); err != nil {
				panic(err)
			}
			if err := m.Add(row); err != nil {
				panic(err)
			}
		}
	}
	rows, err := m.Results()
	if err != nil {
		panic(err)
	}
	for _, v := range rows { // then DISTINCT, OFFSET and LIMIT, as for any plan
		b, err := plan.Encode(v)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(b))
	}
	// Output:
	// aggregate
	// SELECT VALUE {"g": [{"v": c.city}], "a": [{"v": SUM(c.pop)}, {"v": COUNT(c.pop)}]} FROM c AS c GROUP BY c.city
	// {"city":"Bergen","avg":290}
	// {"city":"Oslo","avg":600}
}
