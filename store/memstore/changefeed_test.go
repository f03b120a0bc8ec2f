package memstore

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/store"
)

// changesSince reads s's change feed of l from cont to its end, in pages
// of size, and returns the items by id, in order, and the end's position.
// It fails on an id seen twice.
func changesSince(t *testing.T, s *Store, l, cont string, size int) ([]string, map[string]json.RawMessage, string) {
	t.Helper()
	var ids []string
	items := map[string]json.RawMessage{}
	for {
		page, err := s.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: cont, PageSize: size})
		require.NoError(t, err)
		cont = page.Continuation
		if len(page.Items) == 0 {
			return ids, items, cont
		}
		for _, it := range page.Items {
			var m struct{ ID string }
			require.NoError(t, json.Unmarshal(it, &m))
			require.NotContains(t, items, m.ID, "the change feed holds %s twice", m.ID)
			ids, items[m.ID] = append(ids, m.ID), it
		}
	}
}

// feedIDs returns the ids of changesSince, and the end's position.
func feedIDs(t *testing.T, s *Store, l, cont string) ([]string, string) {
	t.Helper()
	ids, _, end := changesSince(t, s, l, cont, 3)
	return ids, end
}

// fromNow returns the position of the present in l's change feed.
func fromNow(t *testing.T, s *Store, l string) string {
	t.Helper()
	page, err := s.ReadChanges(ctx, l, &store.ChangeFeedOptions{FromNow: true})
	require.NoError(t, err)
	return page.Continuation
}

func create(t *testing.T, s *Store, l, body string) {
	t.Helper()
	_, err := s.Create(ctx, l, []byte(body), nil)
	require.NoError(t, err, body)
}

// TestChangeFeedAcrossRestarts: positions handed out before a restart stay
// positions after it: nothing read again, nothing written after them
// missed, also when the document holding the highest LSN was deleted, or
// expired and was dropped by an Open, before the restart.
func TestChangeFeedAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	opts := &Options{Clock: clock.Now}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	const l, ttl = "dbs/cf/colls/c", "dbs/cf/colls/ttl"
	require.NoError(t, s.CreateCollection(ctx, l, nil))
	require.NoError(t, s.CreateCollection(ctx, ttl, &store.CollectionSpec{DefaultTTL: new(-1)}))
	for _, id := range []string{"a", "b", "c"} {
		create(t, s, l, fmt.Sprintf(`{"id":%q}`, id))
	}
	_, err = s.Upsert(ctx, l, []byte(`{"id":"a","v":2}`), nil)
	require.NoError(t, err)
	ids, t1 := feedIDs(t, s, l, "")
	require.Equal(t, []string{"b", "c", "a"}, ids)
	create(t, s, l, `{"id":"d"}`)
	t2 := fromNow(t, s, l)
	require.NoError(t, s.Delete(ctx, l, "d", nil)) // d held the highest LSN
	create(t, s, ttl, `{"id":"g"}`)
	create(t, s, ttl, `{"id":"h","ttl":5}`)
	t3 := fromNow(t, s, ttl) // at h, which expires
	require.NoError(t, s.Close())

	reopen := func() {
		t.Helper()
		s, err = Open(dir, opts)
		require.NoError(t, err)
	}
	reopen()
	ids, _ = feedIDs(t, s, l, "")
	assert.Equal(t, []string{"b", "c", "a"}, ids, "the feed's order survives")
	ids, _ = feedIDs(t, s, l, t1)
	assert.Empty(t, ids, "nothing is new after a restart")
	create(t, s, l, `{"id":"e"}`)
	ids, _ = feedIDs(t, s, l, t1)
	assert.Equal(t, []string{"e"}, ids)
	ids, _ = feedIDs(t, s, l, t2)
	assert.Equal(t, []string{"e"}, ids, "a write after the restart comes after a position taken before it, though the document at that position was deleted")

	clock.Advance(10 * time.Second) // h expires; the next Open drops it
	require.NoError(t, s.Close())
	reopen()
	require.NoError(t, s.Close())
	reopen()
	defer s.Close()
	ids, _ = feedIDs(t, s, ttl, "")
	assert.Equal(t, []string{"g"}, ids)
	create(t, s, ttl, `{"id":"i"}`)
	ids, _ = feedIDs(t, s, ttl, t3)
	assert.Equal(t, []string{"i"}, ids, "a write after the restarts comes after a position taken before them, though the document at that position expired and was dropped from disk")
}

