package hashring

import (
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
	// share, 256 points 1.0-1.3×); more cost memory (about 24 bytes a point)
	// and build time.
	DefaultVirtualNodesBalanced = 256
	// BalancedTolerance is how far from the mean a collection's share may
	// be before the balanced strategy reweights it: 8%, so the largest
	// collection holds at most 1.08× the mean and the smallest at least
	// 0.92×.
	BalancedTolerance = 0.08
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
		next: func(p Digest) Digest { return digestOf(splitMix64(digestOf64(p)), 0) },
	}
}

func digestOf64(d Digest) uint64 {
	return uint64(d[0])<<56 | uint64(d[1])<<48 | uint64(d[2])<<40 | uint64(d[3])<<32 |
		uint64(d[4])<<24 | uint64(d[5])<<16 | uint64(d[6])<<8 | uint64(d[7])
}

// buildBalanced places vnodes points per link, tunes the weights, and
// replaces the points with the boundaries of what each collection owns, so
// lookups, Shares and Moved read it as a ring. Cost: a sort of n×vnodes
// points and a pass over them per round (1 to 6 rounds); 0.46–0.56 s for
// 10,000 collections of 256 points as measured (BenchmarkBalancedFigures). Errors are *resolver.ConfigError.
func (g *Ring) buildBalanced(vnodes int) error {
	if err := g.build(g.balancedChain(), vnodes); err != nil {
		return err
	}
	n := len(g.links)
	if n == 1 {
		g.hi, g.owner = g.hi[:1], g.owner[:1]
		return nil
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
	hi, owner = hi[:max(k, 1)], owner[:max(k, 1)]
	g.hi, g.owner = slices.Clip(hi), slices.Clip(owner)
	g.buildIndex()
	for l, s := range g.Shares() {
		if s == 0 {
			return resolver.Invalid(fmt.Sprintf("collections[%d]", l), g.links[l], "the balanced strategy left this collection no share of the hash space")
		}
	}
	return nil
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
	band := mean / 25 * 2                  // BalancedTolerance
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

// buildIndex fills g.index: for each value t of a position's top indexBits
// bits, the first boundary at or after t's range, so a lookup searches a
// few boundaries instead of the whole ring.
func (g *Ring) buildIndex() {
	m := len(g.hi)
	b := max(bits.Len(uint(m))-1, 1)
	g.indexShift = uint8(64 - b)
	g.index = make([]uint32, 1<<b+1)
	k := 0
	for t := range 1 << b {
		for k < m && g.hi[k]>>g.indexShift < uint64(t) {
			k++
		}
		g.index[t] = uint32(k)
	}
	g.index[1<<b] = uint32(m)
}
