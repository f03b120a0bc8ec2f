package hashring

import (
	"crypto/md5"
	"fmt"
	"testing"
	"unsafe"
)

var sinkLink string
var sinkDigest [16]byte

// BenchmarkResolveForCreate compares a ring lookup with md5.Sum of the same
// key in the same run (the target: at most 1.5× md5.Sum, no
// allocation).
func BenchmarkResolveForCreate(b *testing.B) {
	keys := map[string]string{
		"key12": "user-0012345",
		"key36": "3f2c8a9e-5b1d-4c7e-9a2f-1d8e6b4c0a7f",
	}
	for _, kname := range []string{"key12", "key36"} {
		key := keys[kname]
		b.Run(kname+"/md5.Sum", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sinkDigest = md5.Sum(unsafe.Slice(unsafe.StringData(key), len(key)))
			}
		})
		for _, n := range []int{3, 100, 1000} {
			r, err := New(links("c", n), nil)
			if err != nil {
				b.Fatal(err)
			}
			var boxed any = key // the caller's key is already an interface value
			b.Run(fmt.Sprintf("%s/ring/%d", kname, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					sinkLink, _ = r.ResolveForCreate(boxed)
				}
			})
		}
	}
}

// BenchmarkResolveParallel runs lookups on every core: there is no lock on
// the read path, so ns/op falls as cores are added.
func BenchmarkResolveParallel(b *testing.B) {
	for _, strategy := range []string{StrategyRing, StrategyBounded} {
		r, err := New(links("c", 100), &Options{Strategy: strategy})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strategy, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var l string
				for pb.Next() {
					l, _ = r.ResolveForCreate("user-0012345")
				}
				_ = l
			})
		})
	}
}

// BenchmarkBuild measures building a ring.
func BenchmarkBuild(b *testing.B) {
	for _, tc := range []struct {
		n    int
		opts Options
	}{
		{1000, Options{}},
		{1000, Options{VirtualNodes: 160}},
		{1000, Options{Strategy: StrategyBounded}},
		{100, Options{Hash: FlavourMurmur3}},
	} {
		ls := links("c", tc.n)
		name := fmt.Sprintf("%d/%s/%s/%d", tc.n, tc.opts.Strategy, tc.opts.Hash, tc.opts.VirtualNodes)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				opts := tc.opts
				if _, err := New(ls, &opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBalance is a measurement, not a speed test: over 1,000,000 keys
// it reports the largest collection's load relative to the mean (max/mean),
// the smallest (min/mean), and the percentage of keys that move when one
// collection is added (ideal: 100/(n+1)). Run it once:
//
//	go test -run '^$' -bench Balance -benchtime 1x ./hashring
func BenchmarkBalance(b *testing.B) {
	const keys = 1_000_000
	configs := []struct {
		name string
		opts Options
	}{
		{"ring-16", Options{VirtualNodes: 16}},
		{"ring-160", Options{VirtualNodes: 160}},
		{"ring-1000", Options{VirtualNodes: 1000}},
		{"bounded-1.25", Options{Strategy: StrategyBounded}},
		{"bounded-1.10", Options{Strategy: StrategyBounded, LoadFactor: 1.1}},
	}
	for _, n := range []int{10, 100} {
		for _, c := range configs {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					before, err := New(links("c", n), &c.opts)
					if err != nil {
						b.Fatal(err)
					}
					after, err := New(links("c", n+1), &c.opts)
					if err != nil {
						b.Fatal(err)
					}
					counts := map[string]int{}
					moved := 0
					for k := 0; k < keys; k++ {
						key := fmt.Sprintf("key-%d", k)
						x, _ := before.ResolveForCreate(key)
						y, _ := after.ResolveForCreate(key)
						counts[x]++
						if x != y {
							moved++
						}
					}
					lo, hi := keys, 0
					for _, cnt := range counts {
						lo, hi = min(lo, cnt), max(hi, cnt)
					}
					if len(counts) < n {
						lo = 0
					}
					mean := float64(keys) / float64(n)
					b.ReportMetric(float64(hi)/mean, "max/mean")
					b.ReportMetric(float64(lo)/mean, "min/mean")
					b.ReportMetric(100*float64(moved)/keys, "moved%")
					b.ReportMetric(100/float64(n+1), "ideal-moved%")
				}
			})
		}
	}
}
