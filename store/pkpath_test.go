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
