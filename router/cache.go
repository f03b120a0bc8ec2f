package router

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// routeCache remembers where string keys go under one resolver: a
// direct-mapped table (a key's slot is its hash; a new key evicts the old
// one) with atomic slots, so lookups take no lock and allocate nothing.
// Entries are immutable once published. Only string keys are cached: they
// are the common case, and a string never compares equal to a key of
// another type, so no resolver can place two cached keys differently by
// type.
//
// Read routes are admitted on a key's second miss: the first miss only
// records the key's hash in readHash (the slot's last hash seen), and the
// read is placed without allocating a route; a key missed again while its
// hash still holds the slot gets a route. A workload of keys seldom read
// twice (the 20,000 keys over 4,096 slots) then pays no allocation,
// no pointer store and no read of an evicted entry, and a probe for another
// key compares hashes in a dense array without touching the entry.
type routeCache struct {
	seed     maphash.Seed
	mask     uint64
	create   []atomic.Pointer[createEntry]
	read     []atomic.Pointer[route]
	readHash []atomic.Uint64
}

type createEntry struct {
	hash uint64 // the key's hash: a probe for another key stops here
	key  string
	link string
}

func newRouteCache(n int) *routeCache {
	size := 1 << bits.Len(uint(n-1)) // next power of two
	return &routeCache{
		seed:   maphash.MakeSeed(),
		mask:   uint64(size - 1),
		create: make([]atomic.Pointer[createEntry], size),
		read:   make([]atomic.Pointer[route], size),

		readHash: make([]atomic.Uint64, size),
	}
}

// hash returns the hash of a key given as bytes, which picks its slot in
// both tables (maphash.Bytes and maphash.String agree on equal contents).
// Entries keep it, so a probe that finds another key's entry (every probe
// for a key not seen lately) stops without reading that key's bytes: one
// memory access fewer on a miss.
func (rc *routeCache) hash(key []byte) uint64 { return maphash.Bytes(rc.seed, key) }

// createLink returns the cached create placement of a string key given as
// bytes, whose hash is h.
func (rc *routeCache) createLink(h uint64, key []byte) (string, bool) {
	if e := rc.create[h&rc.mask].Load(); e != nil && e.hash == h && e.key == string(key) {
		return e.link, true
	}
	return "", false
}

// hashString is hash for a key held as a string.
func (rc *routeCache) hashString(key string) uint64 { return maphash.String(rc.seed, key) }

// createLinkString is createLink for a key held as a string.
func (rc *routeCache) createLinkString(h uint64, key string) (string, bool) {
	if e := rc.create[h&rc.mask].Load(); e != nil && e.hash == h && e.key == key {
		return e.link, true
	}
	return "", false
}

// putCreate caches the create placement of a key whose hash is h.
func (rc *routeCache) putCreate(h uint64, key, l string) {
	rc.create[h&rc.mask].Store(&createEntry{hash: h, key: key, link: l})
}

// readRoute returns the cached read placement of a string key, or nil,
// the key's hash and, on the key's second miss in a row (its hash still
// recorded in the slot), the slot its placement is to be stored in. A first
// miss records the hash and returns a nil slot: place the key without
// caching it.
func (rc *routeCache) readRoute(key string) (*route, uint64, *atomic.Pointer[route]) {
	h := maphash.String(rc.seed, key)
	i := h & rc.mask
	if rc.readHash[i].Load() != h {
		rc.readHash[i].Store(h)
		return nil, h, nil
	}
	slot := &rc.read[i]
	if e := slot.Load(); e != nil && e.hash == h && e.key == key {
		return e, h, nil
	}
	return nil, h, slot
}

// readRouteBytes returns the cached read placement of a key held as bytes,
// whose hash is h, or nil. It admits nothing (see readRoute).
func (rc *routeCache) readRouteBytes(h uint64, key []byte) *route {
	i := h & rc.mask
	if rc.readHash[i].Load() != h {
		return nil
	}
	if e := rc.read[i].Load(); e != nil && e.hash == h && e.key == string(key) {
		return e
	}
	return nil
}
