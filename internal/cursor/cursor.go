// Package cursor holds what the stores share for paging: an LRU cache of
// computed results kept for their continuation tokens, and the encoding of
// tokens (JSON, base64url, strictly decoded).
package cursor

import (
	"bytes"
	"container/list"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
)

// Cache keeps values (result lists, pages) by cursor id, least recently
// used out first. It is safe for concurrent use.
type Cache[T any] struct {
	mu    sync.Mutex
	max   int
	next  atomic.Uint64
	items map[uint64]*list.Element
	lru   *list.List
}

type entry[T any] struct {
	id    uint64
	hash  string
	value T
}

// NewCache returns a cache of at most n values.
func NewCache[T any](n int) *Cache[T] {
	return &Cache[T]{max: max(n, 1), items: map[uint64]*list.Element{}, lru: list.New()}
}

// Get returns the value of cursor id if it is cached for the same hash.
func (c *Cache[T]) Get(id uint64, hash string) (T, bool) {
	var zero T
	if id == 0 {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[id]
	if !ok || el.Value.(*entry[T]).hash != hash {
		return zero, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*entry[T]).value, true
}

// Put caches a value under a hash and returns the new cursor id (never 0).
func (c *Cache[T]) Put(hash string, value T) uint64 {
	id := c.next.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items[id] = c.lru.PushFront(&entry[T]{id: id, hash: hash, value: value})
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.items, old.Value.(*entry[T]).id)
	}
	return id
}

// Encode writes a token value as base64url JSON.
func Encode(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrMalformed is returned by Decode for a token that is not one of ours.
var ErrMalformed = errors.New("malformed continuation token")

// Decode reads a token written by Encode into v, refusing unknown fields.
func Decode(s string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return ErrMalformed
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return ErrMalformed
	}
	return nil
}
