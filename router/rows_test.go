package router

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/query"
)

// referenceRow reads an ORDER BY row with encoding/json: what orderedRow
// must agree with on every well-formed row.
func referenceRow(row []byte, n int) (keys []any, payload []byte, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(row, &m); err != nil {
		return nil, nil, err
	}
	rawKeys, ok := m["k"]
	if !ok {
		return nil, nil, fmt.Errorf("no keys")
	}
	var wrapped []map[string]json.RawMessage
	if err := json.Unmarshal(rawKeys, &wrapped); err != nil {
		return nil, nil, err
	}
	if len(wrapped) != n {
		return nil, nil, fmt.Errorf("%d keys", len(wrapped))
	}
	for _, w := range wrapped {
		v, ok := w["v"]
		if !ok {
			keys = append(keys, query.Undefined)
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, nil, err
		}
		keys = append(keys, x)
	}
	if p, ok := m["p"]; ok {
		var x any
		if err := json.Unmarshal(p, &x); err != nil {
			return nil, nil, err
		}
		payload = p
	}
	return keys, payload, nil
}

func TestOrderedRow(t *testing.T) {
	cases := []struct {
		row     string
		keys    []any
		payload string // "-": none
	}{
		{`{"k":[{"v":3},{"v":"a"}],"p":{"id":"1","n":3}}`, []any{3.0, "a"}, `{"id":"1","n":3}`},
		{` { "p" : [1, {"x": "]}"}] , "k" : [ { "v" : -1.5e3 } , {"w": 1} ] } `, []any{-1500.0, query.Undefined}, `[1, {"x": "]}"}]`},
		{`{"k":[{"v":null},{"v":true}]}`, []any{nil, true}, "-"},
		{`{"k":[{"v":"tab\t\"q\"\u00e9"},{"v":false}],"p":"s"}`, []any{"tab\t\"q\"é", false}, `"s"`},
		{`{"k":[{"v":{"b":[1,2]}},{"v":[null]}],"p":0}`, []any{map[string]any{"b": []any{1.0, 2.0}}, []any{nil}}, `0`},
		{`{"\u006b":[{"\u0076":1},{"v":2}],"extra":{"k":[]},"p":null}`, []any{1.0, 2.0}, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.row, func(t *testing.T) {
			keys := make([]any, 2)
			payload, err := orderedRow([]byte(tc.row), keys)
			require.NoError(t, err)
			assert.Equal(t, tc.keys, keys)
			if tc.payload == "-" {
				assert.Nil(t, payload)
			} else {
				assert.Equal(t, tc.payload, string(payload))
			}
		})
	}

	for _, bad := range []string{
		``, `[]`, `{`, `{"k":[{"v":1},{"v":2}]`, `{"k":[{"v":1}]}`, `{"k":[{"v":1},{"v":2},{"v":3}]}`,
		`{"p":1}`, `{"k":[1,2]}`, `{"k":{"v":1}}`, `{"k":[{"v":01},{"v":2}]}`, `{"k":[{"v":+1},{"v":2}]}`,
		`{"k":[{"v":1.},{"v":2}]}`, `{"k":[{"v":0x10},{"v":2}]}`, `{"k":[{"v":tru},{"v":2}]}`,
		`{"k":[{"v":"a},{"v":2}]}`, `{"k":[{"v":"a\x01"},{"v":2}]}`, `{"k":[{"v":1},{"v":2}],"p":{"a":[}]}`,
		`{"k":[{"v":1},{"v":2}],"p":}`, `{"k":[{"v":1},{"v":2}]} x`, `{"k":[{"v":1},{"v":2}] "p":1}`,
		`{"k":[{"v":1},{"v":2}],"p":{"a":1}}}`, `{k:[]}`, `{"k":[{"v":"\z"},{"v":2}]}`,
	} {
		_, err := orderedRow([]byte(bad), make([]any, 2))
		assert.Error(t, err, bad)
	}
}

// TestOrderedRowAgreesWithEncodingJSON: rows written by the engine for
// random documents, and respaced, read as encoding/json reads them.
func TestOrderedRowAgreesWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	vals := []string{`1`, `-0.25`, `1e300`, `"x"`, `""`, `"\u2028\\\"é"`, `true`, `false`, `null`, `{"a":[1,"]"]}`, `[]`}
	for i := 0; i < 5000; i++ {
		n := 1 + rng.IntN(3)
		row := `{"k":[`
		for j := 0; j < n; j++ {
			if j > 0 {
				row += ","
			}
			if rng.IntN(6) == 0 {
				row += `{}`
			} else {
				row += `{"v":` + vals[rng.IntN(len(vals))] + `}`
			}
		}
		row += `]`
		if rng.IntN(4) != 0 {
			row += `,"p":` + vals[rng.IntN(len(vals))]
		}
		row += `}`
		if rng.IntN(2) == 0 { // respace
			var buf []byte
			for _, c := range []byte(row) {
				buf = append(buf, c)
				if (c == ',' || c == ':' || c == '[') && rng.IntN(2) == 0 {
					buf = append(buf, " \n\t"[rng.IntN(3)])
				}
			}
			row = string(buf)
		}
		wantKeys, wantPayload, err := referenceRow([]byte(row), n)
		require.NoError(t, err, row)
		keys := make([]any, n)
		payload, err := orderedRow([]byte(row), keys)
		require.NoError(t, err, row)
		assert.Equal(t, wantKeys, keys, row)
		assert.Equal(t, string(wantPayload), string(payload), row)
	}
}

// FuzzOrderedRow: any bytes give keys and a payload that encoding/json
// agrees with, or an error; never a panic.
func FuzzOrderedRow(f *testing.F) {
	for _, s := range []string{`{"k":[{"v":1},{"v":"a"}],"p":{"x":[1,{"y":"}"}]}}`, `{"k":[{},{"v":null}]}`, `{"p":1,"k":[{"v":true},{"v":-2e-3}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, row []byte) {
		keys := make([]any, 2)
		payload, err := orderedRow(row, keys)
		if err != nil {
			return
		}
		wantKeys, wantPayload, refErr := referenceRow(row, 2)
		if refErr != nil {
			return // orderedRow checks less than encoding/json (the payload is passed on unread)
		}
		assert.Equal(t, wantKeys, keys)
		if wantPayload == nil {
			assert.Nil(t, payload)
		} else {
			assert.JSONEq(t, string(wantPayload), string(payload))
		}
	})
}

// BenchmarkOrderedRow reads the rows of an ORDER BY fan-out: a short one,
// as OrderBy100K's, and one carrying a 1 KB payload.
//
//	go test -run '^$' -bench OrderedRow -benchmem ./router
func BenchmarkOrderedRow(b *testing.B) {
	long := fmt.Sprintf(`{"k":[{"v":37},{"v":"1234"}],"p":{"id":"1234","userId":"user-1234","name":"User 1234","age":37,"notes":%q}}`, strings.Repeat("lorem ipsum ", 70))
	for _, tc := range []struct{ name, row string }{
		{"short", `{"k":[{"v":0.8376},{"v":"51234"}],"p":{"id":"51234","score":0.8376}}`},
		{"1KB-payload", long},
	} {
		row := []byte(tc.row)
		keys := make([]any, 2)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(row)))
			for b.Loop() {
				if _, err := orderedRow(row, keys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
