package rangeresolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/resolver/resolvertest"
)

func coll(s string) string          { return "dbs/app/colls/" + s }
func link(s string) resolver.Target { return resolver.LinkTarget(coll(s)) }

func colls(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = coll(n)
	}
	return out
}

func day(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }

// month is the whole month m of 2026, to the last nanosecond.
func month(m time.Month) Range[time.Time] {
	return Range[time.Time]{day(m, 1), day(m, 1).AddDate(0, 1, 0).Add(-time.Nanosecond)}
}

// monthly: January to March, each its own collection, plus overflow.
func monthly(t testing.TB) *Resolver {
	t.Helper()
	r, err := New(resolver.MustKeyDef("/eventTime"), []Entry[time.Time]{
		{month(1), link("jan")},
		{month(3), link("mar")}, // out of order on purpose
		{month(2), link("feb")},
	}, link("overflow"))
	require.NoError(t, err)
	return r
}

func TestTimePlacement(t *testing.T) {
	r := monthly(t)
	assert.Equal(t, KeyTime, r.KeyType())
	assert.Equal(t, 3, r.Len())
	resolvertest.Places(t, r, coll, resolvertest.Cases{
		{"2026-01-01T00:00:00Z", "jan"},
		{"2026-01-31T23:59:59Z", "jan"},
		{"2026-01-31T23:59:59.999999999Z", "jan"},
		{"2026-02-01T00:00:00Z", "feb"},
		{"2026-02-01T01:00:00+01:00", "feb"}, // the same instant as 00:00Z
		{"2026-01-31T23:30:00-01:00", "feb"}, // 00:30Z on Feb 1
		{"2026-02-01T00:30:00+01:00", "jan"}, // 23:30Z on Jan 31
		{day(3, 15), "mar"},
		{day(3, 15).In(time.FixedZone("", -7*3600)), "mar"},
		{time.Now().AddDate(10, 0, 0), "overflow"}, // a monotonic reading does not matter
		{"2025-12-31T23:59:59.999Z", "overflow"},
		{"2026-04-01T00:00:00Z", "overflow"},
		{"0001-01-01T00:00:00Z", "overflow"},
		{"yesterday", "type"}, {"2026-01-05", "type"}, {"2026-01-05 10:00:00Z", "type"}, {"2026-01-05T10:00:00", "type"},
		{42, "type"}, {1.5e9, "type"}, {true, "type"}, {resolver.Null, "type"}, {resolver.CompositeKey{"a"}, "type"},
		{Range[time.Time]{}.Low.Unix(), "type"},
	})
	_, err := r.ResolveForCreate(nil)
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
}

func TestPartitionKeyFromDocuments(t *testing.T) {
	r := monthly(t)
	type event struct {
		ID   string    `json:"id"`
		When time.Time `json:"eventTime"`
	}
	for _, doc := range []any{
		[]byte(`{"id":"e1","eventTime":"2026-02-10T12:00:00Z"}`),
		json.RawMessage(`{"eventTime":"2026-02-10T13:00:00+01:00","id":"e1"}`),
		map[string]any{"id": "e1", "eventTime": "2026-02-10T12:00:00Z"},
		event{"e1", time.Date(2026, 2, 10, 12, 0, 0, 0, time.UTC)},
		&event{"e1", time.Date(2026, 2, 10, 12, 0, 0, 0, time.UTC)},
	} {
		key, err := r.PartitionKey(doc)
		require.NoError(t, err, "%T", doc)
		got, err := r.ResolveForCreate(key)
		require.NoError(t, err, "%T", doc)
		assert.Equal(t, coll("feb"), got, "%T", doc)
	}
	for _, doc := range []any{[]byte(`{"id":"e1"}`), map[string]any{"id": "e1"}, struct{ ID string }{"e1"}} {
		_, err := r.PartitionKey(doc)
		assert.ErrorIs(t, err, resolver.ErrNoPartitionKey, "%T", doc)
		assert.ErrorContains(t, err, "/eventTime")
	}
	key, err := r.PartitionKey([]byte(`{"eventTime":null}`))
	require.NoError(t, err)
	_, err = r.ResolveForCreate(key)
	assert.ErrorIs(t, err, resolver.ErrKeyType, "a null key has no place in a time range")
}

