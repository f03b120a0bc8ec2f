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
// used out first, bounded in count and, when made by NewSizedCache, in
// bytes. It is safe for concurrent use.
type Cache[T any] struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64
	size     func(T) int64 // nil: no byte bound
	next     atomic.Uint64
	items    map[uint64]*list.Element
	lru      *list.List
}

type entry[T any] struct {
	id    uint64
	hash  string
	value T
	bytes int64
}

// NewCache returns a cache of at most n values.
func NewCache[T any](n int) *Cache[T] {
	return &Cache[T]{max: max(n, 1), items: map[uint64]*list.Element{}, lru: list.New()}
}

// NewSizedCache returns a cache of at most n values holding at most
// maxBytes in all, as size measures each value once when it is put. A
// value larger than maxBytes alone is not kept (Put returns 0, and its
// next page re-runs the query).
func NewSizedCache[T any](n int, maxBytes int64, size func(T) int64) *Cache[T] {
	c := NewCache[T](n)
	c.maxBytes, c.size = max(maxBytes, 1), size
	return c
}

// Bytes returns the bytes the cache holds, as its size function measured
// them (0 without one).
func (c *Cache[T]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// RowsSize is a size function for cached result lists: their JSON bytes
// and a slice header each.
func RowsSize(rows []json.RawMessage) int64 {
	n := int64(24 * len(rows))
	for _, r := range rows {
		n += int64(len(r))
	}
	return n
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

// Put caches a value under a hash and returns the new cursor id, or 0
// when the value alone exceeds the cache's byte bound (it is not kept).
// Least recently used values make room for it.
func (c *Cache[T]) Put(hash string, value T) uint64 {
	var n int64
	if c.size != nil {
		if n = c.size(value); n > c.maxBytes {
			return 0
		}
	}
	id := c.next.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items[id] = c.lru.PushFront(&entry[T]{id: id, hash: hash, value: value, bytes: n})
	c.bytes += n
	for c.lru.Len() > c.max || (c.size != nil && c.bytes > c.maxBytes) {
		old := c.lru.Back()
		c.lru.Remove(old)
		e := old.Value.(*entry[T])
		delete(c.items, e.id)
		c.bytes -= e.bytes
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
