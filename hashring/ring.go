package hashring

import (
	"bytes"
	"cmp"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
)

// ErrIncomparable is returned by Moved for two rings whose key positions
// are not computed alike (different key hashes, a ring against the bounded
// strategy, different partition counts): their placements can only be
// compared on sample keys.
var ErrIncomparable = errors.New("hashring: rings place keys by different hashes")

// Ring is the placement table behind a Resolver: points on a circle of hash
// positions, each owned by one collection, or, for the bounded strategy, a
// table of partitions. It is immutable and safe for concurrent use; lookups
// take no lock and allocate nothing for string and number keys.
//
// Three rules exist, chosen by the flavour and the strategy:
//
//   - md5-style rings (flavours "md5", "xxhash", "dotnet-x64", "dotnet-x86"
//     and registered generators): the owner of a position is the first point
//     at or after it, wrapping to the first point; equal points keep the
//     order of their links, so the earlier link owns the place.
//   - the murmur3 ring of the Node.js, Python and Java SDKs: the owner is the
//     last point at or before the position, wrapping to the last point;
//     equal points keep link order, so the later link owns the place (as the
//     SDKs' stable sort and linear search did).
//   - the bounded strategy: the position's first 8 bytes, read as an unsigned
//     integer, modulo the partition count, select a partition; the table
//     says which collection owns it.
type Ring struct {
	kind    ringKind
	hk      hashKind
	gen     HashGenerator // hk == hashCustom only
	size    int           // meaningful bytes of a custom generator's digest
	space   string        // names the key-position function; Moved compares rings within one space
	flavour string        // the resolver's "hash", for messages
	links   []string
	// Points in ring order: a position's high and low 64 bits (murmur3: the
	// 32-bit value in the top half of hi; lo is nil when every low half is
	// zero), and the link index owning each point. For the bounded strategy
	// hi and lo are nil and owner has one entry per partition.
	hi, lo []uint64
	owner  []int32
	// The balanced strategy keeps its boundaries packed instead (hi, lo
	// and owner are nil): an index from a position's top tableBits bits to
	// the first boundary at or after them, and per boundary the next bits
	// of its position over its owner's index (ownerBits wide) in hot, the
	// rest of its position in rest and mid (see pack).
	hot, rest, index     []uint32
	mid                  []uint8
	tableBits, ownerBits uint8
}

type ringKind uint8

const (
	kindDigest  ringKind = iota // first point >= position
	kindMurmur                  // last point <= position
	kindBounded                 // partition table
)

type hashKind uint8

const (
	hashMD5 hashKind = iota
	hashXX
	hashMurmur
	hashCustom
)

// Point is one point of a ring: its position and the index (in Links) of the
// collection that owns it.
type Point struct {
	At   Digest
	Link int
}

// Links returns the ring's collection links in the configured order; owner
// indexes (Locate, Owner, Point.Link, Shares) refer to it. It copies.
func (g *Ring) Links() []string { return slices.Clone(g.links) }

// Len returns the number of points on the ring (for the bounded strategy,
// the number of partitions; for the balanced strategy, the boundaries of
// its table, which Points returns).
func (g *Ring) Len() int {
	if g.hot != nil {
		return len(g.hot)
	}
	return len(g.owner)
}

// boundaries returns the ring's point positions (high halves) and owners:
// the ring's own arrays, or the balanced table unpacked (allocated).
func (g *Ring) boundaries() (hi []uint64, owner []int32) {
	if g.hot != nil {
		return g.unpack()
	}
	return g.hi, g.owner
}

// Owner returns the index in Links of the collection owning key: a string, a
// number (placed by its RFC 8785 text) or a composite key (by its canonical
// JSON array): its placement text, partitionkey.PlacementText. Other types
// are an error wrapping resolver.ErrKeyType, nil one wrapping
// resolver.ErrNoPartitionKey. Cost:
// one hash of the key's text and a binary search; no allocation for strings
// and numbers.
func (g *Ring) Owner(key any) (int, error) {
	if s, ok := key.(string); ok {
		return g.OwnerString(s), nil
	}
	var buf [64]byte
	b, err := partitionkey.AppendPlacement(buf[:0], key)
	if err != nil {
		return -1, err
	}
	return g.locate(g.position(b)), nil
}

