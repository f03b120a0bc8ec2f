package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestEnsureCollectionsAccept: an existing collection may have Spec's key
// paths or Accept's; any other is a *KeyPathError naming both.
func TestEnsureCollectionsAccept(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.CreateCollection(ctx, "dbs/a/colls/first", &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	require.NoError(t, st.CreateCollection(ctx, "dbs/a/colls/other", &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	w := store.Wanted{
		Create: []string{"dbs/a/colls/first", "dbs/a/colls/new"},
		Spec:   store.CollectionSpec{PartitionKeyPaths: []string{"/tenant", "/userId"}},
		Accept: []string{"/tenant"},
	}
	created, err := store.EnsureCollections(ctx, st, w)
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/a/colls/new"}, created)

	w.Create = []string{"dbs/a/colls/other"}
	_, err = store.EnsureCollections(ctx, st, w)
	var kpe *store.KeyPathError
	require.ErrorAs(t, err, &kpe)
	assert.Equal(t, store.KeyPathError{Collection: "dbs/a/colls/other", Want: "/tenant, /userId (or /tenant)", Found: "/userId"}, *kpe)
}

// TestCollectionKeys: a composite key goes whole to a hierarchical
// collection, as its first part to one partitioned by one path; any other
// key as it is.
func TestCollectionKeys(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.CreateCollection(ctx, "dbs/a/colls/h", &store.CollectionSpec{PartitionKeyPaths: []string{"/tenant", "/userId"}}))
	require.NoError(t, st.CreateCollection(ctx, "dbs/a/colls/f", &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	full := partitionkey.CompositeKey{"t1", "u1"}
	var k store.CollectionKeys
	for _, tc := range []struct {
		name, link string
		key, want  any
	}{
		{"hierarchical, full key", "dbs/a/colls/h", full, full},
		{"hierarchical, prefix", "dbs/a/colls/h", []any{"t1"}, []any{"t1"}},
		{"first path", "dbs/a/colls/f", full, "t1"},
		{"first path again (remembered)", "dbs/a/colls/f", full, "t1"},
		{"a scalar as it is", "dbs/a/colls/f", "t1", "t1"},
		{"a missing collection takes the key whole", "dbs/a/colls/none", full, full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.Key(ctx, st, tc.link, tc.key)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
