package router

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/docshard/docshard/store"
)

// routeCache remembers where string keys go under one resolver: a
// direct-mapped table (a key's slot is its hash; a new key evicts the old
// one) with atomic slots, so lookups take no lock and allocate nothing.
// Entries are immutable once published. Only string keys are cached: they
// are the common case, and a string never compares equal to a key of
// another type, so no resolver can place two cached keys differently by
// type.
type routeCache struct {
	seed   maphash.Seed
	mask   uint64
	create []atomic.Pointer[createEntry]
	read   []atomic.Pointer[readEntry]
}

type createEntry struct {
	key  string
	link string
}

// readEntry is where point operations on one key look. One allocation
// holds it all, and it is shared by every call on the key: nothing in it
// is modified once published, the links are never handed out, and the
// store only reads the options.
type readEntry struct {
	key   string
	links []string
	store any                // the key as the store gets it
	ro    store.ReadOptions  // for reads
	wo    store.WriteOptions // for unconditional replaces and deletes
}

// writeOptions returns the options of a write on the entry's key: the
// shared unconditional ones, or a new conditional one for an ETag.
func (e *readEntry) writeOptions(ifMatch string) *store.WriteOptions {
	if ifMatch == "" {
		return &e.wo
	}
	return &store.WriteOptions{PartitionKey: e.store, IfMatch: ifMatch}
}

func newRouteCache(n int) *routeCache {
	size := 1 << bits.Len(uint(n-1)) // next power of two
	return &routeCache{
		seed:   maphash.MakeSeed(),
		mask:   uint64(size - 1),
		create: make([]atomic.Pointer[createEntry], size),
		read:   make([]atomic.Pointer[readEntry], size),
	}
}

// slot returns the slot of a key given as bytes in both tables
// (maphash.Bytes and maphash.String agree on equal contents).
func (rc *routeCache) slot(key []byte) uint64 { return maphash.Bytes(rc.seed, key) & rc.mask }

// createLink returns the cached create placement of a string key given as
// bytes, in its slot.
func (rc *routeCache) createLink(slot uint64, key []byte) (string, bool) {
	if e := rc.create[slot].Load(); e != nil && e.key == string(key) {
		return e.link, true
	}
	return "", false
}

// createLinkString is createLink for a key held as a string.
func (rc *routeCache) createLinkString(key string) (string, bool) {
	if e := rc.create[maphash.String(rc.seed, key)&rc.mask].Load(); e != nil && e.key == key {
		return e.link, true
	}
	return "", false
}

func (rc *routeCache) putCreate(key, l string) {
	rc.create[maphash.String(rc.seed, key)&rc.mask].Store(&createEntry{key: key, link: l})
}

// readRoute returns the cached read placement of a string key, or nil and
// the slot the key's placement goes to.
func (rc *routeCache) readRoute(key string) (*readEntry, *atomic.Pointer[readEntry]) {
	slot := &rc.read[maphash.String(rc.seed, key)&rc.mask]
	if e := slot.Load(); e != nil && e.key == key {
		return e, nil
	}
	return nil, slot
}

// readRouteBytes is readRoute for a key held as bytes, in its slot.
func (rc *routeCache) readRouteBytes(slot uint64, key []byte) *readEntry {
	if e := rc.read[slot].Load(); e != nil && e.key == string(key) {
		return e
	}
	return nil
}
