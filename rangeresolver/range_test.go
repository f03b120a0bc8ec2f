package rangeresolver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

func link(s string) resolver.Target { return resolver.LinkTarget("dbs/app/colls/" + s) }

func monthly(t *testing.T) *Resolver {
	t.Helper()
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }
	r, err := New(resolver.MustKeyDef("/eventTime"), []Entry[time.Time]{
		{Range[time.Time]{day(1, 1), day(1, 31).Add(24*time.Hour - time.Second)}, link("jan")},
		{Range[time.Time]{day(2, 1), day(2, 28).Add(24*time.Hour - time.Second)}, link("feb")},
		{Range[time.Time]{day(3, 1), day(3, 31).Add(24*time.Hour - time.Second)}, link("mar")},
	}, link("overflow"))
	require.NoError(t, err)
	return r
}

func TestTimeRanges(t *testing.T) {
	r := monthly(t)
	for _, tc := range []struct {
		key  any
		want string
	}{
		{"2026-01-01T00:00:00Z", "jan"},
		{"2026-01-31T23:59:59Z", "jan"},
		{"2026-02-01T00:00:00Z", "feb"},
		{"2026-02-01T01:00:00+01:00", "feb"}, // the same instant as 00:00Z
		{"2026-01-31T23:30:00-01:00", "feb"}, // 00:30Z on Feb 1
		{time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC), "mar"},
		{"2025-12-31T23:59:59Z", "overflow"},
		{"2026-01-31T23:59:59.5Z", "overflow"}, // between ranges
	} {
		got, err := r.ResolveForCreate(tc.key)
		require.NoError(t, err, "%v", tc.key)
		assert.Equal(t, "dbs/app/colls/"+tc.want, got, "%v", tc.key)
	}
	key, err := r.PartitionKey([]byte(`{"id":"e1","eventTime":"2026-02-10T12:00:00Z"}`))
	require.NoError(t, err)
	got, err := r.ResolveForCreate(key)
	require.NoError(t, err)
	assert.Equal(t, "dbs/app/colls/feb", got)

	for _, bad := range []any{"yesterday", 42, true} {
		_, err := r.ResolveForCreate(bad)
		assert.ErrorIs(t, err, resolver.ErrKeyType, "%v", bad)
	}
	_, err = r.ResolveForCreate(nil)
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
}

func TestReadByRange(t *testing.T) {
	r := monthly(t)
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		q    Range[time.Time]
		want []string
	}{
		{Range[time.Time]{day(1, 5), day(1, 6)}, []string{"jan"}},
		{Range[time.Time]{day(1, 5), day(2, 6)}, []string{"jan", "feb", "overflow"}}, // the second between Jan 31 23:59:59 and Feb 1 is uncovered
		{Range[time.Time]{day(2, 5), day(3, 6)}, []string{"feb", "mar", "overflow"}},
		{Range[time.Time]{day(6, 1), day(7, 1)}, []string{"overflow"}},
		{Range[time.Time]{day(1, 1).Add(-time.Hour), day(1, 2)}, []string{"jan", "overflow"}},
	}
	for _, tc := range cases {
		got, err := r.ResolveForRead(tc.q)
		require.NoError(t, err, tc.q.String())
		want := make([]string, len(tc.want))
		for i, w := range tc.want {
			want[i] = "dbs/app/colls/" + w
		}
		assert.Equal(t, want, got, tc.q.String())
	}
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/jan", "dbs/app/colls/feb", "dbs/app/colls/mar", "dbs/app/colls/overflow"}, all)
	one, err := r.ResolveForRead("2026-03-03T00:00:00Z")
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/mar"}, one)
	_, err = r.ResolveForRead(Range[float64]{1, 2})
	assert.ErrorIs(t, err, resolver.ErrKeyType)
}

