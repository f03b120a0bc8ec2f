package rangeresolver

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
)

// designExample is the range resolver of DESIGN.md, to the byte.
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
		r, err := resolver.Unmarshal([]byte(tc.in))
		require.NoError(t, err, tc.in)
		data, err := resolver.Marshal(r)
		require.NoError(t, err)
		assert.Equal(t, tc.out, string(data))
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
			require.Error(t, err)
			var ce *resolver.ConfigError
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.ErrorIs(t, err, resolver.ErrInvalid)
			assert.Equal(t, tc.field, ce.Field, "%v", err)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// randomRange builds a random range resolver (nesting rings and ranges of
// its key type up to depth 2) and keys to place with it.
func randomRange(rng *rand.Rand, depth int) (*Resolver, []any) {
	var key resolver.KeyDef
	if depth == 0 && rng.IntN(3) > 0 {
		key = resolver.MustKeyDef([]string{"/k", "/a/b", `/"x y"`}[rng.IntN(3)])
	}
	target := func(i int) resolver.Target {
		switch {
		case depth < 2 && rng.IntN(5) == 0:
			r, _ := randomRange(rng, depth+1)
			return resolver.ResolverTarget(r)
		case rng.IntN(6) == 0:
			ring, err := hashring.New(colls(fmt.Sprint("h", depth, i, "a"), fmt.Sprint("h", depth, i, "b")), &hashring.Options{
				VirtualNodes: 1 + rng.IntN(40), Hash: []string{"md5", "murmur3", "xxhash"}[rng.IntN(3)]})
			if err != nil {
				panic(err)
			}
			return resolver.ResolverTarget(ring)
		}
		return link(fmt.Sprint("c", rng.IntN(6))) // links repeat across ranges
	}
	var def resolver.Target
	if rng.IntN(2) == 0 {
		def = target(99)
	}
	n := rng.IntN(7)
	if n == 0 && def.IsZero() {
		n = 1
	}
	var (
		r    *Resolver
		err  error
		keys []any
	)
	switch rng.IntN(3) {
	case 0:
		es := make([]Entry[float64], n)
		lo := rng.Float64()*100 - 50
		for i := range es {
			hi := lo + math.Floor(rng.Float64()*10*4)/4
			es[i] = Entry[float64]{Range[float64]{lo, hi}, target(i)}
			lo = math.Nextafter(hi, math.Inf(1))
			if rng.IntN(2) == 0 {
				lo += rng.Float64()
			}
		}
		rng.Shuffle(n, func(i, j int) { es[i], es[j] = es[j], es[i] })
		r, err = New(key, es, def)
		for i := 0; i < 60; i++ {
			keys = append(keys, rng.Float64()*140-70, rng.IntN(140)-70)
		}
		for i := 0; i < 10; i++ {
			lo := rng.Float64()*140 - 70
			keys = append(keys, Range[float64]{lo, lo + rng.Float64()*30})
		}
	case 1:
		es := make([]Entry[string], n)
		for i := range es {
			lo := fmt.Sprintf("k%02d", 3*i)
			es[i] = Entry[string]{Range[string]{lo, lo + []string{"", "~", "5"}[rng.IntN(3)]}, target(i)}
		}
		r, err = New(key, es, def)
		for i := 0; i < 60; i++ {
			keys = append(keys, fmt.Sprintf("k%02d%s", rng.IntN(3*n+2), []string{"", "3", "~", "~~"}[rng.IntN(4)]))
		}
		for i := 0; i < 10; i++ {
			keys = append(keys, Range[string]{fmt.Sprintf("k%02d", rng.IntN(3*n+2)), fmt.Sprintf("k%02d", 3*n-rng.IntN(3))})
		}
	default:
		es := make([]Entry[time.Time], n)
		at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600*(rng.IntN(11)-5)))
		for i := range es {
			end := at.Add(time.Duration(rng.IntN(1000)+1)*time.Hour - time.Duration(rng.IntN(2)))
			es[i] = Entry[time.Time]{Range[time.Time]{at, end}, target(i)}
			at = end.Add(time.Duration(rng.IntN(3)) * time.Nanosecond * 500).Add(time.Nanosecond)
		}
		r, err = New(key, es, def)
		start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 60; i++ {
			at := start.Add(time.Duration(rng.IntN(8000)) * time.Hour)
			keys = append(keys, at, at.In(time.FixedZone("", -2*3600)).Format(time.RFC3339Nano))
		}
		for i := 0; i < 10; i++ {
			lo := start.Add(time.Duration(rng.IntN(8000)) * time.Hour)
			keys = append(keys, Range[time.Time]{lo, lo.Add(time.Duration(rng.IntN(2000)) * time.Hour)})
		}
	}
	if err != nil {
		panic(err)
	}
	return r, append(keys, "x", 1.5, true, nil)
}