// TestChangeFeedMigratesVersion3Records: records written before the change
// feed (version 3, no LSN) get LSNs on Open in the order of their last
// write, are written again as version 4, and later writes come after them.
// Salvage gives them the same LSNs, in the same order: it loads records as
// Open does.
func TestChangeFeedMigratesVersion3Records(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func(t *testing.T, dir string) string // the directory to open
	}{
		{"open", func(t *testing.T, dir string) string { return dir }},
		{"salvage", func(t *testing.T, dir string) string {
			to := filepath.Join(t.TempDir(), "saved")
			rep, err := Salvage(dir, to)
			require.NoError(t, err)
			require.Empty(t, rep.Damaged)
			require.Equal(t, 5, rep.Documents)
			return to
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := newFakeClock()
			opts := &Options{Clock: clock.Now}
			s, err := Open(dir, opts)
			require.NoError(t, err)
			const l = "dbs/m/colls/c"
			require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
			for _, body := range []string{`{"id":"x1","pk":"a"}`, `{"id":"x2","pk":"b"}`, `{"id":"x3","pk":"a"}`, `{"id":"x4","pk":"b"}`} {
				create(t, s, l, body)
				clock.Advance(time.Second)
			}
			_, err = s.Replace(ctx, l, "x1", []byte(`{"id":"x1","pk":"a","v":2}`), nil)
			require.NoError(t, err)
			create(t, s, l, `{"id":"x5","pk":"b"}`) // in the same second as the replace: creation order decides
			require.NoError(t, s.Close())

			require.Equal(t, 5, rewriteRecords(t, dir, l, encodeRecordV3))
			for _, rec := range readRecords(t, dir, l) {
				require.Equal(t, byte(recordVersionV3), rec[0])
			}

			dir = tc.load(t, dir)
			s, err = Open(dir, opts)
			require.NoError(t, err)
			ids, end := feedIDs(t, s, l, "")
			assert.Equal(t, []string{"x2", "x3", "x4", "x1", "x5"}, ids, "by last write (_ts), then by creation")
			create(t, s, l, `{"id":"x6","pk":"a"}`)
			ids, _ = feedIDs(t, s, l, end)
			assert.Equal(t, []string{"x6"}, ids)
			require.NoError(t, s.Close())
			lsns := map[uint64]bool{}
			for seq, rec := range readRecords(t, dir, l) {
				e, old, err := decodeRecord(rec)
				require.NoError(t, err)
				assert.False(t, old, "record %d was written again", seq)
				assert.NotZero(t, e.lsn)
				assert.False(t, lsns[e.lsn], "LSN %d twice", e.lsn)
				lsns[e.lsn] = true
			}
			assert.Len(t, lsns, 6)
		})
	}
}

// TestChangeFeedTTL: a document whose TTL expires leaves the feed, and its
// expiry is not a write.
func TestChangeFeedTTL(t *testing.T) {
	clock := newFakeClock()
	s := New(&Options{Clock: clock.Now})
	l := newColl(t, s, &store.CollectionSpec{DefaultTTL: new(-1)})
	create(t, s, l, `{"id":"brief","ttl":5}`)
	create(t, s, l, `{"id":"kept"}`)
	_, end := feedIDs(t, s, l, "")
	clock.Advance(10 * time.Second)
	ids, _ := feedIDs(t, s, l, "")
	assert.Equal(t, []string{"kept"}, ids)
	ids, _ = feedIDs(t, s, l, end)
	assert.Empty(t, ids, "an expiry is not a change")
}

// TestChangeFeedPendingWrites: a durable write that took its LSN and has
// not published yet holds readers before it, so a later write that
// publishes first is not passed over; a failed write's LSN stops holding
// them once a higher LSN is published.
func TestChangeFeedPendingWrites(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer s.Close()
	l := newColl(t, s, nil)
	c := s.colls[l]
	create(t, s, l, `{"id":"a"}`)
	inFlight := c.lsns.reserve(1) // a write between its LSN and its publish
	create(t, s, l, `{"id":"b"}`)
	ids, cont := feedIDs(t, s, l, "")
	assert.Equal(t, []string{"a"}, ids, "b waits for the write before it")
	assert.Equal(t, cont, fromNow(t, s, l), "the present is before the write in flight")
	c.lsns.abandon(inFlight, 1) // it failed; b, above it, is published
	ids, cont = feedIDs(t, s, l, cont)
	assert.Equal(t, []string{"b"}, ids)

	failed := c.lsns.reserve(1)
	c.lsns.abandon(failed, 1) // nothing above it is published yet
	ids, cont = feedIDs(t, s, l, cont)
	assert.Empty(t, ids)
	create(t, s, l, `{"id":"c"}`)
	ids, _ = feedIDs(t, s, l, cont)
	assert.Equal(t, []string{"c"}, ids, "a publish above a failed write settles it")
}

