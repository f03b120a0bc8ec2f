package hashring

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/docshard/docshard/resolver"
)

// The balanced strategy: a ring of many points per collection whose arcs
// are shared between the two collections at their ends, in proportion to
// weights tuned so that every collection holds its share of the hash space
// within BalancedTolerance of the mean (docs/design.md#the-balanced-strategy).
//
// Why not a library: the peers measured for the issue each miss one
// requirement. Maglev (github.com/dgryski/go-maglev and its kin) balances
// its table exactly but moves 3× the ideal share of keys at 1,000
// collections and 9× at 10,000 (a table of 2^20 entries); jump hash moves
// the ideal share only when collections are added or removed at the end of
// the list; rendezvous hashing costs O(n) a lookup; buraksezer/consistent
// (the bounded strategy) starves new collections and moves up to 100× the
// ideal. A weighted ring keeps the ring's locality: adding a collection
// changes only the arcs its points cut and the weights of collections that
// leave the tolerance band, so few keys move besides the new collection's.
//
// Every step is integer arithmetic (64-bit positions, 128-bit products and
// quotients from math/bits), so every process and platform computes the same
// placement from the resolver's JSON.

// Balanced-strategy settings.
const (
	// DefaultVirtualNodesBalanced is the balanced strategy's default number
	// of points per collection. Fewer points leave more collections to be
	// reweighted, which moves more keys when a collection is added or
	// removed (at 10,000 collections, 128 points move 1.5-1.7× the ideal
	// share, 256 points 1.0-1.3×); more cost memory (about 9 bytes a point
	// in the packed table, more while it is built) and build time.
	DefaultVirtualNodesBalanced = 256
	// BalancedTolerance is how far from the mean a collection's share may
	// be before the balanced strategy reweights it: 8%, so the largest
	// collection holds at most 1.08× the mean and the smallest at least
	// 0.92×.
	BalancedTolerance = balancedBandNum / balancedBandDen
	// balancedBandNum / balancedBandDen is BalancedTolerance as the
	// weights' integer arithmetic applies it: the band around the mean T is
	// floor(T / balancedBandDen) × balancedBandNum.
	balancedBandNum = 2.0
	balancedBandDen = 25
	// balancedRounds bounds the reweighting rounds; placements that have
	// not settled by then keep the last round's weights (none seen in
	// tests: 1 to 6 rounds from 10 to 10,000 collections).
	balancedRounds = 64
	// balancedStartWeight is every collection's weight before tuning;
	// weights stay within [1, balancedMaxWeight].
	balancedStartWeight = 1 << 24
	balancedMaxWeight   = 1 << 48
	golden              = 0x9e3779b97f4a7c15 // SplitMix64's increment
)

