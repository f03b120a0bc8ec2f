package hashring

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// digestRing is the md5-style ring of DESIGN.md: points sorted by digest
// (unsigned big-endian), equal digests in link order; the owner of a hash is
// the first point at or after it, wrapping to the first point.
//
// Digests are kept as two uint64 halves in parallel slices, so a lookup is a
// branch-light binary search over plain integers with no allocation.
type digestRing struct {
	gen   HashGenerator
	hi    []uint64
	lo    []uint64
	owner []int32 // link index of each point
}

type digestPoint struct {
	hi, lo uint64
	link   int32
}

// newDigestRing builds the ring. first returns the first point of link i.
func newDigestRing(gen HashGenerator, links []string, vnodes int, first func(i int) Digest) *digestRing {
	size := gen.Size()
	pts := make([]digestPoint, 0, len(links)*vnodes)
	for i := range links {
		d := first(i)
		for v := 0; v < vnodes; v++ {
			pts = append(pts, digestPoint{
				hi:   binary.BigEndian.Uint64(d[:8]),
				lo:   binary.BigEndian.Uint64(d[8:]),
				link: int32(i),
			})
			if v+1 < vnodes {
				d = gen.Hash(d[:size])
			}
		}
	}
	slices.SortFunc(pts, func(a, b digestPoint) int {
		if c := cmp.Compare(a.hi, b.hi); c != 0 {
			return c
		}
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return cmp.Compare(a.link, b.link)
	})
	r := &digestRing{gen: gen, hi: make([]uint64, len(pts)), lo: make([]uint64, len(pts)), owner: make([]int32, len(pts))}
	for i, p := range pts {
		r.hi[i], r.lo[i], r.owner[i] = p.hi, p.lo, p.link
	}
	return r
}

// locate returns the link index owning data's hash.
func (r *digestRing) locate(data []byte) int {
	d := r.gen.Hash(data)
	return r.locateDigest(binary.BigEndian.Uint64(d[:8]), binary.BigEndian.Uint64(d[8:]))
}

func (r *digestRing) locateDigest(hi, lo uint64) int {
	// First point with (hi, lo) >= the key's digest.
	i, j := 0, len(r.hi)
	for i < j {
		h := int(uint(i+j) >> 1)
		if r.hi[h] < hi || (r.hi[h] == hi && r.lo[h] < lo) {
			i = h + 1
		} else {
			j = h
		}
	}
	if i == len(r.hi) {
		i = 0
	}
	return int(r.owner[i])
}

func (r *digestRing) points() int { return len(r.hi) }

// murmurRing is the ring of the Node.js, Python and Java DocumentDB SDKs:
// points are MurmurHash3 x86 32-bit values in ascending order; the owner of a
// hash is the last point at or before it, wrapping to the last point.
type murmurRing struct {
	pts   []uint32
	owner []int32
}

type murmurPoint struct {
	h    uint32
	link int32
}

func newMurmurRing(links []string, vnodes int) *murmurRing {
	pts := make([]murmurPoint, 0, len(links)*vnodes)
	var buf [4]byte
	for i, l := range links {
		h := murmur3([]byte(l), 0)
		for v := 0; v < vnodes; v++ {
			pts = append(pts, murmurPoint{h: h, link: int32(i)})
			binary.LittleEndian.PutUint32(buf[:], h)
			h = murmur3(buf[:], 0)
		}
	}
	slices.SortStableFunc(pts, func(a, b murmurPoint) int { return cmp.Compare(a.h, b.h) })
	r := &murmurRing{pts: make([]uint32, len(pts)), owner: make([]int32, len(pts))}
	for i, p := range pts {
		r.pts[i], r.owner[i] = p.h, p.link
	}
	return r
}

func (r *murmurRing) locate(data []byte) int {
	h := murmur3(data, 0)
	// Last point <= h: one before the first point > h.
	i, j := 0, len(r.pts)
	for i < j {
		m := int(uint(i+j) >> 1)
		if r.pts[m] <= h {
			i = m + 1
		} else {
			j = m
		}
	}
	if i == 0 {
		return int(r.owner[len(r.owner)-1])
	}
	return int(r.owner[i-1])
}

func (r *murmurRing) points() int { return len(r.pts) }

// murmur3 is MurmurHash3 x86 32-bit (Austin Appleby's reference algorithm).
// Written here rather than imported: it is twenty lines, and the ring needs
// exactly this variant with a fixed seed and no allocation.
func murmur3(data []byte, seed uint32) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := seed
	n := len(data)
	nblocks := n / 4
	for i := 0; i < nblocks; i++ {
		k := binary.LittleEndian.Uint32(data[i*4:])
		k *= c1
		k = k<<15 | k>>17
		k *= c2
		h ^= k
		h = h<<13 | h>>19
		h = h*5 + 0xe6546b64
	}
	tail := data[nblocks*4:]
	var k uint32
	switch len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		k *= c1
		k = k<<15 | k>>17
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}
