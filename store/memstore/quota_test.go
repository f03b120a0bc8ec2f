package memstore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// TestQuotaSurvivesReopen: a collection's quota is kept on disk with it,
// and a store opened again enforces it against the usage it loaded; a
// collection created without one takes any number of documents.
func TestQuotaSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	const l, free = "dbs/a/colls/q", "dbs/a/colls/free"
	s, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{Quota: &store.Quota{MaxDocuments: 3}}))
	require.NoError(t, s.CreateCollection(ctx, free, nil))
	for i := range 3 {
		_, err := s.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%d"}`, i), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	s, err = Open(dir, nil)
	require.NoError(t, err)
	defer s.Close()
	info, err := s.CollectionInfo(ctx, l)
	require.NoError(t, err)
	require.NotNil(t, info.Spec.Quota)
	assert.Equal(t, store.Quota{MaxDocuments: 3}, *info.Spec.Quota)
	_, err = s.Create(ctx, l, []byte(`{"id":"d3"}`), nil)
	require.ErrorIs(t, err, store.ErrQuotaExceeded)
	assert.Contains(t, err.Error(), "maxDocuments 3")
	_, err = s.ExecuteBatch(ctx, l, "d4", []store.BatchOp{{Kind: store.BatchCreate, Doc: []byte(`{"id":"d4"}`)}}, nil)
	require.ErrorIs(t, err, store.ErrQuotaExceeded, "a batch is held to the quota too")
	info, err = s.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, 3, info.Documents, "nothing refused was written")

	info, err = s.CollectionInfo(ctx, free)
	require.NoError(t, err)
	assert.Nil(t, info.Spec.Quota, "no quota: no limit")
	for i := range 10 {
		_, err := s.Create(ctx, free, fmt.Appendf(nil, `{"id":"d%d"}`, i), nil)
		require.NoError(t, err)
	}
}
