package hashring

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/resolver/resolvertest"
)

// balancedFigures are the exact figures the issue judges the balanced
// strategy on: the largest and smallest share against the mean, the share
// an added collection gets against the new mean, and the hash space moved
// by adding one collection at the end or removing one from the middle,
// against the ideal 1/(n+1) and 1/n.
type balancedFigures struct {
	max, min, added, addMoved, removeMoved float64
}

func measureBalanced(t testing.TB, n int, opts *Options) balancedFigures {
	ls := links("c", n+1)
	before, err := New(ls[:n], opts)
	require.NoError(t, err)
	grown, err := New(ls, opts)
	require.NoError(t, err)
	shrunk, err := New(slices.Delete(slices.Clone(ls[:n]), n/2, n/2+1), opts)
	require.NoError(t, err)
	shares := before.Ring().Shares()
	add, err := Moved(before.Ring(), grown.Ring())
	require.NoError(t, err)
	remove, err := Moved(before.Ring(), shrunk.Ring())
	require.NoError(t, err)
	return balancedFigures{
		max:         slices.Max(shares) * float64(n),
		min:         slices.Min(shares) * float64(n),
		added:       grown.Ring().Shares()[n] * float64(n+1),
		addMoved:    add * float64(n+1),
		removeMoved: remove * float64(n),
	}
}

// TestBalancedTargets checks the targets on exact shares at 10, 100
// and 1,000 collections (10,000 with DOCSHARD_BIG=1: a second or so per
// build): largest/mean <= 1.10, smallest/mean >= 0.90, an added collection
// within the same band, and moves within 0.8-1.5× the ideal.
func TestBalancedTargets(t *testing.T) {
	sizes := []int{10, 100, 1000}
	if os.Getenv("DOCSHARD_BIG") != "" {
		sizes = append(sizes, 10000)
	}
	for _, n := range sizes {
		for _, hash := range []string{FlavourMD5, FlavourXXHash} {
			t.Run(fmt.Sprintf("%s/%d", hash, n), func(t *testing.T) {
				f := measureBalanced(t, n, &Options{Strategy: StrategyBalanced, Hash: hash})
				t.Logf("%+v", f)
				assert.LessOrEqual(t, f.max, 1+BalancedTolerance+1e-9, "largest/mean")
				assert.GreaterOrEqual(t, f.min, 1-BalancedTolerance-1e-9, "smallest/mean")
				assert.InDelta(t, 1, f.added, BalancedTolerance+1e-9, "an added collection's share against the new mean")
				assert.InDelta(t, 1.15, f.addMoved, 0.35, "moved on adding one, against the ideal")
				assert.InDelta(t, 1.15, f.removeMoved, 0.35, "moved on removing one, against the ideal")
			})
		}
	}
}

func TestBalancedJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, in, out string
	}{
		{"defaults", `{"kind":"hash","collections":["dbs/a/colls/x","dbs/a/colls/y"],"strategy":"balanced"}`,
			`{"kind":"hash","collections":["dbs/a/colls/x","dbs/a/colls/y"],"virtualNodes":256,"hash":"md5","strategy":"balanced"}`},
		{"xxhash, 64 points", `{"kind":"hash","partitionKey":"/u","collections":["dbs/a/colls/x"],"strategy":"balanced","hash":"xxhash","virtualNodes":64}`,
			`{"kind":"hash","partitionKey":"/u","collections":["dbs/a/colls/x"],"virtualNodes":64,"hash":"xxhash","strategy":"balanced"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := resolver.Unmarshal([]byte(tc.in))
			require.NoError(t, err)
			out, err := json.Marshal(r)
			require.NoError(t, err)
			assert.JSONEq(t, tc.out, string(out))
			again, err := resolver.Unmarshal(out)
			require.NoError(t, err)
			for _, k := range []string{"alice", "J1", "U4", "bob"} {
				a, _ := r.ResolveForCreate(k)
				b, _ := again.ResolveForCreate(k)
				assert.Equal(t, a, b, k)
			}
		})
	}
}

func TestBalancedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, in, field string
	}{
		{"legacy flavour", `{"kind":"hash","collections":["dbs/a/colls/x"],"strategy":"balanced","hash":"murmur3"}`, "hash"},
		{"load factor", `{"kind":"hash","collections":["dbs/a/colls/x"],"strategy":"balanced","loadFactor":1.1}`, "loadFactor"},
		{"partition count", `{"kind":"hash","collections":["dbs/a/colls/x"],"strategy":"balanced","partitionCount":100}`, "partitionCount"},
		{"unknown strategy", `{"kind":"hash","collections":["dbs/a/colls/x"],"strategy":"even"}`, "strategy"},
		{"too many points", `{"kind":"hash","collections":["dbs/a/colls/x"],"strategy":"balanced","virtualNodes":70000}`, "virtualNodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.in))
			resolvertest.ConfigError(t, err, tc.field, "")
		})
	}
}

// TestBalancedPlacementIsPinned fixes where the balanced strategy puts
// 20,000 keys (a SHA-256 of the owners, as TestPlacementIsPinned does for
// the other strategies) and the vectors of docs/design.md: a change to the
// points, the weights or the cuts moves keys of every deployed database.
func TestBalancedPlacementIsPinned(t *testing.T) {
	ls := []string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"}
	r, err := New(ls, &Options{Strategy: StrategyBalanced})
	require.NoError(t, err)
	got := map[string]string{}
	for _, k := range []string{"J1", "U4", "alice"} {
		l, err := r.ResolveForCreate(k)
		require.NoError(t, err)
		got[k] = l[len("dbs/app/colls/"):]
	}
	assert.Equal(t, map[string]string{"J1": "users2", "U4": "users1", "alice": "users2"}, got)
	assert.Equal(t, []string{"33.1%", "34.1%", "32.8%"}, percents(r.Ring().Shares()))

	for _, hash := range []string{FlavourMD5, FlavourXXHash} {
		r, err := New(links("pin", 7), &Options{Strategy: StrategyBalanced, Hash: hash})
		require.NoError(t, err)
		h := sha256.New()
		for k := range 20000 {
			i := r.Ring().OwnerString("key-" + strconv.Itoa(k))
			h.Write([]byte{byte(i)})
		}
		t.Logf("%s: %x", hash, h.Sum(nil))
		want := map[string]string{
			FlavourMD5:    "a7ac3a105086bd561b2d2cf049ab15b807d7c806155dd37d8a40aed8c4761081",
			FlavourXXHash: "45f0cf2b8cf5d3dc11753ed1668184ee26d803513ad3db74c2d144776017d0d9",
		}[hash]
		assert.Equal(t, want, hex.EncodeToString(h.Sum(nil)), hash)
	}
}

func percents(shares []float64) []string {
	out := make([]string, len(shares))
	for i, s := range shares {
		out[i] = fmt.Sprintf("%.1f%%", 100*s)
	}
	return out
}

// referenceBalanced is the balanced strategy computed the slow way, from
// its definition (docs/design.md#the-balanced-strategy, steps 1 to 3): the
// points and tuned weights of a ring like g; a position's owner found from
// the arc of points holding it and the side of the arc's cut it lies on;
// and from that the table the first version of the package stored (sorted
// boundaries, 12 bytes each, searched by binary search). The packed table
// must place every position as it does: data placed by a resolver stays
// put.
type referenceBalanced struct {
	pts    []uint64 // the points, sorted
	own    []int32  // each point's owner
	w      []uint64 // the tuned weights
	hi     []uint64 // the boundaries, sorted
	owner  []int32  // each boundary's owner
	shares []float64
}

func newReferenceBalanced(t testing.TB, g *Ring, vnodes int) referenceBalanced {
	ref := &Ring{links: g.links, hk: g.hk, gen: g.gen, size: g.size, kind: kindDigest}
	require.NoError(t, ref.build(ref.balancedChain(), vnodes))
	r := referenceBalanced{pts: ref.hi, own: ref.owner}
	if len(g.links) == 1 {
		r.hi, r.owner, r.shares = r.pts[:1], r.own[:1], []float64{1}
		return r
	}
	r.w = ref.balancedWeights()
	// Ownership changes only just after a point or a cut: every interval
	// (previous candidate, candidate] has the candidate's owner. The
	// boundaries are the candidates whose owner differs from the next
	// one's.
	m := len(r.pts)
	candidates := slices.Clone(r.pts)
	for i := range m {
		j := (i + m - 1) % m
		a, b := r.own[j], r.own[i]
		if length := r.pts[i] - r.pts[j]; length > 0 && a != b {
			if cut := split(length, r.w[a], r.w[b]); cut > 0 {
				candidates = append(candidates, r.pts[j]+cut)
			}
		}
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	for k, c := range candidates {
		o := r.define(c)
		if o != r.define(candidates[(k+1)%len(candidates)]) {
			r.hi, r.owner = append(r.hi, c), append(r.owner, int32(o))
		}
	}
	// Exact shares from the boundaries' arcs (several links own parts of
	// the circle, so no sum reaches 2^64).
	sums := make([]uint64, len(g.links))
	for i := range r.hi {
		sums[r.owner[i]] += r.hi[i] - r.hi[(i+len(r.hi)-1)%len(r.hi)]
	}
	for _, s := range sums {
		r.shares = append(r.shares, float64(s)/(1<<64))
	}
	return r
}

// define is the placement by its definition (step 2): the arc (point i-1,
// point i] holding x, where the first of equal points ends the arc, and
// which side of the arc's cut x lies on.
func (r referenceBalanced) define(x uint64) int {
	if r.w == nil {
		return 0
	}
	i, _ := slices.BinarySearch(r.pts, x)
	if i == len(r.pts) {
		i = 0
	}
	j := (i + len(r.pts) - 1) % len(r.pts)
	a, b := r.own[j], r.own[i]
	if a != b && x-r.pts[j] <= split(r.pts[i]-r.pts[j], r.w[a], r.w[b]) {
		return int(a)
	}
	return int(b)
}

// locate is the first version's lookup: the owner of the first boundary at
// or after x, wrapping to the first.
func (r referenceBalanced) locate(x uint64) int {
	i, _ := slices.BinarySearch(r.hi, x)
	if i == len(r.hi) {
		i = 0
	}
	return int(r.owner[i])
}

// TestBalancedTableMatchesReference: the packed table places every
// position as the reference's unpacked table searched by binary search
// (the first version's lookup) and as the definition itself says — at
// every boundary and its two neighbours, every point, 0, 2^64-1 and 20,000
// random positions — for 1 to 1,000 collections (10,000 with
// DOCSHARD_BIG=1), 1 to 256 points each, both flavours, and small rings
// also with buckets of 1 and 8 boundaries on average; its boundaries,
// owners and exact shares are the reference's too.
// TestBalancedPlacementIsPinned fixes the placement itself.
func TestBalancedTableMatchesReference(t *testing.T) {
	saved := bucketBits
	t.Cleanup(func() { bucketBits = saved })
	type config struct{ n, vnodes int }
	configs := []config{{1, 1}, {1, 256}, {2, 1}, {2, 3}, {3, 256}, {10, 1}, {10, 32}, {100, 7}, {100, 256}, {1000, 16}, {1000, 256}}
	if os.Getenv("DOCSHARD_BIG") != "" {
		configs = append(configs, config{10000, 256})
	}
	for _, c := range configs {
		for _, hash := range []string{FlavourMD5, FlavourXXHash} {
			if hash != FlavourMD5 && c.n*c.vnodes > 100000 {
				continue // the large rings once: seconds under -race
			}
			sizes := []int{saved}
			if c.n*c.vnodes <= 10000 {
				sizes = append(sizes, 0, 3) // a bucket of one or eight on average
			}
			for _, bb := range sizes {
				t.Run(fmt.Sprintf("%s/n=%d/v=%d/bucket=%d", hash, c.n, c.vnodes, 1<<bb), func(t *testing.T) {
					bucketBits = bb
					opts := &Options{Strategy: StrategyBalanced, Hash: hash, VirtualNodes: c.vnodes}
					r, err := New(links("c", c.n), opts)
					require.NoError(t, err)
					g := r.Ring()
					ref := newReferenceBalanced(t, g, c.vnodes)
					require.Equal(t, len(ref.hi), g.Len())
					hi, owner := g.unpack()
					require.Equal(t, ref.hi, hi, "boundaries")
					require.Equal(t, ref.owner, owner, "owners")
					assert.Equal(t, ref.shares, g.Shares())
					check := func(x uint64) {
						want := ref.locate(x)
						if got := g.locate(x, 0); got != want {
							require.Failf(t, "placement moved", "position %#x: owner %d, the reference %d", x, got, want)
						}
						if d := ref.define(x); d != want {
							require.Failf(t, "reference disagrees with the definition", "position %#x: table %d, definition %d", x, want, d)
						}
					}
					check(0)
					check(^uint64(0))
					for _, at := range ref.hi {
						check(at - 1)
						check(at)
						check(at + 1)
					}
					for _, at := range ref.pts {
						check(at)
					}
					x := uint64(c.n*1000 + c.vnodes)
					for range 20000 {
						x = splitMix64(x)
						check(x)
					}
				})
			}
		}
	}
}

// TestBalancedWork: the decoder's work estimate counts the points a
// balanced ring is built with when virtualNodes is not given (256 per
// collection), not the plain ring's 16.
func TestBalancedWork(t *testing.T) {
	def := []byte(`{"kind":"hash","strategy":"balanced","collections":["dbs/a/colls/x","dbs/a/colls/y"]}`)
	if got, want := work(def).Units, int64(2*DefaultVirtualNodesBalanced); got != want {
		t.Fatalf("work = %d, want %d", got, want)
	}
	if got, want := work([]byte(`{"kind":"hash","collections":["dbs/a/colls/x"]}`)).Units, int64(DefaultVirtualNodes); got != want {
		t.Fatalf("work = %d, want %d", got, want)
	}
}
