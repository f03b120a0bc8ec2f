package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/storetest"
)

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestConformanceInMemory(t *testing.T) {
	clock := newFakeClock()
	storetest.Run(t, func(t *testing.T) store.Store {
		s := New(&Options{Clock: clock.Now})
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, &storetest.Options{Advance: clock.Advance})
}

func TestConformanceDurable(t *testing.T) {
	clock := newFakeClock()
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.TempDir(), &Options{Clock: clock.Now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, &storetest.Options{Advance: clock.Advance})
}

// TestConformanceReopened runs the suite on a durable store that is closed
// and reopened before every case, so every case also runs on a store
// loaded from disk.
func TestConformanceReopened(t *testing.T) {
	if testing.Short() {
		t.Skip("the two other conformance runs cover -short")
	}
	clock := newFakeClock()
	storetest.Run(t, func(t *testing.T) store.Store {
		dir := t.TempDir()
		s, err := Open(dir, &Options{Clock: clock.Now})
		require.NoError(t, err)
		require.NoError(t, s.CreateCollection(ctx, "dbs/pre/colls/c", nil))
		_, err = s.Create(ctx, "dbs/pre/colls/c", []byte(`{"id":"x"}`), nil)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		s, err = Open(dir, &Options{Clock: clock.Now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, &storetest.Options{Advance: clock.Advance})
}

func TestSuiteKeys(t *testing.T) {
	// Every case of the suite can be skipped by its name, and the names
	// are unique.
	seen := map[string]bool{}
	for _, k := range storetest.Keys() {
		assert.False(t, seen[k], "key %s twice", k)
		seen[k] = true
	}
	assert.True(t, seen[storetest.SkipQueryPaging])
	assert.True(t, seen[storetest.SkipIfMatchOnDelete])
	assert.True(t, seen[storetest.SkipPartitionKeyScopedRead])
}

var ctx = context.Background()

type boltTx = bolt.Tx

func newColl(t *testing.T, s *Store, spec *store.CollectionSpec) string {
	t.Helper()
	l := "dbs/t/colls/" + strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	require.NoError(t, s.CreateCollection(ctx, l, spec))
	return l
}

// TestPrepare checks document validation beyond the suite: what the store
// refuses, and the message it gives.
func TestPrepare(t *testing.T) {
	s := New(nil)
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/a/b"})
	deep := strings.Repeat("[", jsontext.MaxDepth) + strings.Repeat("]", jsontext.MaxDepth)
	tooDeep := strings.Repeat("[", jsontext.MaxDepth) + "[]" + strings.Repeat("]", jsontext.MaxDepth)
	bad := []struct{ doc, want string }{
		{`{"id":"x","a":{"b":{"c":1}}}`, "got an object"},
		{`{"id":"x","a":{"b":[1]}}`, "got an array"},
		{`{"id":"x","a":{"b":1,"b":2}}`, `"b" appears twice`},
		{`{"id":"x","a":1,"a":2}`, `"a" appears twice`},
		{`{"id":"x","id":"y"}`, `"id" appears twice`},
		{`{"id":"x","n":1e400}`, "out of range"},
		{`{"id":"x","n":-1e309}`, "out of range"},
		{`{"id":"x","n":01}`, "want ',' or '}'"},
		{`{"id":"x","n":1.}`, "decimal point"},
		{`{"id":"x","n":1e}`, "exponent"},
		{`{"id":"x","n":-}`, "want a digit"},
		{`{"id":"x","s":"a` + "\x01" + `"}`, "control character"},
		{`{"id":"x","s":"` + "\xff" + `"}`, "UTF-8"},
		{`{"id":"x","s":"\u12"}`, `\u escape`},
		{`{"id":"x","v":tru}`, "want a value"},
		{`{"id":"x","v":nul}`, "want a value"},
		{`{"id":"x",}`, "property name"},
		{`{"id":"x" "y":1}`, "want ',' or '}'"},
		{`{"id":"x","y" 1}`, "':'"},
		{`{"id":"x","d":` + tooDeep + `}`, "nested too deeply"},
		{`{"id":"x"} x`, "after the document"},
		{`{"id":"x"`, "want ',' or '}'"},
		{`{"id":"x","s":"abc`, "unterminated"},
	}
	for _, tc := range bad {
		_, err := s.Create(ctx, l, []byte(tc.doc), nil)
		require.Error(t, err, "%.60s", tc.doc)
		assert.ErrorIs(t, err, store.ErrBadRequest, "%.60s", tc.doc)
		assert.Contains(t, err.Error(), tc.want, "%.60s", tc.doc)
	}
	good := []struct {
		doc string
		key any
	}{
		{`{"id":"x1","a":{"b":"k"}}`, "k"},
		{`{"id":"x2","a":{"b":1.50}}`, 1.5},
		{`{"id":"x3","a":{"b":null}}`, store.Null},
		{`{"id":"x4","a":{"c":1}}`, store.None},
		{`{"id":"x5","a":"not an object"}`, store.None},
		{`{"id":"x6"}`, store.None},
		{`{"id":"x7","a":{"b":"\u00e9<&>"}}`, "é<&>"},
		{`{"id":"x8","d":` + deep[2:len(deep)-2] + `,"a":{"b":true}}`, true},
		{` { "id" : "x9" , "a" : { "b" : 2e3 } } ` + "\n", 2000},
		{`{"\u0069d":"x10","a":{"b":"k"}}`, "k"},
		{`{"id":"x11","n":1e308,"m":-0.0,"e":1E-400,"a":{"b":"k"}}`, "k"},
	}
	for _, tc := range good {
		d, err := s.Create(ctx, l, []byte(tc.doc), nil)
		require.NoError(t, err, "%.60s", tc.doc)
		got, err := s.Read(ctx, l, d.ID, &store.ReadOptions{PartitionKey: tc.key})
		require.NoError(t, err, "%.60s: found under its key", tc.doc)
		assert.True(t, json.Valid(got.Body), "%.60s: stored text is JSON", tc.doc)
	}
	// Every accepted document decodes for queries.
	page, err := s.Query(ctx, l, store.Query{Text: "SELECT VALUE c.id FROM c"}, &store.QueryOptions{PageSize: -1})
	require.NoError(t, err)
	assert.Len(t, page.Items, len(good))
	// Nothing refused was stored.
	info, err := s.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, len(good), info.Documents)
}

// TestStoredText checks the stored text: the caller's bytes, system
// properties replaced, property order kept.
func TestStoredText(t *testing.T) {
	clock := newFakeClock()
	s := New(&Options{Clock: clock.Now})
	l := newColl(t, s, nil)
	d, err := s.Create(ctx, l, []byte(" {\"z\":1, \"id\":\"a\",\"_ts\":5,\"m\":{\"_etag\":1},\"_etag\":\"x\",\"_rid\":\"r\",\"_self\":\"s\",\"_attachments\":\"t\"}\n"), nil)
	require.NoError(t, err)
	want := fmt.Sprintf(`{"z":1,"id":"a","m":{"_etag":1},"_etag":"\"%s\"","_ts":%d}`, d.ETag[1:len(d.ETag)-1], clock.Now().Unix())
	assert.Equal(t, want, string(d.Body))
	d, err = s.Upsert(ctx, l, []byte(`{"id":"a", "k":[1, 2]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`{"id":"a", "k":[1, 2],"_etag":"\"%s\"","_ts":%d}`, d.ETag[1:len(d.ETag)-1], clock.Now().Unix()), string(d.Body))
	assert.Regexp(t, `^"[0-9a-f]{8}-[0-9a-f]+"$`, d.ETag)
}

func TestETagsNeverRepeat(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for round := 0; round < 3; round++ {
		s, err := Open(dir, &Options{NoSync: true})
		require.NoError(t, err)
		if round == 0 {
			require.NoError(t, s.CreateCollection(ctx, "dbs/t/colls/c", nil))
		}
		for i := 0; i < 20; i++ {
			d, err := s.Upsert(ctx, "dbs/t/colls/c", []byte(`{"id":"a"}`), nil)
			require.NoError(t, err)
			require.False(t, seen[d.ETag], "ETag %s repeated after a restart", d.ETag)
			seen[d.ETag] = true
		}
		require.NoError(t, s.Close())
	}
}

// TestDurableReopen writes every kind of state, reopens, and compares.
func TestDurableReopen(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	opts := &Options{Clock: clock.Now}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	ttl := 100
	spec := &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: &ttl, Indexing: json.RawMessage(`{"indexingMode":"consistent"}`)}
	a, b := "dbs/app/colls/a", "dbs/app/colls/b"
	require.NoError(t, s.CreateCollection(ctx, a, spec))
	require.NoError(t, s.CreateCollection(ctx, b, nil))
	require.NoError(t, s.CreateCollection(ctx, "dbs/app/colls/gone", nil))
	_, err = s.Create(ctx, "dbs/app/colls/gone", []byte(`{"id":"x"}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.DeleteCollection(ctx, "dbs/app/colls/gone"))
	for i := 0; i < 50; i++ {
		_, err := s.Create(ctx, a, []byte(fmt.Sprintf(`{"id":"d%02d","pk":"p%d","n":%d}`, i, i%4, i)), nil)
		require.NoError(t, err)
	}
	_, err = s.Create(ctx, a, []byte(`{"id":"short","pk":"p0","ttl":10}`), nil)
	require.NoError(t, err)
	_, err = s.Create(ctx, a, []byte(`{"id":"nokey"}`), nil)
	require.NoError(t, err)
	for i := 0; i < 50; i += 7 {
		require.NoError(t, s.Delete(ctx, a, fmt.Sprintf("d%02d", i), &store.WriteOptions{PartitionKey: fmt.Sprintf("p%d", i%4)}))
	}
	for i := 1; i < 50; i += 5 {
		_, err := s.Replace(ctx, a, fmt.Sprintf("d%02d", i), []byte(fmt.Sprintf(`{"id":"d%02d","pk":"p%d","n":%d,"replaced":true}`, i, i%4, i)), nil)
		if i%7 == 0 {
			require.ErrorIs(t, err, store.ErrNotFound)
			continue
		}
		require.NoError(t, err)
	}
	_, err = s.Create(ctx, b, []byte(`{"id":"only"}`), nil)
	require.NoError(t, err)
	feed := func(s *Store, l string) []string { return pagedFeed(t, s, l, 7) }
	beforeA, beforeB := feed(s, a), feed(s, b)
	infoA, err := s.CollectionInfo(ctx, a)
	require.NoError(t, err)
	q := store.Query{Text: "SELECT VALUE c.id FROM c WHERE c.n > 10 ORDER BY c.n"}
	page, err := s.Query(ctx, a, q, &store.QueryOptions{PageSize: 5})
	require.NoError(t, err)
	require.NotEmpty(t, page.Continuation)
	fp, err := s.ReadFeed(ctx, a, &store.FeedOptions{PageSize: 5})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	list, err := s.ListCollections(ctx, "dbs/app")
	require.NoError(t, err)
	assert.Equal(t, []string{a, b}, list)
	assert.Equal(t, beforeA, feed(s, a), "documents, ETags, timestamps and feed order survive")
	assert.Equal(t, beforeB, feed(s, b))
	info, err := s.CollectionInfo(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, infoA, info, "spec and usage survive")
	got, err := s.Read(ctx, a, "nokey", &store.ReadOptions{PartitionKey: store.None})
	require.NoError(t, err)
	assert.Equal(t, "nokey", got.ID)
	// Tokens issued before the restart still work.
	rest, err := s.Query(ctx, a, q, &store.QueryOptions{PageSize: -1, Continuation: page.Continuation})
	require.NoError(t, err)
	all, err := s.Query(ctx, a, q, &store.QueryOptions{PageSize: -1})
	require.NoError(t, err)
	assert.Equal(t, all.Items[5:], rest.Items)
	frest, err := s.ReadFeed(ctx, a, &store.FeedOptions{PageSize: 1000, Continuation: fp.Continuation})
	require.NoError(t, err)
	assert.Len(t, frest.Items, len(beforeA)-5)
	// A new document after the restart goes to the end of the feed.
	_, err = s.Create(ctx, a, []byte(`{"id":"late","pk":"p1"}`), nil)
	require.NoError(t, err)
	after := feed(s, a)
	assert.Contains(t, after[len(after)-1], `"late"`)

	// Expired documents are dropped by Open, from disk too.
	clock.Advance(20 * time.Second)
	require.NoError(t, s.Close())
	s, err = Open(dir, opts)
	require.NoError(t, err)
	_, err = s.Read(ctx, a, "short", &store.ReadOptions{PartitionKey: "p0"})
	require.ErrorIs(t, err, store.ErrNotFound)
	n := 0
	require.NoError(t, s.disk.db.View(func(tx *boltTx) error {
		n = tx.Bucket(docsBucket(s.colls[a].uid)).Stats().KeyN
		return nil
	}))
	info, err = s.CollectionInfo(ctx, a)
	require.NoError(t, err)
	assert.EqualValues(t, n, info.Documents, "the expired document is gone from disk")
}

// TestTTLPurge checks that expired documents leave memory and disk
// without being read.
func TestTTLPurge(t *testing.T) {
	clock := newFakeClock()
	s, err := Open(t.TempDir(), &Options{Clock: clock.Now})
	require.NoError(t, err)
	defer s.Close()
	ttl := 10
	l := newColl(t, s, &store.CollectionSpec{DefaultTTL: &ttl})
	for i := 0; i < 100; i++ {
		_, err := s.Create(ctx, l, []byte(fmt.Sprintf(`{"id":"d%d"}`, i)), nil)
		require.NoError(t, err)
	}
	_, err = s.Create(ctx, l, []byte(`{"id":"keep","ttl":-1}`), nil)
	require.NoError(t, err)
	c := s.colls[l]
	clock.Advance(time.Minute)
	info, err := s.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, 1, info.Documents)
	c.mu.RLock()
	assert.Len(t, c.byID, 1, "expired documents left the index")
	assert.Empty(t, c.expiry)
	c.mu.RUnlock()
	require.Eventually(t, func() bool {
		n := 0
		_ = s.disk.db.View(func(tx *boltTx) error {
			n = tx.Bucket(docsBucket(c.uid)).Stats().KeyN
			return nil
		})
		return n == 1
	}, 30*time.Second, 10*time.Millisecond, "expired documents left the disk")
	// A write purges as well.
	_, err = s.Create(ctx, l, []byte(`{"id":"w"}`), nil)
	require.NoError(t, err)
	clock.Advance(time.Minute)
	_, err = s.Create(ctx, l, []byte(`{"id":"v"}`), nil)
	require.NoError(t, err)
	c.mu.RLock()
	assert.Nil(t, c.byID["w"])
	c.mu.RUnlock()
}

// TestDeleteCollectionUnderWriters deletes a collection while writers
// write to it: every write either succeeds before or fails with
// ErrCollectionNotFound, and nothing of it remains, in memory or on disk.
func TestDeleteCollectionUnderWriters(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprint("durable=", durable), func(t *testing.T) {
			var s *Store
			dir := t.TempDir()
			if durable {
				var err error
				s, err = Open(dir, &Options{NoSync: true})
				require.NoError(t, err)
			} else {
				s = New(nil)
			}
			l := "dbs/t/colls/c"
			require.NoError(t, s.CreateCollection(ctx, l, nil))
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Go(func() {
					for i := 0; ; i++ {
						_, err := s.Create(ctx, l, []byte(fmt.Sprintf(`{"id":"w%d-%d"}`, w, i)), nil)
						if errors.Is(err, store.ErrCollectionNotFound) {
							return
						}
						if err != nil {
							t.Errorf("create: %v", err)
							return
						}
					}
				})
			}
			time.Sleep(20 * time.Millisecond)
			require.NoError(t, s.DeleteCollection(ctx, l))
			wg.Wait()
			require.NoError(t, s.CreateCollection(ctx, l, nil))
			page, err := s.ReadFeed(ctx, l, nil)
			require.NoError(t, err)
			assert.Empty(t, page.Items)
			if durable {
				require.NoError(t, s.Close())
				s, err = Open(dir, nil)
				require.NoError(t, err)
				page, err := s.ReadFeed(ctx, l, nil)
				require.NoError(t, err)
				assert.Empty(t, page.Items, "nothing of the deleted collection came back")
			}
			require.NoError(t, s.Close())
		})
	}
}

