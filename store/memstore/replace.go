package memstore

import (
	"container/heap"
	"context"
	"encoding/json"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

var _ store.Replacer = (*Store)(nil)

// ttlPath is where a document keeps its own time to live.
var ttlPath, _ = partitionkey.ParsePath("/ttl")

// ReplaceCollection changes a collection's settings; see store.Replacer
// and store.CheckReplace. In durable mode it returns once the new spec is
// on disk. A change of the default TTL computes every document's expiry
// again (a scan of each document for its "ttl") and, durably, writes every
// record again in one commit; meanwhile every write to the store waits
// (it holds every document write lock), so it costs a pass over the
// collection and blocks writes for that long. Other changes cost one
// small commit and block nothing.
func (s *Store) ReplaceCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	const op = "replace collection"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return err
	}
	s.admin.Lock()
	defer s.admin.Unlock()
	sp, err := store.CheckReplace(l, c.spec(), spec)
	if err != nil {
		return err
	}
	if sameTTL(sp.DefaultTTL, c.spec().DefaultTTL) {
		if s.disk != nil {
			if err := s.disk.submit(setCollOp(c, &sp, nil), true); err != nil {
				return s.diskErr(op, l, "", err)
			}
		}
		c.specp.Store(&sp)
		return nil
	}
	for i := range s.locks {
		s.locks[i].Lock()
	}
	defer func() {
		for i := range s.locks {
			s.locks[i].Unlock()
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped {
		return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l}
	}
	live := make([]*entry, 0, len(c.order)-c.dead)
	expiries := make([]int64, 0, len(c.order)-c.dead)
	for _, e := range c.order {
		if !e.dead {
			live = append(live, e)
			has, ttl := ownTTL(e.body)
			expiries = append(expiries, expireUnder(sp.DefaultTTL, e.ts, has, ttl))
		}
	}
	if s.disk != nil {
		puts := make([]*diskOp, len(live))
		for i, e := range live {
			was := e.expireAt
			e.expireAt = expiries[i]
			puts[i] = &diskOp{kind: opPut, bucket: docsBucket(c.uid), seq: e.seq, rec: encodeRecord(e, e.marks())}
			e.expireAt = was
		}
		if err := s.disk.submit(setCollOp(c, &sp, puts), true); err != nil {
			return s.diskErr(op, l, "", err)
		}
	}
	c.expiry = c.expiry[:0]
	for i, e := range live {
		e.expireAt = expiries[i]
		e.heapIdx = -1
		if e.expireAt != never {
			e.heapIdx = len(c.expiry)
			c.expiry = append(c.expiry, e)
		}
	}
	heap.Init(&c.expiry)
	c.setNextExpiry()
	c.version.Add(1) // queries' snapshots copy expiries: take new ones
	c.specp.Store(&sp)
	return nil
}

// setCollOp is the durable change of c's spec to sp, with its records
// written again (puts; nil when they do not change).
func setCollOp(c *collection, sp *store.CollectionSpec, puts []*diskOp) *diskOp {
	meta, _ := json.Marshal(collMeta{UID: c.uid, Spec: *sp})
	return &diskOp{kind: opSetColl, bucket: docsBucket(c.uid), link: []byte(c.link), meta: meta, batch: puts}
}

// ownTTL reads a stored document's own "ttl" (see ttlValue).
func ownTTL(body []byte) (bool, int64) {
	v, err := ttlPath.Lookup(body)
	if err != nil {
		return false, 0
	}
	ttl, ok := ttlValue(v.JSON())
	return ok, ttl
}

func sameTTL(a, b *int) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
