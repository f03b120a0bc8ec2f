package lookup_test

import (
	"fmt"
	"testing"

	"github.com/docshard/docshard/lookup"
	"github.com/docshard/docshard/resolver"
)

// BenchmarkResolveForCreate places a listed tenant (string and number
// keys), and an unlisted one that goes on to the default hash ring, in a
// lookup of 1000 entries; run with:
// go test -run '^$' -bench . -benchmem ./lookup
func BenchmarkResolveForCreate(b *testing.B) {
	entries := map[any]resolver.Target{}
	for i := 0; i < 500; i++ {
		entries[fmt.Sprintf("tenant-%04d", i)] = to(fmt.Sprint("t", i%50))
		entries[100000+i] = to(fmt.Sprint("n", i%50))
	}
	ring, err := resolver.Unmarshal([]byte(`{"kind":"hash","collections":["dbs/app/colls/shared0","dbs/app/colls/shared1","dbs/app/colls/shared2"]}`))
	if err != nil {
		b.Fatal(err)
	}
	r, err := lookup.NewValues(resolver.MustKeyDef("/tenant"), entries, resolver.ResolverTarget(ring))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		key  any
	}{
		{"string-entry", "tenant-0123"},
		{"number-entry", 100123.0},
		{"default-ring", "small-tenant"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ResolveForCreate(c.key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParallel places listed tenants from every core at once: the
// read path takes no lock.
func BenchmarkParallel(b *testing.B) {
	r, err := resolver.Unmarshal([]byte(tenants))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.ResolveForCreate("bigcorp"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