// TestCloseWaitsForWriters closes a durable store under concurrent
// writers: every acknowledged write is on disk, the others fail with
// ErrUnavailable.
func TestCloseWaitsForWriters(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	require.NoError(t, err)
	l := "dbs/t/colls/c"
	require.NoError(t, s.CreateCollection(ctx, l, nil))
	var acked sync.Map
	var count atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				_, err := s.Create(ctx, l, []byte(fmt.Sprintf(`{"id":%q}`, id)), nil)
				if errors.Is(err, store.ErrUnavailable) {
					return
				}
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				acked.Store(id, true)
				count.Add(1)
			}
		})
	}
	// Close once writes are flowing (not after a sleep, which a loaded
	// machine can spend without scheduling a writer).
	for count.Load() < 200 {
		runtime.Gosched()
	}
	require.NoError(t, s.Close())
	wg.Wait()
	s, err = Open(dir, nil)
	require.NoError(t, err)
	defer s.Close()
	n := 0
	acked.Range(func(k, _ any) bool {
		n++
		_, err := s.Read(ctx, l, k.(string), nil)
		assert.NoError(t, err, "acknowledged %s", k)
		return true
	})
	assert.Positive(t, n)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	// A file where the directory should be.
	_, err = Open(dir+"/docshard.db/sub", nil)
	require.Error(t, err)
}

