package resolver

import (
	"crypto/md5"
	"encoding/binary"
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

	"github.com/docshard/docshard/internal/jsontext"
)

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
	Tiny    float32   `json:"tiny"`
	Big     uint64    `json:"big"`
	private string
}

type userID int

// forms returns a document in every form Extract takes.
func forms(t *testing.T, doc any) map[string]any {
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	out := map[string]any{"raw": raw, "rawmessage": json.RawMessage(raw), "string": string(raw), "map": m, "struct": doc}
	if p := pointerTo(doc); p != nil {
		out["pointer"] = p
	}
	return out
}

func pointerTo(doc any) any {
	switch d := doc.(type) {
	case userDoc:
		return &d
	}
	return nil
}

func TestExtractAgreesAcrossForms(t *testing.T) {
	when := time.Date(2026, 2, 10, 12, 0, 0, 5, time.FixedZone("", 3600))
	doc := userDoc{
		Base:    Base{Tenant: "acme", Shadow: "deep"},
		ID:      "1",
		UserID:  "alice",
		Score:   1.5,
		Count:   7,
		Flag:    true,
		Address: &Inner{City: "Zürich \"Z\" <&>"},
		Extra:   map[string]any{"k": "v", "n": 3.0, "i": 12, "nested": map[string]any{"deep": false}},
		Shadow:  "top",
		Hidden:  "h",
		NoTag:   "plain",
		When:    when,
		Named:   42,
		Spaced:  "sales",
		Tiny:    0.1,
		Big:     1 << 60,
		private: "p",
	}
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
		{"/address/city", "Zürich \"Z\" <&>"},
		{"/extra/k", "v"},
		{"/extra/n", 3.0},
		{"/extra/i", 12.0},
		{"/extra/nested/deep", false},
		{"/nothing", Null},
		{"/NoTag", "plain"},
		{"/named", 42.0},
		{`/"department name"`, "sales"},
		{"/when", "2026-02-10T12:00:00.000000005+01:00"},
		{"/tiny", 0.1},
		{"/big", float64(1 << 60)},
	}
	for _, tc := range cases {
		d := MustKeyDef(tc.path)
		for name, form := range forms(t, doc) {
			got, err := d.Extract(form)
			require.NoError(t, err, "%s from %s", tc.path, name)
			assert.Equal(t, tc.want, got, "%s from %s", tc.path, name)
		}
	}
	for _, p := range []string{"/Hidden", "/private", "/missing", "/address/zip", "/userId/deeper", "/id/x", "/Base", "/extra/nested/deep/x", "/nothing/x", "/UserID"} {
		for name, form := range forms(t, doc) {
			_, err := MustKeyDef(p).Extract(form)
			require.ErrorIs(t, err, ErrNoPartitionKey, "%s from %s", p, name)
			var ke *KeyError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, p, ke.Path)
			assert.Contains(t, err.Error(), p)
		}
	}
	for _, p := range []string{"/address", "/extra", "/extra/nested"} {
		for name, form := range forms(t, doc) {
			_, err := MustKeyDef(p).Extract(form)
			require.ErrorIs(t, err, ErrKeyType, "%s from %s", p, name)
			assert.Contains(t, err.Error(), p)
		}
	}
	// An omitted empty field is a missing key, as it is missing from the JSON.
	doc.Count = 0
	for name, form := range forms(t, doc) {
		_, err := MustKeyDef("/count").Extract(form)
		assert.ErrorIs(t, err, ErrNoPartitionKey, name)
	}
	// A nil nested pointer is null: whatever is under it is missing.
	for name, form := range forms(t, userDoc{}) {
		_, err := MustKeyDef("/address/city").Extract(form)
		assert.ErrorIs(t, err, ErrNoPartitionKey, name)
		v, err := MustKeyDef("/address").Extract(form)
		require.NoError(t, err, name)
		assert.Equal(t, Null, v, name)
	}
}

