package resolver

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParsePath: resolver.ParsePath is partitionkey.ParsePath (whose tests
// hold the grammar) with its errors as *ConfigError for "partitionKey".
func TestParsePath(t *testing.T) {
	p, err := ParsePath(`/"department name"/x`)
	require.NoError(t, err)
	assert.Equal(t, []string{"department name", "x"}, p.Segments())
	assert.Equal(t, `/"department name"/x`, p.String())
	bad := []struct {
		path string
		pos  int
		msg  string
	}{
		{"", 0, "empty path"},
		{"/a//b", 3, "empty property name"},
		{"/arr[0]", 4, "array indexes"},
		{"/user Id", 5, "white space"},
		{"/ok/\xff", 4, "UTF-8"},
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