func TestNumberPlacement(t *testing.T) {
	r, err := New(resolver.KeyDef{}, []Entry[float64]{
		{Range[float64]{100, 1e9}, link("high")},
		{Range[float64]{-50, 99.5}, link("low")},
	}, resolver.Target{})
	require.NoError(t, err)
	assert.Equal(t, KeyNumber, r.KeyType())
	resolvertest.Places(t, r, coll, resolvertest.Cases{
		{0, "low"}, {int8(-50), "low"}, {uint16(99), "low"}, {99.5, "low"}, {float32(99.5), "low"},
		{json.Number("99.5"), "low"}, {json.Number("-5e1"), "low"}, {int64(100), "high"}, {uint64(1e9), "high"},
		{1e9, "high"}, {json.Number("1e9"), "high"},
		{99.7, ""}, {-50.0000001, ""}, {1e9 + 1, ""}, {math.Inf(1), ""}, {uint64(math.MaxUint64), ""},
		{"1e3", "type"}, {"42", "type"}, {true, "type"}, {math.NaN(), "type"}, {json.Number("x"), "type"},
		{time.Unix(100, 0), "type"},
	})
	_, err = r.ResolveForCreate(99.7)
	assert.ErrorContains(t, err, "99.7")
	assert.ErrorContains(t, err, "outside every range and no default")
}

func TestStringPlacement(t *testing.T) {
	r, err := New(resolver.MustKeyDef("/name"), []Entry[string]{
		{Range[string]{"a", "m"}, link("am")},
		{Range[string]{"n", "z"}, link("nz")},
		{Range[string]{"", ""}, link("empty")},
	}, link("other"))
	require.NoError(t, err)
	assert.Equal(t, KeyString, r.KeyType())
	for key, want := range map[string]string{
		"a": "am", "lemon": "am", "m": "am", "mz": "other", "m\x00": "other", "n": "nz", "z": "nz",
		"zz": "other", "Z": "other", "Apple": "other", "é": "other", "": "empty", "\x00": "other",
	} {
		got, err := r.ResolveForCreate(key)
		require.NoError(t, err, "%q", key)
		assert.Equal(t, coll(want), got, "%q", key)
	}
	for _, bad := range []any{1, 2.5, json.Number("1"), resolver.CompositeKey{"a", "b"}, day(1, 1)} {
		_, err := r.ResolveForCreate(bad)
		assert.ErrorIs(t, err, resolver.ErrKeyType, "%v", bad)
	}
}

