package rangeresolver

import (
	"fmt"
	"testing"
	"time"

	"github.com/docshard/docshard/resolver"
)

// BenchmarkResolveForCreate places one key among n ranges of each key type;
// run with: go test -run '^$' -bench . -benchmem ./rangeresolver
func BenchmarkResolveForCreate(b *testing.B) {
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{12, 1000} {
		nums := make([]Entry[float64], n)
		strs := make([]Entry[string], n)
		times := make([]Entry[time.Time], n)
		for i := 0; i < n; i++ {
			target := link(fmt.Sprint("c", i))
			nums[i] = Entry[float64]{Range[float64]{float64(i * 10), float64(i*10) + 9.5}, target}
			strs[i] = Entry[string]{Range[string]{fmt.Sprintf("user%05d", i*10), fmt.Sprintf("user%05d~", i*10+9)}, target}
			m := start.AddDate(0, i, 0)
			times[i] = Entry[time.Time]{Range[time.Time]{m, m.AddDate(0, 1, 0).Add(-time.Nanosecond)}, target}
		}
		mid := n / 2
		at := start.AddDate(0, mid, 14)
		for _, c := range []struct {
			name  string
			build func() (*Resolver, error)
			key   any
		}{
			{"number", func() (*Resolver, error) { return New(resolver.KeyDef{}, nums, resolver.Target{}) }, float64(mid*10 + 3)},
			{"string", func() (*Resolver, error) { return New(resolver.KeyDef{}, strs, resolver.Target{}) }, fmt.Sprintf("user%05d", mid*10+3)},
			{"time", func() (*Resolver, error) { return New(resolver.KeyDef{}, times, resolver.Target{}) }, at},
			{"time-string", func() (*Resolver, error) { return New(resolver.KeyDef{}, times, resolver.Target{}) }, at.Format(time.RFC3339)},
		} {
			r, err := c.build()
			if err != nil {
				b.Fatal(err)
			}
			want := coll(fmt.Sprint("c", mid))
			b.Run(fmt.Sprintf("%s/ranges=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					got, err := r.ResolveForCreate(c.key)
					if err != nil || got != want {
						b.Fatal(got, err)
					}
				}
			})
		}
	}
}

// BenchmarkResolveForReadRange reads a query range spanning three months
// of the three-month resolver of the tests.
func BenchmarkResolveForReadRange(b *testing.B) {
	r := monthly(b)
	q := Range[time.Time]{day(1, 20), day(3, 10)}
	b.ReportAllocs()
	for b.Loop() {
		if links, err := r.ResolveForRead(q); err != nil || len(links) != 3 {
			b.Fatal(links, err)
		}
	}
}

// BenchmarkNew builds a resolver of 1000 time ranges.
func BenchmarkNew(b *testing.B) {
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	es := make([]Entry[time.Time], 1000)
	for i := range es {
		m := start.AddDate(0, i, 0)
		es[len(es)-1-i] = Entry[time.Time]{Range[time.Time]{m, m.AddDate(0, 1, 0).Add(-time.Nanosecond)}, link(fmt.Sprint("c", i))}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(resolver.KeyDef{}, es, resolver.Target{}); err != nil {
			b.Fatal(err)
		}
	}
}
