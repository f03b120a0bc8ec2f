package memstore

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// uniqueIndex enforces a collection's unique keys
// (store.CollectionSpec.UniqueKeys): for each unique key, the values at its
// paths, with the document's partition-key text, make a tuple that at most
// one live document holds. owner maps each tuple to the entry that holds
// it; held maps the tuples of writes in progress (between their check and
// their publish) to the id writing them, so two concurrent writes of one
// tuple cannot both pass. Both are read and written under collection.mu.
// A collection without unique keys has none, and its writes pay nothing.
type uniqueIndex struct {
	keys  [][]partitionkey.Path
	owner map[string]*entry
	held  map[string]string
}

// newUniqueIndex returns the index of unique keys whose paths CheckSpec
// accepted; nil for none.
func newUniqueIndex(keys [][]string) *uniqueIndex {
	if len(keys) == 0 {
		return nil
	}
	u := &uniqueIndex{owner: map[string]*entry{}, held: map[string]string{}}
	for _, k := range keys {
		var paths []partitionkey.Path
		for _, p := range k {
			path, _ := partitionkey.ParsePath(p)
			paths = append(paths, path)
		}
		u.keys = append(u.keys, paths)
	}
	return u
}

// tuples returns the tuples of a document with partition-key text pk and
// stored text body, one per unique key. A value is its identity text (RFC
// 8785 JSON); a missing one is null, as Cosmos DB counts it; an object or
// array is its JSON text with members sorted. Cost: a scan of the document
// per path.
func (u *uniqueIndex) tuples(pk string, body []byte) []string {
	out := make([]string, len(u.keys))
	var b []byte
	for i, k := range u.keys {
		b = append(append(b[:0], pk...), 0)
		b = strconv.AppendInt(b, int64(i), 10)
		for _, p := range k {
			b = appendUniqueValue(append(b, 0), p, body)
		}
		out[i] = string(b)
	}
	return out
}

// appendUniqueValue appends the text of the value at p in body (see
// tuples).
func appendUniqueValue(b []byte, p partitionkey.Path, body []byte) []byte {
	v, err := p.Lookup(body)
	if err == nil {
		if t, err := v.AppendIdentity(b); err == nil {
			return t
		}
	}
	if !errors.Is(err, partitionkey.ErrKeyType) {
		return append(b, "null"...)
	}
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return append(b, "null"...)
	}
	for i := 0; i < p.Len(); i++ {
		m, ok := doc.(map[string]any)
		if !ok {
			return append(b, "null"...)
		}
		doc = m[p.Segment(i)]
	}
	text, _ := json.Marshal(doc) // encoding/json sorts members
	return append(b, text...)
}

// add records the tuples of e, which is being published.
func (u *uniqueIndex) add(e *entry) {
	for _, t := range u.tuples(e.pk, e.body) {
		u.owner[t] = e
	}
}

// drop forgets the tuples e holds, as e leaves the collection.
func (u *uniqueIndex) drop(e *entry) {
	for _, t := range u.tuples(e.pk, e.body) {
		if u.owner[t] == e {
			delete(u.owner, t)
		}
	}
}

// uniqueClaim is what one document written claims: its tuples; at is
// its operation's index in a batch.
type uniqueClaim struct {
	id     string
	tuples []string
	at     int
}

// claimUnique checks the tuples of the documents a write publishes against
// the live documents and the writes in progress, and holds them until
// releaseUnique. A tuple held by a live document whose id is among the ids
// this write writes (replaced or deleted by it, under its locks) is free.
// A tuple taken is an error wrapping store.ErrUniqueKeyConflict (and so
// store.ErrConflict), as Cosmos DB
// answers a unique-key violation, and the index of the claim that failed;
// nothing stays held then. Without unique keys it costs nothing.
func (c *collection) claimUnique(op, l string, now int64, claims []uniqueClaim, writes func(id string) bool) (int, error) {
	u := c.uniq
	if u == nil || len(claims) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cl := range claims {
		for k, t := range cl.tuples {
			other := ""
			if e := u.owner[t]; e != nil && e.expireAt > now && !writes(e.id) {
				other = e.id
			} else if id, ok := u.held[t]; ok && id != cl.id {
				other = id
			}
			if other != "" {
				c.releaseUnique(claims[:i])
				return cl.at, store.Errorf(store.ErrUniqueKeyConflict, op, l, cl.id,
					"Unique index constraint violation: document %q under partition key %s already has the values of unique key %s",
					other, t[:strings.IndexByte(t, 0)], strings.Join(c.spec().UniqueKeys[k], ", "))
			}
		}
		for _, t := range cl.tuples {
			u.held[t] = cl.id
		}
	}
	return 0, nil
}

// releaseUnique gives back the tuples claimUnique held. Caller holds c.mu
// for writing.
func (c *collection) releaseUnique(claims []uniqueClaim) {
	if c.uniq == nil {
		return
	}
	for _, cl := range claims {
		for _, t := range cl.tuples {
			if c.uniq.held[t] == cl.id {
				delete(c.uniq.held, t)
			}
		}
	}
}
