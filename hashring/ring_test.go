package hashring

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/buraksezer/consistent"
	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

// allConfigs is one resolver configuration per flavour and strategy.
var allConfigs = []struct {
	name string
	opts *Options
}{
	{"md5", nil},
	{"md5-160", &Options{VirtualNodes: 160}},
	{"xxhash", &Options{Hash: FlavourXXHash}},
	{"murmur3", &Options{Hash: FlavourMurmur3}},
	{"dotnet-x64", &Options{Hash: FlavourDotnetX64}},
	{"dotnet-x86", &Options{Hash: FlavourDotnetX86}},
	{"bounded", &Options{Strategy: StrategyBounded}},
	{"bounded-xxhash", &Options{Strategy: StrategyBounded, Hash: FlavourXXHash, LoadFactor: 1.1, PartitionCount: 1021}},
}

// placementDigest hashes the owners of 20,000 keys (strings and numbers).
func placementDigest(t *testing.T, r *Resolver) string {
	h := sha256.New()
	for i := range 20000 {
		var key any = fmt.Sprintf("key-%d", i)
		if i%5 == 0 {
			key = float64(i) / 8
		}
		o, err := r.Ring().Owner(key)
		require.NoError(t, err)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(o)))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// TestPlacementIsPinned pins the placement of every flavour and strategy
// over 20,000 keys: a change of Go version, platform, library or code that
// moved a single key would fail here. (Equal placement in every process is
// the point of an exact ring; nothing in the build reads a map in iteration
// order.)
func TestPlacementIsPinned(t *testing.T) {
	want := map[string]string{
		"md5":            "c17d26129bba7864",
		"md5-160":        "968b51008686cf96",
		"xxhash":         "a71273ba390af1f2",
		"murmur3":        "5f390b0b33fde17e",
		"dotnet-x64":     "7bcd86f53323bf01",
		"dotnet-x86":     "d51ab6d4136a4f0b",
		"bounded":        "30b7741e579c3f35",
		"bounded-xxhash": "e2e1627bee508557",
	}
	for _, c := range allConfigs {
		r, err := New(links("pin", 7), c.opts)
		require.NoError(t, err)
		assert.Equal(t, want[c.name], placementDigest(t, r), c.name)
	}
}

// TestBuildIsDeterministic rebuilds every configuration: map iteration order
// changes from one run to the next, so a build depending on it would differ.
func TestBuildIsDeterministic(t *testing.T) {
	for _, c := range allConfigs {
		first, err := New(links("det", 13), c.opts)
		require.NoError(t, err)
		for range 5 {
			again, err := New(links("det", 13), c.opts)
			require.NoError(t, err)
			require.Equal(t, first.Ring().Points(), again.Ring().Points(), c.name)
			require.Equal(t, first.Ring().Partitions(), again.Ring().Partitions(), c.name)
		}
	}
}

func TestLocateAgreesWithOwner(t *testing.T) {
	for _, c := range allConfigs {
		r, err := New(links("loc", 9), c.opts)
		require.NoError(t, err)
		g := r.Ring()
		for i := range 2000 {
			var key any = fmt.Sprint("k", i)
			if i%2 == 1 {
				key = i
			}
			want, err := g.Owner(key)
			require.NoError(t, err)
			h, err := g.KeyHash(key)
			require.NoError(t, err)
			assert.Equal(t, want, g.Locate(h), "%s %v", c.name, key)
			text, err := resolver.KeyString(key)
			require.NoError(t, err)
			assert.Equal(t, want, g.OwnerString(text), "%s %v", c.name, key)
		}
		_, err = g.KeyHash(true)
		assert.ErrorIs(t, err, resolver.ErrKeyType)
		_, err = g.Owner(nil)
		assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	}
}

// TestKeyHashFormats checks the position of a key under each flavour.
func TestKeyHashFormats(t *testing.T) {
	hashOf := func(opts *Options) Digest {
		r, err := New(links("c", 2), opts)
		require.NoError(t, err)
		d, err := r.Ring().KeyHash("alice")
		require.NoError(t, err)
		return d
	}
	assert.Equal(t, MD5{}.Hash([]byte("alice")), hashOf(nil))
	assert.Equal(t, MD5{}.Hash([]byte("alice")), hashOf(&Options{Hash: FlavourDotnetX86}), ".NET hashes keys with MD5 of UTF-8")
	assert.Equal(t, XXHash{}.Hash([]byte("alice")), hashOf(&Options{Hash: FlavourXXHash}))
	var m Digest
	binary.BigEndian.PutUint32(m[:4], murmur3([]byte("alice"), 0))
	assert.Equal(t, m, hashOf(&Options{Hash: FlavourMurmur3}))
	assert.Equal(t, XXHash{}.Hash([]byte("alice")), hashOf(&Options{Strategy: StrategyBounded, Hash: FlavourXXHash}))
}

