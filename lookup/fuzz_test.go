package lookup_test

import (
	"testing"

	_ "github.com/docshard/docshard/hashring"
	_ "github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
)

// FuzzUnmarshal feeds arbitrary bytes to the resolver decoder with the hash,
// range and lookup kinds registered: it must never panic, and whatever it
// accepts must survive Marshal and Unmarshal unchanged.
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(tenants))
	f.Add([]byte(`{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1"],"virtualNodes":16,"hash":"md5"}`))
	f.Add([]byte(`{"kind":"range","partitionKey":"/eventTime","keyType":"time","ranges":[{"low":"2026-01-01T00:00:00Z","high":"2026-01-31T23:59:59Z","target":"dbs/app/colls/jan"}],"default":"dbs/app/colls/overflow"}`))
	f.Add([]byte(`{"kind":"hash","collections":["dbs/a/colls/b"],"strategy":"bounded","loadFactor":1.5,"partitionCount":100}`))
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
	})
}
