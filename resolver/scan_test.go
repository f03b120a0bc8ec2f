package resolver

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		s := scanner{data: quoted}
		start, end, flags, err := s.scanString()
		if wantErr != nil {
			assert.Error(t, err, "%q", body)
			continue
		}
		require.NoError(t, err, "%q", body)
		assert.Equal(t, len(quoted), s.pos)
		got := string(RawValue{kind: ValueString, flags: flags, text: quoted[start-1 : end+1]}.AppendText(nil))
		assert.Equal(t, want, got, "%q", body)
	}
	// Random strings of the characters that matter.
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
		v, err := MustKeyDef("/k").Extract(append(append([]byte(`{"k":`), quoted...), '}'))
		require.NoError(t, err)
		require.Equal(t, want, v, "%q", quoted)
		// As a member name too.
		doc := append(append([]byte(`{`), quoted...), `:1}`...)
		if want != "" && !strings.ContainsFunc(want, func(r rune) bool { return r < 0x20 }) {
			v, err := MustKeyDef(quotePath([]string{want})).Extract(doc)
			require.NoError(t, err, "%s", doc)
			require.Equal(t, 1.0, v)
		}
	}
}

// TestScanStringAtEveryOffset: the special byte of a string is found
// wherever it sits.
func TestScanStringAtEveryOffset(t *testing.T) {
	for n := 0; n < 40; n++ {
		for _, special := range []string{`"`, `\"`, `\u0041`, "\x01", `\x`} {
			body := strings.Repeat("a", n) + special + strings.Repeat("b", 5)
			doc := []byte(`{"k":"` + body + `"}`)
			var want any
			var m map[string]any
			if err := json.Unmarshal(doc, &m); err == nil {
				want = m["k"]
			}
			got, err := MustKeyDef("/k").Extract(doc)
			if want == nil {
				assert.Error(t, err, "%q", doc)
			} else {
				assert.Equal(t, want, got, "%q", doc)
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

// hasDuplicateNames reports whether some object in the (valid) JSON names a
// member twice.
func hasDuplicateNames(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		names map[string]bool // nil for an array
		key   bool            // the next string is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top := len(stack) - 1; top >= 0 && stack[top].key {
				name := tok.(string)
				if stack[top].names[name] {
					return true
				}
				stack[top].names[name], stack[top].key = true, false
				continue
			}
		}
		// A value ended: in an object, a name comes next.
		if top := len(stack) - 1; top >= 0 && stack[top].names != nil {
			stack[top].key = true
		}
	}
}

// FuzzExtractRaw: on any input the scanner neither panics nor disagrees
// with encoding/json: for valid JSON whose objects name no member twice, raw
// extraction equals extraction from the decoded map, and every raw API
// agrees with Extract.
func FuzzExtractRaw(f *testing.F) {
	seeds := []struct{ doc, path string }{
		{`{"k":"v"}`, "/k"},
		{`{"a":{"k":[1,{"k":2}]},"k":"\ud83d\ude00"}`, "/a/k"},
		{`{"x y":{"q\"":null}}`, `/"x y"/"q\""`},
		{`{"\u006b":1e21}`, "/k"},
		{` {"k" : -0.0E-0 } `, "/k"},
		{`{"k":"\ud83dx","a":1}`, "/k"},
		{"{\"k\":\"\xff\"}", "/k"},
		{`{"a":[[[[]]]],"k":true}`, "/k"},
		{`{"k":{"k":{"k":"deep"}}}`, "/k/k/k"},
		{`{"a":1,"a":2}`, "/a"},
		{`{"k":"v",}`, "/k"},
		{`[1,2]`, "/k"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.doc), s.path)
	}
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		d, err := ParseKeyDef(path)
		if err != nil {
			return
		}
		got, err := d.Extract(doc)
		if err != nil {
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Path != path || !(errors.Is(err, ErrNoPartitionKey) || errors.Is(err, ErrKeyType)) {
				t.Fatalf("error %v is not a *KeyError for %s wrapping a sentinel", err, path)
			}
		}
		// Every raw API agrees with Extract.
		borrowed, errB := d.ExtractBorrowed(doc)
		fromString, errS := d.Extract(string(doc))
		if (errB == nil) != (err == nil) || (errS == nil) != (err == nil) || (err == nil && (!sameValue(got, borrowed) || !sameValue(got, fromString))) {
			t.Fatalf("Extract %v %v, ExtractBorrowed %v %v, string %v %v", got, err, borrowed, errB, fromString, errS)
		}
		text, errT := d.AppendKey(nil, doc)
		if err == nil {
			want, errW := KeyString(got)
			if (errW == nil) != (errT == nil) || string(text) != want {
				t.Fatalf("AppendKey %q %v, KeyString(Extract) %q %v", text, errT, want, errW)
			}
		} else if errT == nil {
			t.Fatalf("AppendKey succeeded where Extract failed: %v", err)
		}
		if !json.Valid(doc) || hasDuplicateNames(doc) {
			return
		}
		var decoded any
		if err := json.Unmarshal(doc, &decoded); err != nil {
			return // valid but beyond float64, say
		}
		want, wantErr := oracle(decoded, d.paths[0].segments)
		if wantErr != nil {
			if err == nil || errors.Is(err, ErrKeyType) != errors.Is(wantErr, ErrKeyType) {
				t.Fatalf("%s in %q: want %v, got %v %v", path, doc, wantErr, got, err)
			}
			return
		}
		if err != nil || !sameValue(want, got) {
			t.Fatalf("%s in %q: want %#v, got %#v %v", path, doc, want, got, err)
		}
	})
}

// sameValue compares two keys of one path (scalars, so == works).
func sameValue(a, b any) bool {
	return a == b
}

func TestHasDuplicateNames(t *testing.T) {
	assert.True(t, hasDuplicateNames([]byte(`{"a":1,"a":2}`)))
	assert.True(t, hasDuplicateNames([]byte(`{"x":[{"b":{},"b":[]}]}`)))
	assert.False(t, hasDuplicateNames([]byte(`{"a":{"a":1},"b":[{"a":1},{"a":1}]}`)))
}