func TestExtractComposite(t *testing.T) {
	d := MustKeyDef("/region", "/userId", "/flag", "/none")
	for _, doc := range []any{
		[]byte(`{"userId":7,"region":"eu","flag":true,"none":null}`),
		`{"userId":7,"region":"eu","flag":true,"none":null}`,
		map[string]any{"userId": 7, "region": "eu", "flag": true, "none": nil},
		struct {
			Region string `json:"region"`
			UserID int64  `json:"userId"`
			Flag   bool   `json:"flag"`
			None   *int   `json:"none"`
		}{"eu", 7, true, nil},
	} {
		got, err := d.Extract(doc)
		require.NoError(t, err, "%T", doc)
		assert.Equal(t, CompositeKey{"eu", 7.0, true, Null}, got, "%T", doc)
		text, err := KeyString(got)
		require.NoError(t, err)
		assert.Equal(t, `["eu",7,true,null]`, text)
	}
	_, err := d.Extract(map[string]any{"region": "eu"})
	require.ErrorIs(t, err, ErrNoPartitionKey)
	assert.Contains(t, err.Error(), "/userId")
	_, err = d.Extract([]byte(`{"region":"eu","userId":[1]}`))
	require.ErrorIs(t, err, ErrKeyType)
	assert.Contains(t, err.Error(), "/userId")
}

