package memstore

import (
	"bytes"
	"container/heap"
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// never is the expiry of a document that does not expire.
const never = math.MaxInt64

// entry is one stored version of a document. Its identity and content are
// immutable once published; a write publishes a new entry. The fields
// after the marker are the collection's bookkeeping, read and written
// under the collection's lock only.
type entry struct {
	doc      atomic.Pointer[query.Doc] // decoded on first query, then kept
	pk       string                    // partitionkey.IdentityText of the partition-key value
	pkHash   uint64                    // keyHash(pk)
	expireAt int64                     // Unix seconds; never when it does not expire
	seq      uint64                    // feed position; a replace keeps it
	lsn      uint64                    // change-feed position: new on every write
	id       string
	etag     string // with its quotes, as Cosmos DB writes it
	ts       int64
	body     []byte

	// quiet marks a reshard's copy (store.WriteOptions.Reshard): change
	// feeds read with HideReshard skip it. Set before publishing; a
	// durable record keeps it (markCopy).
	quiet bool

	// Under collection.mu:
	next    *entry // the next entry with the same id (another key value)
	dead    bool   // removed; still in order until compaction
	heapIdx int    // position in the expiry heap; -1 when not in it
	// ghost marks an entry a reshard's clean-up deleted (moved away):
	// gone from every read, it stays in changes for feeds read with
	// HideReshard until its identity is written here again. A durable
	// store keeps its record, marked (markMoved), until then.
	ghost bool
}

// keySeed seeds keyHash; hashes are never stored.
var keySeed = maphash.MakeSeed()

// keyHash hashes a key text, so a scan compares keys mostly without
// reading them.
func keyHash(pk string) uint64 { return maphash.String(keySeed, pk) }

// decoded returns the document as the query engine reads it, decoding it
// on first use. Concurrent first uses decode it once each and agree on the
// first one stored, so every query sees the same maps (lazy projection
// finds documents by their map).
func (e *entry) decoded() (*query.Doc, error) {
	if d := e.doc.Load(); d != nil {
		return d, nil
	}
	d, err := query.NewDoc(e.body)
	if err != nil {
		return nil, fmt.Errorf("document %q: %w", e.id, err)
	}
	if !e.doc.CompareAndSwap(nil, &d) {
		return e.doc.Load(), nil
	}
	return &d, nil
}

func (e *entry) document() *store.Document {
	return &store.Document{ID: e.id, ETag: e.etag, Timestamp: e.ts, Body: e.body, Seq: e.seq}
}

// collection is one collection's documents. byID chains the entries of an
// id (one per partition-key value: usually one); order holds the entries
// in feed order (by seq), deleted ones until compaction; changes holds the
// current entries in change-feed order (by lsn); the expiry heap holds the
// entries that expire, soonest first.
type collection struct {
	link string // canonical link
	uid  string // random per incarnation: bucket name, bound into tokens
	// specp is the collection's spec, replaced whole (never modified) by
	// ReplaceCollection; its partition-key paths and unique keys never
	// change.
	specp atomic.Pointer[store.CollectionSpec]
	path  partitionkey.Path  // the key's path, the first of a hierarchical key's
	paths partitionkey.Paths // every path: one, or 2 to 3 for a hierarchical key
	uniq  *uniqueIndex       // nil without unique keys

	mu      sync.RWMutex
	byID    map[string]*entry
	order   []*entry
	dead    int // dead entries in order
	changes lsnIndex
	ghosts  map[string]*entry // ghost entries in changes, by ghostKey
	expiry  expiryHeap
	docs    int64 // live entries (expired ones until purged)
	bytes   int64
	held    room // growth of writes between their quota check and their commit (see hold)
	dropped bool

	nextSeq    atomic.Uint64
	lsns       lsnClock
	nextExpiry atomic.Int64  // expireAt of the heap's top; never when empty
	version    atomic.Uint64 // changes (under mu) whenever order does
	snap       atomic.Pointer[snapshot]
	fence      atomic.Pointer[dbFence] // its database's, once a stamped write needed it
	lazy       *lazyLoad               // a read-only store's load, to run on first use; nil when loaded
}

// snapshot is the collection's documents in feed order as of a version:
// queries share it while the collection does not change, so a query over
// an unchanged collection scans one contiguous array. Expired documents
// stay in it until the next purge; queries skip them by time. A document
// is decoded when the first query that reads it needs it (see
// snapshot.decode), so a query scoped to one key decodes only that key's
// documents.
type snapshot struct {
	version uint64
	items   []snapItem

	idx        atomic.Pointer[map[unsafe.Pointer]int32] // see index
	allDecoded atomic.Bool                              // every item decoded: queries skip the decoding pass
}

// snapItem is one document of a snapshot, 32 bytes: what a scan reads to
// decide whether the document is in scope (its key is compared only when
// the hashes match), and its decoded form once a query has decoded it.
type snapItem struct {
	decoded  atomic.Pointer[query.Doc] // e's decoded form: one hop less for a scan
	e        *entry
	expireAt int64
	pkHash   uint64
}

func newCollection(link, uid string, spec store.CollectionSpec, paths partitionkey.Paths) *collection {
	c := &collection{link: link, uid: uid, path: paths[0], paths: paths, byID: map[string]*entry{}}
	c.specp.Store(&spec)
	c.uniq = newUniqueIndex(spec.UniqueKeys)
	c.nextSeq.Store(1)
	c.nextExpiry.Store(never)
	return c
}

// spec returns the collection's spec; callers must not modify it.
func (c *collection) spec() *store.CollectionSpec { return c.specp.Load() }

// expireAt computes when a document written at ts expires, under Cosmos
// DB's rules: nothing expires without a default TTL on the collection; a
// document's own ttl (when it has one) overrides the default; -1 is never.
func (c *collection) expireAt(ts int64, hasTTL bool, ttl int64) int64 {
	return expireUnder(c.spec().DefaultTTL, ts, hasTTL, ttl)
}

// expireUnder is collection.expireAt under the default TTL def.
func expireUnder(def *int, ts int64, hasTTL bool, ttl int64) int64 {
	if def == nil {
		return never
	}
	if !hasTTL {
		ttl = int64(*def)
	}
	if ttl < 0 {
		return never
	}
	return ts + ttl
}

// find returns the entry of (id, pk), expired or not. Caller holds c.mu.
func (c *collection) find(id, pk string) *entry {
	for e := c.byID[id]; e != nil; e = e.next {
		if e.pk == pk {
			return e
		}
	}
	return nil
}

// live returns the entry of (id, pk) unless it is missing or expired at
// now. Caller holds c.mu.
func (c *collection) live(id, pk string, now int64) *entry {
	e := c.find(id, pk)
	if e == nil || e.expireAt <= now {
		return nil
	}
	return e
}

// publish installs e in place of the current entry of its identity, if
// any. Caller holds c.mu for writing.
func (c *collection) publish(e *entry) {
	c.version.Add(1)
	e.heapIdx = -1
	old := c.find(e.id, e.pk)
	if c.uniq != nil {
		if old != nil {
			c.uniq.drop(old)
		}
		c.uniq.add(e)
	}
	if g := c.displaced(e); g != nil {
		c.changes.remove(g)
		delete(c.ghosts, ghostKey(e.id, e.pk))
	}
	if old == nil {
		e.next = c.byID[e.id]
		c.byID[e.id] = e
	} else {
		c.relink(old, e)
		c.unaccount(old)
		c.changes.remove(old)
	}
	c.changes.insert(e)
	c.docs++
	c.bytes += int64(len(e.body))
	if e.expireAt != never {
		heap.Push(&c.expiry, e)
		c.nextExpiry.Store(c.expiry[0].expireAt)
	}
	if old != nil && old.seq == e.seq {
		c.order[c.index(e.seq)] = e
		return
	}
	if old != nil {
		c.kill(old)
	}
	// Writers publish nearly in seq order: insert from the end.
	i := len(c.order)
	for i > 0 && c.order[i-1].seq > e.seq {
		i--
	}
	c.order = append(c.order, nil)
	copy(c.order[i+1:], c.order[i:])
	c.order[i] = e
}

// remove takes out the entry e (which must be current). Caller holds c.mu
// for writing.
func (c *collection) remove(e *entry) {
	c.version.Add(1)
	if c.uniq != nil {
		c.uniq.drop(e)
	}
	c.relink(e, nil)
	c.unaccount(e)
	c.changes.remove(e)
	c.kill(e)
}

// moveOut takes out the entry e (which must be current) as a reshard's
// clean-up does: gone from every read, as remove does, but an entry that
// is not itself a copy stays in the change feed as a ghost, its version
// still the document's last in this collection. Caller holds c.mu for
// writing.
func (c *collection) moveOut(e *entry) {
	if e.quiet {
		c.remove(e)
		return
	}
	c.version.Add(1)
	if c.uniq != nil {
		c.uniq.drop(e)
	}
	c.relink(e, nil)
	c.unaccount(e)
	c.kill(e)
	c.keepGhost(e)
}

// keepGhost marks e, an entry in the change feed that is no longer
// current, the ghost of its identity. Caller holds c.mu for writing.
func (c *collection) keepGhost(e *entry) {
	e.ghost = true
	if c.ghosts == nil {
		c.ghosts = map[string]*entry{}
	}
	c.ghosts[ghostKey(e.id, e.pk)] = e
}

// displaced returns the ghost that publishing e takes out of the change
// feed, nil when none: the ghost of e's identity, unless e is a copy of
// the ghost's own version. The identity is written here again with
// another version: that version stands for it in the feed (visibly, or,
// for a copy, where it was copied from). A copy of the ghost's own
// version (the document moved back) leaves the ghost its one visible
// place. Caller holds c.mu.
func (c *collection) displaced(e *entry) *entry {
	g := c.ghosts[ghostKey(e.id, e.pk)]
	if g == nil || e.quiet && sameContent(g.body, e.body) {
		return nil
	}
	return g
}

// sameContent reports whether two stored bodies hold the same document:
// the same text before the system properties a write appends (see
// incoming.body).
func sameContent(a, b []byte) bool {
	return bytes.Equal(userText(a), userText(b))
}

// userText is a stored body without the system properties a write
// appends at its end.
func userText(body []byte) []byte {
	if i := bytes.LastIndex(body, []byte(`,"_etag":"`)); i >= 0 {
		return body[:i]
	}
	return body
}

// ghostKey is a document identity (id within a partition-key value) as a
// map key.
func ghostKey(id, pk string) string { return id + "\x00" + pk }

// relink replaces old by e (nil: unlinks old) in its id's chain.
func (c *collection) relink(old, e *entry) {
	repl := old.next
	if e != nil {
		e.next = old.next
		repl = e
	}
	if c.byID[old.id] == old {
		if repl == nil {
			delete(c.byID, old.id)
		} else {
			c.byID[old.id] = repl
		}
		return
	}
	for p := c.byID[old.id]; p != nil; p = p.next {
		if p.next == old {
			p.next = repl
			return
		}
	}
}

// unaccount drops old from the usage counters and the expiry heap.
func (c *collection) unaccount(old *entry) {
	c.docs--
	c.bytes -= int64(len(old.body))
	if old.heapIdx >= 0 {
		heap.Remove(&c.expiry, old.heapIdx)
		c.setNextExpiry()
	}
}

func (c *collection) setNextExpiry() {
	if len(c.expiry) == 0 {
		c.nextExpiry.Store(never)
	} else {
		c.nextExpiry.Store(c.expiry[0].expireAt)
	}
}

// kill marks e dead in order and compacts order when half of it is dead.
func (c *collection) kill(e *entry) {
	e.dead = true
	c.dead++
	if c.dead > 64 && c.dead > len(c.order)/2 {
		live := make([]*entry, 0, len(c.order)-c.dead+len(c.order)/8)
		for _, x := range c.order {
			if !x.dead {
				live = append(live, x)
			}
		}
		c.order, c.dead = live, 0
	}
}

// index returns the position of seq in order (which must hold it).
func (c *collection) index(seq uint64) int {
	return sort.Search(len(c.order), func(i int) bool { return c.order[i].seq >= seq })
}

// purge removes up to limit entries that have expired by now and returns
// them. tryLock guards against removing an entry a writer is about to
// replace: it must report whether the document's write lock was taken
// (and unlock it when the removal is done, through the returned function).
// Caller holds c.mu for writing.
func (c *collection) purge(now int64, limit int, tryLock func(e *entry) (func(), bool)) []*entry {
	var out, busy []*entry
	for len(c.expiry) > 0 && c.expiry[0].expireAt <= now && len(out) < limit {
		e := c.expiry[0]
		unlock, ok := tryLock(e)
		if !ok {
			heap.Pop(&c.expiry)
			busy = append(busy, e)
			continue
		}
		heap.Pop(&c.expiry)
		c.version.Add(1)
		if c.uniq != nil {
			c.uniq.drop(e)
		}
		c.relink(e, nil)
		c.docs--
		c.bytes -= int64(len(e.body))
		c.changes.remove(e)
		c.kill(e)
		unlock()
		out = append(out, e)
	}
	for _, e := range busy {
		heap.Push(&c.expiry, e)
	}
	c.setNextExpiry()
	return out
}

// room is growth a write adds to a collection's usage: documents and
// bytes, each 0 or more.
type room struct{ docs, bytes int64 }

// growth is what writing e over old (the entry of its identity, expired or
// not, which publish replaces; nil when none) adds to the usage, counted
// as publish counts it; a measure that does not grow is 0.
func growth(old, e *entry) room {
	var r room
	if old == nil {
		r.docs = 1
		r.bytes = int64(len(e.body))
	} else {
		r.bytes = max(int64(len(e.body))-int64(len(old.body)), 0)
	}
	return r
}

// hold checks a write that grows the collection by g against its quota
// (store.CollectionSpec.Quota) and, when it fits, holds that room until
// the write publishes or fails (unhold): the usage plus every held room
// stays within the quota, so writes that commit together (the durable
// store's group commits) never take the collection past it. A write that
// does not fit is an error wrapping store.ErrQuotaExceeded. Without a
// quota it costs nothing and takes no lock.
func (c *collection) hold(op, l, id string, g room) error {
	q := c.spec().Quota
	if q == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	docs, bytes := c.docs+c.held.docs, c.bytes+c.held.bytes
	if !q.Allows(docs, bytes, g.docs, g.bytes) {
		return store.Errorf(store.ErrQuotaExceeded, op, l, id,
			"the collection holds %d documents and %d bytes (with the writes in progress), and its quota is %s: "+
				"this write would take it past that; write to another collection (a spillover's router opens its next one)",
			docs, bytes, quotaText(q))
	}
	c.held.docs += g.docs
	c.held.bytes += g.bytes
	return nil
}

// unhold gives back room a write held (hold), when it publishes (in the
// same critical section, so the usage counts it instead) or fails. Caller
// holds c.mu for writing when the collection has a quota.
func (c *collection) unhold(g room) {
	if c.spec().Quota == nil {
		return
	}
	c.held.docs -= g.docs
	c.held.bytes -= g.bytes
}

// quotaText names a quota's bounds as its JSON does.
func quotaText(q *store.Quota) string {
	switch {
	case q.MaxDocuments > 0 && q.MaxBytes > 0:
		return fmt.Sprintf("maxDocuments %d, maxBytes %d", q.MaxDocuments, q.MaxBytes)
	case q.MaxDocuments > 0:
		return fmt.Sprintf("maxDocuments %d", q.MaxDocuments)
	}
	return fmt.Sprintf("maxBytes %d", q.MaxBytes)
}

// expiryHeap orders entries by expiry, soonest first.
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expireAt < h[j].expireAt }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}

func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.heapIdx = len(*h)
	*h = append(*h, e)
}

func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}
