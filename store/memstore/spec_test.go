package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// TestUniqueKeys: a write that would give two documents of one
// partition-key value the same values of a unique key is refused with
// ErrConflict, as Cosmos DB refuses it (409); other key values, changed
// values, deleted and expired holders free the values; the index is
// rebuilt when a durable store is opened again.
func TestUniqueKeys(t *testing.T) {
	const l = "dbs/app/colls/users"
	type step struct {
		op     string // create, upsert, replace, delete, advance
		doc    string
		id     string
		clash  bool
		expire time.Duration
	}
	for _, tc := range []struct {
		name  string
		pair  bool // a second unique key, of /first and /last
		steps []step
	}{
		{"same email, same tenant", false, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","email":"x@y"}`},
			{op: "create", doc: `{"id":"b","tenant":"t","email":"x@y"}`, clash: true},
			{op: "upsert", doc: `{"id":"b","tenant":"t","email":"x@y"}`, clash: true},
		}},
		{"same email, other tenant", false, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","email":"x@y"}`},
			{op: "create", doc: `{"id":"b","tenant":"u","email":"x@y"}`},
		}},
		{"a document keeps its own values", false, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","email":"x@y"}`},
			{op: "replace", id: "a", doc: `{"id":"a","tenant":"t","email":"x@y","n":1}`},
			{op: "upsert", doc: `{"id":"a","tenant":"t","email":"x@y","n":2}`},
		}},
		{"a changed value frees the old one", false, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","email":"x@y"}`},
			{op: "replace", id: "a", doc: `{"id":"a","tenant":"t","email":"z@y"}`},
			{op: "create", doc: `{"id":"b","tenant":"t","email":"x@y"}`},
			{op: "replace", id: "a", doc: `{"id":"a","tenant":"t","email":"x@y"}`, clash: true},
		}},
		{"a deleted holder frees the value", false, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","email":"x@y"}`},
			{op: "delete", id: "a"},
			{op: "create", doc: `{"id":"b","tenant":"t","email":"x@y"}`},
		}},
		{"an expired holder frees the value", false, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","email":"x@y","ttl":10}`},
			{op: "advance", expire: 11 * time.Second},
			{op: "create", doc: `{"id":"b","tenant":"t","email":"x@y"}`},
		}},
		{"a missing value is null, and counts", true, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","first":"A"}`},
			{op: "create", doc: `{"id":"b","tenant":"t","first":"A","email":"1"}`, clash: true},
			{op: "create", doc: `{"id":"c","tenant":"t","first":"A","last":null,"email":"2"}`, clash: true},
			{op: "create", doc: `{"id":"d","tenant":"t","first":"A","last":"B","email":"3"}`},
		}},
		{"numbers compare by value, objects by content", true, []step{
			{op: "create", doc: `{"id":"a","tenant":"t","email":1,"first":{"x":1,"y":2}}`},
			{op: "create", doc: `{"id":"b","tenant":"t","email":1.0}`, clash: true},
			{op: "create", doc: `{"id":"c","tenant":"t","email":2,"first":{"y":2,"x":1}}`, clash: true},
			{op: "create", doc: `{"id":"d","tenant":"t","email":3,"first":{"y":2,"x":1},"last":0}`},
		}},
	} {
		onBoth(t, tc.name, func(t *testing.T, durable bool, clock *fakeClock, open func() *Store) {
			ctx := context.Background()
			s := open()
			defer func() { _ = s.Close() }()
			spec := &store.CollectionSpec{PartitionKeyPath: "/tenant", DefaultTTL: ptrInt(-1), UniqueKeys: [][]string{{"/email"}}}
			if tc.pair {
				spec.UniqueKeys = append(spec.UniqueKeys, []string{"/first", "/last"})
			}
			require.NoError(t, s.CreateCollection(ctx, l, spec))
			for i, st := range tc.steps {
				var err error
				switch st.op {
				case "create":
					_, err = s.Create(ctx, l, []byte(st.doc), nil)
				case "upsert":
					_, err = s.Upsert(ctx, l, []byte(st.doc), nil)
				case "replace":
					_, err = s.Replace(ctx, l, st.id, []byte(st.doc), nil)
				case "delete":
					err = s.Delete(ctx, l, st.id, &store.WriteOptions{PartitionKey: "t"})
				case "advance":
					clock.Advance(st.expire)
					continue
				}
				if st.clash {
					require.ErrorIs(t, err, store.ErrUniqueKeyConflict, "step %d", i)
					assert.Contains(t, err.Error(), "Unique index constraint violation")
				} else {
					require.NoError(t, err, "step %d", i)
				}
			}
			if durable {
				// Opened again, the index holds what the collection holds.
				require.NoError(t, s.Close())
				s = open()
				last := tc.steps[len(tc.steps)-1]
				if last.op == "create" && !last.clash {
					again := strings.Replace(last.doc, `"id":"`, `"id":"again-`, 1)
					_, err := s.Create(ctx, l, []byte(again), nil)
					require.ErrorIs(t, err, store.ErrConflict)
				}
			}
		})
	}
}