func TestExtractRawEdgeCases(t *testing.T) {
	d := MustKeyDef("/k")
	ok := []struct {
		doc  string
		want any
	}{
		{`{"k":"v"}`, "v"},
		{" \t\r\n{ \"k\" \n: \"v\" \n}", "v"},
		{` { "a" : [1, {"k":"inner"}, "}", [], {}, [[[]]]], "b":{"c":{"k":1}}, "k" : "outer" } `, "outer"},
		{`{"a":{"b":[true,false,null,-0.5e-3,0,1E+2,"x\"y\\z\u00e9"]},"k":3}`, 3.0},
		{`{"\u006b":"escaped name"}`, "escaped name"},
		{`{"\u006B":"upper-case hex"}`, "upper-case hex"},
		{`{"k":"\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t \u0000"}`, "😀 \"q\" \\ / \b\f\n\r\t \x00"},
		{`{"k":"\ud83d"}`, "\uFFFD"},        // a lone high surrogate
		{`{"k":"\ude00x"}`, "\uFFFDx"},      // a lone low surrogate
		{`{"k":"\ud83d\u0041"}`, "\uFFFDA"}, // a high surrogate followed by no low one
		{`{"k":"\ud83d\ud83d\ude00"}`, "\uFFFD😀"},
		{"{\"k\":\"bad \xff utf8\"}", "bad \uFFFD utf8"},
		{"{\"k\":\"\xed\xa0\x80\"}", "\uFFFD\uFFFD\uFFFD"}, // a surrogate in UTF-8 is invalid
		{`{"k":"日本語 é"}`, "日本語 é"},
		{`{"k":-1.5e3}`, -1500.0},
		{`{"k":0}`, 0.0},
		{`{"k":-0}`, math.Copysign(0, -1)},
		{`{"k":12345678901234567890}`, 12345678901234567890.0},
		{`{"k":null}`, Null},
		{`{"k":false}`, false},
		{`{"k":true }`, true},
		{`{"x":"a\"k\":1","k":2}`, 2.0},
		{`{"k":"first","k":"second"}`, "first"},
		{`{"k":"v", garbage after the key`, "v"},
		{`{"k":1} trailing`, 1.0},
		{`{"K":1,"k":2}`, 2.0}, // names are case-sensitive
	}
	for _, tc := range ok {
		for _, form := range []any{[]byte(tc.doc), tc.doc} {
			got, err := d.Extract(form)
			require.NoError(t, err, tc.doc)
			assert.Equal(t, tc.want, got, tc.doc)
			if f, isFloat := tc.want.(float64); isFloat {
				assert.Equal(t, math.Signbit(f), math.Signbit(got.(float64)), tc.doc)
			}
		}
	}
	bad := []struct {
		doc string
		err error
		msg string
	}{
		{`{"a":1}`, ErrNoPartitionKey, ""},
		{`[]`, ErrNoPartitionKey, "not a JSON object"},
		{`"k"`, ErrNoPartitionKey, "not a JSON object"},
		{`{}`, ErrNoPartitionKey, ""},
		{``, ErrNoPartitionKey, "unexpected end"},
		{`   `, ErrNoPartitionKey, "unexpected end"},
		{`{"a":`, ErrNoPartitionKey, "unexpected end"},
		{`{"a" 1, "k":2}`, ErrNoPartitionKey, "want ':'"},
		{`{"a":1 "k":2}`, ErrNoPartitionKey, "want ',' or '}'"},
		{`{"a":1,,"k":2}`, ErrNoPartitionKey, "want a member name"},
		{`{,"k":2}`, ErrNoPartitionKey, "want a member name"},
		{`{a:1,"k":2}`, ErrNoPartitionKey, "want a member name"},
		{`{"a":"unterminated`, ErrNoPartitionKey, "unterminated string"},
		{`{"a":xyz,"k":1}`, ErrNoPartitionKey, "invalid value"},
		{`{"a":tru,"k":1}`, ErrNoPartitionKey, "invalid value"},
		{`{"a":[1,}],"k":1}`, ErrNoPartitionKey, "invalid value"},
		{`{"a":[},"k":1}`, ErrNoPartitionKey, "invalid value"},
		{`{"a":[1 2],"k":1}`, ErrNoPartitionKey, "want ',' or ']'"},
		{`{"a":{"b":1],"k":1}`, ErrNoPartitionKey, "want ',' or '}'"},
		{`{"a":{"b"},"k":1}`, ErrNoPartitionKey, "want ':'"},
		{`{"a":"\x","k":1}`, ErrNoPartitionKey, "invalid escape"},
		{`{"a":"\u12","k":1}`, ErrNoPartitionKey, `invalid \u escape`},
		{"{\"a\":\"tab\there\",\"k\":1}", ErrNoPartitionKey, "control character"},
		{`{"a":01,"k":1}`, ErrNoPartitionKey, "want ',' or '}'"},
		{`{"a":-,"k":1}`, ErrNoPartitionKey, "want a digit"},
		{`{"a":1.,"k":1}`, ErrNoPartitionKey, "decimal point"},
		{`{"a":1e,"k":1}`, ErrNoPartitionKey, "exponent"},
		{`{"a":+1,"k":1}`, ErrNoPartitionKey, "invalid value"},
		{`{"a":` + strings.Repeat("[", jsontext.MaxDepth+1) + "1" + strings.Repeat("]", jsontext.MaxDepth+1) + `,"k":1}`, ErrNoPartitionKey, "nested too deeply"},
		{`{"k":tru}`, ErrNoPartitionKey, "invalid value"},
		{`{"k":01}`, ErrNoPartitionKey, "want ',' or '}' after the key"},
		{`{"k":1 2}`, ErrNoPartitionKey, "want ',' or '}' after the key"},
		{`{"k":12`, ErrNoPartitionKey, "unexpected end of JSON after the key"},
		{`{"k":"v"`, ErrNoPartitionKey, "unexpected end of JSON after the key"},
		{`{"k":"bad \x escape"}`, ErrNoPartitionKey, "invalid escape"},
		{`{"k":[1]}`, ErrKeyType, "object or array"},
		{`{"k":{"a":1}}`, ErrKeyType, "object or array"},
		{`{"k":1e999}`, ErrKeyType, "range"},
		{`{"k":-1e999}`, ErrKeyType, "range"},
	}
	for _, tc := range bad {
		_, err := d.Extract([]byte(tc.doc))
		require.Error(t, err, tc.doc)
		assert.ErrorIs(t, err, tc.err, "%s: %v", tc.doc, err)
		assert.Contains(t, err.Error(), tc.msg, tc.doc)
		var ke *KeyError
		require.ErrorAs(t, err, &ke)
		assert.Equal(t, "/k", ke.Path)
		// The zero-allocation API reports the same (range errors when read).
		vals, rawErr := d.ExtractRaw([]byte(tc.doc), nil)
		if rawErr == nil {
			_, rawErr = vals[0].Float()
		}
		assert.ErrorIs(t, rawErr, tc.err, tc.doc)
	}
	// Deep nesting within the limit is skipped (past the 64 levels kept in
	// a word).
	deep := `{"a":` + strings.Repeat(`{"x":[`, 300) + strings.Repeat(`]}`, 300) + `,"k":1}`
	v, err := d.Extract([]byte(deep))
	require.NoError(t, err)
	assert.Equal(t, 1.0, v)

	for _, doc := range []any{nil, 42, []int{1}, map[int]any{1: 2}, (*userDoc)(nil), map[string]string{"a": "b"}} {
		_, err := d.Extract(doc)
		assert.ErrorIs(t, err, ErrNoPartitionKey, "%T", doc)
	}
	_, err = KeyDef{}.Extract(map[string]any{"k": 1})
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = KeyDef{}.ExtractRaw([]byte(`{"k":1}`), nil)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
}