// OwnerString returns the index in Links of the collection owning the key
// text s (a string key, or any key's canonical text). It does not allocate.
func (g *Ring) OwnerString(s string) int {
	// The hash only reads the bytes: viewing the string avoids a copy.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	if g.hk == hashCustom {
		return g.locate(g.customPosition(b))
	}
	return g.locate(g.position(b))
}

// KeyHash returns the position of key on the ring (the hash Locate takes):
// MD5, XXH64 or MurmurHash3 of the key's canonical text, as a big-endian
// Digest. Errors as Owner.
func (g *Ring) KeyHash(key any) (Digest, error) {
	var buf [64]byte
	b, err := partitionkey.AppendPlacement(buf[:0], key)
	if err != nil {
		return Digest{}, err
	}
	return digestOf(g.position(b)), nil
}

// Locate returns the index in Links of the collection owning position d (see
// KeyHash). It does not allocate.
func (g *Ring) Locate(d Digest) int {
	return g.locate(binary.BigEndian.Uint64(d[:8]), binary.BigEndian.Uint64(d[8:]))
}

// Points returns the ring's points in ring order (ascending positions), or
// nil for the bounded strategy, whose placement is a partition table (see
// Partitions). It allocates the result.
func (g *Ring) Points() []Point {
	if g.kind == kindBounded {
		return nil
	}
	hi, owner := g.boundaries()
	out := make([]Point, len(hi))
	for i := range hi {
		out[i] = Point{At: digestOf(hi[i], g.loAt(i)), Link: int(owner[i])}
	}
	return out
}

// Partitions returns, for the bounded strategy, the index in Links of the
// owner of each partition; nil for a ring. It allocates the result.
func (g *Ring) Partitions() []int {
	if g.kind != kindBounded {
		return nil
	}
	out := make([]int, len(g.owner))
	for i, o := range g.owner {
		out[i] = int(o)
	}
	return out
}

// Shares returns, for each link (indexed as Links), the exact fraction of
// the hash space it owns: the expected share of uniformly hashed keys,
// without sampling. The fractions sum to 1 (within rounding). Cost: one pass
// over the points (for the balanced strategy, over its boundaries, unpacked
// into 12 bytes each first).
func (g *Ring) Shares() []float64 {
	out := make([]float64, len(g.links))
	if g.kind == kindBounded {
		n := len(g.owner)
		held := make([]int, len(g.links))
		for _, o := range g.owner {
			held[o]++
		}
		for i, h := range held {
			out[i] = float64(h) / float64(n)
		}
		return out
	}
	// Sum each link's arcs exactly, in 128-bit integers.
	type u128 struct{ hi, lo uint64 }
	sums := make([]u128, len(g.links))
	at, owner := g.boundaries()
	n := len(at)
	for i := range n {
		var hi, lo uint64
		if g.kind == kindDigest {
			// Point i owns (point i-1, point i]; point 0 wraps from the last.
			j := (i + n - 1) % n
			hi, lo = sub128(at[i], g.loAt(i), at[j], g.loAt(j))
		} else {
			// Point i owns [point i, point i+1); the last wraps to the first.
			j := (i + 1) % n
			hi, lo = sub128(at[j], g.loAt(j), at[i], g.loAt(i))
		}
		s := &sums[owner[i]]
		var carry uint64
		s.lo, carry = bits.Add64(s.lo, lo, 0)
		s.hi, _ = bits.Add64(s.hi, hi, carry)
	}
	whole := true
	for i, s := range sums {
		out[i] = fraction(s.hi, s.lo)
		if s != (u128{}) {
			whole = false
		}
	}
	if whole {
		// Every sum is 0 mod 2^128: one link owns the whole circle.
		out[g.locate(0, 0)] = 1
	}
	return out
}

