package routertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// PointReads is what BenchPointReads measures: documents already stored
// in Store, routed by Client for the database DB under Resolver.
type PointReads struct {
	// Store is the backend, read directly by the comparisons.
	Store store.Store
	// Client routes over Store (its own Store or a wrapper of it, as long
	// as reads reach the same documents).
	Client *router.Client
	// DB is the database link Resolver is registered for in Client.
	DB string
	// Resolver is the registered resolver: the caller that places keys
	// itself (store+placement) places them with it.
	Resolver resolver.Resolver
	// Keys and IDs are the stored documents' partition keys and ids, one
	// document per key. The cold reads cycle through all of them, so there
	// should be several times more than the client's route cache holds
	// (the figure: 20,000 keys over 4,096 entries).
	Keys []any
	IDs  []string
	// Hot is the index of the key the hot reads repeat.
	Hot int
	// Block is how many calls of each side a paired comparison times in
	// one go; 0 means 256. Make a block last about a millisecond: long
	// enough for the clock, short enough that the host's load barely
	// changes between the two sides.
	Block int
}

// BenchPointReads measures the router's own cost on point reads over a
// backend, as the router's first performance issue states it: the cost
// over a caller that knows where each key lives (hot reads, one key
// repeated: the store's own Read), and over a caller that places each key
// itself with the same resolver and then reads (cold reads cycling through
// every key: store+placement; hashing onto the ring is the price of
// sharding, not of the router). Its sub-benchmarks:
//
//   - read/hot/store, read/hot/router, read/cold/store,
//     read/cold/store+placement, read/cold/router: each side alone, time
//     and allocations per read;
//   - read/hot/router-vs-store and read/cold/router-vs-store+placement: the
//     two sides in alternating blocks of Block calls (one iteration is a
//     call of each), reporting the median over blocks of the router's time
//     over the other side's (ratio; compare allocations in the separate
//     sub-benchmarks). Blocks alternate which side goes first, and the
//     cold sides read keys half the keys apart (which side reads which
//     half alternates too), so neither finds the other's document in the
//     CPU's caches. Pairing cancels most of a shared host's drift, which
//     separate runs do not.
//
// Every document is read once before the sub-benchmarks, so none of them
// pays for a first read.
//
// Cost: the reads themselves; every sub-benchmark fails at the first error.
func BenchPointReads(b *testing.B, p PointReads) {
	ctx := context.Background()
	n := len(p.Keys)
	if n == 0 || len(p.IDs) != n || p.Hot < 0 || p.Hot >= n {
		b.Fatalf("routertest: PointReads needs as many ids as keys (%d, %d) and a hot key among them (%d)", n, len(p.IDs), p.Hot)
	}
	block := p.Block
	if block <= 0 {
		block = 256
	}
	// The direct callers hold each key's collection and read options
	// ready, so their reads allocate nothing of their own.
	targets := make([]string, n)
	opts := make([]store.ReadOptions, n)
	for i, k := range p.Keys {
		t, err := p.Resolver.ResolveForCreate(k)
		if err != nil {
			b.Fatalf("routertest: placing key %v: %v", k, err)
		}
		targets[i], opts[i] = t, store.ReadOptions{PartitionKey: k}
	}
	// Every document is read once first, so that no side pays for a
	// store's first read of a document (a backend may decode or cache it
	// then) on keys another side has already read.
	var g errgroup.Group
	g.SetLimit(16)
	for j := range n {
		g.Go(func() error {
			_, err := p.Store.Read(ctx, targets[j], p.IDs[j], &opts[j])
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("routertest: reading every document once: %v", err)
	}
	cold := func(i int) int { return (i * 7919) % n } // 7919 is prime: every key once per n reads
	hot := func(int) int { return p.Hot }
	// One read per side, of the key pick(i) gives.
	store1 := func(pick func(int) int) func(int) error {
		return func(i int) error {
			j := pick(i)
			_, err := p.Store.Read(ctx, targets[j], p.IDs[j], &opts[j])
			return err
		}
	}
	placed := func(pick func(int) int) func(int) error {
		return func(i int) error {
			j := pick(i)
			l, err := p.Resolver.ResolveForCreate(p.Keys[j])
			if err != nil {
				return err
			}
			_, err = p.Store.Read(ctx, l, p.IDs[j], &opts[j])
			return err
		}
	}
	routed := func(pick func(int) int) func(int) error {
		return func(i int) error {
			j := pick(i)
			_, err := p.Client.Read(ctx, p.DB, p.IDs[j], p.Keys[j])
			return err
		}
	}
	for _, s := range []struct {
		name string
		read func(int) error
	}{
		{"read/hot/store", store1(hot)},
		{"read/hot/router", routed(hot)},
		{"read/cold/store", store1(cold)},
		{"read/cold/store+placement", placed(cold)},
		{"read/cold/router", routed(cold)},
	} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := s.read(i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("read/hot/router-vs-store", func(b *testing.B) { paired(b, block, n/2, store1(hot), routed(hot)) })
	b.Run("read/cold/router-vs-store+placement", func(b *testing.B) { paired(b, block, n/2, placed(cold), routed(cold)) })
}

// paired runs base and cand in alternating blocks of block calls each and
// reports the median of cand's time over base's per block (ratio). The
// sides take turns going first, and calls i of the two sides in a block
// are i and i+shift, the side given the shift changing every other block.
func paired(b *testing.B, block, shift int, base, cand func(int) error) {
	var ratios []float64
	run := func(f func(int) error, from, k, shift int) time.Duration {
		start := time.Now()
		for i := from; i < from+k; i++ {
			if err := f(i + shift); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	for from, round := 0, 0; from < b.N; from, round = from+block, round+1 {
		k := min(block, b.N-from)
		sb, sc := 0, shift
		if round/2%2 == 1 {
			sb, sc = shift, 0
		}
		var tb, tc time.Duration
		if round%2 == 0 {
			tb = run(base, from, k, sb)
			tc = run(cand, from, k, sc)
		} else {
			tc = run(cand, from, k, sc)
			tb = run(base, from, k, sb)
		}
		if tb > 0 {
			ratios = append(ratios, float64(tc)/float64(tb))
		}
	}
	slices.Sort(ratios)
	if len(ratios) > 0 {
		b.ReportMetric(ratios[len(ratios)/2], "ratio")
	}
}
