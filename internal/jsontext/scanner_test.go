package jsontext

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// strictOracle is what Strict must accept: what encoding/json decodes (as
// the store's queries will), in valid UTF-8. Lenient must accept what
// json.Valid accepts: the grammar, whatever the strings' bytes and the
// numbers' size.
func strictOracle(b []byte) bool {
	var v any
	return json.Unmarshal(b, &v) == nil && utf8.Valid(b)
}

var scanCorpus = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `false`, `null`,
	`{"a":1}`, `{"a":[1,2,{"b":null}],"c":"d"}`, ` {"a" : 1 , "b" : [ ] } `,
	`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{:1}`, `{1:1}`, `{"a":1 "b":2}`,
	`01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+`, `1E-5`, `1e400`, `-1e400`, `1e-400`, `0x10`, `NaN`, `Infinity`,
	`"\u0041\n\t\"\\\/\b\f\r"`, `"\u12"`, `"\x"`, `"\ud800"`, `"\ud83d\ude00"`, "\"\x01\"", "\"\x7f\"",
	"\"\xff\"", "\"\xc3\xa9\"", "\"\xed\xa0\x80\"", `"abc`, `"`, `tru`, `nul`, `falsey`, `true false`,
	`[[[[[]]]]]`, `{"a":{"b":{"c":{}}}}`, `[1 2]`, `{"a":1}}`, `[1]]`, `}`, `]`, "\u00a0{}",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"d":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"d":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	strings.Repeat("1", 400), "1" + strings.Repeat("0", 308) + ".5", "1" + strings.Repeat("0", 309),
	`{"a":"` + "\xff" + `","b":1e999}`,
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range scanCorpus {
		err := Valid([]byte(c), Strict)
		assert.Equal(t, strictOracle([]byte(c)), err == nil, "%.60q: Strict says %v", c, err)
		err = Valid([]byte(c), Lenient)
		assert.Equal(t, json.Valid([]byte(c)), err == nil, "%.60q: Lenient says %v", c, err)
	}
}

// FuzzScanner checks both modes against encoding/json on any input.
func FuzzScanner(f *testing.F) {
	for _, c := range scanCorpus {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Valid(b, Strict)
		require.Equal(t, strictOracle(b), err == nil, "%q: Strict says %v", b, err)
		err = Valid(b, Lenient)
		require.Equal(t, json.Valid(b), err == nil, "%q: Lenient says %v", b, err)
	})
}

// TestMessages: each problem is named, with what was wanted and found, at
// its byte offset.
func TestMessages(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for _, tc := range []struct{ doc, want string }{
		{``, "unexpected end of JSON, want a value at byte 0"},
		{`{"a":`, "unexpected end of JSON, want a value at byte 5"},
		{`{"a":1`, "unexpected end of JSON, want ',' or '}' after an object member at byte 6"},
		{`{"a" 1}`, `want ':' after a member name, found '1' at byte 5`},
		{`{"a":1 "b":2}`, `want ',' or '}' after an object member, found '"' at byte 7`},
		{`{"a":1,}`, "want a member name (a quoted property name), found '}' at byte 7"},
		{`[1 2]`, "want ',' or ']' after an array element, found '2' at byte 3"},
		{`[}`, "invalid value: want a value (a string, number, object, array, true, false or null), found '}' at byte 1"},
		{`tru`, "invalid value: want a value (a string, number, object, array, true, false or null), found 't' at byte 0"},
		{`-x`, "want a digit after '-', found 'x' at byte 1"},
		{`1.e`, "want a digit after the decimal point, found 'e' at byte 2"},
		{`1e`, "unexpected end of JSON, want a digit in the exponent at byte 2"},
		{`"ab`, "unterminated string at byte 0"},
		{`"a\x"`, `invalid escape "\\x" in a string at byte 2`},
		{`"\u12"`, `invalid \u escape in a string at byte 1`},
		{"\"a\tb\"", `control character '\t' in a string at byte 2`},
		{"[\"\xff\"]", "invalid UTF-8 in a string at byte 1"},
		{`[1e400]`, `number "1e400" is out of range at byte 1`},
		{deep, "nested too deeply (more than 10000 levels) at byte 10000"},
	} {
		err := Valid([]byte(tc.doc), Strict)
		require.Error(t, err, "%.40q", tc.doc)
		assert.Equal(t, tc.want, err.Error(), "%.40q", tc.doc)
		var se *SyntaxError
		assert.ErrorAs(t, err, &se)
	}
}

