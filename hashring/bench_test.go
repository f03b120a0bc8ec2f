package hashring

import (
	"crypto/md5"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/resolver"
)

var (
	sinkLink   string
	sinkDigest [16]byte
)

// BenchmarkResolveForCreate compares a lookup on the default ring with
// md5.Sum of the same key in the same run (the target: at most 1.5×
// md5.Sum, no allocation), for 12- and 36-byte string keys and 3, 100 and
// 1000 collections; then numbers, composite keys and the other flavours.
//
//	go test -run '^$' -bench ResolveForCreate -benchmem ./hashring
func BenchmarkResolveForCreate(b *testing.B) {
	for _, key := range []string{"user-0012345", "3f2c8a9e-5b1d-4c7e-9a2f-1d8e6b4c0a7f"} {
		kname := fmt.Sprintf("key%d", len(key))
		b.Run(kname+"/md5.Sum", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkDigest = md5.Sum(unsafe.Slice(unsafe.StringData(key), len(key)))
			}
		})
		for _, n := range []int{3, 100, 1000} {
			r, err := New(links("c", n), nil)
			if err != nil {
				b.Fatal(err)
			}
			var boxed any = key // a caller's key is already an interface value
			b.Run(fmt.Sprintf("%s/ring/%d", kname, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sinkLink, _ = r.ResolveForCreate(boxed)
				}
			})
		}
	}
	for _, tc := range []struct {
		name string
		opts *Options
		key  any
	}{
		{"number/md5", nil, any(1234567.5)},
		{"int/md5", nil, any(int64(12345678))},
		{"composite/md5", nil, any(resolver.CompositeKey{"eu", 42.0})},
		{"string/xxhash", &Options{Hash: FlavourXXHash}, any("user-0012345")},
		{"string/murmur3", &Options{Hash: FlavourMurmur3}, any("user-0012345")},
		{"string/dotnet-x64", &Options{Hash: FlavourDotnetX64}, any("user-0012345")},
		{"string/bounded", &Options{Strategy: StrategyBounded}, any("user-0012345")},
		{"string/bounded-xxhash", &Options{Strategy: StrategyBounded, Hash: FlavourXXHash}, any("user-0012345")},
		{"string/balanced", &Options{Strategy: StrategyBalanced}, any("user-0012345")},
		{"string/balanced-xxhash", &Options{Strategy: StrategyBalanced, Hash: FlavourXXHash}, any("user-0012345")},
	} {
		r, err := New(links("c", 100), tc.opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/100", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkLink, _ = r.ResolveForCreate(tc.key)
			}
		})
	}
}

// BenchmarkResolveParallel runs lookups on every core (-cpu 1,2): there is
// no lock on the read path, so the time per lookup falls as cores are added.
//
//	go test -run '^$' -bench ResolveParallel -cpu 1,2 ./hashring
func BenchmarkResolveParallel(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts *Options
	}{
		{"ring", nil},
		{"xxhash", &Options{Hash: FlavourXXHash}},
		{"bounded", &Options{Strategy: StrategyBounded}},
	} {
		r, err := New(links("c", 100), tc.opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var key any = "user-0012345"
				var l string
				for pb.Next() {
					l, _ = r.ResolveForCreate(key)
				}
				sinkLink = l
			})
		})
	}
}

