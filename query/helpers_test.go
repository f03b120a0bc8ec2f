package query

import (
	"iter"
	"testing"
)

// docsOf decodes JSON objects into a document sequence.
func docsOf(t testing.TB, js ...string) iter.Seq[Doc] {
	t.Helper()
	var ds []Doc
	for _, j := range js {
		d, err := NewDoc([]byte(j))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return seqOf(ds)
}

func mustParse(t testing.TB, q string) *Query {
	t.Helper()
	x, err := Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func mustProg(t testing.TB, q string) *Program {
	t.Helper()
	p, err := Prepare(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sliceSeq streams a slice, counting how many values were read.
func sliceSeq(vs []any, read *int) iter.Seq[any] {
	return func(yield func(any) bool) {
		for _, v := range vs {
			if read != nil {
				*read++
			}
			if !yield(v) {
				return
			}
		}
	}
}