func TestNullAcrossForms(t *testing.T) {
	type doc struct {
		P *string          `json:"k"`
		I any              `json:"i"`
		M map[string]any   `json:"m"`
		S []string         `json:"s"`
		B []byte           `json:"b"`
		R *json.RawMessage `json:"r"`
	}
	for _, path := range []string{"/k", "/i", "/m", "/s", "/b", "/r"} {
		for name, form := range forms(t, doc{}) {
			v, err := MustKeyDef(path).Extract(form)
			require.NoError(t, err, "%s from %s", path, name)
			assert.Equal(t, Null, v, "%s from %s", path, name)
		}
	}
	_, err := KeyString(Null)
	assert.ErrorIs(t, err, ErrKeyType, "a null key alone has no canonical text")
	b, err := json.Marshal(Null)
	require.NoError(t, err)
	assert.Equal(t, "null", string(b))
	assert.Equal(t, "null", fmt.Sprint(Null))
}

func TestExtractRawAPI(t *testing.T) {
	doc := []byte(`{"s":"a\"b","n":1e21,"t":true,"f":false,"z":null,"u":"日本","e":"\u00e9","big":1e999}`)
	get := func(path string) RawValue {
		vals, err := MustKeyDef(path).ExtractRaw(doc, nil)
		require.NoError(t, err, path)
		require.Len(t, vals, 1)
		return vals[0]
	}
	s := get("/s")
	assert.Equal(t, ValueString, s.Kind())
	assert.Equal(t, `"a\"b"`, string(s.JSON()))
	assert.Equal(t, `xa"b`, string(s.AppendText([]byte("x"))))
	k, err := s.AppendKey(nil)
	require.NoError(t, err)
	assert.Equal(t, `a"b`, string(k))
	_, err = s.Float()
	assert.ErrorIs(t, err, ErrKeyType)

	n := get("/n")
	assert.Equal(t, ValueNumber, n.Kind())
	f, err := n.Float()
	require.NoError(t, err)
	assert.Equal(t, 1e21, f)
	k, err = n.AppendKey(nil)
	require.NoError(t, err)
	assert.Equal(t, "1e+21", string(k))
	assert.Equal(t, "1e21", string(n.AppendText(nil)))

	tr, fa := get("/t"), get("/f")
	b, ok := tr.Bool()
	assert.True(t, b && ok)
	b, ok = fa.Bool()
	assert.True(t, !b && ok)
	_, ok = s.Bool()
	assert.False(t, ok)
	_, err = tr.AppendKey(nil)
	assert.ErrorIs(t, err, ErrKeyType)
	z := get("/z")
	assert.Equal(t, ValueNull, z.Kind())
	v, err := z.Value()
	require.NoError(t, err)
	assert.Equal(t, Null, v)
	_, err = z.AppendKey(nil)
	assert.ErrorIs(t, err, ErrKeyType)

	_, err = get("/big").Float()
	assert.ErrorIs(t, err, ErrKeyType)
	_, err = MustKeyDef("/big").Extract(doc)
	assert.ErrorIs(t, err, ErrKeyType)
	_, err = MustKeyDef("/big").AppendKey(nil, doc)
	assert.ErrorIs(t, err, ErrKeyType)
	assert.Contains(t, err.Error(), "/big")

	for kind, want := range map[ValueKind]string{ValueString: "string", ValueNumber: "number", ValueBool: "bool", ValueNull: "null", 0: "invalid"} {
		assert.Equal(t, want, kind.String())
	}

	// AppendKey gives exactly the text KeyString gives of Extract's key,
	// single and composite.
	for _, paths := range [][]string{{"/s"}, {"/n"}, {"/u"}, {"/e"}, {"/s", "/n", "/t", "/z", "/u", "/e"}} {
		d := MustKeyDef(paths...)
		key, err := d.Extract(doc)
		require.NoError(t, err)
		want, err := KeyString(key)
		require.NoError(t, err)
		got, err := d.AppendKey([]byte("prefix:"), doc)
		require.NoError(t, err)
		assert.Equal(t, "prefix:"+want, string(got), "%v", paths)
	}
	_, err = MustKeyDef("/t").AppendKey(nil, doc)
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "/t", ke.Path)
	assert.Equal(t, true, ke.Key)
	_, err = MustKeyDef("/missing").AppendKey(nil, doc)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = AppendRawKey(nil, nil)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = RawValue{}.Value()
	assert.ErrorIs(t, err, ErrNoPartitionKey)
}

