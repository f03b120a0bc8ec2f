package memstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// TestDurableBatchAndFence: a batch's changes and a database's fence are
// on disk when the calls return, and read back after a restart: the
// documents with their ETags and feed order, an expired version a batch
// wrote over gone from the file, the fence still refusing stale writes.
func TestDurableBatchAndFence(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	opts := &Options{Clock: clock.Now}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	ttl := -1
	l := "dbs/app/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: &ttl}))
	for _, d := range []string{`{"id":"old","pk":"p","ttl":5}`, `{"id":"gone","pk":"p"}`, `{"id":"kept","pk":"p"}`} {
		_, err := s.Create(ctx, l, []byte(d), nil)
		require.NoError(t, err)
	}
	clock.Advance(10 * time.Second) // "old" expires
	res, err := s.ExecuteBatch(ctx, l, "p", []store.BatchOp{
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"old","pk":"p","v":"again"}`)},
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"new","pk":"p"}`)},
		{Kind: store.BatchDelete, ID: "gone"},
		{Kind: store.BatchUpsert, Doc: []byte(`{"id":"kept","pk":"p","v":2}`)},
	}, &store.BatchOptions{Epoch: 3})
	require.NoError(t, err)
	require.Len(t, res, 4)
	got, err := s.RaiseFence(ctx, "dbs/app", 7)
	require.NoError(t, err)
	require.EqualValues(t, 7, got)
	_, err = s.RaiseFence(ctx, "/dbs/other/", 2)
	require.NoError(t, err)
	before := pagedFeed(t, s, l, 2)
	require.NoError(t, s.Close())

	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, before, pagedFeed(t, s, l, 2), "the batch's documents survive, ETags and feed order too")
	assert.Len(t, readRecordsOf(t, s, l), 3, "old, new, kept: the expired version and the deleted document are gone from disk")
	for db, want := range map[string]int64{"dbs/app": 7, "dbs/other": 2, "dbs/none": 0} {
		got, err := s.Fence(ctx, db)
		require.NoError(t, err)
		assert.Equal(t, want, got, "the fence of %s survives", db)
	}
	_, err = s.Create(ctx, l, []byte(`{"id":"x","pk":"p"}`), &store.WriteOptions{Epoch: 6})
	require.ErrorIs(t, err, store.ErrFenced, "the fence still refuses stale writes")
	_, err = s.Create(ctx, l, []byte(`{"id":"x","pk":"p"}`), &store.WriteOptions{Epoch: 7})
	require.NoError(t, err)
}

// pagedFeed returns a collection's feed, read in pages of size.
func pagedFeed(t *testing.T, s *Store, l string, size int) []string {
	t.Helper()
	var out []string
	cont := ""
	for {
		p, err := s.ReadFeed(ctx, l, &store.FeedOptions{PageSize: size, Continuation: cont})
		require.NoError(t, err)
		for _, it := range p.Items {
			out = append(out, string(it))
		}
		if cont = p.Continuation; cont == "" {
			return out
		}
	}
}

// readRecordsOf returns the keys of the records of an open store's
// collection on disk.
func readRecordsOf(t *testing.T, s *Store, l string) []string {
	t.Helper()
	var keys []string
	require.NoError(t, s.disk.db.View(func(tx *boltTx) error {
		return tx.Bucket(docsBucket(s.colls[l].uid)).ForEach(func(k, _ []byte) error {
			keys = append(keys, fmt.Sprintf("%x", k))
			return nil
		})
	}))
	return keys
}

// TestBatchFailedCommit: when the commit of a batch fails, nothing of it
// is published and the error names the failure.
func TestBatchFailedCommit(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
	_, err = s.Create(ctx, l, []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close()) // the committer is gone: the commit fails
	s.closed.Store(false)         // but the store lets the call through
	_, err = s.ExecuteBatch(ctx, l, "p", []store.BatchOp{
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"b","pk":"p"}`)},
		{Kind: store.BatchDelete, ID: "a"},
	}, nil)
	require.ErrorIs(t, err, store.ErrUnavailable)
	_, err = s.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "p"})
	require.NoError(t, err, "the failed batch deleted nothing")
	_, err = s.Read(ctx, l, "b", &store.ReadOptions{PartitionKey: "p"})
	require.ErrorIs(t, err, store.ErrNotFound, "nor created anything")
	_, err = s.RaiseFence(ctx, "dbs/t", 1)
	require.ErrorIs(t, err, store.ErrUnavailable)
	got, err := s.Fence(ctx, "dbs/t")
	require.NoError(t, err)
	assert.Zero(t, got, "a raise that was not committed does not apply")
}

// TestBatchesDoNotDeadlock runs batches that name the same documents in
// opposite orders, with single writes to them, concurrently.
func TestBatchesDoNotDeadlock(t *testing.T) {
	s := New(nil)
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = fmt.Sprint("d", i)
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 200 {
				ops := make([]store.BatchOp, len(ids))
				for j := range ids {
					k := j
					if w%2 == 1 {
						k = len(ids) - 1 - j
					}
					ops[j] = store.BatchOp{Kind: store.BatchUpsert, Doc: fmt.Appendf(nil, `{"id":%q,"pk":"p","w":%d,"i":%d}`, ids[k], w, i)}
				}
				if _, err := s.ExecuteBatch(ctx, l, "p", ops, &store.BatchOptions{Epoch: 1}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Upsert(ctx, l, fmt.Appendf(nil, `{"id":%q,"pk":"p"}`, ids[i%len(ids)]), &store.WriteOptions{Epoch: 1}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("batches deadlocked")
	}
	info, err := s.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, len(ids), info.Documents)
}

// TestBatchErrors checks the errors' text: the index, the operation, the
// document.
func TestBatchErrors(t *testing.T) {
	s := New(nil)
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
	_, err := s.ExecuteBatch(ctx, l, "p", []store.BatchOp{
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"a","pk":"p"}`)},
		{Kind: store.BatchReplace, ID: "zz", Doc: []byte(`{"id":"zz","pk":"p"}`)},
	}, nil)
	var be *store.BatchError
	require.True(t, errors.As(err, &be))
	assert.Equal(t, `store: batch operation 1: store: replace dbs/t/colls/testbatcherrors id "zz": not found: no document under partition key "p"`, err.Error())
	_, err = s.ExecuteBatch(ctx, l, "p", []store.BatchOp{{Kind: store.BatchCreate, Doc: []byte(`{"id":"a","pk":"q"}`)}}, nil)
	assert.Equal(t, `store: batch operation 0: store: create dbs/t/colls/testbatcherrors id "a": bad request: the document's partition key ("q" at /pk) differs from the batch's ("p")`, err.Error())
	_, err = s.RaiseFence(ctx, "dbs/t", 4)
	require.NoError(t, err)
	_, err = s.ExecuteBatch(ctx, l, "p", []store.BatchOp{{Kind: store.BatchRead, ID: "a"}}, &store.BatchOptions{Epoch: 3})
	assert.Equal(t, `store: batch dbs/t/colls/testbatcherrors: fenced: stale epoch: the write's epoch 3 is below the fence 4 of its database`, err.Error())
	_, err = s.Create(ctx, l, []byte(`{"id":"a","pk":"p"}`), &store.WriteOptions{Epoch: -1})
	require.ErrorIs(t, err, store.ErrBadRequest)
}