// describe writes every setting of a range tree from its accessors (not
// its JSON), so a round trip can be checked setting by setting.
func describe(r resolver.Resolver) string {
	switch x := r.(type) {
	case *Resolver:
		s := fmt.Sprintf("range key=%v type=%s [", x.KeyDef().Paths(), x.KeyType())
		switch x.KeyType() {
		case KeyString:
			es, _ := Ranges[string](x)
			for _, e := range es {
				s += fmt.Sprintf("%q..%q->%s ", e.Range.Low, e.Range.High, describeTarget(e.Target))
			}
		case KeyNumber:
			es, _ := Ranges[float64](x)
			for _, e := range es {
				s += fmt.Sprintf("%b..%b->%s ", e.Range.Low, e.Range.High, describeTarget(e.Target))
			}
		case KeyTime:
			es, _ := Ranges[time.Time](x)
			for _, e := range es {
				s += fmt.Sprintf("%s..%s->%s ", e.Range.Low.Format(time.RFC3339Nano), e.Range.High.Format(time.RFC3339Nano), describeTarget(e.Target))
			}
		}
		return s + "] default=" + describeTarget(x.Default())
	case *hashring.Resolver:
		return fmt.Sprintf("hash key=%v %v vn=%d %s %s %v %d", x.KeyDef().Paths(), x.Collections(), x.VirtualNodes(), x.Hash(), x.Strategy(), x.LoadFactor(), x.PartitionCount())
	}
	return fmt.Sprintf("%T", r)
}

func describeTarget(t resolver.Target) string {
	if t.Resolver != nil {
		return "(" + describe(t.Resolver) + ")"
	}
	return t.Link
}

func TestJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for round := 0; round < rounds; round++ {
		r, keys := randomRange(rng, 0)
		data, err := resolver.Marshal(r)
		require.NoError(t, err)
		back, err := resolver.Unmarshal(data)
		require.NoError(t, err, "%s", data)
		assert.Equal(t, describe(r), describe(back), "every setting survives")
		again, err := resolver.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(data), string(again))
		all, err := r.ResolveForRead(nil)
		require.NoError(t, err)
		allBack, err := back.ResolveForRead(nil)
		require.NoError(t, err)
		require.Equal(t, all, allBack)
		require.Equal(t, resolver.UnionLinks(all), all, "each link once")
		for _, k := range keys {
			x, errX := r.ResolveForCreate(k)
			y, errY := back.ResolveForCreate(k)
			require.Equal(t, fmt.Sprint(errX), fmt.Sprint(errY), "%v in %s", k, data)
			require.Equal(t, x, y, "%v in %s", k, data)
			rx, errX := r.ResolveForRead(k)
			ry, errY := back.ResolveForRead(k)
			require.Equal(t, fmt.Sprint(errX), fmt.Sprint(errY), "%v in %s", k, data)
			require.Equal(t, rx, ry, "%v in %s", k, data)
			if x != "" {
				assert.Contains(t, rx, x, "a read finds where a create put it")
			}
		}
	}
}