// Moved returns the exact fraction of the hash space whose collection
// differs between rings a and b: the expected share of keys that move when
// a resolver changes from a to b. Links name the same collection when they
// differ only by a leading or trailing slash. The rings must compute key
// positions alike: the same key hash (MD5 for "md5", "dotnet-x64" and
// "dotnet-x86"; otherwise the same flavour), and for the bounded strategy
// the same partition count; otherwise the error wraps ErrIncomparable.
// Cost: O((a.Len()+b.Len()) log) time, one merged list of points (a
// balanced table is unpacked for it, 12 bytes a boundary).
func Moved(a, b *Ring) (float64, error) {
	if a.kind != b.kind || a.space != b.space {
		return 0, fmt.Errorf("%w: %s against %s", ErrIncomparable, a.describe(), b.describe())
	}
	same := func(i, j int) bool {
		return strings.Trim(a.links[i], "/") == strings.Trim(b.links[j], "/")
	}
	if a.kind == kindBounded {
		if len(a.owner) != len(b.owner) {
			return 0, fmt.Errorf("%w: %d partitions against %d", ErrIncomparable, len(a.owner), len(b.owner))
		}
		moved := 0
		for p := range a.owner {
			if !same(int(a.owner[p]), int(b.owner[p])) {
				moved++
			}
		}
		return float64(moved) / float64(len(a.owner)), nil
	}
	// Between two consecutive boundaries (the points of both rings) each
	// ring has one owner; measure the arcs where they differ.
	type pos struct{ hi, lo uint64 }
	bounds := make([]pos, 0, a.Len()+b.Len())
	for _, g := range []*Ring{a, b} {
		hi, _ := g.boundaries()
		for i := range hi {
			bounds = append(bounds, pos{hi[i], g.loAt(i)})
		}
	}
	slices.SortFunc(bounds, func(x, y pos) int {
		if c := cmp.Compare(x.hi, y.hi); c != 0 {
			return c
		}
		return cmp.Compare(x.lo, y.lo)
	})
	bounds = slices.Compact(bounds)
	n := len(bounds)
	if n == 1 {
		x := bounds[0]
		if same(a.locate(x.hi, x.lo), b.locate(x.hi, x.lo)) {
			return 0, nil
		}
		return 1, nil
	}
	var moved float64
	for i, x := range bounds {
		var length float64
		if a.kind == kindDigest {
			// (previous boundary, x] is owned as x is.
			p := bounds[(i+n-1)%n]
			length = arc(x.hi, x.lo, p.hi, p.lo)
		} else {
			// [x, next boundary) is owned as x is.
			q := bounds[(i+1)%n]
			length = arc(q.hi, q.lo, x.hi, x.lo)
		}
		if !same(a.locate(x.hi, x.lo), b.locate(x.hi, x.lo)) {
			moved += length
		}
	}
	return moved, nil
}

func (g *Ring) describe() string {
	switch g.kind {
	case kindBounded:
		return fmt.Sprintf("bounded strategy (%s, %d partitions)", g.space, len(g.owner))
	case kindMurmur:
		return "murmur3 ring"
	}
	return g.flavour + " ring"
}

// arc returns (a - b) mod 2^128 as a fraction of the circle.
func arc(aHi, aLo, bHi, bLo uint64) float64 {
	return fraction(sub128(aHi, aLo, bHi, bLo))
}

// sub128 returns (a - b) mod 2^128.
func sub128(aHi, aLo, bHi, bLo uint64) (hi, lo uint64) {
	lo, borrow := bits.Sub64(aLo, bLo, 0)
	hi, _ = bits.Sub64(aHi, bHi, borrow)
	return hi, lo
}

// fraction returns hi:lo / 2^128.
func fraction(hi, lo uint64) float64 {
	return (float64(hi) + float64(lo)/(1<<64)) / (1 << 64)
}

func (g *Ring) loAt(i int) uint64 {
	if g.lo == nil {
		return 0
	}
	return g.lo[i]
}

func digestOf(hi, lo uint64) Digest {
	var d Digest
	binary.BigEndian.PutUint64(d[:8], hi)
	binary.BigEndian.PutUint64(d[8:], lo)
	return d
}