// BenchmarkBuild measures building resolvers (target: a 1000-collection
// ring of 16 virtual nodes under 5 ms; a balanced one of 10,000 under 1 s);
// cpu-ms/op is the process's CPU time per build, the garbage collector's
// included (steadier than the time per operation on a busy host).
//
//	go test -run '^$' -bench Build -benchmem ./hashring
func BenchmarkBuild(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
		opts *Options
	}{
		{"md5-16", 1000, nil},
		{"md5-160", 1000, &Options{VirtualNodes: 160}},
		{"xxhash-16", 1000, &Options{Hash: FlavourXXHash}},
		{"murmur3-128", 1000, &Options{Hash: FlavourMurmur3}},
		{"dotnet-x64-128", 1000, &Options{Hash: FlavourDotnetX64}},
		{"bounded-16", 100, &Options{Strategy: StrategyBounded}},
		{"bounded-16", 1000, &Options{Strategy: StrategyBounded}},
		{"balanced-256", 1000, &Options{Strategy: StrategyBalanced}},
		{"balanced-256", 10000, &Options{Strategy: StrategyBalanced}},
	} {
		ls := links("c", tc.n)
		b.Run(fmt.Sprintf("%s/%d", tc.name, tc.n), func(b *testing.B) {
			b.ReportAllocs()
			cpu, ok := proctest.CPU()
			for b.Loop() {
				if _, err := New(ls, tc.opts); err != nil {
					b.Fatal(err)
				}
			}
			if end, ok2 := proctest.CPU(); ok && ok2 {
				b.ReportMetric(float64((end-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
			}
		})
	}
}

// BenchmarkBalance is a measurement, not a speed test. For 10 and 100
// collections and each configuration it reports, over 1,000,000 keys
// ("key-0", "key-1", ...): the largest and smallest collection's load
// relative to the mean (max/mean, min/mean), the same from the ring's exact
// shares (exact-max/mean), and the percentage of keys that move when one
// collection is added, sampled and exact (ideal: 100/(n+1)). Run it once:
//
//	go test -run '^$' -bench Balance -benchtime 1x ./hashring
func BenchmarkBalance(b *testing.B) {
	const keys = 1_000_000
	configs := []struct {
		name string
		opts *Options
	}{
		{"ring-16", &Options{VirtualNodes: 16}},
		{"ring-160", &Options{VirtualNodes: 160}},
		{"ring-1000", &Options{VirtualNodes: 1000}},
		{"murmur3-128", &Options{Hash: FlavourMurmur3}},
		{"bounded-1.25", &Options{Strategy: StrategyBounded}},
		{"bounded-1.10", &Options{Strategy: StrategyBounded, LoadFactor: 1.1}},
		{"balanced-256", &Options{Strategy: StrategyBalanced}},
	}
	for _, n := range []int{10, 100} {
		for _, c := range configs {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				for b.Loop() {
					before, err := New(links("c", n), c.opts)
					if err != nil {
						b.Fatal(err)
					}
					after, err := New(links("c", n+1), c.opts)
					if err != nil {
						b.Fatal(err)
					}
					counts := make([]int, n)
					moved := 0
					buf := []byte("key-")
					for k := range keys {
						key := strconv.AppendInt(buf[:4], int64(k), 10)
						s := unsafe.String(unsafe.SliceData(key), len(key))
						x := before.Ring().OwnerString(s)
						counts[x]++
						if before.Ring().links[x] != after.Ring().links[after.Ring().OwnerString(s)] {
							moved++
						}
					}
					lo, hi := keys, 0
					for _, cnt := range counts {
						lo, hi = min(lo, cnt), max(hi, cnt)
					}
					mean := float64(keys) / float64(n)
					exactMax := 0.0
					for _, s := range before.Ring().Shares() {
						exactMax = max(exactMax, s*float64(n))
					}
					exactMoved, err := Moved(before.Ring(), after.Ring())
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(hi)/mean, "max/mean")
					b.ReportMetric(float64(lo)/mean, "min/mean")
					b.ReportMetric(exactMax, "exact-max/mean")
					b.ReportMetric(100*float64(moved)/keys, "moved%")
					b.ReportMetric(100*exactMoved, "exact-moved%")
					b.ReportMetric(100/float64(n+1), "ideal-moved%")
				}
			})
		}
	}
}