func TestQueryCursorEviction(t *testing.T) {
	s := New(&Options{Cursors: 1})
	l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk"})
	for i := 0; i < 30; i++ {
		_, err := s.Create(ctx, l, []byte(fmt.Sprintf(`{"id":"d%02d","pk":"p","n":%d}`, i, i)), nil)
		require.NoError(t, err)
	}
	q1 := store.Query{Text: "SELECT VALUE c.n FROM c ORDER BY c.n DESC"}
	q2 := store.Query{Text: "SELECT VALUE c.id FROM c"}
	p1, err := s.Query(ctx, l, q1, &store.QueryOptions{PageSize: 10})
	require.NoError(t, err)
	p2, err := s.Query(ctx, l, q2, &store.QueryOptions{PageSize: 10})
	require.NoError(t, err) // evicts q1's cursor
	r1, err := s.Query(ctx, l, q1, &store.QueryOptions{PageSize: 10, Continuation: p1.Continuation})
	require.NoError(t, err, "an evicted cursor re-runs the query")
	assert.Equal(t, "19", string(r1.Items[0]))
	r2, err := s.Query(ctx, l, q2, &store.QueryOptions{PageSize: 10, Continuation: p2.Continuation})
	require.NoError(t, err)
	assert.Equal(t, `"d10"`, string(r2.Items[0]))
}