func TestExtractBorrowed(t *testing.T) {
	doc := []byte(`{"id":"1","userId":"alice","n":4,"e":"a\u0062"}`)
	d := MustKeyDef("/userId")
	k, err := d.ExtractBorrowed(doc)
	require.NoError(t, err)
	assert.Equal(t, "alice", k)
	copied, err := d.Extract(doc)
	require.NoError(t, err)
	copy(doc[strings.Index(string(doc), "alice"):], "bobby")
	assert.Equal(t, "bobby", k, "the borrowed key aliases the document")
	assert.Equal(t, "alice", copied, "Extract's key is a copy")
	for _, path := range [][]string{{"/n"}, {"/e"}, {"/missing"}, {"/e", "/n"}} {
		a, errA := MustKeyDef(path...).ExtractBorrowed(doc)
		b, errB := MustKeyDef(path...).Extract(doc)
		assert.Equal(t, b, a, path)
		assert.Equal(t, errB == nil, errA == nil, path)
	}
}

func TestExtractAllocations(t *testing.T) {
	raw := []byte(`{"id":"0001","tags":["a","b"],"nested":{"x":1,"userId":"no"},"n":1.5,"userId":"user-0012345"}`)
	d := MustKeyDef("/userId")
	composite := MustKeyDef("/userId", "/n")
	var rawDoc any = raw
	var strDoc any = string(raw)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	var mapDoc any = m
	var vals [4]RawValue
	buf := make([]byte, 0, 64)
	cases := []struct {
		name string
		max  float64
		fn   func()
	}{
		{"ExtractRaw", 0, func() { _, _ = d.ExtractRaw(raw, vals[:0]) }},
		{"AppendKey", 0, func() { _, _ = d.AppendKey(buf[:0], raw) }},
		{"AppendKey composite", 0, func() { _, _ = composite.AppendKey(buf[:0], raw) }},
		{"Extract map", 0, func() { _, _ = d.Extract(mapDoc) }},
		{"ExtractBorrowed", 1, func() { _, _ = d.ExtractBorrowed(raw) }}, // the interface box
		{"Extract string", 1, func() { _, _ = d.Extract(strDoc) }},       // the interface box
		{"Extract raw", 2, func() { _, _ = d.Extract(rawDoc) }},          // the copy and the box
	}
	for _, tc := range cases {
		assert.LessOrEqual(t, testing.AllocsPerRun(200, tc.fn), tc.max, tc.name)
	}
}

// randomValue draws a JSON value of mixed types.
func randomValue(rng *rand.Rand, depth int) any {
	switch rng.IntN(9) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return math.Round(rng.NormFloat64()*1e6) / 1e3
	case 3:
		return math.Ldexp(rng.Float64(), rng.IntN(200)-100)
	case 4, 5:
		const chars = "ab \"\\/é😀\n\tk<&\u2028\x01"
		rs := []rune(chars)
		var b strings.Builder
		for i := rng.IntN(12); i > 0; i-- {
			b.WriteRune(rs[rng.IntN(len(rs))])
		}
		return b.String()
	case 6:
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
		for i := rng.IntN(6); i > 0; i-- {
			obj[[]string{"a", "b", "k", "x y", "é", `q"`}[rng.IntN(6)]] = randomValue(rng, depth+1)
		}
		return obj
	}
}