// position hashes key text to a ring position. b does not escape (a custom
// generator, called through an interface, gets a copy), so callers may pass
// stack buffers.
func (g *Ring) position(b []byte) (hi, lo uint64) {
	switch g.hk {
	case hashMD5:
		d := md5.Sum(b)
		return binary.BigEndian.Uint64(d[:8]), binary.BigEndian.Uint64(d[8:])
	case hashXX:
		return xxhash.Sum64(b), 0
	case hashMurmur:
		return uint64(murmur3(b, 0)) << 32, 0
	}
	return g.customPosition(bytes.Clone(b))
}

func (g *Ring) customPosition(b []byte) (hi, lo uint64) {
	d := g.gen.Hash(b)
	clear(d[g.size:])
	return binary.BigEndian.Uint64(d[:8]), binary.BigEndian.Uint64(d[8:])
}

// locate returns the link index owning a position.
func (g *Ring) locate(hi, lo uint64) int {
	switch g.kind {
	case kindBounded:
		return int(g.owner[hi%uint64(len(g.owner))])
	case kindMurmur:
		// The last point <= hi: one before the first point > hi (murmur3
		// positions have no low half).
		i, j := 0, len(g.hi)
		for i < j {
			m := int(uint(i+j) >> 1)
			if g.hi[m] <= hi {
				i = m + 1
			} else {
				j = m
			}
		}
		if i == 0 {
			i = len(g.hi)
		}
		return int(g.owner[i-1])
	}
	if g.hot != nil {
		return g.locateBalanced(hi) // 64-bit positions
	}
	// The first point >= (hi, lo): search the high halves, then step over
	// points with an equal high half and a smaller low half (2^-64 rare).
	i, j := 0, len(g.hi)
	for i < j {
		m := int(uint(i+j) >> 1)
		if g.hi[m] < hi {
			i = m + 1
		} else {
			j = m
		}
	}
	if g.lo != nil {
		for i < len(g.hi) && g.hi[i] == hi && g.lo[i] < lo {
			i++
		}
	}
	if i == len(g.hi) {
		i = 0
	}
	return int(g.owner[i])
}

// chain describes how a flavour computes points: the first point of a link,
// and each next point from the previous one.
type chain struct {
	first func(link string) Digest
	next  func(prev Digest) Digest
}

