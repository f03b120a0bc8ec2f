package memstore

import (
	"slices"
	"sort"
)

// lsnBlock is the most entries one block of an lsnIndex holds. A block is
// a sorted slice: inserting or removing in it moves at most this many
// pointers, and finding a position is a binary search over the blocks,
// then one inside a block.
const lsnBlock = 128

// lsnIndex holds a collection's current entries ordered by LSN (their last
// write), for the change feed: a two-level sorted list of blocks, each a
// non-empty sorted slice of at most lsnBlock entries. Writes append at the
// end (an LSN is new), so the usual insert is an append to the last block;
// a replaced or deleted entry is taken out of its block, and a block that
// empties is dropped, so a read from a position costs two binary searches
// and then one step per entry it returns, never a walk over removed
// entries. Memory: a pointer per entry, plus a slice header per block.
// The last block dropped is kept for the next one needed, so a collection
// whose documents are replaced in turn allocates no blocks. Callers hold
// the collection's lock (for writing, to change it).
type lsnIndex struct {
	blocks [][]*entry
	spare  []*entry // empty, cleared; nil when none
}

// blockOf returns the block that holds lsn, or would: the last one whose
// first LSN is not above it (0 when there is none).
func (x *lsnIndex) blockOf(lsn uint64) int {
	i := sort.Search(len(x.blocks), func(i int) bool { return x.blocks[i][0].lsn > lsn })
	return max(i-1, 0)
}

// insert adds e, whose LSN no entry of the index has.
func (x *lsnIndex) insert(e *entry) {
	n := len(x.blocks)
	if n == 0 {
		x.blocks = append(x.blocks, x.newBlock(e))
		return
	}
	if last := x.blocks[n-1]; e.lsn > last[len(last)-1].lsn { // a new write
		if len(last) < lsnBlock {
			x.blocks[n-1] = append(last, e)
		} else {
			x.blocks = append(x.blocks, x.newBlock(e))
		}
		return
	}
	i := x.blockOf(e.lsn)
	b := x.blocks[i]
	b = slices.Insert(b, sort.Search(len(b), func(j int) bool { return b[j].lsn > e.lsn }), e)
	if len(b) <= lsnBlock {
		x.blocks[i] = b
		return
	}
	// Split in two: the upper half gets its own array, so appends to the
	// lower half never reach it.
	half := len(b) / 2
	upper := make([]*entry, len(b)-half, lsnBlock)
	copy(upper, b[half:])
	clear(b[half:])
	x.blocks[i] = b[:half]
	x.blocks = slices.Insert(x.blocks, i+1, upper)
}

// newBlock returns a block holding e: the spare one if there is one.
func (x *lsnIndex) newBlock(e *entry) []*entry {
	b := x.spare
	if b == nil {
		b = make([]*entry, 0, lsnBlock)
	}
	x.spare = nil
	return append(b, e)
}

// remove takes e out; it does nothing when e is not in the index.
func (x *lsnIndex) remove(e *entry) {
	if len(x.blocks) == 0 {
		return
	}
	i := x.blockOf(e.lsn)
	b := x.blocks[i]
	j := sort.Search(len(b), func(j int) bool { return b[j].lsn >= e.lsn })
	if j == len(b) || b[j] != e {
		return
	}
	b = slices.Delete(b, j, j+1) // clears the freed slot
	switch {
	case len(b) == 0:
		x.blocks = slices.Delete(x.blocks, i, i+1)
		x.spare = b
	case len(b) <= lsnBlock/4 && i > 0 && len(x.blocks[i-1])+len(b) <= lsnBlock/2:
		// Few left: join the previous block, so blocks stay well filled.
		x.blocks[i-1] = append(x.blocks[i-1], b...)
		x.blocks = slices.Delete(x.blocks, i, i+1)
		clear(b)
		x.spare = b[:0]
	default:
		x.blocks[i] = b
	}
}

// after returns the entries whose LSN is above lsn, in LSN order; the
// caller stops when it has enough. Finding the start costs two binary
// searches.
func (x *lsnIndex) after(lsn uint64) func(yield func(*entry) bool) {
	return func(yield func(*entry) bool) {
		i := sort.Search(len(x.blocks), func(i int) bool { b := x.blocks[i]; return b[len(b)-1].lsn > lsn })
		if i == len(x.blocks) {
			return
		}
		b := x.blocks[i]
		for _, e := range b[sort.Search(len(b), func(j int) bool { return b[j].lsn > lsn }):] {
			if !yield(e) {
				return
			}
		}
		for _, b := range x.blocks[i+1:] {
			for _, e := range b {
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
		n += len(b)
	}
	return n
}
