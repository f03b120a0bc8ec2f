package memstore

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// FuzzScanner checks the store's validation on any input: a document the
// store accepts is one encoding/json decodes, in valid UTF-8, and it decodes
// for queries once stored. (The scanner's own corpus and its fuzz target
// against encoding/json are in internal/jsontext.)
func FuzzScanner(f *testing.F) {
	for _, c := range []string{``, `{}`, `{"id":"a"}`, `{"id":"a","pk":1e400}`, "{\"id\":\"\xff\"}", `{"id":"b","pk":[1,]}`} {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"id":"a","pk":"x","_etag":"y","n":[1,{"m":null}]}`))
	f.Add([]byte(`{"id":"a\u002f","ttl":5,"pk":{"b":1}}`))
	s := New(nil)
	ttl := -1
	l := "dbs/f/colls/c"
	if err := s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: &ttl}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := s.Upsert(ctx, l, b, nil)
		if err != nil {
			return
		}
		var v any
		require.NoError(t, json.Unmarshal(b, &v), "accepted %q", b)
		require.True(t, utf8.Valid(b), "accepted %q", b)
		require.True(t, json.Valid(d.Body), "stored %q", d.Body)
		_, err = query.NewDoc(d.Body)
		require.NoError(t, err, "stored %q", d.Body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(d.Body, &m))
		require.Equal(t, d.ID, m["id"])
		require.Equal(t, d.ETag, m["_etag"])
	})
}

// BenchmarkScan validates 1 KB documents: one of many short strings and
// one holding a long text.
//
//	go test -run '^$' -bench Scan -benchmem ./store/memstore
func BenchmarkScan(b *testing.B) {
	var short strings.Builder
	short.WriteString(`{"id":"7d9f1c2e-5b7a-4e8b-9a61-2f0c3d4e5f60","type":"profile","name":{"first":"Ada","last":"Lovelace"},`)
	for i := 0; short.Len() < 980; i++ {
		short.WriteString(`"pref":{"on":true,"level":7,"label":"setting \"7\" é"},`)
	}
	short.WriteString(`"userId":"user-0012345"}`)
	long := `{"id":"42","userId":"user-42","name":"User 42","age":42,"notes":"` + strings.Repeat("lorem ipsum ", 75) + `"}`
	for _, tc := range []struct{ name, doc string }{{"short-strings", short.String()}, {"long-text", long}} {
		doc := []byte(tc.doc)
		require.NoError(b, jsontext.Valid(doc, jsontext.Strict))
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for i := 0; i < b.N; i++ {
				if err := jsontext.Valid(doc, jsontext.Strict); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
