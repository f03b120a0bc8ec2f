package memstore

import "slices"

// lsnBlockSize is the most entries one block of an lsnIndex holds. A
// block is a sorted run in a fixed array: inserting or removing in it
// moves at most half this many pointers, and finding a position is a
// binary search over the blocks, then one inside a block.
const lsnBlockSize = 128

// lsnIndex holds a collection's current entries ordered by LSN (their last
// write), for the change feed: a sorted list of blocks, each a non-empty
// sorted run of at most lsnBlockSize entries. Writes append at the end (an
// LSN is new), so the usual insert is a store into the last block; a
// replaced or deleted entry is taken out of its block (the oldest from the
// front, without moving the rest), and a block that empties is dropped, so
// a read from a position costs two binary searches and then one step per
// entry it returns, never a walk over removed entries. Memory: a pointer
// per entry, about a block's array per 128 entries. The last block dropped
// is kept for the next one needed, so a collection whose documents are
// replaced in turn allocates no blocks. Callers hold the collection's lock
// (for writing, to change it).
type lsnIndex struct {
	blocks []*lsnBlock
	spare  *lsnBlock // empty; nil when none
}

// lsnBlock holds its entries in e[lo:hi], sorted by LSN; the other slots
// are nil.
type lsnBlock struct {
	lo, hi int
	e      [lsnBlockSize]*entry
}

func (b *lsnBlock) len() int      { return b.hi - b.lo }
func (b *lsnBlock) first() uint64 { return b.e[b.lo].lsn }
func (b *lsnBlock) last() uint64  { return b.e[b.hi-1].lsn }

// above returns the position of the first entry whose LSN is above lsn
// (hi when none is).
func (b *lsnBlock) above(lsn uint64) int {
	lo, hi := b.lo, b.hi
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); b.e[m].lsn <= lsn {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// blockOf returns the block that holds lsn, or would: the last one whose
// first LSN is not above it (0 when there is none).
func (x *lsnIndex) blockOf(lsn uint64) int {
	lo, hi := 0, len(x.blocks)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); x.blocks[m].first() <= lsn {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(lo-1, 0)
}

// newBlock returns an empty block: the spare one if there is one.
func (x *lsnIndex) newBlock() *lsnBlock {
	if b := x.spare; b != nil {
		x.spare = nil
		return b
	}
	return &lsnBlock{}
}

// drop takes block i out of the index; b, now empty, becomes the spare.
func (x *lsnIndex) drop(i int) {
	b := x.blocks[i]
	x.blocks = slices.Delete(x.blocks, i, i+1)
	clear(b.e[b.lo:b.hi])
	b.lo, b.hi = 0, 0
	x.spare = b
}

// insert adds e, whose LSN no entry of the index has.
func (x *lsnIndex) insert(e *entry) {
	n := len(x.blocks)
	if n == 0 || e.lsn > x.blocks[n-1].last() { // a new write
		if n == 0 || x.blocks[n-1].hi == lsnBlockSize {
			x.blocks = append(x.blocks, x.newBlock())
			n++
		}
		b := x.blocks[n-1]
		b.e[b.hi] = e
		b.hi++
		return
	}
	i := x.blockOf(e.lsn)
	b := x.blocks[i]
	if b.len() == lsnBlockSize { // full: split it, then insert where there is room
		half := lsnBlockSize / 2
		upper := x.newBlock()
		upper.hi = copy(upper.e[:], b.e[b.lo+half:b.hi])
		clear(b.e[b.lo+half : b.hi])
		b.hi = b.lo + half
		x.blocks = slices.Insert(x.blocks, i+1, upper)
		x.insert(e)
		return
	}
	pos := b.above(e.lsn)
	if b.hi < lsnBlockSize && (b.lo == 0 || b.hi-pos <= pos-b.lo) {
		copy(b.e[pos+1:b.hi+1], b.e[pos:b.hi]) // the entries after e move up
		b.hi++
		b.e[pos] = e
		return
	}
	copy(b.e[b.lo-1:pos-1], b.e[b.lo:pos]) // the entries before e move down
	b.lo--
	b.e[pos-1] = e
}

// find returns the block and position of e; ok is false when e is not in
// the index. The oldest and newest entries, which replaced documents
// usually are, are found without a search.
func (x *lsnIndex) find(e *entry) (i, pos int, ok bool) {
	n := len(x.blocks)
	switch {
	case n == 0:
		return 0, 0, false
	case e.lsn <= x.blocks[0].last():
		i = 0
	case e.lsn >= x.blocks[n-1].first():
		i = n - 1
	default:
		i = x.blockOf(e.lsn)
	}
	b := x.blocks[i]
	switch {
	case b.e[b.lo] == e:
		pos = b.lo
	case b.e[b.hi-1] == e:
		pos = b.hi - 1
	default:
		pos = b.above(e.lsn - 1)
	}
	return i, pos, pos < b.hi && b.e[pos] == e
}

// remove takes e out; it does nothing when e is not in the index.
func (x *lsnIndex) remove(e *entry) {
	i, pos, ok := x.find(e)
	if !ok {
		return
	}
	b := x.blocks[i]
	if pos-b.lo < b.hi-1-pos {
		copy(b.e[b.lo+1:pos+1], b.e[b.lo:pos]) // the entries before e move up
		b.e[b.lo] = nil
		b.lo++
	} else {
		copy(b.e[pos:b.hi-1], b.e[pos+1:b.hi]) // the entries after e move down
		b.hi--
		b.e[b.hi] = nil
	}
	switch n := b.len(); {
	case n == 0:
		x.drop(i)
	case n <= lsnBlockSize/4 && i > 0 && x.blocks[i-1].len()+n <= lsnBlockSize/2:
		// Few left: join the previous block, so blocks stay well filled.
		prev := x.blocks[i-1]
		if prev.hi+n > lsnBlockSize {
			prev.hi = copy(prev.e[:], prev.e[prev.lo:prev.hi])
			clear(prev.e[prev.hi:])
			prev.lo = 0
		}
		prev.hi += copy(prev.e[prev.hi:], b.e[b.lo:b.hi])
		x.drop(i)
	}
}

// after returns the entries whose LSN is above lsn, in LSN order; the
// caller stops when it has enough. Finding the start costs two binary
// searches.
func (x *lsnIndex) after(lsn uint64) func(yield func(*entry) bool) {
	return func(yield func(*entry) bool) {
		i := x.blockOf(lsn)
		for ; i < len(x.blocks); i++ {
			b := x.blocks[i]
			for _, e := range b.e[b.above(lsn):b.hi] {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// len returns how many entries the index holds; it costs a pass over the
// blocks (for tests).
func (x *lsnIndex) len() int {
	n := 0
	for _, b := range x.blocks {
		n += b.len()
	}
	return n
}
