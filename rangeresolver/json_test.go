package rangeresolver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/resolver/resolvertest"
)

// designExample is the range resolver of docs/design.md#resolver-json, to the byte.
const designExample = `{"kind":"range","partitionKey":"/eventTime","keyType":"time",` +
	`"ranges":[{"low":"2026-01-01T00:00:00Z","high":"2026-01-31T23:59:59Z","target":"dbs/app/colls/jan"}],` +
	`"default":"dbs/app/colls/overflow"}`

func TestDesignForm(t *testing.T) {
	r, err := resolver.Unmarshal([]byte(designExample))
	require.NoError(t, err)
	rr := r.(*Resolver)
	assert.Equal(t, KeyTime, rr.KeyType())
	got, err := r.ResolveForCreate("2026-01-31T23:59:59Z")
	require.NoError(t, err)
	assert.Equal(t, "dbs/app/colls/jan", got)
	got, err = r.ResolveForCreate("2026-01-31T23:59:59.5Z")
	require.NoError(t, err)
	assert.Equal(t, "dbs/app/colls/overflow", got, "the half second after the high bound")
	data, err := resolver.Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, designExample, string(data))

	// Built in Go, the same resolver writes the same JSON.
	built, err := New(resolver.MustKeyDef("/eventTime"), []Entry[time.Time]{
		{Range[time.Time]{day(1, 1), time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC)}, resolver.LinkTarget("dbs/app/colls/jan")},
	}, resolver.LinkTarget("dbs/app/colls/overflow"))
	require.NoError(t, err)
	data, err = resolver.Marshal(built)
	require.NoError(t, err)
	assert.Equal(t, designExample, string(data))
}

func TestJSONForms(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{ // numbers come back in RFC 8785 form; -0 is 0
			`{"kind":"range","keyType":"number","ranges":[{"low":-0,"high":1.50,"target":"dbs/a/colls/x"},{"low":1E3,"high":1e21,"target":"dbs/a/colls/y"}]}`,
			`{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1.5,"target":"dbs/a/colls/x"},{"low":1000,"high":1e+21,"target":"dbs/a/colls/y"}]}`,
		},
		{ // offsets are kept; +00:00 is written Z; trailing zeros of fractions go
			`{"kind":"range","keyType":"time","ranges":[{"low":"2026-01-01T01:00:00.500+01:00","high":"2026-01-01T00:00:00.600-00:00","target":"dbs/a/colls/x"}]}`,
			`{"kind":"range","keyType":"time","ranges":[{"low":"2026-01-01T01:00:00.5+01:00","high":"2026-01-01T00:00:00.6Z","target":"dbs/a/colls/x"}]}`,
		},
		{ // definition order is kept; a nested resolver and a composite-free path
			`{"kind":"range","partitionKey":"/\"user name\"","keyType":"string","ranges":[{"low":"n","high":"z","target":{"kind":"hash","collections":["dbs/a/colls/h"]}},{"low":"a","high":"m","target":"dbs/a/colls/x"}],"default":null}`,
			`{"kind":"range","partitionKey":"/\"user name\"","keyType":"string","ranges":[{"low":"n","high":"z","target":{"kind":"hash","collections":["dbs/a/colls/h"],"virtualNodes":16,"hash":"md5"}},{"low":"a","high":"m","target":"dbs/a/colls/x"}]}`,
		},
		{ // a default alone
			`{"kind":"range","keyType":"string","ranges":[],"default":"dbs/a/colls/d"}`,
			`{"kind":"range","keyType":"string","ranges":[],"default":"dbs/a/colls/d"}`,
		},
	} {
		resolvertest.RoundTrip(t, tc.in, tc.out)
	}
}