func ptrInt(v int) *int { return &v }

// onBoth runs test as the subtests name/durable=false and
// name/durable=true, each with a fake clock and opener's open on it.
func onBoth(t *testing.T, name string, test func(t *testing.T, durable bool, clock *fakeClock, open func() *Store)) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("%s/durable=%v", name, durable), func(t *testing.T) {
			clock := newFakeClock()
			test(t, durable, clock, opener(t, durable, clock))
		})
	}
}

// opener returns what opens a store on clock, in memory or durable; each
// durable one opens the same directory again.
func opener(t *testing.T, durable bool, clock *fakeClock) func() *Store {
	dir := t.TempDir()
	return func() *Store {
		if !durable {
			return New(&Options{Clock: clock.Now})
		}
		s, err := Open(dir, &Options{Clock: clock.Now})
		require.NoError(t, err)
		return s
	}
}

// TestUniqueKeysConcurrent: of writers racing to create documents with one
// email under one key, exactly one succeeds; in a batch, a document
// deleted frees its value for another the batch creates, and two of the
// batch's documents with one value fail it.
func TestUniqueKeysConcurrent(t *testing.T) {
	const l = "dbs/app/colls/users"
	ctx := context.Background()
	s := New(nil)
	defer s.Close()
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/tenant", UniqueKeys: [][]string{{"/email"}}}))
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = s.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%d","tenant":"t","email":"x"}`, i), nil)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, store.ErrConflict)
		}
	}
	require.Equal(t, 1, ok)

	_, err := s.Create(ctx, l, []byte(`{"id":"a","tenant":"u","email":"x"}`), nil)
	require.NoError(t, err)
	_, err = s.ExecuteBatch(ctx, l, "u", []store.BatchOp{
		{Kind: store.BatchDelete, ID: "a"},
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"b","tenant":"u","email":"x"}`)},
	}, nil)
	require.NoError(t, err)
	_, err = s.ExecuteBatch(ctx, l, "u", []store.BatchOp{
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"c","tenant":"u","email":"y"}`)},
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"d","tenant":"u","email":"y"}`)},
	}, nil)
	var be *store.BatchError
	require.True(t, errors.As(err, &be), "%v", err)
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = s.Create(ctx, l, []byte(`{"id":"e","tenant":"u","email":"y"}`), nil)
	require.NoError(t, err, "the failed batch holds nothing")
}

// TestReplaceCollection: a new default TTL applies at once to the
// documents stored, under Cosmos DB's rules (off: nothing expires, a
// document's own ttl ignored; -1: only documents with a ttl expire; n: the
// others expire n seconds after their last write), also after the store is
// opened again; the indexing policy and the other policies are kept; the
// partition key and unique keys cannot change.
func TestReplaceCollection(t *testing.T) {
	const l = "dbs/app/colls/c"
	docs := []string{
		`{"id":"own5","pk":"a","ttl":5}`,
		`{"id":"own100","pk":"a","ttl":100}`,
		`{"id":"never","pk":"a","ttl":-1}`,
		`{"id":"plain","pk":"a"}`,
	}
	for _, tc := range []struct {
		name      string
		from, to  *int
		after     time.Duration // from the writes
		remaining []string
	}{
		{"off to 10 s", nil, ptrInt(10), 11 * time.Second, []string{"never", "own100"}},
		{"off to -1", nil, ptrInt(-1), 6 * time.Second, []string{"never", "own100", "plain"}},
		{"10 s to off", ptrInt(10), nil, 200 * time.Second, []string{"never", "own100", "own5", "plain"}},
		{"10 s to 1000 s", ptrInt(10), ptrInt(1000), 200 * time.Second, []string{"never", "plain"}},
		{"-1 to 3 s", ptrInt(-1), ptrInt(3), 4 * time.Second, []string{"never", "own100", "own5"}},
	} {
		onBoth(t, tc.name, func(t *testing.T, durable bool, clock *fakeClock, open func() *Store) {
			ctx := context.Background()
			s := open()
			defer func() { _ = s.Close() }()
			require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: tc.from}))
			for _, d := range docs {
				_, err := s.Create(ctx, l, []byte(d), nil)
				require.NoError(t, err)
			}
			clock.Advance(2 * time.Second) // a replace counts from the writes, not from itself
			require.NoError(t, s.ReplaceCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: tc.to,
				Indexing: json.RawMessage(`{"indexingMode":"none","automatic":false}`)}))
			clock.Advance(tc.after - 2*time.Second)
			ids := func() []string {
				page, err := s.Query(ctx, l, store.Query{Text: "SELECT VALUE c.id FROM c ORDER BY c.id"}, nil)
				require.NoError(t, err)
				var out []string
				for _, it := range page.Items {
					var id string
					require.NoError(t, json.Unmarshal(it, &id))
					out = append(out, id)
				}
				return out
			}
			assert.Equal(t, tc.remaining, ids())
			info, err := s.CollectionInfo(ctx, l)
			require.NoError(t, err)
			assert.Equal(t, tc.to, info.Spec.DefaultTTL)
			assert.JSONEq(t, `{"indexingMode":"none","automatic":false}`, string(info.Spec.Indexing))
			assert.Equal(t, int64(len(tc.remaining)), info.Documents)
			if durable {
				require.NoError(t, s.Close())
				s = open()
				assert.Equal(t, tc.remaining, ids())
				info, err := s.CollectionInfo(ctx, l)
				require.NoError(t, err)
				assert.Equal(t, tc.to, info.Spec.DefaultTTL)
			}
			// New writes follow the new default.
			_, err = s.Create(ctx, l, []byte(`{"id":"late","pk":"b"}`), nil)
			require.NoError(t, err)
			clock.Advance(10_000 * time.Second)
			_, err = s.Read(ctx, l, "late", &store.ReadOptions{PartitionKey: "b"})
			if tc.to != nil && *tc.to > 0 {
				require.ErrorIs(t, err, store.ErrNotFound)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestReplaceCollectionRefuses: what a collection cannot change is refused
// with ErrBadRequest, and nothing changes; a missing collection is
// ErrCollectionNotFound; the quota is kept.
func TestReplaceCollectionRefuses(t *testing.T) {
	const l = "dbs/app/colls/c"
	ctx := context.Background()
	s := New(nil)
	defer s.Close()
	orig := store.CollectionSpec{PartitionKeyPath: "/pk", UniqueKeys: [][]string{{"/email"}}, Quota: &store.Quota{MaxDocuments: 5}}
	require.NoError(t, s.CreateCollection(ctx, l, &orig))
	for _, tc := range []struct {
		name string
		spec store.CollectionSpec
	}{
		{"partition key", store.CollectionSpec{PartitionKeyPath: "/other", UniqueKeys: orig.UniqueKeys}},
		{"unique keys", store.CollectionSpec{PartitionKeyPath: "/pk", UniqueKeys: [][]string{{"/name"}}}},
		{"no unique keys", store.CollectionSpec{PartitionKeyPath: "/pk"}},
		{"a bad TTL", store.CollectionSpec{PartitionKeyPath: "/pk", UniqueKeys: orig.UniqueKeys, DefaultTTL: ptrInt(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, s.ReplaceCollection(ctx, l, &tc.spec), store.ErrBadRequest)
			info, err := s.CollectionInfo(ctx, l)
			require.NoError(t, err)
			assert.Equal(t, orig, info.Spec)
		})
	}
	require.NoError(t, s.ReplaceCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: `/"pk"`, UniqueKeys: orig.UniqueKeys,
		FullTextPolicy: json.RawMessage(`{"defaultLanguage":"en-US"}`)}))
	info, err := s.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, "/pk", info.Spec.PartitionKeyPath)
	assert.Equal(t, orig.Quota, info.Spec.Quota)
	assert.JSONEq(t, `{"defaultLanguage":"en-US"}`, string(info.Spec.FullTextPolicy))
	require.ErrorIs(t, s.ReplaceCollection(ctx, "dbs/app/colls/none", &orig), store.ErrCollectionNotFound)
}

// TestReplaceCollectionUnderWrites: default TTL changes while writers
// write (for the race detector): every write succeeds, and afterwards
// every document is there with the expiry the last default gives it.
func TestReplaceCollectionUnderWrites(t *testing.T) {
	const l = "dbs/app/colls/c"
	ctx := context.Background()
	clock := newFakeClock()
	s, err := Open(t.TempDir(), &Options{Clock: clock.Now})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				_, err := s.Upsert(ctx, l, fmt.Appendf(nil, `{"id":"d%d-%d","pk":"p","ttl":%d}`, w, i%10, 100+i), nil)
				assert.NoError(t, err)
			}
		})
	}
	for _, ttl := range []*int{ptrInt(1000), nil, ptrInt(-1), ptrInt(50)} {
		require.NoError(t, s.ReplaceCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: ttl}))
	}
	wg.Wait()
	page, err := s.Query(ctx, l, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "40", string(page.Items[0]))
	clock.Advance(200 * time.Second) // past every document's own ttl (100 to 149)
	page, err = s.Query(ctx, l, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "0", string(page.Items[0]))
}

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
