package resolver

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

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
		{`/x/"department name"`, []string{"x", "department name"}},
		{`/"a\"b"`, []string{`a"b`}},
		{`/"back\\slash"`, []string{`back\slash`}},
		{`/"\\\""`, []string{`\"`}},
		{`/"a/b"`, []string{"a/b"}},
		{`/"a[0]*?"`, []string{"a[0]*?"}},
		{"/é/日本", []string{"é", "日本"}},
		{`/""`, []string{""}},
		{"/tenant-id/$type/a.b/'q'", []string{"tenant-id", "$type", "a.b", "'q'"}},
		{"/_partitionKey", []string{"_partitionKey"}},
	}
	for _, tc := range ok {
		p, err := ParsePath(tc.path)
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.segs, p.Segments(), tc.path)
		assert.Equal(t, tc.path, p.String())
	}
	bad := []struct {
		path string
		pos  int
		msg  string
	}{
		{"", 0, "empty path"},
		{"userId", 0, "want '/'"},
		{"/", 1, "trailing '/'"},
		{"/a/", 3, "trailing '/'"},
		{"//a", 1, "empty property name"},
		{"/a//b", 3, "empty property name"},
		{`/"abc`, 1, "unterminated quoted name"},
		{`/"abc\"`, 1, "unterminated quoted name"},
		{`/x/"`, 3, "unterminated quoted name"},
		{`/"a\n"`, 3, `only \" and \\`},
		{`/"a\`, 3, `only \" and \\`},
		{`/"a"b`, 4, "want '/' after a quoted name"},
		{`/a"b`, 2, "may only open a quoted name"},
		{`/a\b`, 2, `may only appear in a quoted name`},
		{"/arr[0]", 4, "array indexes"},
		{"/arr/0]", 6, "array indexes"},
		{"/a/*", 3, "wildcards"},
		{"/a/?", 3, "wildcards"},
		{"/user Id", 5, "white space"},
		{"/userId ", 7, "white space"},
		{" /userId", 0, "want '/'"},
		{"/a\tb", 2, "white space"},
		{"/a\x01", 2, "control character"},
		{"/\"a\x01\"", 3, "control character"},
		{"/ok/\xff", 4, "UTF-8"},
		{"a/b", 0, "want '/'"},
	}
	for _, tc := range bad {
		_, err := ParsePath(tc.path)
		require.Error(t, err, "%q", tc.path)
		assert.ErrorIs(t, err, ErrInvalid)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce))
		assert.Equal(t, "partitionKey", ce.Field)
		assert.Equal(t, tc.path, ce.Value, "the error names the path")
		assert.Contains(t, err.Error(), tc.msg, "%q", tc.path)
		assert.Contains(t, ce.Reason, "at byte "+strconv.Itoa(tc.pos)+":", "%q: %v", tc.path, err)
	}
}

func TestParseKeyDef(t *testing.T) {
	d, err := ParseKeyDef("/region", `/"user id"`)
	require.NoError(t, err)
	assert.True(t, d.Composite())
	assert.Equal(t, []string{"/region", `/"user id"`}, d.Paths())
	assert.Equal(t, `/region, /"user id"`, d.String())

	cases := []struct {
		paths []string
		field string
		msg   string
	}{
		{nil, "partitionKey", "no path"},
		{[]string{"/a", "/b", "/a"}, "partitionKey[2]", "repeats partitionKey[0]"},
		{[]string{"/a", `/"a"`}, "partitionKey[1]", "repeats partitionKey[0]"},
		{[]string{"/a/b", "/a"}, "partitionKey[1]", "overlaps partitionKey[0]"},
		{[]string{"/a", "/a/b"}, "partitionKey[1]", "overlaps"},
		{[]string{"/a", "b"}, "partitionKey[1]", "want '/'"},
		{[]string{"x"}, "partitionKey", "want '/'"},
	}
	for _, tc := range cases {
		_, err := ParseKeyDef(tc.paths...)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%v", tc.paths)
		assert.Equal(t, tc.field, ce.Field, "%v", tc.paths)
		assert.Contains(t, err.Error(), tc.msg, "%v", tc.paths)
	}
	_, err = ParseKeyDef("/a/b", "/a/c") // siblings are fine
	assert.NoError(t, err)
	assert.Panics(t, func() { MustKeyDef("nope") })
	assert.True(t, KeyDef{}.IsZero())
	assert.False(t, MustKeyDef("/a").IsZero())
}

func TestKeyDefJSON(t *testing.T) {
	for _, src := range []string{`"/userId"`, `["/region","/\"user id\""]`, `null`} {
		var d KeyDef
		require.NoError(t, json.Unmarshal([]byte(src), &d))
		out, err := json.Marshal(d)
		require.NoError(t, err)
		assert.JSONEq(t, src, string(out))
	}
	var d KeyDef
	for _, bad := range []string{`[]`, `7`, `"nope"`, `["/a",7]`, `{"a":1}`, `["/a","/a"]`, `true`} {
		err := json.Unmarshal([]byte(bad), &d)
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, ErrInvalid, bad)
		assert.Contains(t, err.Error(), "partitionKey", bad)
	}
	// null leaves a KeyDef as it was, as encoding/json's convention asks.
	d = MustKeyDef("/a")
	require.NoError(t, json.Unmarshal([]byte(`null`), &d))
	assert.Equal(t, []string{"/a"}, d.Paths())
	// Inside a resolver's JSON.
	var spec struct {
		PartitionKey KeyDef `json:"partitionKey"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"partitionKey":"/\"a b\"/c"}`), &spec))
	v, err := spec.PartitionKey.Extract(map[string]any{"a b": map[string]any{"c": "x"}})
	require.NoError(t, err)
	assert.Equal(t, "x", v)
}

// quotePath writes segments as a path whose every name is quoted.
func quotePath(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(`/"`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s))
		b.WriteByte('"')
	}
	return b.String()
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/a", "/a/b", `/"x y"`, `/"a\"b"/c`, "/", `/"`, "//", "/a[0]", `/"\\"`, "/é", `/""/x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) || ce.Value != s || !strings.Contains(ce.Reason, "at byte ") {
				t.Fatalf("error %v is not a *ConfigError naming the path and a byte offset", err)
			}
			return
		}
		segs := p.Segments()
		if p.String() != s || len(segs) == 0 {
			t.Fatalf("parsed %q into %q %v", s, p.String(), segs)
		}
		// Quoting every name gives a path with the same names.
		q, err := ParsePath(quotePath(segs))
		if err != nil || !slices.Equal(q.Segments(), segs) {
			t.Fatalf("%q: quoted form %q parses to %v, %v", s, quotePath(segs), q.Segments(), err)
		}
		// Every accepted path reads its own value back out of a document,
		// in every form.
		var doc any = "found"
		for i := len(segs) - 1; i >= 0; i-- {
			doc = map[string]any{segs[i]: doc}
		}
		raw, _ := json.Marshal(doc)
		d := KeyDef{paths: []Path{p}}
		for _, form := range []any{raw, string(raw), doc} {
			v, err := d.Extract(form)
			if err != nil || v != "found" {
				t.Fatalf("path %q does not find its value in %s (%T): %v %v", s, raw, form, v, err)
			}
		}
	})
}