// TestExtractPropertyRawEqualsMap: for random documents, scanning the raw
// JSON gives exactly what walking the decoded map gives, and the
// zero-allocation API gives the same canonical text.
func TestExtractPropertyRawEqualsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []KeyDef{MustKeyDef("/k"), MustKeyDef("/a/k"), MustKeyDef(`/"x y"`), MustKeyDef("/é/b"), MustKeyDef(`/"q\""/a/b`), MustKeyDef("/a", "/b")}
	n := 4000
	if testing.Short() {
		n = 500
	}
	for i := 0; i < n; i++ {
		v := randomValue(rng, 0)
		obj, ok := v.(map[string]any)
		if !ok {
			obj = map[string]any{"k": v}
		}
		raw, err := json.Marshal(obj)
		require.NoError(t, err)
		if rng.IntN(2) == 0 {
			raw, err = json.MarshalIndent(obj, "", " \t")
			require.NoError(t, err)
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		for _, d := range paths {
			want, wantErr := d.Extract(m)
			for _, form := range []any{raw, string(raw)} {
				got, err := d.Extract(form)
				sameKey(t, want, wantErr, got, err, "%s %v", raw, d.Paths())
			}
			text, err := d.AppendKey(nil, raw)
			if wantErr != nil {
				require.Error(t, err)
				continue
			}
			wantText, wantTextErr := KeyString(want)
			require.Equal(t, wantTextErr == nil, err == nil, "%s %v: %v %v", raw, d.Paths(), wantTextErr, err)
			if err == nil {
				require.Equal(t, wantText, string(text), "%s %v", raw, d.Paths())
			}
		}
	}
}

// sameKey checks that two extractions agree: the same key, or errors of the
// same kind.
func sameKey(t *testing.T, want any, wantErr error, got any, err error, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if wantErr != nil {
		require.Error(t, err, "want %v; %s", wantErr, msg)
		require.Equal(t, errors.Is(wantErr, ErrKeyType), errors.Is(err, ErrKeyType), "want %v, got %v; %s", wantErr, err, msg)
		require.Equal(t, errors.Is(wantErr, ErrNoPartitionKey), errors.Is(err, ErrNoPartitionKey), "want %v, got %v; %s", wantErr, err, msg)
		return
	}
	require.NoError(t, err, msg)
	require.Equal(t, want, got, msg)
}

func TestExtractConcurrent(t *testing.T) {
	// A type no other test uses, so the goroutines race to fill the cache.
	type racer struct {
		Base
		Address *Inner `json:"address"`
		Note    string `json:"note,omitempty"`
	}
	d := MustKeyDef("/address/city")
	composite := MustKeyDef("/tenant", "/address/city")
	doc := racer{Base: Base{Tenant: "t"}, Address: &Inner{City: "x"}}
	raw, _ := json.Marshal(doc)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				for _, form := range []any{doc, &doc, raw, string(raw), m} {
					v, err := d.Extract(form)
					assert.NoError(t, err)
					assert.Equal(t, "x", v)
					c, err := composite.Extract(form)
					assert.NoError(t, err)
					assert.Equal(t, CompositeKey{"t", "x"}, c)
				}
				text, err := composite.AppendKey(nil, raw)
				assert.NoError(t, err)
				assert.Equal(t, `["t","x"]`, string(text))
			}
		}()
	}
	wg.Wait()
}

var sinkKey any

// benchDoc is a 1 KB profile document with the key last (the scanner reads
// all of it) or first.
func benchDoc(keyFirst bool) []byte {
	var b strings.Builder
	b.WriteString(`{`)
	if keyFirst {
		b.WriteString(`"userId":"user-0012345",`)
	}
	b.WriteString(`"id":"7d9f1c2e-5b7a-4e8b-9a61-2f0c3d4e5f60","type":"profile","name":{"first":"Ada","last":"Lovelace"},`)
	b.WriteString(`"email":"ada@example.com","age":36,"score":1234.5678,"active":true,"manager":null,`)
	b.WriteString(`"tags":["math","poetry","engines","notes"],"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH","geo":[51.5074,-0.1278]},`)
	for i := 0; b.Len() < 950; i++ {
		fmt.Fprintf(&b, `"pref%02d":{"on":%t,"level":%d,"label":"setting \"%d\" \u00e9"},`, i, i%2 == 0, i*7, i)
	}
	if !keyFirst {
		b.WriteString(`"userId":"user-0012345",`)
	}
	b.WriteString(`"_ts":1767225600}`)
	return []byte(b.String())
}