func TestBadDefinitions(t *testing.T) {
	const x = `"target":"dbs/a/colls/x"`
	cases := []struct{ name, json, field, msg string }{
		{"malformed", `{"kind":"range","keyType":"number","ranges":[{"low":0,`, "", "malformed JSON"},
		{"trailing data", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,` + x + `}]} {}`, "", "malformed"},
		{"unknown field", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,` + x + `}],"fallback":"dbs/a/colls/y"}`, "fallback", "unknown field"},
		{"unknown range field", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,` + x + `,"weight":2}]}`, "ranges[0].weight", "unknown field"},
		{"overlap", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":10,` + x + `},{"low":10,"high":20,"target":"dbs/a/colls/y"}]}`, "ranges[1]", "range [10, 20] overlaps ranges[0] [0, 10]"},
		{"overlap unsorted", `{"kind":"range","keyType":"string","ranges":[{"low":"m","high":"z",` + x + `},{"low":"a","high":"n","target":"dbs/a/colls/y"}]}`, "ranges[1]", `range ["a", "n"] overlaps ranges[0] ["m", "z"]`},
		{"overlap across offsets", `{"kind":"range","keyType":"time","ranges":[{"low":"2026-01-01T00:00:00Z","high":"2026-01-31T23:59:59Z",` + x + `},{"low":"2026-02-01T00:30:00+01:00","high":"2026-02-28T00:00:00Z",` + x + `}]}`, "ranges[1]", "overlaps ranges[0]"},
		{"low above high", `{"kind":"range","keyType":"number","ranges":[{"low":5,"high":1,` + x + `}]}`, "ranges[0]", "low 5 is above high 1"},
		{"low above high in time", `{"kind":"range","keyType":"time","ranges":[{"low":"2026-01-01T01:30:00+01:00","high":"2026-01-01T00:00:00Z",` + x + `}]}`, "ranges[0]", "above high"},
		{"date only", `{"kind":"range","keyType":"time","ranges":[{"low":"2026-01-01","high":"2026-02-01T00:00:00Z",` + x + `}]}`, "ranges[0].low", "not an RFC 3339 time"},
		{"bad time text", `{"kind":"range","keyType":"time","ranges":[{"low":"2026-01-01T00:00:00Z","high":"2026-02-30T00:00:00Z",` + x + `}]}`, "ranges[0].high", "RFC 3339"},
		{"time as number", `{"kind":"range","keyType":"time","ranges":[{"low":1767225600,"high":"2026-02-01T00:00:00Z",` + x + `}]}`, "ranges[0].low", "want an RFC 3339 time string"},
		{"string for number", `{"kind":"range","keyType":"number","ranges":[{"low":"0","high":1,` + x + `}]}`, "ranges[0].low", "want a JSON number for keyType number"},
		{"number for string", `{"kind":"range","keyType":"string","ranges":[{"low":"a","high":7,` + x + `}]}`, "ranges[0].high", "want a JSON string"},
		{"huge number", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1e400,` + x + `}]}`, "ranges[0].high", "float64 range"},
		{"missing high", `{"kind":"range","keyType":"number","ranges":[{"low":0,` + x + `}]}`, "ranges[0].high", "missing"},
		{"null low", `{"kind":"range","keyType":"number","ranges":[{"low":null,"high":1,` + x + `}]}`, "ranges[0].low", "missing"},
		{"missing target", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1}]}`, "ranges[0].target", "missing"},
		{"bad target", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,"target":"x"}]}`, "ranges[0].target", "collection link"},
		{"target not a target", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,"target":7}]}`, "ranges[0].target", "a target is"},
		{"range not an object", `{"kind":"range","keyType":"number","ranges":[7]}`, "ranges[0]", "want"},
		{"ranges not an array", `{"kind":"range","keyType":"number","ranges":{"low":0}}`, "ranges", "want"},
		{"nothing", `{"kind":"range","keyType":"number","ranges":[]}`, "ranges", "at least one range or a default"},
		{"bad key type", `{"kind":"range","keyType":"date","ranges":[]}`, "keyType", "want"},
		{"missing key type", `{"kind":"range","ranges":[]}`, "keyType", "missing"},
		{"composite key", `{"kind":"range","partitionKey":["/a","/b"],"keyType":"number","ranges":[{"low":0,"high":1,` + x + `}]}`, "partitionKey", "composite"},
		{"bad path", `{"kind":"range","partitionKey":"a","keyType":"number","ranges":[{"low":0,"high":1,` + x + `}]}`, "partitionKey", "want '/'"},
		{"bad default", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,` + x + `}],"default":{"kind":"nope"}}`, "default.kind", "unknown kind"},
		{"duplicate links nested", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,"target":{"kind":"hash","collections":["dbs/a/colls/x","dbs/a/colls/x"]}}]}`, "ranges[0].target.collections[1]", "duplicate link"},
		{"nested overlap", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,"target":{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,` + x + `},{"low":1,"high":2,` + x + `}]}}]}`, "ranges[0].target.ranges[1]", "overlaps ranges[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			resolvertest.ConfigError(t, err, tc.field, tc.msg)
		})
	}
}

// The property test of the round trip (random trees of range resolvers
// nested with lookups and hash rings, every setting compared through the
// accessors, placement of keys and ranges compared before and after) is
// TestRandomTreesRoundTrip in lookup/tree_test.go, the one package whose
// tests import all three kinds; FuzzUnmarshal there fuzzes the decoder.
