package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePath(t *testing.T) {
	ok := []struct {
		path string
		segs []string
	}{
		{"/userId", []string{"userId"}},
		{"/a/b/c", []string{"a", "b", "c"}},
		{`/"name with space"`, []string{"name with space"}},
		{`/"department name"/x`, []string{"department name", "x"}},
		{`/"a\"b"`, []string{`a"b`}},
		{`/"back\\slash"`, []string{`back\slash`}},
		{`/"a/b"`, []string{"a/b"}},
		{"/é", []string{"é"}},
		{`/""`, []string{""}},
	}
	for _, tc := range ok {
		p, err := ParsePath(tc.path)
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.segs, p.Segments(), tc.path)
		assert.Equal(t, tc.path, p.String())
	}
	bad := []struct{ path, msg string }{
		{"", "empty path"},
		{"userId", "want '/'"},
		{"/", "trailing '/'"},
		{"/a/", "trailing '/'"},
		{"//a", "empty property name"},
		{`/"abc`, "unterminated"},
		{`/"a\n"`, "escapes"},
		{`/"a"b`, "after a quoted name"},
		{`/a"b`, "quoted name"},
		{"/arr[0]", "array indexes"},
		{"/a/*", "wildcards"},
	}
	for _, tc := range bad {
		_, err := ParsePath(tc.path)
		require.Error(t, err, tc.path)
		assert.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), tc.msg, tc.path)
		assert.Contains(t, err.Error(), "partitionKey", tc.path)
	}
	_, err := ParseKeyDef("/a", "/b", "/a")
	assert.ErrorContains(t, err, "partitionKey[2]")
	_, err = ParseKeyDef("/a", "b")
	assert.ErrorContains(t, err, "partitionKey[1]")
	_, err = ParseKeyDef()
	assert.Error(t, err)
}

func TestKeyDefJSON(t *testing.T) {
	for _, src := range []string{`"/userId"`, `["/region","/\"user id\""]`} {
		var d KeyDef
		require.NoError(t, json.Unmarshal([]byte(src), &d))
		out, err := json.Marshal(d)
		require.NoError(t, err)
		assert.JSONEq(t, src, string(out))
	}
	var d KeyDef
	assert.Error(t, json.Unmarshal([]byte(`[]`), &d))
	assert.Error(t, json.Unmarshal([]byte(`7`), &d))
	assert.Error(t, json.Unmarshal([]byte(`"nope"`), &d))
}

type Inner struct {
	City string `json:"city"`
}

type Base struct {
	Tenant string `json:"tenant"`
	Shadow string `json:"shadow"`
}

type userDoc struct {
	Base
	ID      string         `json:"id"`
	UserID  string         `json:"userId"`
	Score   float64        `json:"score"`
	Count   int            `json:"count,omitempty"`
	Flag    bool           `json:"flag"`
	Address *Inner         `json:"address"`
	Extra   map[string]any `json:"extra"`
	Nothing *string        `json:"nothing"`
	Shadow  string         `json:"shadow"` // shallower than Base.Shadow: wins
	Hidden  string         `json:"-"`
	NoTag   string
	When    time.Time `json:"when"`
	Named   userID    `json:"named"`
	Spaced  string    `json:"department name"`
	private string
}

type userID int

func TestExtractAgreesAcrossForms(t *testing.T) {
	doc := userDoc{
		Base:    Base{Tenant: "acme", Shadow: "deep"},
		ID:      "1",
		UserID:  "alice",
		Score:   1.5,
		Count:   7,
		Flag:    true,
		Address: &Inner{City: "Zürich \"Z\""},
		Extra:   map[string]any{"k": "v", "n": 3.0},
		Shadow:  "top",
		Hidden:  "h",
		NoTag:   "plain",
		Named:   42,
		Spaced:  "sales",
		private: "p",
	}
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	cases := []struct {
		path string
		want any
	}{
		{"/userId", "alice"},
		{"/tenant", "acme"},
		{"/shadow", "top"},
		{"/score", 1.5},
		{"/count", 7.0},
		{"/flag", true},
		{"/address/city", "Zürich \"Z\""},
		{"/extra/k", "v"},
		{"/extra/n", 3.0},
		{"/nothing", Null},
		{"/NoTag", "plain"},
		{"/named", 42.0},
		{`/"department name"`, "sales"},
	}
	for _, tc := range cases {
		d := MustKeyDef(tc.path)
		for name, form := range map[string]any{"raw": raw, "rawmessage": json.RawMessage(raw), "string": string(raw), "map": m, "struct": doc, "pointer": &doc} {
			got, err := d.Extract(form)
			require.NoError(t, err, "%s from %s", tc.path, name)
			want, _ := KeyString(tc.want)
			gotText, err := KeyString(got)
			if tc.want == Null {
				assert.Equal(t, Null, got, "%s from %s", tc.path, name)
				continue
			}
			if b, ok := tc.want.(bool); ok {
				assert.Equal(t, b, got, "%s from %s", tc.path, name)
				continue
			}
			require.NoError(t, err, "%s from %s: %T", tc.path, name, got)
			assert.Equal(t, want, gotText, "%s from %s", tc.path, name)
		}
	}
	for _, p := range []string{"/Hidden", "/private", "/missing", "/address/zip", "/userId/deeper", "/id/x"} {
		for name, form := range map[string]any{"raw": raw, "map": m, "struct": doc} {
			_, err := MustKeyDef(p).Extract(form)
			require.ErrorIs(t, err, ErrNoPartitionKey, "%s from %s", p, name)
			assert.Contains(t, err.Error(), p)
		}
	}
	for _, p := range []string{"/address", "/extra"} {
		for name, form := range map[string]any{"raw": raw, "map": m, "struct": doc} {
			_, err := MustKeyDef(p).Extract(form)
			require.ErrorIs(t, err, ErrKeyType, "%s from %s", p, name)
		}
	}
	// A nil embedded pointer or nested pointer is a missing key.
	_, err = MustKeyDef("/address/city").Extract(userDoc{})
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	// time.Time fields are returned as times.
	when, err := MustKeyDef("/when").Extract(doc)
	require.NoError(t, err)
	assert.IsType(t, time.Time{}, when)
}

