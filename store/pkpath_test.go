package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestHierarchicalSpec: how a spec describes a hierarchical key, and the
// one conflict rule holding a collection to all its paths.
func TestHierarchicalSpec(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  store.CollectionSpec
		paths []string // KeyPaths after CheckSpec; nil: refused
	}{
		{"one path", store.CollectionSpec{PartitionKeyPath: "/a"}, []string{"/a"}},
		{"default", store.CollectionSpec{}, []string{"/id"}},
		{"one path in the list", store.CollectionSpec{PartitionKeyPaths: []string{"/a"}}, []string{"/a"}},
		{"two paths", store.CollectionSpec{PartitionKeyPaths: []string{"/a", "/b"}}, []string{"/a", "/b"}},
		{"three paths", store.CollectionSpec{PartitionKeyPaths: []string{"/a", "/b", `/"c d"`}}, []string{"/a", "/b", `/"c d"`}},
		{"four paths", store.CollectionSpec{PartitionKeyPaths: []string{"/a", "/b", "/c", "/d"}}, nil},
		{"both fields", store.CollectionSpec{PartitionKeyPath: "/a", PartitionKeyPaths: []string{"/a", "/b"}}, nil},
		{"a bad path", store.CollectionSpec{PartitionKeyPaths: []string{"/a", "b"}}, nil},
	} {
		sp, paths, err := store.CheckSpec(&tc.spec)
		if tc.paths == nil {
			require.ErrorIs(t, err, store.ErrBadRequest, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.paths, sp.KeyPaths(), tc.name)
		assert.Equal(t, tc.paths, paths.Strings(), tc.name)
		assert.Equal(t, len(tc.paths) > 1, sp.Hierarchical(), tc.name)
	}

	ctx := context.Background()
	st := memstore.New(nil)
	hier := store.CollectionSpec{PartitionKeyPaths: []string{"/tenant", "/user"}}
	_, err := store.EnsureCollections(ctx, st, store.Wanted{Create: []string{"dbs/a/colls/h"}, Spec: hier})
	require.NoError(t, err)
	_, err = store.EnsureCollections(ctx, st, store.Wanted{Create: []string{"dbs/a/colls/h"}, Spec: hier})
	require.NoError(t, err, "the same paths again")
	_, err = store.EnsureCollections(ctx, st, store.Wanted{Create: []string{"dbs/a/colls/h"}, Spec: store.CollectionSpec{PartitionKeyPath: "/tenant"}})
	var kpe *store.KeyPathError
	require.True(t, errors.As(err, &kpe), "its first path alone is another key: %v", err)
	assert.Equal(t, "/tenant, /user", kpe.Found)
}

func TestKeyParts(t *testing.T) {
	for _, tc := range []struct {
		key    any
		prefix bool
		want   []any // nil: refused
	}{
		{partitionkey.CompositeKey{"a", "b"}, false, []any{"a", "b"}},
		{[]any{"a", 1}, false, []any{"a", 1}},
		{store.None, false, []any{store.None, store.None}},
		{"a", false, nil},
		{"a", true, []any{"a"}},
		{partitionkey.CompositeKey{"a"}, true, []any{"a"}},
		{partitionkey.CompositeKey{"a", "b", "c"}, true, nil},
		{partitionkey.CompositeKey{}, true, nil},
	} {
		got, err := store.KeyParts(tc.key, 2, tc.prefix)
		if tc.want == nil {
			assert.ErrorIs(t, err, store.ErrBadRequest, "%v", tc.key)
			continue
		}
		require.NoError(t, err, "%v", tc.key)
		assert.Equal(t, tc.want, got, "%v", tc.key)
	}
}

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
