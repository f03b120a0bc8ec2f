package query

import (
	"context"
	"encoding/json"
	"iter"
	"testing"
)

func docsOf(t testing.TB, js ...string) iter.Seq[Doc] {
	var ds []Doc
	for _, j := range js {
		d, err := NewDoc([]byte(j))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return func(yield func(Doc) bool) {
		for _, d := range ds {
			if !yield(d) {
				return
			}
		}
	}
}

func TestSmoke(t *testing.T) {
	docs := docsOf(t, `{"id":"1","n":50,"tags":["red","blue"],"a":{"b":1}}`, `{"id":"2","n":7,"tags":["green"]}`, `{"id":"3","n":"x"}`)
	for _, q := range []string{
		"SELECT * FROM c",
		"SELECT c.id FROM c WHERE c.n > 10",
		"SELECT VALUE c.id FROM c WHERE c.n = 50",
		"SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000",
		"SELECT VALUE SUM(c.n) FROM c",
		"SELECT VALUE AVG(c.n) FROM c WHERE IS_NUMBER(c.n)",
		"SELECT c.id, t AS tag FROM c JOIN t IN c.tags",
		"SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'red')",
		"SELECT TOP 1 c.id FROM c ORDER BY c.n DESC",
		"SELECT c.n, COUNT(1) AS cnt FROM c GROUP BY c.n",
		"SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'green')",
		"SELECT c.id, ARRAY(SELECT VALUE UPPER(t) FROM t IN c.tags) AS up FROM c",
		"SELECT 1 + 2 AS x",
		"SELECT DISTINCT VALUE IS_NUMBER(c.n) FROM c",
		"SELECT c.id FROM c ORDER BY c.n OFFSET 1 LIMIT 1",
	} {
		p, err := Prepare(q, nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out, err := p.Execute(context.Background(), docs)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		b, _ := json.Marshal(out)
		t.Logf("%s\n  => %s\n  fmt: %s", q, b, FormatQuery(mustParse(t, q)))
	}
}

func mustParse(t testing.TB, q string) *Query {
	x, err := Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
