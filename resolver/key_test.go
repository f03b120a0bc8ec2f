package resolver

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendNumberRFC8785(t *testing.T) {
	// Values from RFC 8785 appendix B and ECMAScript Number.prototype.toString.
	cases := []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{1.5, "1.5"},
		{0.1, "0.1"},
		{1e21, "1e+21"},
		{1e20, "100000000000000000000"},
		{123456789012345680000, "123456789012345680000"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{-1.7976931348623157e308, "-1.7976931348623157e+308"},
		{9007199254740992, "9007199254740992"},
		{295147905179352830000, "295147905179352830000"},
		{4.50, "4.5"},
		{2e-3, "0.002"},
		{0.000001234, "0.000001234"},
		{333333333.33333329, "333333333.3333333"},
		{1e23, "1e+23"},
		{-5e-7, "-5e-7"},
	}
	for _, tc := range cases {
		got, err := AppendNumber(nil, tc.f)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(got), "%v", tc.f)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := AppendNumber(nil, f)
		assert.ErrorIs(t, err, ErrKeyType)
	}
}

func TestKeyString(t *testing.T) {
	cases := []struct {
		key  any
		want string
	}{
		{"alice", "alice"},
		{"", ""},
		{42, "42"},
		{int8(-3), "-3"},
		{uint64(1 << 60), "1152921504606847000"}, // shortest digits, as ECMAScript prints 2**60
		{float32(0.1), "0.1"},
		{json.Number("1.50"), "1.5"},
		{json.Number("1E2"), "100"},
		{CompositeKey{"eu", 7, true, nil, 1.5}, `["eu",7,true,null,1.5]`},
		{[]any{"a\"b", "é\n\u0001"}, `["a\"b","é\n\u0001"]`},
	}
	for _, tc := range cases {
		got, err := KeyString(tc.key)
		require.NoError(t, err, "%#v", tc.key)
		assert.Equal(t, tc.want, got, "%#v", tc.key)
	}
	for _, bad := range []any{true, struct{}{}, map[string]any{}, CompositeKey{}, CompositeKey{[]any{1}}, json.Number("x"), math.NaN()} {
		_, err := KeyString(bad)
		require.Error(t, err, "%#v", bad)
		assert.ErrorIs(t, err, ErrKeyType, "%#v", bad)
	}
	_, err := KeyString(nil)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
}

func TestAppendJSONString(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        `"plain"`,
		"q\"b\\":       `"q\"b\\"`,
		"\b\t\n\f\r":   `"\b\t\n\f\r"`,
		"\u0001\u001f": `"\u0001\u001f"`,
		"é😀/<>&":       `"é😀/<>&"`,
		"\xff":         "\"\uFFFD\"",
	} {
		assert.Equal(t, want, string(AppendJSONString(nil, in)), "%q", in)
	}
}

func TestValidateLink(t *testing.T) {
	for _, ok := range []string{"dbs/a/colls/b", "/dbs/a/colls/b/", "dbs/T6t8AA==/colls/T6t8ALDFcwA=/"} {
		assert.NoError(t, ValidateLink(ok), ok)
	}
	for _, bad := range []string{"", "dbs/a", "dbs//colls/b", "colls/b", "dbs/a/colls/b/docs/c", "dbs/a?/colls/b"} {
		err := ValidateLink(bad)
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, ErrInvalid)
	}
}

func TestCheckDistinctLinks(t *testing.T) {
	assert.NoError(t, CheckDistinctLinks("collections", []string{"dbs/a/colls/b", "dbs/a/colls/c"}))
	var ce *ConfigError
	err := CheckDistinctLinks("collections", []string{"dbs/a/colls/b", "dbs/a/colls/c", "dbs/a/colls/b"})
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections[2]", ce.Field)
	assert.Contains(t, err.Error(), "also collections[0]")
	err = CheckDistinctLinks("collections", []string{"dbs/a/colls/b", "bad"})
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections[1]", ce.Field)
	err = CheckDistinctLinks("collections", nil)
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "collections", ce.Field)
}

func TestUnionLinks(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c"}, UnionLinks([]string{"a", "b"}, nil, []string{"b", "c", "a"}))
	assert.Empty(t, UnionLinks())
}
