package hashring

import (
	"errors"
	"testing"

	"github.com/docshard/docshard/resolver"
)

// FuzzUnmarshalHash feeds arbitrary JSON to the "hash" decoder: it must
// never panic, every error must be a *resolver.ConfigError, and whatever it
// accepts must survive a round trip with the same placement.
//
//	go test -run '^$' -fuzz FuzzUnmarshalHash -fuzztime 30s ./hashring
func FuzzUnmarshalHash(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1"],"virtualNodes":16,"hash":"md5"}`,
		`{"kind":"hash","collections":["dbs/a/colls/b"],"hash":"murmur3","virtualNodes":5}`,
		`{"kind":"hash","collections":["dbs/T6t8AA==/colls/T6t8ALDFcwA=/","dbs/T6t8AA==/colls/T6t8ANdyZQE=/"],"hash":"dotnet-x86"}`,
		`{"kind":"hash","collections":["dbs/a/colls/b","dbs/a/colls/c"],"hash":"xxhash","strategy":"ring"}`,
		`{"kind":"hash","collections":["dbs/a/colls/b","dbs/a/colls/c"],"strategy":"bounded","loadFactor":1.5,"partitionCount":100,"virtualNodes":3}`,
		`{"kind":"hash","partitionKey":["/a","/b"],"collections":["dbs/a/colls/b"]}`,
		`{"kind":"hash","collections":["dbs/a/colls/b","dbs/a/colls/b/"]}`,
		`{"kind":"hash","collections":[],"virtualNodes":0,"hash":""}`,
		`{"kind":"hash","collections":["dbs/a/colls/b"],"virtualNodes":1e9}`,
		`{"kind":"hash","collections":["dbs/a/colls/b"],"strategy":"bounded","loadFactor":1,"partitionCount":31}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := resolver.Unmarshal(data)
		if err != nil {
			var ce *resolver.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *resolver.ConfigError: %v", err, err)
			}
			return
		}
		out, err := resolver.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := resolver.Unmarshal(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		for _, k := range []any{"a", "alice", "", 1.5, resolver.CompositeKey{"x", 1.0}} {
			x, err1 := r.ResolveForCreate(k)
			y, err2 := back.ResolveForCreate(k)
			if x != y || (err1 == nil) != (err2 == nil) {
				t.Fatalf("%v placed at %q then %q after a round trip of %s", k, x, y, out)
			}
		}
	})
}
