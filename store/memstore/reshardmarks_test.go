package memstore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

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

// feedTexts reads l's change feed from cont to its end, with or without
// HideReshard, and returns every item's text in order and the end's
// position.
func feedTexts(t *testing.T, s *Store, l, cont string, hide bool) ([]string, string) {
	t.Helper()
	var out []string
	for {
		page, err := s.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: cont, PageSize: 2, HideReshard: hide})
		require.NoError(t, err)
		cont = page.Continuation
		if len(page.Items) == 0 {
			return out, cont
		}
		for _, it := range page.Items {
			out = append(out, string(it))
		}
	}
}

// markedStore is a durable store in dir with two collections after a
// reshard's marked writes: in src, a, b, c and x created, then a and x
// copied to dst and cleaned up (moved), x moved back (a copy of the same
// version in src, cleaned up in dst), b copied to dst and its copy
// cleaned up, c deleted by the application. It returns the positions
// (HideReshard feeds) of each collection taken before the marked writes.
func markedStore(t *testing.T, dir string) (s *Store, before map[string]string) {
	t.Helper()
	s, err := Open(dir, nil)
	require.NoError(t, err)
	for _, l := range []string{marksSrc, marksDst} {
		require.NoError(t, s.CreateCollection(ctx, l, nil))
	}
	for _, body := range []string{`{"id":"a","v":1}`, `{"id":"b","v":1}`, `{"id":"c","v":1}`, `{"id":"x","v":1}`} {
		create(t, s, marksSrc, body)
	}
	before = map[string]string{}
	_, before[marksSrc] = feedTexts(t, s, marksSrc, "", true)
	_, before[marksDst] = feedTexts(t, s, marksDst, "", true)
	mark := &store.WriteOptions{Reshard: true}
	for _, body := range []string{`{"id":"a","v":1}`, `{"id":"b","v":1}`, `{"id":"x","v":1}`} {
		_, err := s.Upsert(ctx, marksDst, []byte(body), mark)
		require.NoError(t, err)
	}
	require.NoError(t, s.Delete(ctx, marksSrc, "a", mark))
	require.NoError(t, s.Delete(ctx, marksSrc, "x", mark))
	_, err = s.Upsert(ctx, marksSrc, []byte(`{"id":"x","v":1}`), mark) // x moves back
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, marksDst, "x", mark))
	require.NoError(t, s.Delete(ctx, marksDst, "b", mark)) // a copy cleaned up
	require.NoError(t, s.Delete(ctx, marksSrc, "c", nil))
	return s, before
}

const marksSrc, marksDst = "dbs/marks/colls/src", "dbs/marks/colls/dst"

// feedsOf is what a store's change feeds say of the collections: each
// feed, hidden and plain, read from the beginning and from the positions
// taken before the reshard.
func feedsOf(t *testing.T, s *Store, before map[string]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, l := range []string{marksSrc, marksDst} {
		out[l+" hidden"], _ = feedTexts(t, s, l, "", true)
		out[l+" hidden, from before"], _ = feedTexts(t, s, l, before[l], true)
		out[l+" plain"], _ = feedTexts(t, s, l, "", false)
		info, err := s.CollectionInfo(ctx, l)
		require.NoError(t, err)
		out[l+" count"] = []string{fmt.Sprint(info.Documents)}
	}
	return out
}