func TestReadByRange(t *testing.T) {
	r := monthly(t)
	for _, tc := range []struct {
		q    Range[time.Time]
		want []string
	}{
		{Range[time.Time]{day(1, 5), day(1, 6)}, colls("jan")},
		{month(1), colls("jan")},
		{Range[time.Time]{day(1, 5), day(2, 6)}, colls("jan", "feb")}, // months meet to the nanosecond
		{Range[time.Time]{day(1, 1), month(3).High}, colls("jan", "feb", "mar")},
		{Range[time.Time]{day(1, 1), day(4, 1)}, colls("jan", "feb", "mar", "overflow")},
		{Range[time.Time]{day(2, 5), day(6, 6)}, colls("feb", "mar", "overflow")},
		{Range[time.Time]{day(6, 1), day(7, 1)}, colls("overflow")},
		{Range[time.Time]{day(1, 1).Add(-time.Nanosecond), day(1, 2)}, colls("jan", "overflow")},
		{Range[time.Time]{day(3, 31), day(3, 31)}, colls("mar")},
		{Range[time.Time]{day(1, 1).In(time.FixedZone("", 3600)), day(1, 2)}, colls("jan")},
	} {
		got, err := r.ResolveForRead(tc.q)
		require.NoError(t, err, tc.q.String())
		assert.Equal(t, tc.want, got, tc.q.String())
	}
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, colls("jan", "feb", "mar", "overflow"), all, "key order, then the default")
	all[0] = "changed"
	again, _ := r.ResolveForRead(nil)
	assert.Equal(t, coll("jan"), again[0], "callers get a copy")

	for _, bad := range []any{Range[float64]{1, 2}, Range[string]{"a", "b"}, Range[time.Time]{day(2, 1), day(1, 1)}} {
		_, err = r.ResolveForRead(bad)
		assert.ErrorIs(t, err, resolver.ErrKeyType, "%v", bad)
	}

	// Gaps without a default: an empty answer, not an error.
	n, err := New(resolver.KeyDef{}, []Entry[float64]{
		{Range[float64]{0, 10}, link("a")},
		{Range[float64]{math.Nextafter(10, 11), 20}, link("b")}, // adjacent: no gap
		{Range[float64]{30, 40}, link("a")},                     // shares a collection
	}, resolver.Target{})
	require.NoError(t, err)
	for _, tc := range []struct {
		q    Range[float64]
		want []string
	}{
		{Range[float64]{5, 15}, colls("a", "b")},
		{Range[float64]{5, 35}, colls("a", "b")},
		{Range[float64]{21, 29}, colls()},
		{Range[float64]{-1e300, 1e300}, colls("a", "b")},
	} {
		got, err := n.ResolveForRead(tc.q)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.q.String())
	}
	all, err = n.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, colls("a", "b"), all, "a collection shared by two ranges is listed once")
	_, err = n.ResolveForRead(Range[float64]{math.NaN(), 1})
	assert.ErrorIs(t, err, resolver.ErrKeyType)

	// Strings: "m\x00" is the string just after "m".
	s, err := New(resolver.KeyDef{}, []Entry[string]{
		{Range[string]{"a", "m"}, link("am")},
		{Range[string]{"m\x00", "z"}, link("mz")},
		{Range[string]{"zz", "zz"}, link("zz")},
	}, link("other"))
	require.NoError(t, err)
	for _, tc := range []struct {
		q    Range[string]
		want []string
	}{
		{Range[string]{"b", "n"}, colls("am", "mz")},
		{Range[string]{"b", "zz"}, colls("am", "mz", "zz", "other")}, // "z\x00" lies between
		{Range[string]{"zz", "zz"}, colls("zz")},
		{Range[string]{"", "a"}, colls("am", "other")},
	} {
		got, err := s.ResolveForRead(tc.q)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.q.String())
	}
}

// TestReadCoverageOracle checks range reads against brute force: time
// bounds a few nanoseconds apart, so every instant of a query can be
// enumerated and placed one by one.
func TestReadCoverageOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ns int) time.Time { return base.Add(time.Duration(ns)) }
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	for round := 0; round < rounds; round++ {
		var es []Entry[time.Time]
		pos := rng.IntN(3)
		for i, n := 0, rng.IntN(6); i < n; i++ {
			lo := pos + rng.IntN(3) // 0: adjacent to the previous range
			hi := lo + rng.IntN(4)
			es = append(es, Entry[time.Time]{Range[time.Time]{at(lo), at(hi)}, link(fmt.Sprint("c", rng.IntN(4)))})
			pos = hi + 1
		}
		rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
		def := resolver.Target{}
		if len(es) == 0 || rng.IntN(2) == 0 {
			def = link("default")
		}
		r, err := New(resolver.KeyDef{}, es, def)
		require.NoError(t, err)
		for k := 0; k < 20; k++ {
			lo := rng.IntN(pos + 3)
			hi := lo + rng.IntN(8)
			var want [][]string
			for ns := lo; ns <= hi; ns++ {
				got, err := r.ResolveForCreate(at(ns))
				if errors.Is(err, resolver.ErrNoTarget) {
					continue
				}
				require.NoError(t, err)
				want = append(want, []string{got})
			}
			got, err := r.ResolveForRead(Range[time.Time]{at(lo), at(hi)})
			require.NoError(t, err)
			assert.ElementsMatch(t, linkset.Union(want...), got, "ranges %v, query [%d, %d]", es, lo, hi)
		}
	}
}

