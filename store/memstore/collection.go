package memstore

import (
	"encoding/binary"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// entry is one stored document. Entries are immutable once published; a
// write publishes a new entry.
type entry struct {
	key    string // docKey(pk, id)
	id     string
	pk     string // store.KeyText of the partition-key value; "" = undefined
	seq    uint64 // creation order; a replace keeps it
	etag   string // with its quotes, as Cosmos DB writes it
	ts     int64
	hasTTL bool
	ttl    int64 // the document's own "ttl" (-1: never)
	body   []byte

	deleted bool // set (under the collection lock) when removed
	doc     atomic.Pointer[query.Doc]
}

// decoded returns the document as the query engine reads it, decoding it
// on first use.
func (e *entry) decoded() (query.Doc, error) {
	if d := e.doc.Load(); d != nil {
		return *d, nil
	}
	d, err := query.NewDoc(e.body)
	if err != nil {
		return query.Doc{}, err
	}
	e.doc.Store(&d)
	return d, nil
}

func (e *entry) document() *store.Document {
	return &store.Document{ID: e.id, ETag: e.etag, Timestamp: e.ts, Body: e.body}
}

// docKey identifies a document within a collection: its partition-key text
// and its id, length-prefixed so no pair collides.
func docKey(pk, id string) string {
	var n [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(n[:], uint64(len(pk)))
	return string(n[:l]) + pk + id
}

type collection struct {
	mu      sync.RWMutex
	link    string
	spec    store.CollectionSpec
	path    []string
	docs    map[string]*entry   // by docKey
	byID    map[string][]string // id -> docKeys
	order   []*entry            // by seq; deleted entries stay until compaction
	tombs   int
	nextSeq atomic.Uint64
	dropped bool
}

func newCollection(link string, spec store.CollectionSpec, path []string) *collection {
	c := &collection{link: link, spec: spec, path: path, docs: map[string]*entry{}, byID: map[string][]string{}}
	c.nextSeq.Store(1)
	return c
}

// expired reports whether e's time to live has passed, under Cosmos DB's
// rules: no TTL without a default on the collection; a document's own "ttl"
// overrides the default; -1 means never.
func (c *collection) expired(e *entry, now time.Time) bool {
	if c.spec.DefaultTTL == nil {
		return false
	}
	ttl := int64(*c.spec.DefaultTTL)
	if e.hasTTL {
		ttl = e.ttl
	}
	if ttl < 0 {
		return false
	}
	return now.Unix() >= e.ts+ttl
}

// live returns the entry at key unless it is missing or expired.
func (c *collection) live(key string, now time.Time) *entry {
	e := c.docs[key]
	if e == nil || c.expired(e, now) {
		return nil
	}
	return e
}

// publish installs e, replacing old (which may be nil). Caller holds c.mu.
func (c *collection) publish(e, old *entry) {
	if old != nil {
		if old.seq == e.seq {
			c.order[c.index(old.seq)] = e
			old.deleted = true
			c.docs[e.key] = e
			return
		}
		c.remove(old)
	}
	c.docs[e.key] = e
	c.byID[e.id] = append(c.byID[e.id], e.key)
	// Writers publish nearly in seq order: insert from the end.
	i := len(c.order)
	for i > 0 && c.order[i-1].seq > e.seq {
		i--
	}
	c.order = append(c.order, nil)
	copy(c.order[i+1:], c.order[i:])
	c.order[i] = e
}

// remove takes e out. Caller holds c.mu.
func (c *collection) remove(e *entry) {
	if c.docs[e.key] != e {
		return
	}
	delete(c.docs, e.key)
	keys := c.byID[e.id]
	for i, k := range keys {
		if k == e.key {
			keys = append(keys[:i], keys[i+1:]...)
			break
		}
	}
	if len(keys) == 0 {
		delete(c.byID, e.id)
	} else {
		c.byID[e.id] = keys
	}
	e.deleted = true
	c.tombs++
	if c.tombs > 64 && c.tombs > len(c.order)/2 {
		live := c.order[:0]
		for _, x := range c.order {
			if !x.deleted {
				live = append(live, x)
			}
		}
		for i := len(live); i < len(c.order); i++ {
			c.order[i] = nil
		}
		c.order = live
		c.tombs = 0
	}
}

// index returns the position of seq in order (which must hold it).
func (c *collection) index(seq uint64) int {
	return sort.Search(len(c.order), func(i int) bool { return c.order[i].seq >= seq })
}
