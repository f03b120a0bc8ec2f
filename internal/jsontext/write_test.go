package jsontext

import (
	"bytes"
	"encoding/json"
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
		{9007199254740991, "9007199254740991"},
		{-9007199254740991, "-9007199254740991"},
		{295147905179352830000, "295147905179352830000"},
		{4.50, "4.5"},
		{2e-3, "0.002"},
		{0.000001234, "0.000001234"},
		{333333333.33333329, "333333333.3333333"},
		{1e23, "1e+23"},
		{-5e-7, "-5e-7"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, string(AppendNumber(nil, tc.f, Canonical)), "%v", tc.f)
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
		assert.Equal(t, want, string(AppendNumber(nil, math.Float64frombits(bits), Canonical)), "%016x", bits)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		assert.Equal(t, "null", string(AppendNumber(nil, f, Canonical)))
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
		buf = AppendNumber(buf[:0], f, Canonical)
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
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf = AppendNumber(buf[:0], 1.2345678901234567e-200, Canonical) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _, _ = GoNumber(float32(0.1)) }))
}

// TestAppendNumberResult: results write numbers exactly as encoding/json
// does, -0 included.
func TestAppendNumberResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	check := func(f float64) {
		want, err := json.Marshal(f)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendNumber(nil, f, Result)), "%016x", math.Float64bits(f))
	}
	for i := 0; i < 20000; i++ {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		check(f)
		check(math.Round(f * 1e-300))
		check(float64(rng.Int64N(1<<60) - 1<<59))
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1e21, 1e-7, 1e-6, -1, 9007199254740993, 1 << 53} {
		check(f)
	}
	assert.Equal(t, "-0", string(AppendNumber(nil, math.Copysign(0, -1), Result)))
}

func TestAppendString(t *testing.T) {
	for in, want := range map[string][2]string{ // Canonical, Result
		"plain":         {`"plain"`, `"plain"`},
		"q\"b\\":        {`"q\"b\\"`, `"q\"b\\"`},
		"\b\t\n\f\r":    {`"\b\t\n\f\r"`, `"\u0008\t\n\u000c\r"`},
		"\u0001\u001f":  {`"\u0001\u001f"`, `"\u0001\u001f"`},
		"é😀/<>&\x7f":    {`"é😀/<>&` + "\x7f" + `"`, `"é😀/<>&` + "\x7f" + `"`},
		"\u2028\u2029":  {"\"\u2028\u2029\"", `"\u2028\u2029"`},
		"\xffa\xe2\x82": {"\"\uFFFDa\uFFFD\uFFFD\"", "\"\uFFFDa\uFFFD\uFFFD\""}, // a byte, a replacement
		"":              {`""`, `""`},
	} {
		assert.Equal(t, want[0], string(AppendString(nil, in, Canonical)), "%q", in)
		assert.Equal(t, want[1], string(AppendString(nil, in, Result)), "%q", in)
	}
	buf := make([]byte, 0, 64)
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf = AppendString(buf[:0], "a\"é\u2028\x01", Result) }))
}

// TestAppendStringRoundTrip: whatever the string, both policies write JSON
// that decodes to what encoding/json decodes from its own encoding (invalid
// UTF-8 replaced). Canonical escapes only '"', '\\' and control characters;
// Result differs from encoding/json's text (HTML escaping off) only in
// writing \b and \f as \u0008 and \u000c, and U+FFFD for an invalid byte
// as itself.
func TestAppendStringRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pieces := []string{"a", "\"", "\\", "/", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "é", "😀", "\xff", "\xe2\x82", "<>&", "\b\f\n\r\t"}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for j := rng.IntN(10); j > 0; j-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		std, _ := json.Marshal(s)
		var want string
		require.NoError(t, json.Unmarshal(std, &want))
		for _, p := range []Policy{Canonical, Result} {
			out := AppendString(nil, s, p)
			var got string
			require.NoError(t, json.Unmarshal(out, &got), "%q -> %s", s, out)
			require.Equal(t, want, got, "%q", s)
		}
		for _, esc := range []string{`\u2028`, `\u003c`, `\u007f`, `\ufffd`} {
			require.NotContains(t, string(AppendString(nil, s, Canonical)), esc, "%q", s)
		}
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		require.NoError(t, e.Encode(s))
		std = bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
		for _, r := range [][2]string{{`\b`, `\u0008`}, {`\f`, `\u000c`}, {`\ufffd`, "\uFFFD"}} {
			std = bytes.ReplaceAll(std, []byte(r[0]), []byte(r[1]))
		}
		require.Equal(t, string(std), string(AppendString(nil, s, Result)), "%q", s)
	}
}

func TestGoNumber(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want float64
	}{
		{1.5, 1.5}, {float32(0.1), 0.1}, {7, 7}, {int8(-3), -3}, {int16(3), 3}, {int32(3), 3}, {int64(-1 << 60), -1 << 60},
		{uint(3), 3}, {uint8(200), 200}, {uint16(3), 3}, {uint32(3), 3}, {uint64(1 << 63), 1 << 63},
		{json.Number("1E2"), 100}, {json.Number("-0.5"), -0.5},
	} {
		f, ok, err := GoNumber(tc.v)
		require.NoError(t, err, "%#v", tc.v)
		assert.True(t, ok)
		assert.Equal(t, tc.want, f, "%#v", tc.v)
	}
	for _, v := range []any{"1", true, nil, []any{1}} {
		_, ok, err := GoNumber(v)
		assert.False(t, ok, "%#v", v)
		assert.NoError(t, err)
	}
	for _, v := range []any{json.Number("x"), json.Number("1e400")} {
		_, ok, err := GoNumber(v)
		assert.True(t, ok)
		assert.ErrorIs(t, err, ErrNumber)
	}
}