func TestNestedTargets(t *testing.T) {
	ring, err := hashring.New(colls("s0", "s1", "s2"), nil)
	require.NoError(t, err)
	days, err := New(resolver.KeyDef{}, []Entry[time.Time]{
		{Range[time.Time]{day(1, 1), day(1, 15).Add(-time.Nanosecond)}, link("jan-a")},
		{Range[time.Time]{day(1, 15), month(1).High}, link("jan-b")},
	}, resolver.Target{})
	require.NoError(t, err)
	r, err := New(resolver.MustKeyDef("/at"), []Entry[time.Time]{
		{month(1), resolver.ResolverTarget(days)},
		{month(2), link("feb")},
	}, resolver.ResolverTarget(ring))
	require.NoError(t, err)

	for key, want := range map[string]string{"2026-01-03T00:00:00Z": "jan-a", "2026-01-20T00:00:00Z": "jan-b", "2026-02-20T00:00:00Z": "feb"} {
		got, err := r.ResolveForCreate(key)
		require.NoError(t, err)
		assert.Equal(t, coll(want), got, key)
	}
	key := "2026-07-04T00:00:00Z"
	want, err := ring.ResolveForCreate(key)
	require.NoError(t, err)
	got, err := r.ResolveForCreate(key)
	require.NoError(t, err)
	assert.Equal(t, want, got, "keys outside every range go to the ring, hashed as given")
	read, err := r.ResolveForRead(key)
	require.NoError(t, err)
	assert.Equal(t, []string{want}, read)

	for _, tc := range []struct {
		q    Range[time.Time]
		want []string
	}{
		{Range[time.Time]{day(1, 2), day(1, 3)}, colls("jan-a")}, // the nested range narrows
		{Range[time.Time]{day(1, 20), day(2, 3)}, colls("jan-b", "feb")},
		{Range[time.Time]{day(1, 20), day(3, 3)}, colls("jan-b", "feb", "s0", "s1", "s2")}, // a ring cannot narrow
	} {
		got, err := r.ResolveForRead(tc.q)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.q.String())
	}
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, colls("jan-a", "jan-b", "feb", "s0", "s1", "s2"), all)
}

func TestConstructorErrors(t *testing.T) {
	ring, err := hashring.New(colls("s0"), nil)
	require.NoError(t, err)
	type check struct {
		name  string
		err   error
		field string
		msg   string
	}
	newNum := func(def resolver.Target, es ...Entry[float64]) error {
		_, err := New(resolver.KeyDef{}, es, def)
		return err
	}
	cases := []check{
		{"low above high", newNum(link("d"), Entry[float64]{Range[float64]{5, 1}, link("x")}), "ranges[0]", "low 5 is above high 1"},
		{"NaN", newNum(link("d"), Entry[float64]{Range[float64]{0, 1}, link("x")}, Entry[float64]{Range[float64]{2, math.NaN()}, link("x")}), "ranges[1].high", "NaN"},
		{"infinite", newNum(link("d"), Entry[float64]{Range[float64]{math.Inf(-1), 0}, link("x")}), "ranges[0].low", "infinities"},
		{"overlap", newNum(link("d"), Entry[float64]{Range[float64]{10, 20}, link("x")}, Entry[float64]{Range[float64]{30, 40}, link("y")}, Entry[float64]{Range[float64]{0, 10}, link("z")}),
			"ranges[2]", "range [0, 10] overlaps ranges[0] [10, 20]"},
		{"same range twice", newNum(link("d"), Entry[float64]{Range[float64]{1, 1}, link("x")}, Entry[float64]{Range[float64]{1, 1}, link("y")}), "ranges[1]", "overlaps ranges[0]"},
		{"missing target", newNum(link("d"), Entry[float64]{Range[float64]{0, 1}, resolver.Target{}}), "ranges[0].target", "missing"},
		{"bad link", newNum(link("d"), Entry[float64]{Range[float64]{0, 1}, resolver.LinkTarget("colls/x")}), "ranges[0].target", "collection link"},
		{"link and resolver", newNum(link("d"), Entry[float64]{Range[float64]{0, 1}, resolver.Target{Link: coll("x"), Resolver: ring}}), "ranges[0].target", "not both"},
		{"bad default", newNum(resolver.LinkTarget("dbs/a"), Entry[float64]{Range[float64]{0, 1}, link("x")}), "default", "collection link"},
		{"nothing", newNum(resolver.Target{}), "ranges", "at least one range or a default"},
	}
	_, err = New(resolver.MustKeyDef("/a", "/b"), []Entry[string]{{Range[string]{"a", "b"}, link("x")}}, resolver.Target{})
	cases = append(cases, check{"composite key", err, "partitionKey", "composite"})
	_, err = New(resolver.KeyDef{}, []Entry[string]{{Range[string]{"a", "b\xff"}, link("x")}}, resolver.Target{})
	cases = append(cases, check{"invalid UTF-8", err, "ranges[0].high", "UTF-8"})
	_, err = New(resolver.KeyDef{}, []Entry[time.Time]{{Range[time.Time]{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), day(1, 1)}, link("x")}}, resolver.Target{})
	cases = append(cases, check{"year", err, "ranges[0].low", "year"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resolvertest.ConfigError(t, tc.err, tc.field, tc.msg)
		})
	}

	// A default alone is a resolver (every key to one place, ranges to come).
	only, err := New[string](resolver.KeyDef{}, nil, link("all"))
	require.NoError(t, err)
	got, err := only.ResolveForCreate("anything")
	require.NoError(t, err)
	assert.Equal(t, coll("all"), got)
}

