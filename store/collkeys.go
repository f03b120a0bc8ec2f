package store

import (
	"context"
	"errors"
	"sync"

	"github.com/docshard/docshard/partitionkey"
)

// CollectionKeys gives the key a collection's calls take for a composite
// key (a partitionkey.CompositeKey or []any): the whole key, or a prefix
// of it, for a hierarchical collection (CollectionSpec.PartitionKeyPaths),
// its first part for a collection partitioned by one path (the collections
// a composite-key resolver made before it had hierarchical ones). It
// remembers each collection's kind after reading it once (CollectionInfo),
// so a collection deleted and created again of the other kind needs a new
// CollectionKeys. The zero value is ready; it is safe for concurrent use.
type CollectionKeys struct {
	hierarchical sync.Map // link -> bool
}

// Key returns the key collection l of st takes for key: key itself when it
// is composite and l is hierarchical, else partitionkey.CollectionKey(key)
// (a key that is not composite is returned as it is, with no call). Cost: a
// map read, and a CollectionInfo call the first time l is asked about with
// a composite key; a missing collection is not remembered and takes the
// whole key (its calls answer not found).
func (k *CollectionKeys) Key(ctx context.Context, st Store, l string, key any) (any, error) {
	if _, ok := partitionkey.Parts(key); !ok {
		return key, nil
	}
	if h, ok := k.hierarchical.Load(l); ok {
		if h.(bool) {
			return key, nil
		}
		return partitionkey.CollectionKey(key), nil
	}
	info, err := st.CollectionInfo(ctx, l)
	switch {
	case errors.Is(err, ErrNotFound):
		return key, nil
	case err != nil:
		return nil, err
	}
	h := info.Spec.Hierarchical()
	k.hierarchical.Store(l, h)
	if h {
		return key, nil
	}
	return partitionkey.CollectionKey(key), nil
}
