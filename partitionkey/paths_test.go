package partitionkey

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePaths(t *testing.T) {
	cases := []struct {
		paths []string
		want  string // the String of the result; "" for an error
		err   string
	}{
		{[]string{"/a"}, "/a", ""},
		{[]string{"/tenant", "/user", `/"session id"`}, `/tenant, /user, /"session id"`, ""},
		{nil, "", "no partition-key path"},
		{[]string{"/a", "/b", "/c", "/d"}, "", "at most 3"},
		{[]string{"/a", "/a"}, "", "repeats or overlaps"},
		{[]string{"/a", "/a/b"}, "", "repeats or overlaps"},
		{[]string{"/a", "b"}, "", "want '/'"},
	}
	for _, tc := range cases {
		ps, err := ParsePaths(tc.paths...)
		if tc.err != "" {
			var pe *PathError
			require.ErrorAs(t, err, &pe, "%v", tc.paths)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, ps.String())
		assert.Equal(t, len(tc.paths) > 1, ps.Hierarchical())
		assert.Equal(t, tc.paths, ps.Strings())
	}
}

func TestCompositeIdentity(t *testing.T) {
	cases := []struct {
		parts []any
		want  string
	}{
		{[]any{"eu", 42}, `["eu",42]`},
		{[]any{"eu", 42.0, int64(7)}, `["eu",42,7]`},
		{[]any{"a,b", true, nil}, `["a,b",true,null]`},
		{[]any{Null, None}, `[null,{}]`},
		{[]any{`q"uote`, "é"}, `["q\"uote","é"]`},
	}
	for _, tc := range cases {
		got, err := AppendCompositeIdentity(nil, tc.parts)
		require.NoError(t, err, "%v", tc.parts)
		assert.Equal(t, tc.want, string(got))
	}
	for _, bad := range [][]any{{}, {"a", []any{"b"}}, {"a", map[string]any{}}} {
		_, err := AppendCompositeIdentity(nil, bad)
		assert.ErrorIs(t, err, ErrKeyType, "%v", bad)
	}
	_, err := PlacementText(CompositeKey{"a", None})
	assert.ErrorIs(t, err, ErrKeyType, "placement has no None part")
}

// TestCompositePrefix: the keys whose texts start with a prefix's text are
// exactly those that start with its values.
func TestCompositePrefix(t *testing.T) {
	keys := [][]any{{"a", "b"}, {"a", 1}, {"a,b", "c"}, {"ab", "c"}, {"a", None}, {`a"`, "x"}, {1, "a"}, {10, "a"}}
	prefixes := map[string][]int{`a`: {0, 1, 4}, `a,b`: {2}, `1`: {6}, `a"`: {5}}
	for p, want := range prefixes {
		var part any = p
		if p == "1" {
			part = 1
		}
		text, err := AppendCompositeIdentity(nil, []any{part})
		require.NoError(t, err)
		pre := CompositePrefix(string(text))
		var got []int
		for i, k := range keys {
			kt, err := AppendCompositeIdentity(nil, k)
			require.NoError(t, err)
			if strings.HasPrefix(string(kt), pre) {
				got = append(got, i)
			}
		}
		assert.Equal(t, want, got, "prefix %q (%s)", p, pre)
	}
}

func TestAppendDocIdentity(t *testing.T) {
	one, err := ParsePaths("/a")
	require.NoError(t, err)
	two, err := ParsePaths("/a", "/b/c")
	require.NoError(t, err)
	cases := []struct {
		paths Paths
		doc   string
		want  string
		err   bool
	}{
		{one, `{"a":"x"}`, `"x"`, false},
		{one, `{"b":1}`, NoneText, false},
		{two, `{"a":"x","b":{"c":2}}`, `["x",2]`, false},
		{two, `{"b":{"c":null}}`, `[{},null]`, false},
		{two, `{"a":[1],"b":{"c":2}}`, "", true},
	}
	for _, tc := range cases {
		got, err := tc.paths.AppendDocIdentity(nil, []byte(tc.doc))
		if tc.err {
			assert.ErrorIs(t, err, ErrKeyType, tc.doc)
			continue
		}
		require.NoError(t, err, tc.doc)
		assert.Equal(t, tc.want, string(got), tc.doc)
	}
}