func TestAccessors(t *testing.T) {
	odd := time.FixedZone("odd", 3600+30) // RFC 3339 cannot write a 30-second offset
	in := []Entry[time.Time]{
		{Range[time.Time]{time.Now().Truncate(time.Hour), time.Now().Truncate(time.Hour).Add(time.Hour)}, link("now")},
		{Range[time.Time]{time.Date(2020, 1, 1, 0, 0, 30, 0, odd), time.Date(2020, 2, 1, 0, 0, 0, 0, time.FixedZone("", -3*3600))}, link("old")},
	}
	r, err := New(resolver.MustKeyDef("/t"), in, link("d"))
	require.NoError(t, err)
	in[0].Target = link("changed")
	got, ok := Ranges[time.Time](r)
	require.True(t, ok)
	require.Len(t, got, 2)
	assert.Equal(t, coll("now"), got[0].Target.Link, "New copies its input")
	assert.True(t, got[0].Range.Low.Equal(in[0].Range.Low))
	assert.Equal(t, got[0].Range.Low, got[0].Range.Low.Round(0), "no monotonic reading")
	assert.True(t, got[1].Range.Low.Equal(in[1].Range.Low), "the same instant")
	assert.Equal(t, time.UTC, got[1].Range.Low.Location(), "in UTC when the offset has seconds")
	_, off := got[1].Range.High.Zone()
	assert.Equal(t, -3*3600, off, "offsets RFC 3339 writes are kept")
	_, ok = Ranges[string](r)
	assert.False(t, ok)
	assert.Equal(t, []string{"/t"}, r.KeyDef().Paths())
	assert.Equal(t, coll("d"), r.Default().Link)
	assert.Equal(t, Kind, r.Kind())
}

func TestConcurrentUse(t *testing.T) {
	r := monthly(t)
	resolvertest.Concurrently(300, func(i int) {
		got, err := r.ResolveForCreate(fmt.Sprintf("2026-02-%02dT10:00:00Z", 1+i%28))
		assert.NoError(t, err)
		assert.Equal(t, coll("feb"), got)
		links, err := r.ResolveForRead(Range[time.Time]{day(1, 1+i%28), day(2, 1+i%28)})
		assert.NoError(t, err)
		assert.Equal(t, colls("jan", "feb"), links)
		_, err = resolver.Marshal(r)
		assert.NoError(t, err)
	})
}