func TestMembersAndElements(t *testing.T) {
	doc := []byte(` { "a" : [ 1 , "x" , [] ] , "b\u0063" : {"d":null} , "e":true } `)
	s := NewScanner(doc, Strict)
	m, err := s.Object()
	require.NoError(t, err)
	var names []string
	for {
		name, ok, err := m.Next()
		require.NoError(t, err)
		if !ok {
			break
		}
		names = append(names, name.Decode())
		if name.Is("a") {
			e, err := s.Array()
			require.NoError(t, err)
			var kinds []Kind
			for {
				ok, err := e.Next()
				require.NoError(t, err)
				if !ok {
					break
				}
				tok, err := s.Scalar()
				require.NoError(t, err)
				kinds = append(kinds, tok.Kind)
				if tok.Kind == Array {
					require.NoError(t, s.Skip(2))
				}
			}
			assert.Equal(t, []Kind{Number, String, Array}, kinds)
			continue
		}
		require.NoError(t, s.Skip(1))
	}
	assert.Equal(t, []string{"a", "bc", "e"}, names)
	assert.Equal(t, len(doc)-1, s.Pos())
	_, ok, err := m.Next()
	assert.False(t, ok)
	assert.NoError(t, err)

	s = NewScanner([]byte(`{"a":1,"k":"v","k":"w"}`), Lenient)
	found, err := s.FindMember("k", 0)
	require.NoError(t, err)
	require.True(t, found)
	tok, err := s.Scalar()
	require.NoError(t, err)
	assert.Equal(t, `"v"`, string(tok.Text), "the first of a repeated name")
	for _, doc := range []string{`[1]`, `"k"`, `{}`, `{"a":{"k":1}}`} {
		s = NewScanner([]byte(doc), Lenient)
		found, err = s.FindMember("k", 0)
		assert.False(t, found, doc)
		assert.NoError(t, err, doc)
	}
	s = NewScanner(nil, Lenient)
	_, err = s.FindMember("k", 0)
	assert.ErrorContains(t, err, "unexpected end")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		s := NewScanner(doc, Strict)
		_, _ = s.FindMember("e", 0)
		_, _ = s.Scalar()
	}))
}

// TestUnescapeMatchesEncodingJSON: every escape, surrogate pairs good and
// bad, and invalid UTF-8 decode exactly as encoding/json decodes them.
func TestUnescapeMatchesEncodingJSON(t *testing.T) {
	bodies := []string{
		``, `plain`, `\"\\\/\b\f\n\r\t`, `\u0000\u001f\u007f\u0080\u07ff\u0800\uffff`,
		`\ud83d\ude00`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\ud83dx`, `\ud83d\u0041`, `\ud83d\ud83d\ude00`,
		`\udbff\udfff`, `\ud800\udc00`, `\ud83d\`, `\ud83d\u12`, "\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"é日本😀", `\u00e9` + "é", "\x7f",
	}
	for _, body := range bodies {
		quoted := []byte(`"` + body + `"`)
		var want string
		wantErr := json.Unmarshal(quoted, &want)
		s := NewScanner(quoted, Lenient)
		tok, err := s.Scalar()
		if wantErr != nil {
			assert.Error(t, err, "%q", body)
			continue
		}
		require.NoError(t, err, "%q", body)
		assert.Equal(t, len(quoted), s.Pos())
		assert.Equal(t, want, tok.Quoted().Decode(), "%q", body)
		assert.Equal(t, want, string(tok.Quoted().AppendDecoded(nil)), "%q", body)
	}
	// Random strings of the characters that matter, as values and as names.
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{`\"`, `\\`, `\/`, `\n`, `\u00e9`, `\ud83d`, `\ude00`, `\uDBFF`, `\uDFFF`, "\xff", "\xe6\x97", "é", "a", " ", "😀"}
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for j := rng.IntN(8); j > 0; j-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		quoted := []byte(`"` + b.String() + `"`)
		var want string
		require.NoError(t, json.Unmarshal(quoted, &want))
		s := NewScanner(append(append([]byte(`{"k":`), quoted...), '}'), Lenient)
		found, err := s.FindMember("k", 0)
		require.True(t, found)
		require.NoError(t, err)
		tok, err := s.Scalar()
		require.NoError(t, err)
		require.Equal(t, want, tok.Quoted().Decode(), "%q", quoted)
		s = NewScanner(append(append([]byte(`{`), quoted...), `:1}`...), Lenient)
		found, err = s.FindMember(want, 0)
		require.NoError(t, err)
		require.True(t, found, "%q is found by its decoded name", quoted)
	}
}

// TestScanStringAtEveryOffset: the special byte of a string is found
// wherever it sits, in the fast run and after it.
func TestScanStringAtEveryOffset(t *testing.T) {
	for n := 0; n < 40; n++ {
		for _, special := range []string{`"`, `\"`, `\u0041`, "\x01", `\x`, "\xff", "é"} {
			body := strings.Repeat("a", n) + special + strings.Repeat("b", 5)
			doc := []byte(`{"k":"` + body + `"}`)
			for _, mode := range []Mode{Lenient, Strict} {
				err := Valid(doc, mode)
				if mode == Strict {
					assert.Equal(t, strictOracle(doc), err == nil, "%q: %v", doc, err)
					continue
				}
				assert.Equal(t, json.Valid(doc), err == nil, "%q: %v", doc, err)
				var m map[string]any
				if json.Unmarshal(doc, &m) != nil {
					continue
				}
				s := NewScanner(doc, mode)
				found, err := s.FindMember("k", 0)
				require.True(t, found)
				require.NoError(t, err)
				tok, err := s.Scalar()
				require.NoError(t, err)
				assert.Equal(t, m["k"], tok.Quoted().Decode(), "%q", doc)
			}
		}
	}
}

func TestContainersStack(t *testing.T) {
	var c containers
	var want []bool
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 300; i++ {
		o := rng.IntN(2) == 0
		c.push(o)
		want = append(want, o)
		require.Equal(t, o, c.top())
	}
	for i := len(want) - 1; i >= 0; i-- {
		require.Equal(t, want[i], c.top(), i)
		c.n--
	}
}