func TestExtractComposite(t *testing.T) {
	d := MustKeyDef("/region", "/userId")
	got, err := d.Extract([]byte(`{"userId":7,"region":"eu"}`))
	require.NoError(t, err)
	assert.Equal(t, CompositeKey{"eu", 7.0}, got)
	text, err := KeyString(got)
	require.NoError(t, err)
	assert.Equal(t, `["eu",7]`, text)
	_, err = d.Extract(map[string]any{"region": "eu"})
	require.ErrorIs(t, err, ErrNoPartitionKey)
	assert.Contains(t, err.Error(), "/userId")
}

func TestExtractRawEdgeCases(t *testing.T) {
	d := MustKeyDef("/k")
	ok := []struct {
		doc  string
		want any
	}{
		{`{"k":"v"}`, "v"},
		{` { "a" : [1, {"k":"inner"}, "}"], "b":{"c":{"k":1}}, "k" : "outer" } `, "outer"},
		{`{"\u006b":"escaped name"}`, "escaped name"},
		{`{"k":"\ud83d\ude00 \"q\" \\ \/ \n"}`, "😀 \"q\" \\ / \n"},
		{`{"k":-1.5e3}`, -1500.0},
		{`{"k":0}`, 0.0},
		{`{"k":null}`, Null},
		{`{"k":false}`, false},
		{`{"x":"a\"k\":1","k":2}`, 2.0},
		{`{"k":"first","k":"second"}`, "first"},
		{`{"k":"v", garbage after the key`, "v"},
	}
	for _, tc := range ok {
		got, err := d.Extract([]byte(tc.doc))
		require.NoError(t, err, tc.doc)
		assert.Equal(t, tc.want, got, tc.doc)
	}
	bad := []struct {
		doc string
		err error
	}{
		{`{"a":1}`, ErrNoPartitionKey},
		{`[]`, ErrNoPartitionKey},
		{`"k"`, ErrNoPartitionKey},
		{`{}`, ErrNoPartitionKey},
		{``, ErrNoPartitionKey},
		{`{"a":`, ErrNoPartitionKey},
		{`{"a" 1, "k":2}`, ErrNoPartitionKey},
		{`{"a":"unterminated`, ErrNoPartitionKey},
		{`{"k":tru}`, ErrNoPartitionKey},
		{`{"k":01}`, ErrNoPartitionKey},
		{`{"k":"bad \x escape"}`, ErrNoPartitionKey},
		{`{"k":[1]}`, ErrKeyType},
		{`{"k":{"a":1}}`, ErrKeyType},
		{`{"k":1e999}`, ErrKeyType},
	}
	for _, tc := range bad {
		_, err := d.Extract([]byte(tc.doc))
		require.Error(t, err, tc.doc)
		assert.ErrorIs(t, err, tc.err, "%s: %v", tc.doc, err)
		var ke *KeyError
		require.True(t, errors.As(err, &ke))
		assert.Equal(t, "/k", ke.Path)
	}
	_, err := d.Extract(nil)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = d.Extract(42)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = KeyDef{}.Extract(map[string]any{"k": 1})
	assert.ErrorIs(t, err, ErrNoPartitionKey)
}

// randomValue draws a JSON value of mixed types.
func randomValue(rng *rand.Rand, depth int) any {
	switch rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return math.Round(rng.NormFloat64()*1e6) / 1e3
	case 3, 4:
		const chars = "ab \"\\/é😀\n\tk"
		rs := []rune(chars)
		var b strings.Builder
		for i := rng.IntN(8); i > 0; i-- {
			b.WriteRune(rs[rng.IntN(len(rs))])
		}
		return b.String()
	case 5:
		if depth > 2 {
			return "leaf"
		}
		arr := make([]any, rng.IntN(4))
		for i := range arr {
			arr[i] = randomValue(rng, depth+1)
		}
		return arr
	default:
		if depth > 2 {
			return 1.0
		}
		obj := map[string]any{}
		for i := rng.IntN(5); i > 0; i-- {
			obj[[]string{"a", "b", "k", "x y", "é"}[rng.IntN(5)]] = randomValue(rng, depth+1)
		}
		return obj
	}
}