// TestChangeFeedTokenBinding: a token names its collection's incarnation
// and a position within the feed.
func TestChangeFeedTokenBinding(t *testing.T) {
	s := New(nil)
	l := newColl(t, s, nil)
	create(t, s, l, `{"id":"a"}`)
	_, end := feedIDs(t, s, l, "")
	require.NoError(t, s.DeleteCollection(ctx, l))
	require.NoError(t, s.CreateCollection(ctx, l, nil))
	create(t, s, l, `{"id":"a"}`)
	_, err := s.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: end})
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "another collection (or one deleted since)")

	var tok changeToken
	_, end = feedIDs(t, s, l, "")
	require.NoError(t, cursor.Decode(end, &tok))
	tok.LSN += 5
	_, err = s.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: cursor.Encode(tok)})
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "past the end of the feed")
}

// TestChangeFeedBatches: a batch gives each document it writes one LSN, in
// the order of its last write in the batch, next to each other (a read or
// a failed operation takes none); durably its records hold them, and a
// document a batch deletes raises the collection's mark as a single delete
// does, so a position at it survives a restart.
func TestChangeFeedBatches(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "durable"}[durable], func(t *testing.T) {
			dir := t.TempDir()
			open := func() *Store {
				if !durable {
					return New(nil)
				}
				s, err := Open(dir, nil)
				require.NoError(t, err)
				return s
			}
			s := open()
			l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
			for _, id := range []string{"a", "b", "top"} {
				create(t, s, l, fmt.Sprintf(`{"id":%q,"pk":"p"}`, id))
			}
			_, before := feedIDs(t, s, l, "")
			doc := func(id string, v int) []byte { return fmt.Appendf(nil, `{"id":%q,"pk":"p","v":%d}`, id, v) }
			_, err := s.ExecuteBatch(ctx, l, "p", []store.BatchOp{
				{Kind: store.BatchUpsert, Doc: doc("c", 1)},
				{Kind: store.BatchReplace, ID: "a", Doc: doc("a", 2)},
				{Kind: store.BatchCreate, Doc: doc("d", 1)},
				{Kind: store.BatchUpsert, Doc: doc("c", 2)},
				{Kind: store.BatchRead, ID: "b"},
			}, nil)
			require.NoError(t, err)
			_, err = s.ExecuteBatch(ctx, l, "p", []store.BatchOp{
				{Kind: store.BatchUpsert, Doc: doc("x", 1)},
				{Kind: store.BatchCreate, Doc: doc("b", 2)}, // conflicts
			}, nil)
			require.ErrorIs(t, err, store.ErrConflict)
			ids, end := feedIDs(t, s, l, before)
			assert.Equal(t, []string{"a", "d", "c"}, ids, "the batch's documents in the order of their last write in it; the failed batch's not at all")
			c := s.colls[l]
			c.mu.RLock()
			lsns := []uint64{c.find("a", `"p"`).lsn, c.find("d", `"p"`).lsn, c.find("c", `"p"`).lsn}
			c.mu.RUnlock()
			assert.Equal(t, []uint64{4, 5, 6}, lsns, "one LSN per document written, next to each other")
			assert.Equal(t, end, fromNow(t, s, l))

			_, err = s.ExecuteBatch(ctx, l, "p", []store.BatchOp{
				{Kind: store.BatchDelete, ID: "c"}, // it holds the highest LSN
				{Kind: store.BatchRead, ID: "a"},
			}, nil)
			require.NoError(t, err)
			ids, _ = feedIDs(t, s, l, "")
			assert.Equal(t, []string{"b", "top", "a", "d"}, ids, "a deleted document leaves the feed")
			if durable {
				require.NoError(t, s.disk.db.View(func(tx *boltTx) error {
					assert.EqualValues(t, 6, mark(tx, docsBucket(c.uid)), "the batch's delete raised the mark")
					return nil
				}))
				require.NoError(t, s.Close())
				for _, rec := range readRecords(t, dir, l) {
					e, _, err := decodeRecord(rec)
					require.NoError(t, err)
					if want, ok := map[string]uint64{"a": 4, "d": 5}[e.id]; ok {
						assert.Equal(t, want, e.lsn, "the record of %s holds its LSN", e.id)
					}
				}
				s = open()
			}
			defer s.Close()
			create(t, s, l, `{"id":"e","pk":"p"}`)
			ids, _ = feedIDs(t, s, l, end)
			assert.Equal(t, []string{"e"}, ids, "a later write comes after a position at a document a batch deleted")
		})
	}
}

