package partitionkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	p := mustPath(t, "/a/k")
	for _, tc := range []struct {
		doc    string
		want   any
		err    error
		reason string
	}{
		{`{"a":{"k":"v"}}`, "v", nil, ""},
		{`{"a":{"x":[1,{"k":0}],"k":1.5e3},"a":{"k":2}}`, 1500.0, nil, ""},
		{`{"a":{"k":null}}`, Null, nil, ""},
		{`{"a":{"k":"\u00e9\ud83d"}}`, "é\uFFFD", nil, ""},
		{`{"a":{"k":1,trailing garbage is not read`, 1.0, nil, ""},
		{`{"a":{"b":1}}`, nil, ErrNoPartitionKey, ""},
		{`{"a":"k"}`, nil, ErrNoPartitionKey, ""},
		{`[{"a":{"k":1}}]`, nil, ErrNoPartitionKey, "not a JSON object"},
		{`{"a":{"k":{}}}`, nil, ErrKeyType, "object or array"},
		{`{"a":{"k":1e999}}`, nil, ErrKeyType, "range"},
		{`{"a":{"k":1 2}}`, nil, ErrNoPartitionKey, "want ',' or '}' after the key at byte 12"},
		{`{"a":{"k":"v"`, nil, ErrNoPartitionKey, "unexpected end of JSON after the key"},
		{`{"x":[},"a":{"k":1}}`, nil, ErrNoPartitionKey, "malformed JSON: invalid value"},
	} {
		v, err := p.Lookup([]byte(tc.doc))
		var k any
		if err == nil {
			k, err = v.Value()
		}
		if tc.err == nil {
			require.NoError(t, err, tc.doc)
			assert.Equal(t, tc.want, k, tc.doc)
			continue
		}
		assert.ErrorIs(t, err, tc.err, tc.doc)
		var ke *KeyError
		if assert.ErrorAs(t, err, &ke, tc.doc) && tc.err == ErrNoPartitionKey {
			assert.Equal(t, "/a/k", ke.Path)
		}
		assert.Contains(t, err.Error(), tc.reason, tc.doc)
	}
	// LookupAt reads the rest of the path from a value's own JSON.
	v, err := p.LookupAt([]byte(` {"k":true} `), 1)
	require.NoError(t, err)
	b, ok := v.Bool()
	assert.True(t, b && ok)
	v, err = p.LookupAt([]byte(` "whole" `), 2)
	require.NoError(t, err)
	assert.Equal(t, `"whole"`, string(v.JSON()))
	_, err = p.LookupAt([]byte(`{}`), 3)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	_, err = p.LookupAt([]byte(`"a string"`), 1)
	assert.ErrorIs(t, err, ErrNoPartitionKey)
	assert.NotContains(t, err.Error(), "document", "only the document itself is said not to be an object")
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

func TestHasDuplicateNames(t *testing.T) {
	assert.True(t, hasDuplicateNames([]byte(`{"a":1,"a":2}`)))
	assert.True(t, hasDuplicateNames([]byte(`{"x":[{"b":{},"b":[]}]}`)))
	assert.False(t, hasDuplicateNames([]byte(`{"a":{"a":1},"b":[{"a":1},{"a":1}]}`)))
}

// decodedAt is what Lookup must find in a document encoding/json decoded:
// the value at segs, Null for null; an error wrapping ErrNoPartitionKey
// when there is none, ErrKeyType for an object or array.
func decodedAt(doc any, segs []string) (any, error) {
	for _, s := range segs {
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, ErrNoPartitionKey
		}
		if doc, ok = obj[s]; !ok {
			return nil, ErrNoPartitionKey
		}
	}
	switch doc.(type) {
	case nil:
		return Null, nil
	case map[string]any, []any:
		return nil, ErrKeyType
	}
	return doc, nil
}

// FuzzExtractRaw: on any input the lookup neither panics nor disagrees
// with encoding/json: for valid JSON whose objects name no member twice, the
// value found in the raw text equals the value at the path of the decoded
// document, and every reading of a RawValue agrees with its Value.
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
		p, err := ParsePath(path)
		if err != nil {
			return
		}
		raw, err := p.Lookup(doc)
		var ke *KeyError
		if err != nil && (!errors.As(err, &ke) || ke.Path != path) {
			t.Fatalf("error %v is not a *KeyError for %s", err, path)
		}
		var got any
		if err == nil {
			got, err = raw.Value() // a number's range is checked here
		}
		if err != nil {
			if !errors.As(err, &ke) || !(errors.Is(err, ErrNoPartitionKey) || errors.Is(err, ErrKeyType)) {
				t.Fatalf("error %v is not a *KeyError wrapping a sentinel", err)
			}
		} else {
			// Every reading of the value agrees with Value.
			borrowed, errB := raw.BorrowedValue()
			if errB != nil || borrowed != got {
				t.Fatalf("Value %#v, BorrowedValue %#v %v", got, borrowed, errB)
			}
			text, errT := raw.AppendKey(nil)
			want, errW := PlacementText(got)
			if (errW == nil) != (errT == nil) || string(text) != want {
				t.Fatalf("AppendKey %q %v, PlacementText(Value) %q %v", text, errT, want, errW)
			}
			id, errI := raw.AppendIdentity(nil)
			wantID, errW := IdentityText(got)
			if errW != nil || errI != nil || string(id) != wantID {
				t.Fatalf("AppendIdentity %q %v, IdentityText(Value) %q %v", id, errI, wantID, errW)
			}
			pair, errP := AppendRawPlacement(nil, []RawValue{raw, raw})
			if errP != nil || string(pair) != "["+wantID+","+wantID+"]" {
				t.Fatalf("AppendRawPlacement of a pair %q %v, want [%s,%[3]s]", pair, errP, wantID)
			}
		}
		if !json.Valid(doc) || hasDuplicateNames(doc) {
			return
		}
		var decoded any
		if err := json.Unmarshal(doc, &decoded); err != nil {
			return // valid but beyond float64, say
		}
		want, wantErr := decodedAt(decoded, p.Segments())
		if wantErr != nil {
			if err == nil || errors.Is(err, ErrKeyType) != errors.Is(wantErr, ErrKeyType) {
				t.Fatalf("%s in %q: want %v, got %v %v", path, doc, wantErr, got, err)
			}
			return
		}
		if err != nil || want != got {
			t.Fatalf("%s in %q: want %#v, got %#v %v", path, doc, want, got, err)
		}
	})
}
