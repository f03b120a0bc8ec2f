package memstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
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

// The reproducer of issue 17: ids "\ud800", "\udbff" and "\ufffd" were one
// document (decoding turned each lone surrogate into U+FFFD), and an upsert
// of one replaced another; partition keys likewise. Lone surrogates are
// refused now, naming the problem; "\ufffd" itself is a character and
// stays its own document.
func TestLoneSurrogates(t *testing.T) {
	ctx := context.Background()
	s := New(nil)
	const l = "dbs/s/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	_, err := s.Upsert(ctx, l, []byte(`{"id":"\ufffd","pk":"p","n":1}`), nil)
	require.NoError(t, err)
	cases := []struct{ name, body, msg string }{
		{"id high", `{"id":"\ud800","pk":"p","n":2}`, "lone surrogate"},
		{"id low", `{"id":"\udfff","pk":"p","n":2}`, "lone surrogate"},
		{"id high then text", `{"id":"\udbffx","pk":"p","n":2}`, "lone surrogate"},
		{"key", `{"id":"k","pk":"\ud800","n":2}`, "lone surrogate"},
		{"key reversed pair", `{"id":"k","pk":"\udc00\ud800","n":2}`, "lone surrogate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Upsert(ctx, l, []byte(tc.body), nil)
			require.ErrorIs(t, err, store.ErrBadRequest)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
	d, err := s.Read(ctx, l, "\ufffd", &store.ReadOptions{PartitionKey: "p"})
	require.NoError(t, err)
	assert.JSONEq(t, `1`, string(mustMember(t, d.Body, "n")), "nothing replaced it")
	_, err = s.Upsert(ctx, l, []byte(`{"id":"\ud83d\ude00","pk":"\ud83d\ude00"}`), nil)
	require.NoError(t, err, "a surrogate pair is one character")
	_, err = s.Read(ctx, l, "\xed\xa0\x80", &store.ReadOptions{PartitionKey: "p"})
	require.ErrorIs(t, err, store.ErrBadRequest, "an id that is not UTF-8 (a lone surrogate in WTF-8)")
}

func mustMember(t *testing.T, body []byte, name string) []byte {
	t.Helper()
	v, err := findMember(body, name)
	require.NoError(t, err)
	return v
}