// splitMix64 is SplitMix64's output function (Steele, Lea and Flood, 2014)
// applied to x + the golden increment: the balanced strategy's next point.
func splitMix64(x uint64) uint64 {
	x += golden
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// balancedChain places a link's points: the first is SplitMix64 of the
// first 8 bytes of the flavour's position of the link, each next one
// SplitMix64 of the previous (cheap, so 256 points per collection cost
// little more to build than the ring's 16 MD5 digests).
func (g *Ring) balancedChain() chain {
	return chain{
		first: func(l string) Digest {
			hi, _ := g.position([]byte(l))
			return digestOf(splitMix64(hi), 0)
		},
		next: func(p Digest) Digest { return digestOf(splitMix64(binary.BigEndian.Uint64(p[:8])), 0) },
	}
}

// buildBalanced places vnodes points per link, tunes the weights, and
// replaces the points with the boundaries of what each collection owns,
// packed with an index (pack), so lookups, Shares and Moved read it as a
// ring. Cost: a sort of n×vnodes points and a pass over them per round (1
// to 6 rounds); 0.46–0.56 s for 10,000 collections of 256 points as
// measured (BenchmarkBalancedFigures). Errors are *resolver.ConfigError.
func (g *Ring) buildBalanced(vnodes int) error {
	if err := g.build(g.balancedChain(), vnodes); err != nil {
		return err
	}
	hi, owner := g.balancedBoundaries()
	g.hi, g.owner = hi, owner
	for l, s := range g.Shares() {
		if s == 0 {
			return resolver.Invalid(fmt.Sprintf("collections[%d]", l), g.links[l], "the balanced strategy left this collection no share of the hash space")
		}
	}
	g.pack(hi, owner)
	g.hi, g.owner = nil, nil
	return nil
}

// balancedBoundaries returns the sorted boundaries of what each collection
// owns (a boundary owns the places after the previous one up to and
// including itself) and their owners, from the points in g.hi and g.owner
// and the tuned weights: steps 2 and 4 of
// docs/design.md#the-balanced-strategy.
func (g *Ring) balancedBoundaries() ([]uint64, []int32) {
	if len(g.links) == 1 {
		return g.hi[:1:1], g.owner[:1:1]
	}
	w := g.balancedWeights()
	pts, own := g.hi, g.owner
	m := len(pts)
	hi := make([]uint64, 0, 2*m+1)
	owner := make([]int32, 0, 2*m+1)
	add := func(at uint64, o int32) {
		if len(hi) > 0 && hi[len(hi)-1] == at {
			return // the first boundary at a position owns it
		}
		hi = append(hi, at)
		owner = append(owner, o)
	}
	// The wrapping arc (last point, first point]: its cut lies before the
	// first point when it passes 2^64, else after the last point.
	wrapCut, wrapOwner, wrapAfter := uint64(0), int32(-1), false
	if a, b := own[m-1], own[0]; a != b {
		if cut := split(pts[0]-pts[m-1], w[a], w[b]); cut > 0 {
			wrapCut, wrapOwner = pts[m-1]+cut, a
			wrapAfter = wrapCut > pts[m-1]
		}
	}
	if wrapOwner >= 0 && !wrapAfter {
		add(wrapCut, wrapOwner)
	}
	for i := range m {
		if i > 0 {
			a, b := own[i-1], own[i]
			length := pts[i] - pts[i-1]
			if length == 0 {
				continue // equal points: the arc ending at the first of them owns the place
			}
			if a != b {
				if cut := split(length, w[a], w[b]); cut > 0 {
					add(pts[i-1]+cut, a)
				}
			}
		}
		add(pts[i], own[i])
	}
	if wrapOwner >= 0 && wrapAfter {
		add(wrapCut, wrapOwner)
	}
	// A boundary followed (cyclically) by one of the same owner separates
	// nothing.
	k := 0
	for i := range hi {
		if owner[i] != owner[(i+1)%len(hi)] {
			hi[k], owner[k] = hi[i], owner[i]
			k++
		}
	}
	return slices.Clip(hi[:max(k, 1)]), slices.Clip(owner[:max(k, 1)])
}

// split returns the part of an arc of the given length owned by the
// collection at its start: floor(length × wa / (wa + wb)).
func split(length, wa, wb uint64) uint64 {
	hi, lo := bits.Mul64(length, wa)
	q, _ := bits.Div64(hi, lo, wa+wb) // hi < wa <= wa+wb: no overflow
	return q
}

// balancedWeights tunes one weight per collection, from balancedStartWeight
// each: every round computes each collection's share of the hash space
// with the current weights, and multiplies the weight of each collection
// whose share s lies outside the tolerance band around the mean T by
// (T + s) / 2s (half a step towards T, which keeps the rounds from
// overshooting). It stops at the first round that changes nothing.
func (g *Ring) balancedWeights() []uint64 {
	n := len(g.links)
	w := make([]uint64, n)
	for i := range w {
		w[i] = balancedStartWeight
	}
	mean, _ := bits.Div64(1, 0, uint64(n)) // 2^64 / n, n >= 2
	band := mean / balancedBandDen * balancedBandNum
	lo, hi := mean-band, mean+band
	shares := make([]uint64, n)
	pts, own := g.hi, g.owner
	m := len(pts)
	for range balancedRounds {
		clear(shares)
		for i := range m {
			j := (i + m - 1) % m
			a, b := own[j], own[i]
			length := pts[i] - pts[j]
			if a == b {
				shares[b] = addSat(shares[b], length)
				continue
			}
			cut := split(length, w[a], w[b])
			shares[a] = addSat(shares[a], cut)
			shares[b] = addSat(shares[b], length-cut)
		}
		changed := false
		for c, s := range shares {
			if s >= lo && s <= hi {
				continue
			}
			changed = true
			s = max(s, 1)
			ph, pl := bits.Mul64(w[c], mean/2+s/2)
			if ph >= s {
				w[c] = balancedMaxWeight
				continue
			}
			q, _ := bits.Div64(ph, pl, s)
			w[c] = min(max(q, 1), balancedMaxWeight)
		}
		if !changed {
			break
		}
	}
	return w
}

func addSat(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

// bucketBits sets the balanced table's buckets: about 2^bucketBits
// boundaries each on average (512 to 1,024). Fewer, larger buckets keep
// the index small enough to stay in the nearest caches; at 10,000
// collections this measured 2-6% faster than buckets of 128 to 256 (a 64
// KB index and shorter searches) in three interleaved comparisons, within
// a busy host's noise, and buckets of 8 to 64 were 7-23% slower. A
// variable so that tests can try other sizes.
var bucketBits = 10

// pack stores sorted boundaries and their owners as the balanced table.
// With b index bits and s owner bits, a boundary's position splits into
// its top b bits (its bucket), the next 32-s bits (its fragment) and the
// remaining 32+s-b bits (its rest): hot[i] is boundary i's fragment over
// its owner's index (fragment<<s | owner); rest[i] the low 32 bits of its
// rest and, when b < s, mid[i] the s-b bits above them (b >= s-8, so they
// fit in a byte); index[t] the first boundary whose top b bits are t or
// more (index[2^b] = len(hi)). A lookup reads the index (4 bytes a bucket:
// 16 KB at 10,000 collections) and about one cache line of hot; rest and
// mid only when the key's fragment equals a boundary's (a bucket's
// boundaries over 2^(32-s) of lookups: one in 400 at 10,000 collections).
// Memory: 8 or 9 bytes a boundary.
func (g *Ring) pack(hi []uint64, owner []int32) {
	m := len(hi)
	s := bits.Len(uint(len(g.links) - 1))
	b := max(bits.Len(uint(m))-bucketBits, s-8, 1)
	g.tableBits, g.ownerBits = uint8(b), uint8(s)
	g.hot = make([]uint32, m)
	g.rest = make([]uint32, m)
	if b < s {
		g.mid = make([]uint8, m)
	}
	for i, at := range hi {
		g.hot[i] = uint32(at<<b>>(32+s))<<s | uint32(owner[i])
		g.rest[i] = uint32(at & (1<<min(32+s-b, 32) - 1))
		if g.mid != nil {
			g.mid[i] = uint8(at>>32) & (1<<(s-b) - 1)
		}
	}
	g.index = make([]uint32, 1<<b+1)
	k := 0
	for t := range 1 << b {
		for k < m && hi[k]>>(64-b) < uint64(t) {
			k++
		}
		g.index[t] = uint32(k)
	}
	g.index[1<<b] = uint32(m)
}

// restAt returns the rest of boundary i's position (see pack).
func (g *Ring) restAt(i uint32) uint64 {
	r := uint64(g.rest[i])
	if g.mid != nil {
		r |= uint64(g.mid[i]) << 32
	}
	return r
}

// locateBalanced returns the owner of position x in the balanced table:
// the owner of the first boundary at or after x, wrapping to the first.
// The search starts where x's place in its bucket puts it (boundaries are
// spread evenly), steps to the first boundary whose fragment is x's or
// more, and compares rests past boundaries whose fragment equals x's; a
// bucket with none at or after x sends it to the next bucket's first. Cost:
// the index (mostly cached) and about one cache line of hot, against about
// log2(boundaries) reads for a binary search over positions.
func (g *Ring) locateBalanced(x uint64) int {
	b, s := g.tableBits, g.ownerBits
	t := x >> (64 - b)
	i, j := g.index[t], g.index[t+1]
	f := uint32(x << b >> (32 + s))
	k := f << s // a word below k has a smaller fragment
	if i < j {
		// x's place in the bucket, as a fraction of the bucket's range,
		// times its boundaries: within a few dozen of the answer.
		q, _ := bits.Mul64(x<<b, uint64(j-i))
		p := i + uint32(q)
		if g.hot[p] < k {
			for p++; p < j && g.hot[p] < k; p++ {
			}
		} else {
			for p > i && g.hot[p-1] >= k {
				p--
			}
		}
		i = p
	}
	if i < j && g.hot[i]>>s == f {
		rest := x & (1<<(32+s-b) - 1)
		for i < j && g.hot[i]>>s == f && g.restAt(i) < rest {
			i++
		}
	}
	if int(i) == len(g.hot) {
		i = 0
	}
	return int(g.hot[i] & (1<<s - 1))
}

// unpack returns the balanced table's boundary positions and owners, as
// pack took them. It allocates 12 bytes a boundary.
func (g *Ring) unpack() (hi []uint64, owner []int32) {
	b, s := g.tableBits, g.ownerBits
	hi = make([]uint64, len(g.hot))
	owner = make([]int32, len(g.hot))
	for t := range len(g.index) - 1 {
		for i := g.index[t]; i < g.index[t+1]; i++ {
			w := g.hot[i]
			hi[i] = uint64(t)<<(64-b) | uint64(w>>s)<<(32+s-b) | g.restAt(i)
			owner[i] = int32(w & (1<<s - 1))
		}
	}
	return hi, owner
}