// withoutBucket runs f while the file lacks the documents bucket of l, so
// that every commit to l fails, then puts the bucket back as it was.
func withoutBucket(t *testing.T, s *Store, l string, f func()) {
	t.Helper()
	bucket := docsBucket(s.colls[l].uid)
	recs := map[string][]byte{}
	require.NoError(t, s.disk.db.Update(func(tx *boltTx) error {
		if err := tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			recs[string(k)] = append([]byte(nil), v...)
			return nil
		}); err != nil {
			return err
		}
		return tx.DeleteBucket(bucket)
	}))
	f()
	require.NoError(t, s.disk.db.Update(func(tx *boltTx) error {
		b, err := tx.CreateBucket(bucket)
		if err != nil {
			return err
		}
		for k, v := range recs {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	}))
}

// TestChangeFeedFailedWrites: a durable write or batch whose commit fails
// gives up the LSNs it reserved: the feed shows nothing of it, holds its
// present before them only until a later write publishes, then goes on
// past them, also across a restart. A write or batch refused by its
// database's fence takes no LSN.
func TestChangeFeedFailedWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	require.NoError(t, err)
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
	c := s.colls[l]
	create(t, s, l, `{"id":"a","pk":"p"}`)
	_, end := feedIDs(t, s, l, "")
	batch := func(opts *store.BatchOptions) error {
		_, err := s.ExecuteBatch(ctx, l, "p", []store.BatchOp{
			{Kind: store.BatchCreate, Doc: []byte(`{"id":"x","pk":"p"}`)},
			{Kind: store.BatchDelete, ID: "a"},
			{Kind: store.BatchUpsert, Doc: []byte(`{"id":"y","pk":"p"}`)},
		}, opts)
		return err
	}
	single := func(opts *store.WriteOptions) error {
		_, err := s.Create(ctx, l, []byte(`{"id":"x","pk":"p"}`), opts)
		return err
	}
	for i, tc := range []struct {
		name     string
		write    func() error
		reserved uint64
	}{
		{"a single write", func() error { return single(nil) }, 1},
		{"a batch", func() error { return batch(nil) }, 2},
	} {
		last := c.lsns.last.Load()
		withoutBucket(t, s, l, func() {
			require.ErrorIs(t, tc.write(), store.ErrCollectionNotFound, "%s: its commit fails", tc.name)
		})
		require.Equal(t, last+tc.reserved, c.lsns.last.Load(), "%s reserved its LSNs before its commit", tc.name)
		ids, _ := feedIDs(t, s, l, end)
		assert.Empty(t, ids, "%s: nothing of it appears", tc.name)
		assert.Equal(t, end, fromNow(t, s, l), "%s: the present stays before its LSNs until a later write publishes", tc.name)
		after := fmt.Sprintf("after-%d", i)
		create(t, s, l, fmt.Sprintf(`{"id":%q,"pk":"p"}`, after))
		ids, end = feedIDs(t, s, l, end)
		assert.Equal(t, []string{after}, ids, "%s does not stall the feed", tc.name)
		assert.Equal(t, end, fromNow(t, s, l), "%s: nothing is pending", tc.name)
	}

	_, err = s.RaiseFence(ctx, "dbs/t", 5)
	require.NoError(t, err)
	last := c.lsns.last.Load()
	require.ErrorIs(t, single(&store.WriteOptions{Epoch: 4}), store.ErrFenced)
	require.ErrorIs(t, batch(&store.BatchOptions{Epoch: 4}), store.ErrFenced)
	assert.Equal(t, last, c.lsns.last.Load(), "writes refused by the fence take no LSN")
	assert.Equal(t, end, fromNow(t, s, l))

	require.NoError(t, s.Close())
	s, err = Open(dir, nil)
	require.NoError(t, err)
	defer s.Close()
	create(t, s, l, `{"id":"restarted","pk":"p"}`)
	ids, _ := feedIDs(t, s, l, end)
	assert.Equal(t, []string{"restarted"}, ids)
	ids, _ = feedIDs(t, s, l, "")
	assert.Equal(t, []string{"a", "after-0", "after-1", "restarted"}, ids)
}