func TestNumberAndStringRanges(t *testing.T) {
	n, err := New(resolver.KeyDef{}, []Entry[float64]{
		{Range[float64]{0, 99.5}, link("low")},
		{Range[float64]{100, 1e9}, link("high")},
	}, resolver.Target{})
	require.NoError(t, err)
	for key, want := range map[any]string{0: "low", 99.5: "low", int64(100): "high", "1e3": "", 1e9: "high"} {
		got, err := n.ResolveForCreate(key)
		if want == "" {
			assert.ErrorIs(t, err, resolver.ErrKeyType)
			continue
		}
		require.NoError(t, err, "%v", key)
		assert.Equal(t, "dbs/app/colls/"+want, got, "%v", key)
	}
	_, err = n.ResolveForCreate(99.7)
	require.ErrorIs(t, err, resolver.ErrNoTarget, "no default")
	assert.Contains(t, err.Error(), "99.7")
	got, err := n.ResolveForRead(Range[float64]{50, 150})
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/low", "dbs/app/colls/high"}, got)

	s, err := New(resolver.KeyDef{}, []Entry[string]{
		{Range[string]{"a", "m"}, link("am")},
		{Range[string]{"n", "z"}, link("nz")},
	}, link("other"))
	require.NoError(t, err)
	for key, want := range map[string]string{"a": "am", "lemon": "am", "m": "am", "mz": "other", "n": "nz", "Z": "other", "é": "other"} {
		got, err := s.ResolveForCreate(key)
		require.NoError(t, err)
		assert.Equal(t, "dbs/app/colls/"+want, got, key)
	}
}

func TestRangeMethods(t *testing.T) {
	r := Range[float64]{1, 5}
	assert.True(t, r.Contains(1))
	assert.True(t, r.Contains(5))
	assert.False(t, r.Contains(5.0001))
	assert.True(t, r.Intersects(Range[float64]{5, 9}))
	assert.False(t, r.Intersects(Range[float64]{6, 9}))
	assert.Equal(t, "[1, 5]", r.String())
	assert.Equal(t, `["a", "b"]`, Range[string]{"a", "b"}.String())
}

