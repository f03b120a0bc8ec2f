package partitionkey

import (
	"encoding/json"
	"errors"
	"slices"
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
		require.Equal(t, len(tc.segs), p.Len())
		for i, s := range tc.segs {
			assert.Equal(t, s, p.Segment(i))
		}
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
		var pe *PathError
		require.ErrorAs(t, err, &pe, "%q", tc.path)
		assert.Equal(t, tc.path, pe.Path, "the error names the path")
		assert.Equal(t, tc.pos, pe.Offset, "%q: %v", tc.path, err)
		assert.Contains(t, pe.Reason, tc.msg, "%q", tc.path)
		assert.Contains(t, err.Error(), "at byte ", "%q", tc.path)
	}

	for _, names := range [][]string{{"a"}, {"a b", `q"`, `b\`, "", "é", "x/y", "[0]", "*"}, {"'"}} {
		p, err := PathOf(names...)
		require.NoError(t, err, "%q", names)
		assert.Equal(t, names, p.Segments())
		again, err := ParsePath(p.String())
		require.NoError(t, err)
		assert.Equal(t, names, again.Segments())
	}
	assert.Equal(t, `/a/"b c"/""`, must(PathOf("a", "b c", "")).String())
	for _, bad := range [][]string{nil, {"a\x01"}, {"\xff"}} {
		_, err := PathOf(bad...)
		var pe *PathError
		assert.ErrorAs(t, err, &pe, "%q", bad)
	}

	p, q := mustPath(t, "/a/b"), mustPath(t, "/a")
	assert.True(t, p.HasPrefix(q))
	assert.True(t, p.HasPrefix(p))
	assert.False(t, q.HasPrefix(p))
	assert.False(t, p.HasPrefix(mustPath(t, "/b")))
}

func must(p Path, err error) Path {
	if err != nil {
		panic(err)
	}
	return p
}

func mustPath(t testing.TB, s string) Path {
	t.Helper()
	p, err := ParsePath(s)
	require.NoError(t, err)
	return p
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/a", "/a/b", `/"x y"`, `/"a\"b"/c`, "/", `/"`, "//", "/a[0]", `/"\\"`, "/é", `/""/x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != s || pe.Offset < 0 || pe.Offset > len(s) || !strings.Contains(err.Error(), "at byte ") {
				t.Fatalf("error %v is not a *PathError naming the path and a byte offset", err)
			}
			return
		}
		segs := p.Segments()
		if p.String() != s || len(segs) == 0 {
			t.Fatalf("parsed %q into %q %v", s, p.String(), segs)
		}
		// Writing the names again gives a path with the same names.
		q, err := PathOf(segs...)
		if err != nil || !slices.Equal(q.Segments(), segs) {
			t.Fatalf("%q: PathOf its names gives %q: %v, %v", s, q, q.Segments(), err)
		}
		// Every accepted path reads its own value back out of a document.
		var doc any = "found"
		for i := len(segs) - 1; i >= 0; i-- {
			doc = map[string]any{segs[i]: doc}
		}
		raw, _ := json.Marshal(doc)
		v, err := p.Lookup(raw)
		if err == nil {
			doc, err = v.Value()
		}
		if err != nil || doc != "found" {
			t.Fatalf("path %q does not find its value in %s: %v %v", s, raw, doc, err)
		}
	})
}
