package memstore

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// scanAll validates a whole JSON text with the store's scanner.
func scanAll(b []byte) error {
	sc := scanner{b: b}
	sc.stack = sc.buf[:0]
	end, err := sc.value(sc.ws(0), 0)
	if err != nil {
		return err
	}
	if sc.ws(end) != len(b) {
		return sc.fail(sc.ws(end), "trailing data")
	}
	return nil
}

// oracle is what the scanner must accept: what encoding/json decodes (as
// query.NewDoc will), in valid UTF-8.
func oracle(b []byte) bool {
	var v any
	return json.Unmarshal(b, &v) == nil && utf8.Valid(b)
}

var scanCorpus = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `false`, `null`,
	`{"a":1}`, `{"a":[1,2,{"b":null}],"c":"d"}`, ` {"a" : 1 , "b" : [ ] } `,
	`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{:1}`, `{1:1}`, `{"a":1 "b":2}`,
	`01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+`, `1E-5`, `1e400`, `-1e400`, `1e-400`, `0x10`, `NaN`, `Infinity`,
	`"\u0041\n\t\"\\\/\b\f\r"`, `"\u12"`, `"\x"`, `"\ud800"`, `"\ud83d\ude00"`, "\"\x01\"", "\"\x7f\"",
	"\"\xff\"", "\"\xc3\xa9\"", "\"\xed\xa0\x80\"", `"abc`, `"`, `tru`, `nul`, `falsey`, `true false`,
	`[[[[[]]]]]`, `{"a":{"b":{"c":{}}}}`, `[1 2]`, `{"a":1}}`, `[1]]`, `}`, `]`, "\u00a0{}",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"d":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"d":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	strings.Repeat("1", 400), "1" + strings.Repeat("0", 308) + ".5", "1" + strings.Repeat("0", 309),
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range scanCorpus {
		err := scanAll([]byte(c))
		assert.Equal(t, oracle([]byte(c)), err == nil, "%.60q: scanner says %v", c, err)
	}
}

// FuzzScanner checks the scanner against encoding/json on any input, and
// that a document the store accepts decodes for queries.
func FuzzScanner(f *testing.F) {
	for _, c := range scanCorpus {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
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
		err := scanAll(b)
		require.Equal(t, oracle(b), err == nil, "%q: scanner says %v", b, err)
		d, err := s.Upsert(ctx, l, b, nil)
		if err != nil {
			return
		}
		require.True(t, oracle(b), "accepted %q", b)
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
		require.NoError(b, scanAll(doc))
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for i := 0; i < b.N; i++ {
				if err := scanAll(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