// TestExtractPropertyRawEqualsMap: for random documents, scanning the raw
// JSON gives exactly what walking the decoded map gives.
func TestExtractPropertyRawEqualsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []KeyDef{MustKeyDef("/k"), MustKeyDef("/a/k"), MustKeyDef(`/"x y"`), MustKeyDef("/é/b"), MustKeyDef("/a", "/b")}
	for i := 0; i < 3000; i++ {
		v := randomValue(rng, 0)
		obj, ok := v.(map[string]any)
		if !ok {
			obj = map[string]any{"k": v}
		}
		raw, err := json.Marshal(obj)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		for _, d := range paths {
			a, errA := d.Extract(raw)
			b, errB := d.Extract(m)
			require.Equal(t, errA == nil, errB == nil, "%s %v: raw %v, map %v", raw, d.Paths(), errA, errB)
			if errA != nil {
				require.Equal(t, errors.Is(errA, ErrKeyType), errors.Is(errB, ErrKeyType), "%s", raw)
				continue
			}
			require.Equal(t, b, a, "%s %v", raw, d.Paths())
		}
	}
}

func TestExtractConcurrent(t *testing.T) {
	d := MustKeyDef("/address/city")
	doc := userDoc{Address: &Inner{City: "x"}}
	raw, _ := json.Marshal(doc)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				for _, form := range []any{doc, raw, &doc} {
					v, err := d.Extract(form)
					assert.NoError(t, err)
					assert.Equal(t, "x", v)
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/a", "/a/b", `/"x y"`, `/"a\"b"/c`, "/", `/"`, "//", "/a[0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if p.String() != s || len(p.Segments()) == 0 {
			t.Fatalf("parsed %q into %q %v", s, p.String(), p.Segments())
		}
		// Every accepted path reads its own value back out of a document.
		var doc any = "found"
		segs := p.Segments()
		for i := len(segs) - 1; i >= 0; i-- {
			doc = map[string]any{segs[i]: doc}
		}
		raw, _ := json.Marshal(doc)
		v, err := KeyDef{paths: []Path{p}}.Extract(raw)
		if err != nil || v != "found" {
			t.Fatalf("path %q does not find its value in %s: %v %v", s, raw, v, err)
		}
	})
}

var sinkKey any

// BenchmarkPartitionKey: extraction of /userId from a 1 KB document in each
// form.
func BenchmarkPartitionKey(b *testing.B) {
	doc := map[string]any{"id": "0001", "type": "profile"}
	for i := 0; len(mustJSON(doc)) < 900; i++ {
		doc[fmt.Sprintf("field%02d", i)] = strings.Repeat("x", 20)
	}
	doc["userId"] = "user-0012345"
	raw := mustJSON(doc)
	d := MustKeyDef("/userId")
	// Documents reach PartitionKey as interface values already; box them
	// once so the loop measures extraction, not the caller's boxing.
	var rawDoc any = raw
	b.Run(fmt.Sprintf("raw-%dB", len(raw)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for i := 0; i < b.N; i++ {
			sinkKey, _ = d.Extract(rawDoc)
		}
	})
	b.Run(fmt.Sprintf("raw-borrowed-%dB", len(raw)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for i := 0; i < b.N; i++ {
			sinkKey, _ = d.ExtractBorrowed(raw)
		}
	})
	var mapDoc any = doc
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sinkKey, _ = d.Extract(mapDoc)
		}
	})
	var structDoc any = &userDoc{UserID: "user-0012345", Address: &Inner{City: "x"}}
	b.Run("struct", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sinkKey, _ = d.Extract(structDoc)
		}
	})
	b.Run("json.Unmarshal-for-comparison", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			sinkKey = m["userId"]
		}
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestExtractBorrowed(t *testing.T) {
	doc := []byte(`{"id":"1","userId":"alice","n":4,"e":"a\\u0062"}`)
	d := MustKeyDef("/userId")
	k, err := d.ExtractBorrowed(doc)
	require.NoError(t, err)
	assert.Equal(t, "alice", k)
	copy(doc[bytesIndex(doc, "alice"):], "bobby")
	assert.Equal(t, "bobby", k, "the key aliases the document")
	for _, path := range []string{"/n", "/e", "/missing"} {
		a, errA := MustKeyDef(path).ExtractBorrowed(doc)
		b, errB := MustKeyDef(path).Extract(doc)
		assert.Equal(t, b, a, path)
		assert.Equal(t, errB == nil, errA == nil, path)
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = d.ExtractBorrowed(doc) })
	assert.LessOrEqual(t, allocs, 1.0, "only the interface box of the key")
}

func bytesIndex(b []byte, s string) int { return strings.Index(string(b), s) }