// chain returns the point chain of a flavour's ring.
func (g *Ring) chain(flavour string) chain {
	view := func(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
	md5Next := func(p Digest) Digest { return md5.Sum(p[:]) }
	switch flavour {
	case FlavourDotnetX64, FlavourDotnetX86:
		seed := dotnetHash64
		if flavour == FlavourDotnetX86 {
			seed = dotnetHash32
		}
		return chain{
			first: func(l string) Digest {
				var b [4]byte
				binary.LittleEndian.PutUint32(b[:], uint32(seed(l)))
				return md5.Sum(b[:])
			},
			next: md5Next,
		}
	}
	switch g.hk {
	case hashMD5:
		return chain{first: func(l string) Digest { return md5.Sum(view(l)) }, next: md5Next}
	case hashXX:
		return chain{
			first: func(l string) Digest { return digestOf(xxhash.Sum64(view(l)), 0) },
			next:  func(p Digest) Digest { return digestOf(xxhash.Sum64(p[:8]), 0) },
		}
	case hashMurmur:
		// The SDKs hash the previous point's 4 little-endian bytes (Python
		// pack('I'), Java and Node.js alike).
		return chain{
			first: func(l string) Digest { return digestOf(uint64(murmur3(view(l), 0))<<32, 0) },
			next: func(p Digest) Digest {
				var b [4]byte
				binary.LittleEndian.PutUint32(b[:], binary.BigEndian.Uint32(p[:4]))
				return digestOf(uint64(murmur3(b[:], 0))<<32, 0)
			},
		}
	}
	hash := func(b []byte) Digest {
		d := g.gen.Hash(b)
		clear(d[g.size:])
		return d
	}
	return chain{
		first: func(l string) Digest { return hash([]byte(l)) },
		next:  func(p Digest) Digest { return hash(p[:g.size]) },
	}
}

// build places vnodes points per link and sorts them. It returns a
// *resolver.ConfigError when a link would own no place on the ring (all its
// points coincide with another link's, as when two links share a .NET hash
// code).
func (g *Ring) build(c chain, vnodes int) error {
	n := len(g.links) * vnodes
	his := make([]uint64, n)
	los := make([]uint64, n)
	k := 0
	for _, l := range g.links {
		d := c.first(l)
		for v := range vnodes {
			his[k] = binary.BigEndian.Uint64(d[:8])
			los[k] = binary.BigEndian.Uint64(d[8:])
			k++
			if v+1 < vnodes {
				d = c.next(d)
			}
		}
	}
	// Sort point indexes by (hi, lo, index); the index order is link order.
	// Packing the top 42 bits of hi with the 22-bit index lets the standard
	// library sort plain integers, several times faster than a comparison
	// function; the rare runs that share those 42 bits are then put in exact
	// order.
	const idxBits = 22 // MaxPoints = 1 << 22
	const idxMask = 1<<idxBits - 1
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = his[i]&^idxMask | uint64(i)
	}
	scratch := sortKeys(keys)
	for s := 0; s < n; {
		e := s + 1
		for e < n && keys[e]>>idxBits == keys[s]>>idxBits {
			e++
		}
		if e-s > 1 {
			slices.SortFunc(keys[s:e], func(x, y uint64) int {
				x, y = x&idxMask, y&idxMask
				if c := cmp.Compare(his[x], his[y]); c != 0 {
					return c
				}
				if c := cmp.Compare(los[x], los[y]); c != 0 {
					return c
				}
				return cmp.Compare(x, y)
			})
		}
		s = e
	}
	// The ring's arrays reuse the sort's: its scratch becomes the high
	// halves, keys the low halves, each key replaced once read.
	g.hi = scratch
	if g.hi == nil {
		g.hi = make([]uint64, n)
	}
	g.owner = make([]int32, n)
	hasLo := false
	for i, key := range keys {
		p := key & idxMask
		g.hi[i], g.owner[i] = his[p], int32(int(p)/vnodes)
		keys[i] = los[p]
		if los[p] != 0 {
			hasLo = true
		}
	}
	if hasLo {
		g.lo = keys
	}
	return g.checkEveryLinkOwns()
}

// checkEveryLinkOwns reports a link none of whose points owns any place:
// with the first-point rule only the first of equal points owns, with the
// last-point rule only the last.
func (g *Ring) checkEveryLinkOwns() error {
	n := len(g.hi)
	owns := make([]bool, len(g.links))
	shadow := make([]int32, len(g.links)) // who owns the place of a shadowed point
	for s := 0; s < n; {
		e := s + 1
		for e < n && g.hi[e] == g.hi[s] && g.loAt(e) == g.loAt(s) {
			e++
		}
		eff := s
		if g.kind == kindMurmur {
			eff = e - 1
		}
		owns[g.owner[eff]] = true
		for i := s; i < e; i++ {
			if i != eff {
				shadow[g.owner[i]] = g.owner[eff]
			}
		}
		s = e
	}
	for l, ok := range owns {
		if !ok {
			o := shadow[l]
			return resolver.Invalid(fmt.Sprintf("collections[%d]", l), g.links[l],
				fmt.Sprintf("every point of this collection coincides with a point of collections[%d] %q under hash %q, so it would receive no keys", o, g.links[o], g.flavour))
		}
	}
	return nil
}

// sortKeys sorts distinct integers ascending: an LSD radix sort of four
// 16-bit digits for large rings (a tenth of the time of slices.Sort at a
// million points), slices.Sort for small ones. The result is the same. It
// returns the radix sort's scratch array, as long as keys, for the caller
// to reuse (nil after slices.Sort).
func sortKeys(keys []uint64) []uint64 {
	if len(keys) < 1<<14 {
		slices.Sort(keys)
		return nil
	}
	tmp := make([]uint64, len(keys))
	src, dst := keys, tmp
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, k := range src {
			count[k>>shift&0xffff]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range src {
			d := k >> shift & 0xffff
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	// Four passes: the sorted keys are back in keys.
	return tmp
}
