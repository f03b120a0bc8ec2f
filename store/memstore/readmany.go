package memstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/docshard/docshard/store"
)

var _ store.ManyReader = (*Store)(nil)

// ReadMany reads several documents; see store.ManyReader. Every item is
// found under one read lock of the collection, so the documents are one
// snapshot of it. Cost: a point read's map lookup per item, one lock.
func (s *Store) ReadMany(ctx context.Context, l string, items []store.ItemRef) ([]*store.Document, error) {
	const op = "read many"
	c, err := s.collection(ctx, op, l)
	if err != nil {
		return nil, err
	}
	type ref struct {
		pk    string
		given bool
	}
	var small [16]ref
	refs := small[:0]
	for i, it := range items {
		if err := store.ValidateID(it.ID); err != nil {
			return nil, itemErr(withOp(err, op, l), i)
		}
		pk, given, err := c.givenKey(op, l, it.ID, it.PartitionKey, false)
		if err != nil {
			return nil, itemErr(err, i)
		}
		refs = append(refs, ref{pk, given})
	}
	out := make([]*store.Document, len(items))
	now := s.clock().Unix()
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, r := range refs {
		e, err := c.resolve(op, l, items[i].ID, r.pk, r.given, now)
		switch {
		case err == nil:
			out[i] = e.document()
		case !errors.Is(err, store.ErrNotFound):
			return nil, itemErr(err, i)
		}
	}
	return out, nil
}

// itemErr names the item of a ReadMany an error is about.
func itemErr(err error, i int) error {
	var se *store.Error
	if errors.As(err, &se) {
		cp := *se
		cp.Message = "item " + strconv.Itoa(i) + ": " + cp.Message
		return &cp
	}
	return err
}
