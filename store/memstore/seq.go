package memstore

import (
	"context"
	"fmt"

	"github.com/docshard/docshard/store"
)

// Seqs returns the read-feed place (store.Document.Seq) of documents of
// collection l, the i-th named by its partition-key identity text keys[i]
// (partitionkey.Paths.AppendDocIdentity of its body) and its id ids[i],
// and 0 for one the collection no longer holds (deleted since it was
// read). It is for a caller that read documents as JSON (a query's
// results, a feed) and needs what a point read's store.Document says
// (docshard serve's _rid). It costs one map look-up per document, under
// the collection's read lock taken once.
func (s *Store) Seqs(ctx context.Context, l string, keys, ids []string) ([]uint64, error) {
	const op = "read"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return nil, err
	}
	if len(keys) != len(ids) {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: fmt.Sprintf("%d keys for %d ids: give one key per id", len(keys), len(ids))}
	}
	out := make([]uint64, len(ids))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, id := range ids {
		if e := c.find(id, keys[i]); e != nil {
			out[i] = e.seq
		}
	}
	return out, nil
}
