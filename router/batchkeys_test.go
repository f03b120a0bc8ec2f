package router_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// TestBatchKeyOfCompositeDocuments: a routed batch under a composite key
// refuses a document that carries another key, with nothing written, in
// collections partitioned by the key's first path too, whose own check
// sees the first part alone (the router reads each document's key there);
// a document of the right key in the same batch is not written either.
func TestBatchKeyOfCompositeDocuments(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template *store.CollectionSpec
	}{
		{"hierarchical collections", nil},
		{"collections partitioned by the first path", &store.CollectionSpec{PartitionKeyPath: "/tenant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newMem(t)
			r, err := resolver.Unmarshal([]byte(compositeRing))
			require.NoError(t, err)
			c := router.New(st, nil)
			require.NoError(t, c.Register(db, r))
			_, err = c.EnsureCollections(ctx, db, tc.template)
			require.NoError(t, err)

			key := partitionkey.CompositeKey{"t1", "u1"}
			_, err = c.ExecuteBatch(ctx, db, key, []store.BatchOp{
				{Kind: store.BatchUpsert, Doc: []byte(`{"id":"a","tenant":"t1","userId":"u1"}`)},
				{Kind: store.BatchUpsert, Doc: []byte(`{"id":"b","tenant":"t1","userId":"u2"}`)},
			})
			var be *store.BatchError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, 1, be.Index)
			require.ErrorIs(t, err, store.ErrBadRequest)
			assert.Contains(t, err.Error(), `"b"`)
			for id, k := range map[string]partitionkey.CompositeKey{"a": key, "b": {"t1", "u2"}} {
				_, err = c.Read(ctx, db, id, k)
				require.ErrorIs(t, err, store.ErrNotFound, "%s: nothing written", id)
			}

			res, err := c.ExecuteBatch(ctx, db, key, []store.BatchOp{
				{Kind: store.BatchUpsert, Doc: []byte(`{"id":"a","tenant":"t1","userId":"u1"}`)},
			})
			require.NoError(t, err)
			require.Len(t, res, 1)
			_, err = c.Read(ctx, db, "a", key)
			require.NoError(t, err)
		})
	}
}
