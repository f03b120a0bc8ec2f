package query

import (
	"context"
	"encoding/json"
	"testing"
)

func TestPlanSmoke(t *testing.T) {
	all := []string{`{"id":"1","n":50,"g":"a"}`, `{"id":"2","n":7,"g":"b"}`, `{"id":"3","n":"x","g":"a"}`, `{"id":"4","g":"b","n":[1]}`, `{"id":"5","n":2}`}
	for _, q := range []string{
		"SELECT c.id FROM c ORDER BY c.n DESC",
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT c.g, AVG(c.n) AS a, MIN(c.n) AS mi, COUNT(c.n) AS cn FROM c GROUP BY c.g",
		"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n",
		"SELECT VALUE c.id FROM c OFFSET 1 LIMIT 2",
	} {
		parsed := mustParse(t, q)
		plan, err := PlanFanOut(parsed, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := mustProg(t, q).Values(context.Background(), docsOf(t, all...))
		if err != nil {
			t.Fatal(err)
		}
		rq := mustProg(t, plan.Query)
		var parts [][]any
		for _, split := range [][]string{all[:2], all[2:3], all[3:]} {
			v, err := rq.Values(context.Background(), docsOf(t, split...))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, v)
		}
		got, err := plan.MergeAll(parts)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		t.Logf("%s\n  plan %s: %s\n  want %s\n  got  %s", q, plan.Kind, plan.Query, a, b)
	}
}

func mustProg(t testing.TB, q string) *Program {
	p, err := Prepare(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
