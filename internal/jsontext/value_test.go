package jsontext

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agreesWithEncodingJSON checks DecodeShared against json.Unmarshal into
// an any: both fail, or both give the same value.
func agreesWithEncodingJSON(t require.TestingT, b []byte) {
	var want any
	wantErr := json.Unmarshal(b, &want)
	got, err := DecodeShared(b)
	if wantErr != nil {
		require.Error(t, err, "%.80q: encoding/json says %v", b, wantErr)
		return
	}
	require.NoError(t, err, "%.80q", b)
	require.Equal(t, want, got, "%.80q", b)
}

func TestDecodeSharedAgreesWithEncodingJSON(t *testing.T) {
	corpus := append([]string{
		`{"a":1,"a":2}`, `{"a":{"x":1},"a":[]}`, `[]`, `{}`, `[[],{}]`, `{"":""}`, `{"\u0061":"\u00e9"}`,
		`{"k\"q":"v\\w"}`, "{\"\xff\":\"\xfe\"}", `"\ud800\udc00"`, `"\udc00\ud800"`, `-0`, `0.1e1`, `1E+2`,
		`{"nested":{"deep":[1,{"x":[true,false,null]}]}}`, ` [ 1 , "two" , 3.5 ] `, `{"a":1} x`,
	}, scanCorpus...)
	for _, c := range corpus {
		agreesWithEncodingJSON(t, []byte(c))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		agreesWithEncodingJSON(t, randomJSON(r, 0))
	}
}

// randomJSON writes a random JSON value, now and then with a mistake or an
// escape in it.
func randomJSON(r *rand.Rand, depth int) []byte {
	pieces := []string{`"a"`, `"é"`, `"\n\u00e9\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `1`, `-2.5e3`, `1e999`, `true`, `null`, `""`}
	container := func(open, close byte, item func() []byte) []byte {
		b := []byte{open}
		for i := range r.IntN(5) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, item()...)
		}
		return append(b, close)
	}
	switch n := r.IntN(10); {
	case depth < 4 && n < 3:
		return container('{', '}', func() []byte {
			return fmt.Appendf(nil, `"k%d":%s`, r.IntN(4), randomJSON(r, depth+1))
		})
	case depth < 4 && n < 5:
		return container('[', ']', func() []byte { return randomJSON(r, depth+1) })
	case n == 9 && r.IntN(10) == 0:
		return []byte(`{"broken":`)
	}
	return []byte(pieces[r.IntN(len(pieces))])
}

// FuzzDecodeShared checks DecodeShared against encoding/json on any input.
func FuzzDecodeShared(f *testing.F) {
	for _, c := range scanCorpus {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { agreesWithEncodingJSON(t, b) })
}

// TestDecodeSharedShares: a plain string views the text, an escaped one
// is a copy, and a short member name is one interned copy shared by every
// document.
func TestDecodeSharedShares(t *testing.T) {
	data := []byte(`{"plain":"hello","esc":"a\nb"}`)
	v, err := DecodeShared(data)
	require.NoError(t, err)
	m := v.(map[string]any)
	inData := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		base := uintptr(unsafe.Pointer(&data[0]))
		return p >= base && p < base+uintptr(len(data))
	}
	assert.True(t, inData(m["plain"].(string)))
	assert.False(t, inData(m["esc"].(string)))
	v2, err := DecodeShared([]byte(`{"plain":1}`))
	require.NoError(t, err)
	for k := range m {
		assert.False(t, inData(k), k)
	}
	for k := range v2.(map[string]any) {
		for k1 := range m {
			if k1 == k {
				assert.Equal(t, unsafe.StringData(k1), unsafe.StringData(k), "one copy of %q", k)
			}
		}
	}
	long := strings.Repeat("n", 40)
	v3, err := DecodeShared([]byte(`{"` + long + `":1}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{long: 1.0}, v3, "a long name is not interned, and decodes the same")
}

func TestDecodeSharedErrors(t *testing.T) {
	for text, want := range map[string]string{
		`{"a":1e999}`: "the number 1e999 does not fit a float64 at byte 5",
		`{"a":1}x`:    "unexpected 'x' after the value at byte 7",
		`{"a":`:       "at byte 5",
	} {
		_, err := DecodeShared([]byte(text))
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), want, text)
	}
}

// BenchmarkDecode compares DecodeShared with encoding/json on a document of
// about 1 KB.
func BenchmarkDecode(b *testing.B) {
	doc, _ := json.Marshal(map[string]any{
		"id": "42", "userId": "user-42", "category": "garden", "price": 12.5, "tags": []string{"a", "b", "c"},
		"notes": strings.Repeat("lorem ipsum dolor sit amet ", 33),
	})
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeShared(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(doc, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
