package lookup_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	_ "github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
)

// fuzzKeys are placed by every tree the fuzzer accepts, before and after
// its round trip.
var fuzzKeys = []any{
	"a", "bigcorp", "v1", "42", "2026-01-15T00:00:00Z", 0, 42, 1.5, -1e21,
	time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), resolver.CompositeKey{"eu", 42}, true,
	rangeresolver.Range[string]{Low: "a", High: "m"},
	rangeresolver.Range[float64]{Low: -1, High: 100},
	rangeresolver.Range[time.Time]{Low: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), High: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
}

// FuzzUnmarshal feeds arbitrary bytes to resolver.Unmarshal with the hash,
// range and lookup kinds registered: it must never panic, and whatever it
// accepts must survive Marshal and Unmarshal to the same JSON, list every
// link once, and place keys as before. Seeds: f.Add below and
// testdata/fuzz/FuzzUnmarshal. Run: go test -run '^$' -fuzz FuzzUnmarshal ./lookup
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(tenants))
	f.Add([]byte(`{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1"],"virtualNodes":16,"hash":"md5"}`))
	f.Add([]byte(`{"kind":"range","partitionKey":"/eventTime","keyType":"time","ranges":[{"low":"2026-01-01T00:00:00Z","high":"2026-01-31T23:59:59Z","target":"dbs/app/colls/jan"}],"default":"dbs/app/colls/overflow"}`))
	f.Add([]byte(`{"kind":"hash","collections":["dbs/a/colls/b"],"strategy":"bounded","loadFactor":1.5,"partitionCount":100}`))
	f.Add([]byte(`{"kind":"lookup","entries":{"1":"dbs/a/colls/x","[\"eu\",42]":{"kind":"range","keyType":"string","ranges":[],"default":"dbs/a/colls/y"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := resolver.Unmarshal(data)
		if err != nil {
			return
		}
		out, err := resolver.Marshal(r)
		if err != nil {
			t.Fatalf("accepted %s but cannot marshal it: %v", data, err)
		}
		back, err := resolver.Unmarshal(out)
		if err != nil {
			t.Fatalf("cannot read back %s: %v", out, err)
		}
		again, err := resolver.Marshal(back)
		if err != nil || string(again) != string(out) {
			t.Fatalf("round trip changed %s into %s (%v)", out, again, err)
		}
		all, err := r.ResolveForRead(nil)
		if err != nil || len(all) == 0 || !slices.Equal(all, linkset.Union(all)) {
			t.Fatalf("ResolveForRead(nil) of %s = %v, %v: want every link once", out, all, err)
		}
		for _, key := range fuzzKeys {
			x, errX := r.ResolveForCreate(key)
			y, errY := back.ResolveForCreate(key)
			if x != y || fmt.Sprint(errX) != fmt.Sprint(errY) {
				t.Fatalf("%v placed at %q (%v), after the round trip at %q (%v): %s", key, x, errX, y, errY, out)
			}
			rx, errX := r.ResolveForRead(key)
			ry, errY := back.ResolveForRead(key)
			if !slices.Equal(rx, ry) || fmt.Sprint(errX) != fmt.Sprint(errY) {
				t.Fatalf("%v read from %q (%v), after the round trip from %q (%v): %s", key, rx, errX, ry, errY, out)
			}
		}
	})
}