// TestOwnerByBruteForce compares lookups with a linear scan of the points,
// the rule written out plainly, for every ring flavour.
func TestOwnerByBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range allConfigs {
		r, err := New(links("bf", 1+rng.IntN(20)), c.opts)
		require.NoError(t, err)
		g := r.Ring()
		pts := g.Points()
		for range 3000 {
			var d Digest
			for i := range d {
				d[i] = byte(rng.UintN(256))
			}
			if r.Hash() == FlavourMurmur3 {
				clear(d[4:])
			}
			if rng.IntN(10) == 0 && pts != nil {
				d = pts[rng.IntN(len(pts))].At // exactly on a point
			}
			var want int
			switch {
			case r.Strategy() == StrategyBounded:
				want = g.Partitions()[binary.BigEndian.Uint64(d[:8])%uint64(g.Len())]
			case r.Hash() == FlavourMurmur3:
				want = pts[len(pts)-1].Link
				for _, p := range pts {
					if compareDigest(p.At, d) <= 0 {
						want = p.Link
					}
				}
			default:
				want = pts[0].Link
				for _, p := range pts {
					if compareDigest(p.At, d) >= 0 {
						want = p.Link
						break
					}
				}
			}
			require.Equal(t, want, g.Locate(d), "%s at %x", c.name, d)
		}
	}
}

func TestSharesAreExact(t *testing.T) {
	for _, c := range allConfigs {
		r, err := New(links("sh", 6), c.opts)
		require.NoError(t, err)
		shares := r.Ring().Shares()
		require.Len(t, shares, 6)
		sum := 0.0
		for _, s := range shares {
			assert.Greater(t, s, 0.0, c.name)
			sum += s
		}
		assert.InDelta(t, 1, sum, 1e-9, c.name)
		// Sampled loads agree with the exact shares.
		const keys = 60000
		counts := make([]float64, 6)
		for i := range keys {
			o, err := r.Ring().Owner(fmt.Sprint("sample-", i))
			require.NoError(t, err)
			counts[o]++
		}
		for i := range counts {
			assert.InDelta(t, shares[i], counts[i]/keys, 0.01, "%s collection %d", c.name, i)
		}
	}
	// One collection owns the whole circle, whatever its points.
	for _, c := range allConfigs {
		r, err := New(links("one", 1), c.opts)
		require.NoError(t, err)
		assert.Equal(t, []float64{1}, r.Ring().Shares(), c.name)
	}
	r, err := New(links("one", 1), &Options{VirtualNodes: 1})
	require.NoError(t, err)
	assert.Equal(t, []float64{1}, r.Ring().Shares())
}

// TestMovedIsExact: on a ring, adding a collection moves exactly the share
// the new collection takes (every moved key goes to it), and sampled keys
// agree with the computed fraction.
func TestMovedIsExact(t *testing.T) {
	for _, c := range allConfigs {
		before, err := New(links("mv", 20), c.opts)
		require.NoError(t, err)
		after, err := New(links("mv", 21), c.opts)
		require.NoError(t, err)
		moved, err := Moved(before.Ring(), after.Ring())
		require.NoError(t, err, c.name)
		back, err := Moved(after.Ring(), before.Ring())
		require.NoError(t, err)
		assert.InDelta(t, moved, back, 1e-12, "symmetric")
		self, err := Moved(before.Ring(), before.Ring())
		require.NoError(t, err)
		assert.Zero(t, self)

		const keys = 40000
		n := 0
		for i := range keys {
			k := fmt.Sprint("key-", i)
			x, err := before.ResolveForCreate(k)
			require.NoError(t, err)
			y, err := after.ResolveForCreate(k)
			require.NoError(t, err)
			if x != y {
				n++
				if before.Strategy() == StrategyRing {
					require.Equal(t, links("mv", 21)[20], y, "%s: on a ring keys only move to the new collection", c.name)
				}
			}
		}
		assert.InDelta(t, moved, float64(n)/keys, 0.006, c.name)
		if before.Strategy() == StrategyRing {
			assert.InDelta(t, after.Ring().Shares()[20], moved, 1e-9, "%s: the new collection's share is what moves", c.name)
		}
		ideal := 1.0 / 21
		assert.Greater(t, moved, ideal/3, c.name)
		assert.Less(t, moved, ideal*2.5, c.name)
	}
}

func TestMovedSpellingsAndErrors(t *testing.T) {
	a, err := New([]string{"dbs/a/colls/x", "dbs/a/colls/y"}, nil)
	require.NoError(t, err)
	// The same collections spelled with slashes are the same ring (the md5
	// flavour hashes the link as written, so the points differ, but the
	// comparison is by collection).
	b, err := New([]string{"dbs/a/colls/y/", "/dbs/a/colls/x"}, nil)
	require.NoError(t, err)
	m, err := Moved(a.Ring(), b.Ring())
	require.NoError(t, err)
	assert.Greater(t, m, 0.0)
	assert.Less(t, m, 1.0)

	// md5 and .NET rings place keys by the same MD5: comparable.
	d, err := New([]string{"dbs/a/colls/x", "dbs/a/colls/y"}, &Options{Hash: FlavourDotnetX64})
	require.NoError(t, err)
	_, err = Moved(a.Ring(), d.Ring())
	require.NoError(t, err)

	for _, o := range []*Options{
		{Hash: FlavourXXHash}, {Hash: FlavourMurmur3}, {Strategy: StrategyBounded},
	} {
		x, err := New([]string{"dbs/a/colls/x", "dbs/a/colls/y"}, o)
		require.NoError(t, err)
		_, err = Moved(a.Ring(), x.Ring())
		assert.ErrorIs(t, err, ErrIncomparable, "%+v", o)
	}
	p1, err := New(links("p", 3), &Options{Strategy: StrategyBounded, PartitionCount: 101})
	require.NoError(t, err)
	p2, err := New(links("p", 3), &Options{Strategy: StrategyBounded, PartitionCount: 103})
	require.NoError(t, err)
	_, err = Moved(p1.Ring(), p2.Ring())
	assert.ErrorIs(t, err, ErrIncomparable)
}