func TestBadDefinitions(t *testing.T) {
	cases := []struct{ name, json, field, msg string }{
		{"overlap", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":10,"target":"dbs/a/colls/x"},{"low":10,"high":20,"target":"dbs/a/colls/y"}]}`, "ranges[1]", "overlaps ranges[0]"},
		{"overlap unsorted", `{"kind":"range","keyType":"string","ranges":[{"low":"m","high":"z","target":"dbs/a/colls/x"},{"low":"a","high":"n","target":"dbs/a/colls/y"}]}`, "ranges[0]", "overlaps ranges[1]"},
		{"low above high", `{"kind":"range","keyType":"number","ranges":[{"low":5,"high":1,"target":"dbs/a/colls/x"}]}`, "ranges[0]", "above high"},
		{"bad time", `{"kind":"range","keyType":"time","ranges":[{"low":"2026-01-01","high":"2026-02-01T00:00:00Z","target":"dbs/a/colls/x"}]}`, "ranges[0].low", "RFC 3339"},
		{"wrong bound type", `{"kind":"range","keyType":"number","ranges":[{"low":"0","high":1,"target":"dbs/a/colls/x"}]}`, "ranges[0].low", "JSON number"},
		{"missing high", `{"kind":"range","keyType":"number","ranges":[{"low":0,"target":"dbs/a/colls/x"}]}`, "ranges[0].high", "missing"},
		{"missing target", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1}]}`, "ranges[0].target", "missing"},
		{"bad target", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,"target":"x"}]}`, "ranges[0].target", "collection link"},
		{"unknown range field", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,"target":"dbs/a/colls/x","weight":2}]}`, "ranges[0].weight", "unknown field"},
		{"no ranges", `{"kind":"range","keyType":"number","ranges":[]}`, "ranges", "at least one"},
		{"bad key type", `{"kind":"range","keyType":"date","ranges":[]}`, "keyType", "want"},
		{"missing key type", `{"kind":"range","ranges":[]}`, "keyType", "missing"},
		{"bad default", `{"kind":"range","keyType":"number","ranges":[{"low":0,"high":1,"target":"dbs/a/colls/x"}],"default":{"kind":"nope"}}`, "default.kind", "unknown kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			require.Error(t, err)
			var ce *resolver.ConfigError
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.Equal(t, tc.field, ce.Field, "%v", err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 100; round++ {
		n := 1 + rng.IntN(8)
		var r *Resolver
		var err error
		var keys []any
		def := resolver.Target{}
		if rng.IntN(2) == 0 {
			def = link("default")
		}
		switch rng.IntN(3) {
		case 0:
			var es []Entry[float64]
			lo := rng.Float64()*100 - 50
			for i := 0; i < n; i++ {
				hi := lo + rng.Float64()*10
				es = append(es, Entry[float64]{Range[float64]{lo, hi}, link(fmt.Sprint("n", i))})
				lo = hi + rng.Float64()
			}
			rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
			r, err = New(resolver.MustKeyDef("/n"), es, def)
			for i := 0; i < 100; i++ {
				keys = append(keys, rng.Float64()*200-60)
			}
		case 1:
			var es []Entry[string]
			for i := 0; i < n; i++ {
				es = append(es, Entry[string]{Range[string]{fmt.Sprintf("k%02d", 2*i), fmt.Sprintf("k%02d~", 2*i)}, link(fmt.Sprint("s", i))})
			}
			r, err = New(resolver.MustKeyDef("/s"), es, def)
			for i := 0; i < 100; i++ {
				keys = append(keys, fmt.Sprintf("k%02d%d", rng.IntN(2*n+2), rng.IntN(10)))
			}
		default:
			var es []Entry[time.Time]
			at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600*rng.IntN(5)))
			for i := 0; i < n; i++ {
				end := at.Add(time.Duration(rng.IntN(1000)+1) * time.Hour)
				es = append(es, Entry[time.Time]{Range[time.Time]{at, end}, link(fmt.Sprint("t", i))})
				at = end.Add(time.Duration(rng.IntN(5)+1) * time.Second)
			}
			r, err = New(resolver.MustKeyDef("/t"), es, def)
			for i := 0; i < 100; i++ {
				keys = append(keys, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(5000))*time.Hour).Format(time.RFC3339))
			}
		}
		require.NoError(t, err)
		data, err := resolver.Marshal(r)
		require.NoError(t, err)
		back, err := resolver.Unmarshal(data)
		require.NoError(t, err, "%s", data)
		again, err := resolver.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(data), string(again))
		for _, k := range keys {
			x, errX := r.ResolveForCreate(k)
			y, errY := back.ResolveForCreate(k)
			require.Equal(t, errX == nil, errY == nil, "%v", k)
			require.Equal(t, x, y, "%v in %s", k, data)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	r := monthly(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				got, err := r.ResolveForCreate(fmt.Sprintf("2026-02-%02dT10:00:00Z", 1+i%28))
				assert.NoError(t, err)
				assert.Equal(t, "dbs/app/colls/feb", got)
				_, err = resolver.Marshal(r)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}

func BenchmarkResolveForCreate(b *testing.B) {
	var es []Entry[float64]
	for i := 0; i < 100; i++ {
		es = append(es, Entry[float64]{Range[float64]{float64(i * 10), float64(i*10 + 9)}, link(fmt.Sprint("c", i))})
	}
	r, err := New(resolver.KeyDef{}, es, resolver.Target{})
	if err != nil {
		b.Fatal(err)
	}
	var key any = 512.0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := r.ResolveForCreate(key); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleNew() {
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }
	r, _ := New(resolver.MustKeyDef("/eventTime"), []Entry[time.Time]{
		{Range: Range[time.Time]{Low: day(1, 1), High: day(2, 1).Add(-time.Second)}, Target: resolver.LinkTarget("dbs/app/colls/jan")},
		{Range: Range[time.Time]{Low: day(2, 1), High: day(3, 1).Add(-time.Second)}, Target: resolver.LinkTarget("dbs/app/colls/feb")},
	}, resolver.LinkTarget("dbs/app/colls/overflow"))
	key, _ := r.PartitionKey([]byte(`{"id":"e1","eventTime":"2026-02-14T09:30:00Z"}`))
	link, _ := r.ResolveForCreate(key)
	fmt.Println(link)
	all, _ := r.ResolveForRead(Range[time.Time]{Low: day(1, 20), High: day(1, 25)})
	fmt.Println(all)
	// Output:
	// dbs/app/colls/feb
	// [dbs/app/colls/jan]
}
