package memstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// hiddenIDs reads l's change feed with HideReshard from cont to its end
// and returns the ids in order (an id may repeat only as distinct
// entries: a ghost, then the document written again).
func hiddenIDs(t *testing.T, s *Store, l, cont string) ([]string, string) {
	t.Helper()
	texts, end := feedTexts(t, s, l, cont, true)
	return idsOf(t, texts), end
}

// TestReshardMarks: a write marked store.WriteOptions.Reshard (a copy) is
// left out of a feed read with HideReshard and kept in a plain one; a
// delete so marked (a clean-up) takes the document out of every read but
// leaves its last version in the HideReshard feed, until it is written
// there again; a plain delete takes it out of both.
func TestReshardMarks(t *testing.T) {
	s := New(nil)
	t.Cleanup(func() { _ = s.Close() })
	const src, dst = "dbs/app/colls/src", "dbs/app/colls/dst"
	for _, l := range []string{src, dst} {
		require.NoError(t, s.CreateCollection(ctx, l, nil))
	}
	create(t, s, src, `{"id":"a","v":1}`)
	create(t, s, src, `{"id":"b","v":1}`)
	create(t, s, src, `{"id":"c","v":1}`)
	mark := &store.WriteOptions{Reshard: true}
	for _, body := range []string{`{"id":"a","v":1}`, `{"id":"b","v":1}`} {
		_, err := s.Upsert(ctx, dst, []byte(body), mark)
		require.NoError(t, err)
	}
	plain, _ := feedIDs(t, s, dst, "")
	assert.Equal(t, []string{"a", "b"}, plain, "a plain feed shows copies")
	hidden, dstPos := hiddenIDs(t, s, dst, "")
	assert.Empty(t, hidden, "HideReshard leaves copies out")

	require.NoError(t, s.Delete(ctx, src, "a", mark))
	require.NoError(t, s.Delete(ctx, src, "c", nil))
	_, err := s.Read(ctx, src, "a", nil)
	require.ErrorIs(t, err, store.ErrNotFound, "a moved document is gone from reads")
	plain, _ = feedIDs(t, s, src, "")
	assert.Equal(t, []string{"b"}, plain, "a plain feed drops moved and deleted documents")
	hidden, srcPos := hiddenIDs(t, s, src, "")
	assert.Equal(t, []string{"a", "b"}, hidden, "HideReshard keeps a moved document's last version, not a deleted one")
	info, err := s.CollectionInfo(ctx, src)
	require.NoError(t, err)
	assert.EqualValues(t, 1, info.Documents, "a ghost is not counted")

	// The application writes the document in its new place: that shows.
	_, err = s.Upsert(ctx, dst, []byte(`{"id":"a","v":2}`), nil)
	require.NoError(t, err)
	hidden, _ = hiddenIDs(t, s, dst, dstPos)
	assert.Equal(t, []string{"a"}, hidden)
	// Written again where it was, the ghost gives way to the new version.
	create(t, s, src, `{"id":"a","v":3}`)
	hidden, _ = hiddenIDs(t, s, src, "")
	assert.Equal(t, []string{"b", "a"}, hidden, "one entry for a: its new version")
	hidden, _ = hiddenIDs(t, s, src, srcPos)
	assert.Equal(t, []string{"a"}, hidden)
	// A marked delete of a copy removes it outright.
	require.NoError(t, s.Delete(ctx, dst, "b", mark))
	plain, _ = feedIDs(t, s, dst, "")
	assert.Equal(t, []string{"a"}, plain)
}

// TestReshardMarksMoveBack: a document moved away and back (a copy of its
// ghost's own version lands where the ghost is) keeps the ghost, its one
// visible version; a copy of another version replaces it.
func TestReshardMarksMoveBack(t *testing.T) {
	s := New(nil)
	t.Cleanup(func() { _ = s.Close() })
	const a, b = "dbs/app/colls/a", "dbs/app/colls/b"
	for _, l := range []string{a, b} {
		require.NoError(t, s.CreateCollection(ctx, l, nil))
	}
	mark := &store.WriteOptions{Reshard: true}
	create(t, s, a, `{"id":"x","v":1}`)
	_, err := s.Upsert(ctx, b, []byte(`{"id":"x","v":1}`), mark) // moved a → b
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, a, "x", mark))
	_, err = s.Upsert(ctx, a, []byte(`{"id":"x","v":1}`), mark) // and back
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, b, "x", mark))
	ids, _ := hiddenIDs(t, s, a, "")
	assert.Equal(t, []string{"x"}, ids, "the ghost stays: no other place shows the version")
	ids, _ = hiddenIDs(t, s, b, "")
	assert.Empty(t, ids)

	_, err = s.Upsert(ctx, a, []byte(`{"id":"x","v":2}`), mark) // a copy of another version
	require.NoError(t, err)
	ids, _ = hiddenIDs(t, s, a, "")
	assert.Empty(t, ids, "the stale ghost gives way; the copy's version shows where it was written")
}