// TestReshardMarksSurviveRestart: a durable store's reshard marks (a copy
// left out of HideReshard feeds, a moved document's last version kept in
// them) are on disk: reopened (for writing or read-only), salvaged, or
// after its records were written again by a change of the default TTL,
// the store's feeds, from the beginning and from positions taken before
// the restart, are exactly what they were before it. A write after the
// restart (alone or in a batch) then moves the ghost aside as before,
// for good.
func TestReshardMarksSurviveRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reopen func(t *testing.T, s *Store, dir string) *Store
	}{
		{"open", func(t *testing.T, s *Store, dir string) *Store {
			require.NoError(t, s.Close())
			s, err := Open(dir, nil)
			require.NoError(t, err)
			return s
		}},
		{"read-only", func(t *testing.T, s *Store, dir string) *Store {
			require.NoError(t, s.Close())
			s, err := Open(dir, &Options{ReadOnly: true})
			require.NoError(t, err)
			return s
		}},
		{"salvage", func(t *testing.T, s *Store, dir string) *Store {
			require.NoError(t, s.Close())
			to := filepath.Join(t.TempDir(), "saved")
			rep, err := Salvage(dir, to)
			require.NoError(t, err)
			assert.Empty(t, rep.Damaged)
			assert.Equal(t, 3, rep.Documents, "b and x in src, a in dst: ghosts are not documents")
			s, err = Open(to, nil)
			require.NoError(t, err)
			return s
		}},
		{"records rewritten", func(t *testing.T, s *Store, dir string) *Store {
			for _, l := range []string{marksSrc, marksDst} {
				require.NoError(t, s.ReplaceCollection(ctx, l, &store.CollectionSpec{DefaultTTL: new(-1)}))
			}
			require.NoError(t, s.Close())
			s, err := Open(dir, nil)
			require.NoError(t, err)
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, before := markedStore(t, dir)
			want := feedsOf(t, s, before)
			require.Equal(t, []string{"a", "b", "x"}, idsOf(t, want[marksSrc+" hidden"]), "src keeps a's and x's versions")
			require.Empty(t, want[marksDst+" hidden"], "dst holds a copy only")
			s = tc.reopen(t, s, dir)
			defer func() { _ = s.Close() }()
			got := feedsOf(t, s, before)
			for k := range want {
				assert.Equal(t, want[k], got[k], k)
			}
		})
	}

	t.Run("ghost gives way for good", func(t *testing.T) {
		dir := t.TempDir()
		s, before := markedStore(t, dir)
		require.NoError(t, s.Close())
		s, err := Open(dir, nil)
		require.NoError(t, err)
		create(t, s, marksSrc, `{"id":"a","v":2}`) // the application writes a here again
		_, err = s.Upsert(ctx, marksDst, []byte(`{"id":"x","v":2}`), &store.WriteOptions{Reshard: true})
		require.NoError(t, err)
		want := feedsOf(t, s, before)
		assert.Equal(t, []string{"b", "x", "a"}, idsOf(t, want[marksSrc+" hidden"]))
		_, err = s.ExecuteBatch(ctx, marksSrc, "x", []store.BatchOp{{Kind: store.BatchUpsert, Doc: []byte(`{"id":"x","v":3}`)}}, nil)
		require.NoError(t, err) // and x, in a batch
		want = feedsOf(t, s, before)
		assert.Equal(t, []string{"b", "a", "x"}, idsOf(t, want[marksSrc+" hidden"]))
		require.NoError(t, s.Close())
		s, err = Open(dir, nil)
		require.NoError(t, err)
		defer func() { _ = s.Close() }()
		got := feedsOf(t, s, before)
		for k := range want {
			assert.Equal(t, want[k], got[k], k)
		}
	})
}

// idsOf returns the ids of a feed's texts.
func idsOf(t *testing.T, texts []string) []string {
	t.Helper()
	var out []string
	for _, text := range texts {
		var m struct{ ID string }
		require.NoError(t, json.Unmarshal([]byte(text), &m))
		out = append(out, m.ID)
	}
	return out
}

// TestRecordFormatOfMarks: a record carries the reshard marks in format
// version 6, and a record without marks stays in version 5 (what a
// docshard from before the marks reads); a record of a version above 6 is
// refused by Open (for writing or read-only) and Salvage with an error
// wrapping ErrNewerFormat that names the file and the version, and the
// file is left as it was.
func TestRecordFormatOfMarks(t *testing.T) {
	dir := t.TempDir()
	s, _ := markedStore(t, dir)
	require.NoError(t, s.Close())
	versions := map[string]byte{}
	for _, l := range []string{marksSrc, marksDst} {
		for _, rec := range readRecords(t, dir, l) {
			e, _, err := decodeRecord(rec)
			require.NoError(t, err)
			versions[l+" "+e.id] = rec[0]
		}
	}
	assert.Equal(t, map[string]byte{
		marksSrc + " a": recordVersionMarks, // moved out
		marksSrc + " b": recordVersion,
		marksSrc + " x": recordVersionMarks, // moved out, and copied back: two records
		marksDst + " a": recordVersionMarks, // a copy
	}, versions)
	assert.Len(t, readRecords(t, dir, marksSrc), 4, "a, b, and x twice (c is deleted)")

	db, err := bolt.Open(dbPath(dir), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		var m collMeta
		require.NoError(t, json.Unmarshal(tx.Bucket(collectionsBucket).Get([]byte(marksDst)), &m))
		b := tx.Bucket(docsBucket(m.UID))
		k, v := b.Cursor().First()
		rec := append([]byte(nil), v...)
		rec[0] = recordVersionMarks + 1 // outside the checksum
		return b.Put(k, rec)
	}))
	require.NoError(t, db.Close())
	before, err := os.ReadFile(dbPath(dir))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		open func() error
	}{
		{"open", func() error {
			s, err := Open(dir, nil)
			if err == nil {
				_ = s.Close()
			}
			return err
		}},
		{"read-only", func() error {
			s, err := Open(dir, &Options{ReadOnly: true})
			if err != nil {
				return err
			}
			defer s.Close()
			_, err = s.ReadChanges(ctx, marksDst, nil)
			return err
		}},
		{"salvage", func() error {
			_, err := Salvage(dir, filepath.Join(t.TempDir(), "saved"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.open()
			require.ErrorIs(t, err, ErrNewerFormat)
			assert.NotErrorIs(t, err, ErrCorrupt, "a newer file is not a damaged one")
			assert.Contains(t, err.Error(), dbPath(dir))
			assert.Contains(t, err.Error(), "collection "+marksDst)
			assert.Contains(t, err.Error(), "record format version 7, and this docshard reads versions 2 to 6")
			after, rerr := os.ReadFile(dbPath(dir))
			require.NoError(t, rerr)
			assert.Equal(t, before, after, "the file is left as it was")
		})
	}
}