// BenchmarkLookupMany compares the default ring with the balanced strategy
// at 100, 1,000 and 10,000 collections on 65,536 distinct keys in turn, so
// the placement tables' size shows (a lookup of one key over and over keeps
// every table in the cache); table-MB is the size of the placement table,
// cpu-ns/op the process's CPU time per lookup (steadier than the time per
// operation on a busy host). The target: balanced no slower than the ring.
//
//	go test -run '^$' -bench LookupMany -benchmem -count 6 ./hashring
func BenchmarkLookupMany(b *testing.B) {
	keys := make([]any, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%07d", i*7919)
	}
	for _, n := range []int{100, 1000, 10000} {
		for _, tc := range []struct {
			name string
			opts *Options
		}{{"ring", nil}, {"balanced", &Options{Strategy: StrategyBalanced}}} {
			r, err := New(links("c", n), tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%d/%s", n, tc.name), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				cpu, ok := proctest.CPU()
				for b.Loop() {
					sinkLink, _ = r.ResolveForCreate(keys[i&(len(keys)-1)])
					i++
				}
				if end, ok2 := proctest.CPU(); ok && ok2 {
					b.ReportMetric(float64((end-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
				}
				b.ReportMetric(float64(tableBytes(r.Ring()))/1e6, "table-MB")
			})
		}
	}
}

// BenchmarkLookupPaired measures the same as BenchmarkLookupMany, the
// balanced strategy against the default ring on 65,536 keys in turn, but
// paired: the two resolvers take turns, 8,192 lookups each, within one run,
// and the figures are medians over the turns (ring-ns/lookup,
// balanced-ns/lookup) and over the ratios of adjacent turns
// (balanced/ring). A busy host slows both sides of a pair alike, so the
// ratio holds steady where separate runs of BenchmarkLookupMany differ by
// 30% (ns/op is the mean over both resolvers).
//
//	go test -run '^$' -bench LookupPaired -count 6 ./hashring
func BenchmarkLookupPaired(b *testing.B) {
	keys := make([]any, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%07d", i*7919)
	}
	const turn = 8192
	for _, n := range []int{100, 1000, 10000} {
		ring, err := New(links("c", n), nil)
		if err != nil {
			b.Fatal(err)
		}
		balanced, err := New(links("c", n), &Options{Strategy: StrategyBalanced})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			rs := [2]*Resolver{ring, balanced}
			var times [2][]float64
			k, side := 0, 0
			start := time.Now()
			for b.Loop() {
				sinkLink, _ = rs[side].ResolveForCreate(keys[k&(len(keys)-1)])
				k++
				if k%turn == 0 {
					now := time.Now()
					times[side] = append(times[side], float64(now.Sub(start).Nanoseconds())/turn)
					side ^= 1
					start = now
				}
			}
			pairs := min(len(times[0]), len(times[1]))
			if pairs == 0 {
				return // too short a run to pair turns
			}
			ratios := make([]float64, pairs)
			for i := range ratios {
				ratios[i] = times[1][i] / times[0][i]
			}
			b.ReportMetric(median(times[0]), "ring-ns/lookup")
			b.ReportMetric(median(times[1]), "balanced-ns/lookup")
			b.ReportMetric(median(ratios), "balanced/ring")
		})
	}
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkBalancedFigures reports the exact figures for the
// balanced strategy (Ring.Shares and Moved, no sampling) at 100, 1,000 and
// 10,000 collections: largest and smallest share against the mean, an
// added collection's share against the new mean, and the hash space moved
// by adding one collection (at the end) or removing one (from the middle)
// against the ideal. Run it once:
//
//	go test -run '^$' -bench BalancedFigures -benchtime 1x ./hashring
func BenchmarkBalancedFigures(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				f := measureBalanced(b, n, &Options{Strategy: StrategyBalanced})
				b.ReportMetric(f.max, "max/mean")
				b.ReportMetric(f.min, "min/mean")
				b.ReportMetric(f.added, "added/mean")
				b.ReportMetric(f.addMoved, "add-moved/ideal")
				b.ReportMetric(f.removeMoved, "remove-moved/ideal")
			}
		})
	}
}

// tableBytes is the memory of a ring's placement table: its points or
// boundaries, owners and index.
func tableBytes(g *Ring) int {
	return 8*(len(g.hi)+len(g.lo)) + 4*(len(g.owner)+len(g.hot)+len(g.rest)+len(g.index)) + len(g.mid)
}
