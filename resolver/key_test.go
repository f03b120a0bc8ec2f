package resolver

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
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
	// RFC 8785 appendix B: IEEE 754 bits and their text.
	appendixB := map[uint64]string{
		0x0000000000000000: "0",
		0x8000000000000000: "0",
		0x0000000000000001: "5e-324",
		0x8000000000000001: "-5e-324",
		0x7fefffffffffffff: "1.7976931348623157e+308",
		0xffefffffffffffff: "-1.7976931348623157e+308",
		0x4340000000000000: "9007199254740992",
		0xc340000000000000: "-9007199254740992",
		0x4430000000000000: "295147905179352830000",
		0x44b52d02c7e14af5: "9.999999999999997e+22",
		0x44b52d02c7e14af6: "1e+23",
		0x44b52d02c7e14af7: "1.0000000000000001e+23",
		0x444b1ae4d6e2ef4e: "999999999999999700000",
		0x444b1ae4d6e2ef4f: "999999999999999900000",
		0x444b1ae4d6e2ef50: "1e+21",
		0x3eb0c6f7a0b5ed8c: "9.999999999999997e-7",
		0x3eb0c6f7a0b5ed8d: "0.000001",
		0x41b3de4355555553: "333333333.3333332",
		0x41b3de4355555554: "333333333.33333325",
		0x41b3de4355555555: "333333333.3333333",
		0x41b3de4355555556: "333333333.3333334",
		0x41b3de4355555557: "333333333.33333343",
		0xbecbf647612f3696: "-0.0000033333333333333333",
		0x43143ff3c1cb0959: "1424953923781206.2",
	}
	for bits, want := range appendixB {
		got, err := AppendNumber(nil, math.Float64frombits(bits))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), "%016x", bits)
	}
	for _, bits := range []uint64{0x7fffffffffffffff, 0x7ff0000000000000} {
		_, err := AppendNumber(nil, math.Float64frombits(bits))
		assert.ErrorIs(t, err, ErrKeyType)
	}
}

// TestAppendNumberES6Corpus: thousands of doubles (random bits, integers,
// values around the decimal/exponent boundaries, powers of 10 and 2) against
// the text ECMAScript's Number.prototype.toString gave them
// (testdata/es6-numbers.js wrote the file with Node.js).
func TestAppendNumberES6Corpus(t *testing.T) {
	data, err := os.ReadFile("testdata/es6-numbers.txt")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Greater(t, len(lines), 3000)
	var buf []byte
	for _, line := range lines {
		hexBits, want, ok := strings.Cut(line, " ")
		require.True(t, ok, line)
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		require.NoError(t, err, line)
		f := math.Float64frombits(bits)
		buf, err = AppendNumber(buf[:0], f)
		require.NoError(t, err, line)
		require.Equal(t, want, string(buf), "%016x (%v)", bits, f)
		// The text reads back as the same double.
		back, err := strconv.ParseFloat(want, 64)
		require.NoError(t, err)
		require.Equal(t, f == 0, back == 0)
		if f != 0 {
			require.Equal(t, f, back)
		}
	}
	buf = make([]byte, 0, 32)
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf, _ = AppendNumber(buf[:0], 1.2345678901234567e-200) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _, _ = Number(float32(0.1)) }))
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
		{CompositeKey{Null, nil, false}, `[null,null,false]`},
		{CompositeKey{float32(1.1), uint8(200), json.Number("-0")}, `[1.1,200,0]`},
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

// TestAppendJSONStringRoundTrip: whatever the string, the text is JSON that
// decodes to what encoding/json decodes from its own encoding (invalid UTF-8
// replaced), and only '"', '\\' and control characters are escaped.
func TestAppendJSONStringRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pieces := []string{"a", "\"", "\\", "/", "\x00", "\x1f", "\x7f", "\u2028", "é", "😀", "\xff", "\xe2\x82", "<>&", "\b\f\n\r\t"}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for j := rng.IntN(10); j > 0; j-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		out := AppendJSONString(nil, s)
		var got, want string
		require.NoError(t, json.Unmarshal(out, &got), "%q -> %s", s, out)
		std, _ := json.Marshal(s)
		require.NoError(t, json.Unmarshal(std, &want))
		require.Equal(t, want, got, "%q", s)
		for _, esc := range []string{`\u2028`, `\u003c`, `\u007f`, `\ufffd`} {
			require.NotContains(t, string(out), esc, "%q", s)
		}
	}
}
