package lookup_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docshard/docshard/internal/proctest"
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

// BenchmarkDecodeMaxWork decodes a lookup whose 31 entries are rings of 2
// collections × 65,536 virtual nodes, close to resolver.MaxWork (issue 27,
// finding 6: about 4.5 s and 217 MB on a loaded 2-core host): the same
// ring 31 times, as the finding wrote it, and 31 rings of their own
// collections, each decoded in a process holding no resolver (the heap
// collected before each decode, outside the timing); then the next
// version of the distinct rings, one ring changed, decoded while the
// current one is held, as a following router does. cpu-ms/op is the
// process's CPU in the decodes (the garbage collector's included), steadier
// than the time on a busy host. Run with:
// go test -run '^$' -bench DecodeMaxWork -benchmem -count 6 ./lookup
func BenchmarkDecodeMaxWork(b *testing.B) {
	lookupOf := func(ring func(i int) string) []byte {
		var es []string
		for i := range 31 {
			es = append(es, fmt.Sprintf(`"t%d":{"kind":"hash","collections":[%s],"virtualNodes":65536}`, i, ring(i)))
		}
		return []byte(`{"kind":"lookup","entries":{` + strings.Join(es, ",") + `}}`)
	}
	same := lookupOf(func(int) string { return `"dbs/a/colls/x","dbs/a/colls/y"` })
	distinct := lookupOf(func(i int) string { return fmt.Sprintf(`"dbs/a/colls/x%d","dbs/a/colls/y%d"`, i, i) })
	next := lookupOf(func(i int) string {
		if i == 0 {
			return `"dbs/a/colls/x0","dbs/a/colls/y0","dbs/a/colls/z0"`
		}
		return fmt.Sprintf(`"dbs/a/colls/x%d","dbs/a/colls/y%d"`, i, i)
	})
	var cpu time.Duration // the process's CPU in decodes, every goroutine's
	decode := func(b *testing.B, data []byte) {
		before, _ := proctest.CPU()
		if _, err := resolver.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
		after, _ := proctest.CPU()
		cpu += after - before
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		cpu = 0
	}
	cold := func(data []byte) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				decode(b, data)
			}
			report(b)
		}
	}
	b.Run("same-ring", cold(same))
	b.Run("distinct-rings", cold(distinct))
	b.Run("next-version", func(b *testing.B) {
		current, err := resolver.Unmarshal(distinct)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			runtime.GC() // the next version decoded last time is gone
			b.StartTimer()
			decode(b, next)
		}
		report(b)
		runtime.KeepAlive(current)
	})
}
