package lookup_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/linkset"
	"github.com/docshard/docshard/lookup"
	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
)

// treeGen builds random resolver trees of lookups, ranges and hash rings
// nested in one another, through the Go constructors.
type treeGen struct {
	rng   *rand.Rand
	links int
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// link is a new collection most of the time, else one already used, so
// trees share collections as real ones do.
func (g *treeGen) link() string {
	if g.links > 0 && g.rng.IntN(4) == 0 {
		return coll(fmt.Sprint("c", g.rng.IntN(g.links)))
	}
	g.links++
	return coll(fmt.Sprint("c", g.links-1))
}

func (g *treeGen) target(depth int) resolver.Target {
	if depth < 3 && g.rng.IntN(3) == 0 {
		return resolver.ResolverTarget(g.tree(depth + 1))
	}
	return resolver.LinkTarget(g.link())
}

func (g *treeGen) keyDef(depth int, composite bool) resolver.KeyDef {
	if depth > 0 && g.rng.IntN(2) == 0 {
		return resolver.KeyDef{}
	}
	paths := []string{"/k", "/a/b", `/"the key"`, `/"q\"uote"/x`}
	if composite && g.rng.IntN(4) == 0 {
		return resolver.MustKeyDef(paths[0], paths[1+g.rng.IntN(3)])
	}
	return resolver.MustKeyDef(paths[g.rng.IntN(len(paths))])
}

func (g *treeGen) tree(depth int) resolver.Resolver {
	rng := g.rng
	var (
		r   resolver.Resolver
		err error
	)
	switch rng.IntN(3) {
	case 0:
		entries := map[any]resolver.Target{}
		for i, n := 0, rng.IntN(5); i < n; i++ {
			switch rng.IntN(3) {
			case 0:
				entries[fmt.Sprint("v", rng.IntN(8))] = g.target(depth)
			case 1:
				entries[rng.IntN(8)] = g.target(depth)
			default:
				entries[float64(rng.IntN(8))+0.5] = g.target(depth)
			}
		}
		var def resolver.Target
		if len(entries) == 0 || rng.IntN(2) == 0 {
			def = g.target(depth)
		}
		r, err = lookup.NewValues(g.keyDef(depth, true), entries, def)
	case 1:
		var def resolver.Target
		if rng.IntN(2) == 0 {
			def = g.target(depth)
		}
		n := rng.IntN(5)
		if n == 0 && def.IsZero() {
			n = 1
		}
		key := g.keyDef(depth, false)
		switch rng.IntN(3) {
		case 0:
			es := make([]rangeresolver.Entry[string], n)
			for i := range es {
				lo := fmt.Sprint("v", 2*i)
				es[i] = rangeresolver.Entry[string]{Range: rangeresolver.Range[string]{Low: lo, High: lo + []string{"", "~"}[rng.IntN(2)]}, Target: g.target(depth)}
			}
			r, err = rangeresolver.New(key, es, def)
		case 1:
			es := make([]rangeresolver.Entry[float64], n)
			lo := float64(rng.IntN(4)) - 0.25
			for i := range es {
				hi := lo + float64(rng.IntN(8))/4
				es[i] = rangeresolver.Entry[float64]{Range: rangeresolver.Range[float64]{Low: lo, High: hi}, Target: g.target(depth)}
				lo = math.Nextafter(hi, math.Inf(1)) + float64(rng.IntN(2))
			}
			rng.Shuffle(n, func(i, j int) { es[i], es[j] = es[j], es[i] })
			r, err = rangeresolver.New(key, es, def)
		default:
			es := make([]rangeresolver.Entry[time.Time], n)
			at := epoch.In(time.FixedZone("", 1800*(rng.IntN(9)-4)))
			for i := range es {
				end := at.Add(time.Duration(1+rng.IntN(48))*time.Hour - time.Nanosecond)
				es[i] = rangeresolver.Entry[time.Time]{Range: rangeresolver.Range[time.Time]{Low: at, High: end}, Target: g.target(depth)}
				at = end.Add(time.Nanosecond + time.Duration(rng.IntN(2))*time.Hour)
			}
			r, err = rangeresolver.New(key, es, def)
		}
	default:
		links := make([]string, 1+rng.IntN(5))
		seen := map[string]bool{}
		for i := range links {
			for links[i] = g.link(); seen[links[i]]; links[i] = g.link() {
			}
			seen[links[i]] = true
		}
		o := &hashring.Options{PartitionKey: g.keyDef(depth, true)}
		switch rng.IntN(4) {
		case 0:
			o.Strategy = hashring.StrategyBounded
			o.LoadFactor = []float64{0, 1.25, 2}[rng.IntN(3)]
			o.PartitionCount = []int{0, 271}[rng.IntN(2)]
			o.VirtualNodes = []int{0, 8, 29}[rng.IntN(3)] // 1 virtual node fails for some counts (reported)
		default:
			o.Hash = []string{"", "md5", "xxhash", "murmur3", "dotnet-x64", "dotnet-x86"}[rng.IntN(6)]
			o.VirtualNodes = rng.IntN(200)
		}
		r, err = hashring.New(links, o)
	}
	if err != nil {
		panic(err)
	}
	return r
}

// keys are what the trees are asked to place: strings, numbers of several
// Go types, times as text and as time.Time, composite keys, ranges of each
// type, and keys no resolver takes.
func (g *treeGen) keys(n int) []any {
	rng := g.rng
	out := []any{nil, true, resolver.Null, resolver.CompositeKey{"v1", 2}}
	for i := 0; i < n; i++ {
		at := epoch.Add(time.Duration(rng.IntN(400)) * time.Hour / 2)
		switch rng.IntN(9) {
		case 0:
			out = append(out, fmt.Sprint("v", rng.IntN(10)))
		case 1:
			out = append(out, fmt.Sprint("v", rng.IntN(10), "~"))
		case 2:
			out = append(out, rng.IntN(10))
		case 3:
			out = append(out, float64(rng.IntN(40))/4-1)
		case 4:
			out = append(out, at.Format(time.RFC3339Nano), at.In(time.FixedZone("", 3600)).Format(time.RFC3339))
		case 5:
			out = append(out, at)
		case 6:
			out = append(out, rangeresolver.Range[time.Time]{Low: at, High: at.Add(time.Duration(rng.IntN(100)) * time.Hour)})
		case 7:
			lo := float64(rng.IntN(40))/4 - 1
			out = append(out, rangeresolver.Range[float64]{Low: lo, High: lo + float64(rng.IntN(12))})
		default:
			lo := fmt.Sprint("v", rng.IntN(10))
			out = append(out, rangeresolver.Range[string]{Low: lo, High: lo + "~"}, resolver.CompositeKey{lo, rng.IntN(3)})
		}
	}
	return out
}

// describe writes every setting of a tree from its accessors, not from
// its JSON, so the round trip is checked setting by setting.
func describe(r resolver.Resolver) string {
	var b strings.Builder
	describeTo(&b, r)
	return b.String()
}

func describeTo(b *strings.Builder, r resolver.Resolver) {
	target := func(t resolver.Target) {
		if t.Resolver != nil {
			b.WriteString("(")
			describeTo(b, t.Resolver)
			b.WriteString(")")
			return
		}
		fmt.Fprintf(b, "%q", t.Link)
	}
	switch x := r.(type) {
	case *lookup.Resolver:
		fmt.Fprintf(b, "lookup key=%q {", x.KeyDef().Paths())
		entries := x.Entries()
		for _, name := range x.Names() {
			fmt.Fprintf(b, "%q: ", name)
			target(entries[name])
			b.WriteString(", ")
		}
		b.WriteString("} default=")
		target(x.Default())
	case *rangeresolver.Resolver:
		fmt.Fprintf(b, "range key=%q type=%s [", x.KeyDef().Paths(), x.KeyType())
		if es, ok := rangeresolver.Ranges[string](x); ok {
			for _, e := range es {
				fmt.Fprintf(b, "%q..%q: ", e.Range.Low, e.Range.High)
				target(e.Target)
			}
		}
		if es, ok := rangeresolver.Ranges[float64](x); ok {
			for _, e := range es {
				fmt.Fprintf(b, "%b..%b: ", e.Range.Low, e.Range.High) // exact bits
				target(e.Target)
			}
		}
		if es, ok := rangeresolver.Ranges[time.Time](x); ok {
			for _, e := range es {
				_, lo := e.Range.Low.Zone()
				_, hi := e.Range.High.Zone()
				fmt.Fprintf(b, "%d%+d..%d%+d: ", e.Range.Low.UnixNano(), lo, e.Range.High.UnixNano(), hi)
				target(e.Target)
			}
		}
		b.WriteString("] default=")
		target(x.Default())
	case *hashring.Resolver:
		fmt.Fprintf(b, "hash key=%q %q vn=%d hash=%s strategy=%s load=%v partitions=%d",
			x.KeyDef().Paths(), x.Collections(), x.VirtualNodes(), x.Hash(), x.Strategy(), x.LoadFactor(), x.PartitionCount())
	default:
		fmt.Fprintf(b, "%T", r)
	}
}

// TestRandomTreesRoundTrip: random trees of lookups, ranges and rings
// survive resolver.Marshal and resolver.Unmarshal with every setting intact
// and place every key (and range) exactly as before, errors included.
func TestRandomTreesRoundTrip(t *testing.T) {
	rounds := 400
	if testing.Short() {
		rounds = 80
	}
	g := &treeGen{rng: rand.New(rand.NewPCG(5, 6))}
	kinds := map[string]int{}
	for round := 0; round < rounds; round++ {
		g.links = 0
		r := g.tree(0)
		kinds[r.(resolver.Kinded).Kind()]++
		data, err := resolver.Marshal(r)
		require.NoError(t, err)
		back, err := resolver.Unmarshal(data)
		require.NoError(t, err, "%s", data)
		require.Equal(t, describe(r), describe(back), "every setting survives: %s", data)
		again, err := resolver.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(data), string(again))

		all, err := r.ResolveForRead(nil)
		require.NoError(t, err)
		allBack, err := back.ResolveForRead(nil)
		require.NoError(t, err)
		require.Equal(t, all, allBack)
		require.Equal(t, linkset.Union(all), all, "each link once")
		for _, key := range g.keys(60) {
			x, errX := r.ResolveForCreate(key)
			y, errY := back.ResolveForCreate(key)
			require.Equal(t, fmt.Sprint(errX), fmt.Sprint(errY), "%v in %s", key, data)
			require.Equal(t, x, y, "%v in %s", key, data)
			rx, errRX := r.ResolveForRead(key)
			ry, errRY := back.ResolveForRead(key)
			require.Equal(t, fmt.Sprint(errRX), fmt.Sprint(errRY), "%v in %s", key, data)
			require.Equal(t, rx, ry, "%v in %s", key, data)
			if errX == nil {
				assert.Contains(t, rx, x, "a read finds where a create put %v: %s", key, data)
			}
			for _, l := range rx {
				assert.Contains(t, all, l, "a read names only the resolver's links")
			}
		}
	}
	for _, k := range []string{lookup.Kind, rangeresolver.Kind, hashring.Kind} {
		assert.Greater(t, kinds[k], rounds/6, "roots of kind %s", k)
	}
}