// BenchmarkPartitionKey: extraction of /userId from a 1 KB document in each
// form and through each API.
func BenchmarkPartitionKey(b *testing.B) {
	raw := benchDoc(false)
	if !json.Valid(raw) {
		b.Fatal("invalid benchmark document")
	}
	d := MustKeyDef("/userId")
	// Documents reach PartitionKey as interface values already; box them
	// once so the loop measures extraction, not the caller's boxing.
	var rawDoc any = raw
	var strDoc any = string(raw)
	b.Run(fmt.Sprintf("raw-%dB-key-last/Extract", len(raw)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			sinkKey, _ = d.Extract(rawDoc)
		}
	})
	b.Run(fmt.Sprintf("raw-%dB-key-last/ExtractBorrowed", len(raw)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			sinkKey, _ = d.ExtractBorrowed(raw)
		}
	})
	b.Run(fmt.Sprintf("raw-%dB-key-last/ExtractRaw", len(raw)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		var vals [1]RawValue
		for b.Loop() {
			_, _ = d.ExtractRaw(raw, vals[:0])
		}
	})
	b.Run(fmt.Sprintf("raw-%dB-key-last/AppendKey", len(raw)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		buf := make([]byte, 0, 64)
		for b.Loop() {
			buf, _ = d.AppendKey(buf[:0], raw)
		}
	})
	b.Run(fmt.Sprintf("string-%dB-key-last/Extract", len(raw)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			sinkKey, _ = d.Extract(strDoc)
		}
	})
	first := benchDoc(true)
	var firstDoc any = first
	b.Run(fmt.Sprintf("raw-%dB-key-first/Extract", len(first)), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkKey, _ = d.Extract(firstDoc)
		}
	})
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	var mapDoc any = m
	b.Run("map/Extract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkKey, _ = d.Extract(mapDoc)
		}
	})
	var structDoc any = &userDoc{UserID: "user-0012345", Address: &Inner{City: "x"}}
	b.Run("struct/Extract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkKey, _ = d.Extract(structDoc)
		}
	})
	nested := MustKeyDef("/address/city")
	b.Run("struct-nested/Extract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkKey, _ = nested.Extract(structDoc)
		}
	})
	b.Run("json.Unmarshal-for-comparison", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			sinkKey = m["userId"]
		}
	})
}

// modRing is a toy TextResolver: MD5 of the key's text modulo the links.
type modRing struct{ links []string }

func (r modRing) PartitionKey(doc any) (any, error) { return MustKeyDef("/userId").Extract(doc) }
func (r modRing) ResolveForCreate(key any) (string, error) {
	var buf [64]byte
	text, err := AppendKey(buf[:0], key)
	if err != nil {
		return "", err
	}
	return r.ResolveTextForCreate(text)
}
func (r modRing) ResolveTextForCreate(text []byte) (string, error) {
	sum := md5.Sum(text)
	return r.links[binary.BigEndian.Uint64(sum[:8])%uint64(len(r.links))], nil
}
func (r modRing) ResolveForRead(any) ([]string, error) { return r.links, nil }

// TestTextResolverPlacesWithoutAllocating: a raw document placed through
// KeyDef.AppendKey and a TextResolver goes where PartitionKey and
// ResolveForCreate send it, with no allocation.
func TestTextResolverPlacesWithoutAllocating(t *testing.T) {
	var r TextResolver = modRing{[]string{"dbs/a/colls/0", "dbs/a/colls/1", "dbs/a/colls/2"}}
	d := MustKeyDef("/userId")
	buf := make([]byte, 0, 64)
	for i := 0; i < 50; i++ {
		for _, doc := range []string{fmt.Sprintf(`{"userId":"u\u00e9%d"}`, i), fmt.Sprintf(`{"userId":%d.5e3}`, i)} {
			key, err := r.PartitionKey([]byte(doc))
			require.NoError(t, err)
			want, err := r.ResolveForCreate(key)
			require.NoError(t, err)
			buf, err = d.AppendKey(buf[:0], []byte(doc))
			require.NoError(t, err)
			got, err := r.ResolveTextForCreate(buf)
			require.NoError(t, err)
			require.Equal(t, want, got, doc)
		}
	}
	doc := benchDoc(false)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		buf, _ = d.AppendKey(buf[:0], doc)
		_, _ = r.ResolveTextForCreate(buf)
	}))
}
