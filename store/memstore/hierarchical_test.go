package memstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// TestHierarchicalReopen: a hierarchical collection's paths and its
// documents' composite keys are read back from disk, writable and
// read-only: point reads under the full key, queries under a prefix.
func TestHierarchicalReopen(t *testing.T) {
	dir := t.TempDir()
	const l = "dbs/app/colls/h"
	s, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPaths: []string{"/tenant", "/user"}}))
	for _, d := range []string{`{"id":"a","tenant":"t1","user":"u1"}`, `{"id":"a","tenant":"t1","user":"u2"}`, `{"id":"b","tenant":"t2"}`} {
		_, err := s.Create(ctx, l, []byte(d), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	for _, readOnly := range []bool{false, true} {
		s, err := Open(dir, &Options{ReadOnly: readOnly})
		require.NoError(t, err)
		info, err := s.CollectionInfo(ctx, l)
		require.NoError(t, err)
		assert.Equal(t, []string{"/tenant", "/user"}, info.Spec.KeyPaths())
		d, err := s.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: partitionkey.CompositeKey{"t1", "u2"}})
		require.NoError(t, err)
		assert.Contains(t, string(d.Body), `"u2"`)
		_, err = s.Read(ctx, l, "b", &store.ReadOptions{PartitionKey: partitionkey.CompositeKey{"t2", store.None}})
		require.NoError(t, err, "read-only %v", readOnly)
		page, err := s.Query(ctx, l, store.Query{Text: "SELECT VALUE c.user FROM c"}, &store.QueryOptions{PartitionKey: "t1"})
		require.NoError(t, err)
		assert.Len(t, page.Items, 2, "the prefix t1")
		require.NoError(t, s.Close())
	}
}