func TestPageBytes(t *testing.T) {
	s := New(&Options{MaxPageBytes: 1000})
	l := newColl(t, s, nil)
	for i := 0; i < 10; i++ {
		_, err := s.Create(ctx, l, []byte(fmt.Sprintf(`{"id":"d%d","pad":%q}`, i, strings.Repeat("x", 300))), nil)
		require.NoError(t, err)
	}
	page, err := s.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 100})
	require.NoError(t, err)
	assert.Len(t, page.Items, 2, "the byte cap ends the page")
	qp, err := s.Query(ctx, l, store.Query{Text: "SELECT * FROM c"}, &store.QueryOptions{PageSize: -1})
	require.NoError(t, err)
	assert.Len(t, qp.Items, 2)
	big := New(&Options{MaxPageBytes: 10})
	l = newColl(t, big, nil)
	_, err = big.Create(ctx, l, []byte(`{"id":"only","pad":"`+strings.Repeat("y", 100)+`"}`), nil)
	require.NoError(t, err)
	page, err = big.ReadFeed(ctx, l, nil)
	require.NoError(t, err)
	assert.Len(t, page.Items, 1, "a page holds at least one item")
}

// TestConcurrentMixed hammers one collection with every operation at once
// (run under -race).
func TestConcurrentMixed(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprint("durable=", durable), func(t *testing.T) {
			clock := newFakeClock()
			var s *Store
			if durable {
				var err error
				s, err = Open(t.TempDir(), &Options{Clock: clock.Now, NoSync: true})
				require.NoError(t, err)
			} else {
				s = New(&Options{Clock: clock.Now})
			}
			defer s.Close()
			ttl := 5
			l := newColl(t, s, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: &ttl})
			n := 300
			if testing.Short() {
				n = 60
			}
			var wg sync.WaitGroup
			for w := 0; w < 6; w++ {
				wg.Go(func() {
					for i := 0; i < n; i++ {
						id := fmt.Sprintf("d%d", i%17)
						key := fmt.Sprint(w % 3)
						body := []byte(fmt.Sprintf(`{"id":%q,"pk":%q,"w":%d,"i":%d}`, id, key, w, i))
						var err error
						switch i % 6 {
						case 0:
							_, err = s.Upsert(ctx, l, body, nil)
						case 1:
							_, err = s.Create(ctx, l, body, nil)
						case 2:
							_, err = s.Replace(ctx, l, id, body, nil)
						case 3:
							err = s.Delete(ctx, l, id, &store.WriteOptions{PartitionKey: key})
						case 4:
							_, err = s.Query(ctx, l, store.Query{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.w >= 0"}, &store.QueryOptions{PartitionKey: key})
						case 5:
							_, err = s.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 3})
							if w == 0 {
								clock.Advance(time.Second)
							}
						}
						if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
							t.Errorf("op %d: %v", i%6, err)
						}
					}
				})
			}
			wg.Wait()
			// The bookkeeping agrees with a fresh count.
			c := s.colls[l]
			c.mu.RLock()
			live, chained := 0, 0
			for _, e := range c.order {
				if !e.dead {
					live++
					assert.Same(t, e, c.find(e.id, e.pk))
				}
			}
			for _, head := range c.byID {
				for e := head; e != nil; e = e.next {
					chained++
					assert.False(t, e.dead)
				}
			}
			for i, e := range c.expiry {
				assert.Equal(t, i, e.heapIdx)
			}
			assert.Equal(t, live, chained)
			assert.EqualValues(t, live, c.docs)
			c.mu.RUnlock()
		})
	}
}
