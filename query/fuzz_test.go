package query

import (
	"context"
	"testing"
)

// FuzzParse: the parser never panics or hangs; whatever it accepts formats
// to text it accepts again with the same tree, and compiling and running it
// over a few documents never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM c",
		"SELECT DISTINCT TOP 3 VALUE c.a FROM root c WHERE c.b > 1 ORDER BY c.a DESC",
		"SELECT c.g, COUNT(1) AS n, AVG(c.x) FROM c JOIN t IN c.tags GROUP BY c.g",
		"SELECT VALUE {\"a\": [1, 'b', null, undefined]} FROM c WHERE c.s LIKE 'a%' ESCAPE '!'",
		"SELECT c.a ?? 1, c.b ? 2 : 3 FROM c WHERE c.n BETWEEN 1 AND 2 OR c.m NOT IN (1, 'x')",
		"SELECT EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'red') FROM c OFFSET 1 LIMIT 2",
		"SELECT VALUE ARRAY_CONTAINS(c.tags, \"red\", true) FROM c",
		"SELECT 'it\\'s' || \"\\u00e9\"",
	} {
		f.Add(s)
	}
	docs := []string{`{"id":"1","a":1,"b":"x","tags":["red",2],"c":{"d":[null,true]}}`, `{"id":"2"}`}
	var parsed []Doc
	for _, d := range docs {
		doc, err := NewDoc([]byte(d))
		if err != nil {
			f.Fatal(err)
		}
		parsed = append(parsed, doc)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := Parse(text)
		if err != nil {
			return
		}
		formatted := FormatQuery(q)
		again, err := Parse(formatted)
		if err != nil {
			t.Fatalf("%q formats as %q, which does not parse: %v", text, formatted, err)
		}
		if f2 := FormatQuery(again); f2 != formatted {
			t.Fatalf("format is not stable: %q then %q", formatted, f2)
		}
		prog, err := Compile(q, map[string]any{"@p": 1.0})
		if err != nil {
			return
		}
		_, _ = prog.Execute(context.Background(), seqOf(parsed))
		if plan, err := PlanFanOut(q, map[string]any{"@p": 1.0}); err == nil {
			if _, err := Prepare(plan.Query, map[string]any{"@p": 1.0}); err != nil {
				t.Fatalf("plan of %q is invalid: %v", text, err)
			}
		}
	})
}