// TestBoundedMemberLabels shows the collision the library's labels allow
// and that member names with a terminator avoid it: the library labels
// replica i of a member as name+i, so ".../x" replica 10 and ".../x1"
// replica 0 are the same label, hash to the same point, and the later
// member takes the earlier one's points.
func TestBoundedMemberLabels(t *testing.T) {
	ls := []string{"dbs/a/colls/x", "dbs/a/colls/x1"}
	labels := func(members []consistent.Member) map[string]int {
		rec := &recordingHasher{seen: map[string]int{}}
		consistent.New(members, consistent.Config{PartitionCount: 64, ReplicationFactor: 20, Load: 1.25, Hasher: rec})
		return rec.seen
	}
	raw := labels([]consistent.Member{rawMember(ls[0]), rawMember(ls[1])})
	assert.Equal(t, 2, raw["dbs/a/colls/x10"], "without a terminator two members share a label")
	ours := labels([]consistent.Member{newBoundedMember(ls[0]), newBoundedMember(ls[1])})
	for l, n := range ours {
		if len(l) > 8 { // partition ids are 8-byte keys
			assert.Equal(t, 1, n, "label %q", l)
		}
	}
	assert.Contains(t, ours, "dbs/a/colls/x#10")
	assert.Contains(t, ours, "dbs/a/colls/x1#0")

	// Through the resolver: both collections hold their share.
	r, err := New(ls, &Options{Strategy: StrategyBounded, VirtualNodes: 20})
	require.NoError(t, err)
	shares := r.Ring().Shares()
	for i := range ls {
		assert.InDelta(t, 0.5, shares[i], 0.13, "collection %d owns a bounded share", i)
	}
}

type rawMember string

func (m rawMember) String() string { return string(m) }

type recordingHasher struct{ seen map[string]int }

func (h *recordingHasher) Sum64(b []byte) uint64 {
	h.seen[string(b)]++
	return xxhash.Sum64(b)
}

func TestBoundedLoadCap(t *testing.T) {
	for _, load := range []float64{1.05, 1.1, 1.25, 2} {
		r, err := New(links("c", 10), &Options{Strategy: StrategyBounded, LoadFactor: load})
		require.NoError(t, err)
		cap := math.Ceil(float64(DefaultPartitionCount/10) * load)
		for i, s := range r.Ring().Shares() {
			assert.LessOrEqual(t, s*DefaultPartitionCount, cap+1e-9, "load %g collection %d", load, i)
		}
	}
	// Load factor 1 works when the count divides evenly: every collection
	// holds exactly the mean.
	r, err := New(links("c", 4), &Options{Strategy: StrategyBounded, LoadFactor: 1, PartitionCount: 400})
	require.NoError(t, err)
	assert.Equal(t, []float64{0.25, 0.25, 0.25, 0.25}, r.Ring().Shares())
}

// TestBoundedPanicsBecomeErrors drives the library into its panic ("not
// enough room to distribute partitions") past our own checks.
func TestBoundedPanicsBecomeErrors(t *testing.T) {
	g := &Ring{links: links("c", 3), space: FlavourMD5, flavour: FlavourMD5, kind: kindBounded}
	// One point per collection: the library searches all points but one.
	err := g.buildBounded(1, 24, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, resolver.ErrInvalid)
	assert.Contains(t, err.Error(), "not enough room")
	assert.Nil(t, g.owner)
}

func TestPointsAndPartitionsCopy(t *testing.T) {
	r, err := New(links("c", 3), nil)
	require.NoError(t, err)
	p := r.Ring().Points()
	p[0].Link = 99
	assert.NotEqual(t, 99, r.Ring().Points()[0].Link)
	assert.Nil(t, r.Ring().Partitions())
	assert.True(t, slices.IsSortedFunc(r.Ring().Points(), func(a, b Point) int { return compareDigest(a.At, b.At) }))

	b, err := New(links("c", 3), &Options{Strategy: StrategyBounded})
	require.NoError(t, err)
	assert.Nil(t, b.Ring().Points())
	q := b.Ring().Partitions()
	require.Len(t, q, DefaultPartitionCount)
	q[0] = 99
	assert.NotEqual(t, 99, b.Ring().Partitions()[0])
}
