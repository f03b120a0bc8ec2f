// Package storetest is the conformance suite of the store.Store contract.
// Every backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memstore.New(nil) }, nil)
//	}
//
// A backend that cannot do something the contract asks lists it in
// Options.Skip with the reason; the case then reports t.Skip with that
// reason, never silently. Cases create collections with unique names, so
// backends may share one server between cases.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// Skip keys: the cases a backend may declare it cannot pass.
const (
	// SkipIfMatchOnReplace: a stale If-Match on Replace is not refused.
	SkipIfMatchOnReplace = "IfMatchOnReplace"
	// SkipIfMatchOnDelete: a stale If-Match on Delete is not refused.
	SkipIfMatchOnDelete = "IfMatchOnDelete"
	// SkipIfMatchOnUpsert: a stale If-Match on Upsert is not refused.
	SkipIfMatchOnUpsert = "IfMatchOnUpsert"
	// SkipSameIDDifferentKey: one id cannot exist under two partition-key
	// values.
	SkipSameIDDifferentKey = "SameIDDifferentKey"
	// SkipPartitionKeyScopedRead: a read with a wrong partition key still
	// finds the document.
	SkipPartitionKeyScopedRead = "PartitionKeyScopedRead"
	// SkipPartitionKeyScopedQuery: a query scoped to a partition key sees
	// other keys' documents.
	SkipPartitionKeyScopedQuery = "PartitionKeyScopedQuery"
	// SkipPartitionKeyMismatch: a write whose given partition key differs
	// from the body's is not refused.
	SkipPartitionKeyMismatch = "PartitionKeyMismatch"
	// SkipQueryPaging: queries ignore the page size and return everything
	// in one page.
	SkipQueryPaging = "QueryPaging"
	// SkipContinuationValidation: a token from another query is not
	// refused.
	SkipContinuationValidation = "ContinuationValidation"
	// SkipSingleQuotedStrings: single-quoted SQL strings do not work.
	SkipSingleQuotedStrings = "SingleQuotedStrings"
	// SkipQuerySemantics: the backend's query engine answers some of the
	// suite's queries (number comparisons, empty aggregates, functions)
	// differently from Cosmos DB.
	SkipQuerySemantics = "QuerySemantics"
	// SkipTTL: documents cannot be expired under test (no controllable
	// clock).
	SkipTTL = "TTL"
	// SkipUsage: CollectionInfo does not report usage.
	SkipUsage = "Usage"
	// SkipDocumentSize: the 2 MB limit is not enforced.
	SkipDocumentSize = "DocumentSize"
	// SkipListCollections: ListCollections does not work.
	SkipListCollections = "ListCollections"
	// SkipFeedStableUnderWrites: a feed walk may repeat or miss documents
	// written to during the walk.
	SkipFeedStableUnderWrites = "FeedStableUnderWrites"
)

// Options qualify a run. A nil *Options means none.
type Options struct {
	// Skip maps a skip key to the reason the backend cannot pass it.
	Skip map[string]string
	// Database is the database the cases create collections in; empty
	// means "storetest".
	Database string
	// Advance moves the backend's clock forward, for the TTL cases; nil
	// skips them.
	Advance func(d time.Duration)
}

type suite struct {
	newStore func(t *testing.T) store.Store
	opts     Options
}

// Run runs every case as a subtest.
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts *Options) {
	s := &suite{newStore: newStore}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Database == "" {
		s.opts.Database = "storetest"
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, st store.Store)
	}{
		{"CollectionLifecycle", s.collectionLifecycle},
		{"MissingCollection", s.missingCollection},
		{"CreateRead", s.createRead},
		{"CreateConflict", s.createConflict},
		{"BadDocuments", s.badDocuments},
		{"DocumentSize", s.documentSize},
		{"Replace", s.replace},
		{"Upsert", s.upsert},
		{"Delete", s.deleteDoc},
		{"IfMatchReplace", s.ifMatchReplace},
		{"IfMatchDelete", s.ifMatchDelete},
		{"IfMatchUpsert", s.ifMatchUpsert},
		{"SameIDDifferentKey", s.sameIDDifferentKey},
		{"PartitionKeyScopedRead", s.partitionKeyScopedRead},
		{"PartitionKeyMismatch", s.partitionKeyMismatch},
		{"Query", s.queryBasic},
		{"QuerySemantics", s.querySemantics},
		{"SingleQuotedStrings", s.singleQuoted},
		{"QueryErrors", s.queryErrors},
		{"PartitionKeyScopedQuery", s.partitionKeyScopedQuery},
		{"QueryPaging", s.queryPaging},
		{"ContinuationValidation", s.continuationValidation},
		{"ReadFeed", s.readFeed},
		{"ReadFeedStableUnderWrites", s.readFeedStable},
		{"ConcurrentWriters", s.concurrentWriters},
		{"Usage", s.usage},
		{"TTL", s.ttl},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := s.newStore(t)
			c.fn(t, st)
		})
	}
}

// lacks reports whether the backend declared key, logging the reason, for
// cases that skip one check and run the rest.
func (s *suite) lacks(t *testing.T, key string) bool {
	t.Helper()
	reason, ok := s.opts.Skip[key]
	if ok {
		t.Logf("skipping the %s checks: %s", key, reason)
	}
	return ok
}

func (s *suite) skip(t *testing.T, key string) {
	t.Helper()
	if reason, ok := s.opts.Skip[key]; ok {
		t.Skipf("backend lacks %s: %s", key, reason)
	}
}

// coll creates a collection with a unique name and returns its link.
func (s *suite) coll(t *testing.T, st store.Store, spec *store.CollectionSpec) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	l := fmt.Sprintf("dbs/%s/colls/%s-%s", s.opts.Database, strings.Trim(name, "-"), hex.EncodeToString(b[:]))
	require.NoError(t, st.CreateCollection(context.Background(), l, spec))
	t.Cleanup(func() { _ = st.DeleteCollection(context.Background(), l) })
	return l
}

func byKey(path string) *store.CollectionSpec {
	return &store.CollectionSpec{PartitionKeyPath: path}
}

func doc(t *testing.T, v map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func body(t *testing.T, d *store.Document) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(d.Body, &m), "%s", d.Body)
	return m
}

var ctx = context.Background()

// feedAll walks the read feed and returns every document body by id.
func feedAll(t *testing.T, st store.Store, l string, pageSize int) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	cont := ""
	for i := 0; ; i++ {
		require.Less(t, i, 100000, "the feed does not end")
		page, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: pageSize, Continuation: cont})
		require.NoError(t, err)
		for _, item := range page.Items {
			var m map[string]any
			require.NoError(t, json.Unmarshal(item, &m))
			id, _ := m["id"].(string)
			key := fmt.Sprintf("%v|%s", m["pk"], id)
			_, dup := out[key]
			require.False(t, dup, "the feed returned %s twice", key)
			out[key] = m
		}
		if page.Continuation == "" {
			return out
		}
		cont = page.Continuation
	}
}

// queryAll runs a query to the end, page by page.
func queryAll(t *testing.T, st store.Store, l string, q store.Query, opts *store.QueryOptions) []json.RawMessage {
	t.Helper()
	var o store.QueryOptions
	if opts != nil {
		o = *opts
	}
	var out []json.RawMessage
	for i := 0; ; i++ {
		require.Less(t, i, 100000, "the query does not end")
		page, err := st.Query(ctx, l, q, &o)
		require.NoError(t, err, q.Text)
		out = append(out, page.Items...)
		if page.Continuation == "" {
			return out
		}
		o.Continuation = page.Continuation
	}
}

func values(t *testing.T, items []json.RawMessage) []any {
	t.Helper()
	out := make([]any, len(items))
	for i, it := range items {
		require.NoError(t, json.Unmarshal(it, &out[i]))
	}
	return out
}

func requireKind(t *testing.T, err error, kind error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.True(t, errors.Is(err, kind), "want %v, got %v (%T)", kind, err, err)
}

func (s *suite) collectionLifecycle(t *testing.T, st store.Store) {
	spec := &store.CollectionSpec{PartitionKeyPath: "/userId"}
	l := s.coll(t, st, spec)
	requireKind(t, st.CreateCollection(ctx, l, spec), store.ErrConflict)
	listing := !s.lacks(t, SkipListCollections)
	if listing {
		list, err := st.ListCollections(ctx, "dbs/"+s.opts.Database)
		require.NoError(t, err)
		assert.Contains(t, list, l)
		assert.True(t, sort.StringsAreSorted(list))
		none, err := st.ListCollections(ctx, "dbs/no-such-database-"+fmt.Sprint(time.Now().UnixNano()))
		require.NoError(t, err)
		assert.Empty(t, none)
	}
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, "/userId", info.Spec.PartitionKeyPath)
	require.NoError(t, st.DeleteCollection(ctx, l))
	requireKind(t, st.DeleteCollection(ctx, l), store.ErrCollectionNotFound)
	if listing {
		list, err := st.ListCollections(ctx, "dbs/"+s.opts.Database)
		require.NoError(t, err)
		assert.NotContains(t, list, l)
	}
	// The same name can be created again, empty.
	require.NoError(t, st.CreateCollection(ctx, l, spec))
	page, err := st.ReadFeed(ctx, l, nil)
	require.NoError(t, err)
	assert.Empty(t, page.Items)
	requireKind(t, st.CreateCollection(ctx, "not-a-link", nil), store.ErrBadRequest)
}

func (s *suite) missingCollection(t *testing.T, st store.Store) {
	l := fmt.Sprintf("dbs/%s/colls/missing-%d", s.opts.Database, time.Now().UnixNano())
	_, err := st.Create(ctx, l, []byte(`{"id":"a"}`), nil)
	requireKind(t, err, store.ErrCollectionNotFound)
	assert.Contains(t, err.Error(), l, "the error names the collection")
	_, err = st.Read(ctx, l, "a", nil)
	requireKind(t, err, store.ErrNotFound)
	_, err = st.Query(ctx, l, store.Query{Text: "SELECT * FROM c"}, nil)
	requireKind(t, err, store.ErrNotFound)
	_, err = st.ReadFeed(ctx, l, nil)
	requireKind(t, err, store.ErrNotFound)
	_, err = st.CollectionInfo(ctx, l)
	requireKind(t, err, store.ErrNotFound)
}

func (s *suite) createRead(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	before := time.Now().Unix() - 5
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "alice", "pk": "p1", "n": 1.5, "nested": map[string]any{"a": []any{1.0, "x"}}}), &store.WriteOptions{PartitionKey: "p1"})
	require.NoError(t, err)
	assert.Equal(t, "alice", d.ID)
	assert.NotEmpty(t, d.ETag)
	assert.GreaterOrEqual(t, d.Timestamp, before)
	got, err := st.Read(ctx, l, "alice", &store.ReadOptions{PartitionKey: "p1"})
	require.NoError(t, err)
	assert.Equal(t, d.ETag, got.ETag)
	m := body(t, got)
	assert.Equal(t, "alice", m["id"])
	assert.Equal(t, 1.5, m["n"])
	assert.Equal(t, map[string]any{"a": []any{1.0, "x"}}, m["nested"])
	assert.Equal(t, d.ETag, m["_etag"], "the body carries _etag")
	assert.EqualValues(t, d.Timestamp, m["_ts"], "the body carries _ts")
	_, err = st.Read(ctx, l, "bob", &store.ReadOptions{PartitionKey: "p1"})
	requireKind(t, err, store.ErrNotFound)
	assert.Contains(t, err.Error(), "bob", "the error names the id")
	// Numeric and boolean keys.
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "n", "pk": 42.0}), &store.WriteOptions{PartitionKey: 42})
	require.NoError(t, err)
	got, err = st.Read(ctx, l, "n", &store.ReadOptions{PartitionKey: 42.0})
	require.NoError(t, err)
	assert.Equal(t, "n", got.ID)
}

func (s *suite) createConflict(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), nil)
	requireKind(t, err, store.ErrConflict)
	got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	assert.Equal(t, 1.0, body(t, got)["v"], "a refused create leaves the document as it was")
}

func (s *suite) badDocuments(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "keep", "pk": "x"}), nil)
	require.NoError(t, err)
	bad := []struct {
		name string
		doc  string
		want string
	}{
		{"malformed", `{"id": "a", `, "JSON"},
		{"not an object", `["id", "a"]`, "object"},
		{"no id", `{"pk": "x"}`, "id"},
		{"numeric id", `{"id": 7, "pk": "x"}`, "id"},
		{"empty id", `{"id": "", "pk": "x"}`, "id"},
		{"slash in id", `{"id": "a/b", "pk": "x"}`, "a/b"},
		{"hash in id", `{"id": "a#b", "pk": "x"}`, "a#b"},
		{"long id", `{"id": "` + strings.Repeat("x", 256) + `", "pk": "x"}`, "255"},
	}
	for _, tc := range bad {
		_, err := st.Create(ctx, l, []byte(tc.doc), nil)
		requireKind(t, err, store.ErrBadRequest, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		_, err = st.Upsert(ctx, l, []byte(tc.doc), nil)
		requireKind(t, err, store.ErrBadRequest, tc.name)
	}
	all := feedAll(t, st, l, 0)
	assert.Len(t, all, 1, "refused writes leave the collection as it was")
	_, err = st.Read(ctx, l, "a/b", nil)
	requireKind(t, err, store.ErrBadRequest)
}

func (s *suite) documentSize(t *testing.T, st store.Store) {
	s.skip(t, SkipDocumentSize)
	l := s.coll(t, st, byKey("/pk"))
	big := doc(t, map[string]any{"id": "big", "pk": "x", "blob": strings.Repeat("x", store.MaxDocumentSize)})
	_, err := st.Create(ctx, l, big, nil)
	requireKind(t, err, store.ErrTooLarge)
	_, err = st.Read(ctx, l, "big", &store.ReadOptions{PartitionKey: "x"})
	requireKind(t, err, store.ErrNotFound)
	ok := doc(t, map[string]any{"id": "ok", "pk": "x", "blob": strings.Repeat("x", 1<<20)})
	_, err = st.Create(ctx, l, ok, nil)
	require.NoError(t, err, "a 1 MB document fits")
}

func (s *suite) replace(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	first, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	second, err := st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), &store.WriteOptions{PartitionKey: "x"})
	require.NoError(t, err)
	assert.NotEqual(t, first.ETag, second.ETag, "every write changes the ETag")
	got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	assert.Equal(t, 2.0, body(t, got)["v"])
	_, err = st.Replace(ctx, l, "zz", doc(t, map[string]any{"id": "zz", "pk": "x"}), nil)
	requireKind(t, err, store.ErrNotFound)
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "b", "pk": "x"}), nil)
	requireKind(t, err, store.ErrBadRequest)
}

func (s *suite) upsert(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	a, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	b, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), nil)
	require.NoError(t, err)
	assert.NotEqual(t, a.ETag, b.ETag)
	got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	assert.Equal(t, 2.0, body(t, got)["v"])
	assert.Len(t, feedAll(t, st, l, 0), 1)
}

func (s *suite) deleteDoc(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "x"}))
	_, err = st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	requireKind(t, err, store.ErrNotFound)
	requireKind(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "x"}), store.ErrNotFound)
	// The id can be created again.
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
}

func (s *suite) ifMatchReplace(t *testing.T, st store.Store) {
	s.skip(t, SkipIfMatchOnReplace)
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	d2, err := st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), &store.WriteOptions{PartitionKey: "x", IfMatch: d.ETag})
	require.NoError(t, err)
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 3.0}), &store.WriteOptions{PartitionKey: "x", IfMatch: d.ETag})
	requireKind(t, err, store.ErrPreconditionFailed, "a stale ETag is refused")
	got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	assert.Equal(t, d2.ETag, got.ETag)
	assert.Equal(t, 2.0, body(t, got)["v"], "the refused write changed nothing")
}

func (s *suite) ifMatchDelete(t *testing.T, st store.Store) {
	s.skip(t, SkipIfMatchOnDelete)
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), nil)
	require.NoError(t, err)
	requireKind(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "x", IfMatch: d.ETag}), store.ErrPreconditionFailed)
	got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "x", IfMatch: got.ETag}))
}

func (s *suite) ifMatchUpsert(t *testing.T, st store.Store) {
	s.skip(t, SkipIfMatchOnUpsert)
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	_, err = st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), &store.WriteOptions{IfMatch: d.ETag})
	require.NoError(t, err)
	_, err = st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 3.0}), &store.WriteOptions{IfMatch: d.ETag})
	requireKind(t, err, store.ErrPreconditionFailed)
	got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	assert.Equal(t, 2.0, body(t, got)["v"])
}

func (s *suite) sameIDDifferentKey(t *testing.T, st store.Store) {
	s.skip(t, SkipSameIDDifferentKey)
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "y", "v": "y"}), nil)
	require.NoError(t, err, "ids are unique within a partition-key value")
	for _, pk := range []string{"x", "y"} {
		got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: pk})
		require.NoError(t, err)
		assert.Equal(t, pk, body(t, got)["v"])
	}
	require.NoError(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "x"}))
	got, err := st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "y"})
	require.NoError(t, err)
	assert.Equal(t, "y", body(t, got)["v"])
}

func (s *suite) partitionKeyScopedRead(t *testing.T, st store.Store) {
	s.skip(t, SkipPartitionKeyScopedRead)
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Read(ctx, l, "a", &store.ReadOptions{PartitionKey: "other"})
	requireKind(t, err, store.ErrNotFound, "a read with another partition key finds nothing")
	requireKind(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "other"}), store.ErrNotFound)
}

func (s *suite) partitionKeyMismatch(t *testing.T, st store.Store) {
	s.skip(t, SkipPartitionKeyMismatch)
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), &store.WriteOptions{PartitionKey: "y"})
	requireKind(t, err, store.ErrBadRequest)
	assert.Empty(t, feedAll(t, st, l, 0))
}

// seed creates n documents with mixed types in a collection keyed by /pk.
func seed(t *testing.T, st store.Store, l string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		m := map[string]any{"id": fmt.Sprintf("d%03d", i), "pk": fmt.Sprintf("p%d", i%3), "n": float64(i), "s": []string{"red", "green", "blue"}[i%3]}
		if i%5 == 0 {
			m["tags"] = []any{"red", "x"}
		}
		_, err := st.Create(ctx, l, doc(t, m), nil)
		require.NoError(t, err)
	}
}

func (s *suite) queryBasic(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 20)
	got := values(t, queryAll(t, st, l, store.Query{Text: `SELECT VALUE c.id FROM c WHERE c.s = @s`, Parameters: []store.Param{{Name: "@s", Value: "green"}}}, nil))
	sort.Slice(got, func(i, j int) bool { return got[i].(string) < got[j].(string) })
	want := []any{}
	for i := 1; i < 20; i += 3 {
		want = append(want, fmt.Sprintf("d%03d", i))
	}
	assert.Equal(t, want, got)
	rows := values(t, queryAll(t, st, l, store.Query{Text: `SELECT c.id, c.n FROM c WHERE c.id = "d004"`}, nil))
	assert.Equal(t, []any{map[string]any{"id": "d004", "n": 4.0}}, rows)
	all := queryAll(t, st, l, store.Query{Text: `SELECT * FROM c`}, nil)
	assert.Len(t, all, 20)
}

func (s *suite) querySemantics(t *testing.T, st store.Store) {
	s.skip(t, SkipQuerySemantics)
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 20)
	cases := []struct {
		q    string
		want []any
	}{
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n > 15`, []any{4.0}},
		{`SELECT VALUE c.id FROM c WHERE c.n = 7`, []any{"d007"}},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000`, []any{0.0}},
		{`SELECT VALUE COUNT(1) FROM c WHERE ARRAY_CONTAINS(c.tags, "red")`, []any{4.0}},
		{`SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC`, []any{19.0, 18.0, 17.0}},
		{`SELECT VALUE SUM(c.n) FROM c`, []any{190.0}},
	}
	for _, tc := range cases {
		got := values(t, queryAll(t, st, l, store.Query{Text: tc.q}, nil))
		assert.Equal(t, tc.want, got, tc.q)
	}
}

func (s *suite) singleQuoted(t *testing.T, st store.Store) {
	s.skip(t, SkipSingleQuotedStrings)
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 6)
	got := values(t, queryAll(t, st, l, store.Query{Text: `SELECT VALUE c.id FROM c WHERE c.s = 'red'`}, nil))
	assert.ElementsMatch(t, []any{"d000", "d003"}, got)
}

func (s *suite) queryErrors(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 3)
	for _, q := range []string{"SELEC * FROM c", "SELECT * FROM c WHERE", "SELECT VALUE c.x FROM c WHERE c.a = @missing"} {
		_, err := st.Query(ctx, l, store.Query{Text: q}, nil)
		requireKind(t, err, store.ErrBadRequest, q)
	}
	_, err := st.Query(ctx, l, store.Query{Text: "SELECT * FROM c"}, &store.QueryOptions{Continuation: "not a token!"})
	requireKind(t, err, store.ErrBadRequest)
}

func (s *suite) partitionKeyScopedQuery(t *testing.T, st store.Store) {
	s.skip(t, SkipPartitionKeyScopedQuery)
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 12)
	got := values(t, queryAll(t, st, l, store.Query{Text: `SELECT VALUE c.pk FROM c`}, &store.QueryOptions{PartitionKey: "p1"}))
	require.Len(t, got, 4)
	for _, v := range got {
		assert.Equal(t, "p1", v)
	}
}

func (s *suite) queryPaging(t *testing.T, st store.Store) {
	s.skip(t, SkipQueryPaging)
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 25)
	q := store.Query{Text: `SELECT VALUE c.n FROM c ORDER BY c.n`}
	var got []any
	var tokens []string
	opts := &store.QueryOptions{PageSize: 4}
	for {
		page, err := st.Query(ctx, l, q, opts)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), 4, "pages honour the page size")
		got = append(got, values(t, page.Items)...)
		if page.Continuation == "" {
			break
		}
		tokens = append(tokens, page.Continuation)
		opts = &store.QueryOptions{PageSize: 4, Continuation: page.Continuation}
	}
	require.Len(t, got, 25)
	for i, v := range got {
		assert.Equal(t, float64(i), v)
	}
	require.NotEmpty(t, tokens)
	// Resuming from a token yields exactly the rest, again.
	rest := values(t, queryAll(t, st, l, q, &store.QueryOptions{PageSize: 4, Continuation: tokens[2]}))
	assert.Equal(t, got[12:], rest)
}

func (s *suite) continuationValidation(t *testing.T, st store.Store) {
	s.skip(t, SkipContinuationValidation)
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 10)
	page, err := st.Query(ctx, l, store.Query{Text: `SELECT * FROM c`}, &store.QueryOptions{PageSize: 2})
	require.NoError(t, err)
	require.NotEmpty(t, page.Continuation)
	_, err = st.Query(ctx, l, store.Query{Text: `SELECT c.id FROM c`}, &store.QueryOptions{PageSize: 2, Continuation: page.Continuation})
	requireKind(t, err, store.ErrBadRequest, "a token from another query is refused")
	fp, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 2})
	require.NoError(t, err)
	require.NotEmpty(t, fp.Continuation)
	other := s.coll(t, st, byKey("/pk"))
	_, err = st.ReadFeed(ctx, other, &store.FeedOptions{Continuation: fp.Continuation})
	requireKind(t, err, store.ErrBadRequest, "a feed token from another collection is refused")
	_, err = st.ReadFeed(ctx, l, &store.FeedOptions{Continuation: "garbage"})
	requireKind(t, err, store.ErrBadRequest)
}

func (s *suite) readFeed(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 37)
	for _, size := range []int{0, 1, 5, 100} {
		all := feedAll(t, st, l, size)
		assert.Len(t, all, 37, "page size %d", size)
	}
	// Resuming from a token continues where the walk stopped.
	first, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 10})
	require.NoError(t, err)
	require.NotEmpty(t, first.Continuation)
	seen := map[string]bool{}
	for _, it := range first.Items {
		var m map[string]any
		require.NoError(t, json.Unmarshal(it, &m))
		seen[m["id"].(string)] = true
	}
	cont := first.Continuation
	for cont != "" {
		page, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 10, Continuation: cont})
		require.NoError(t, err)
		for _, it := range page.Items {
			var m map[string]any
			require.NoError(t, json.Unmarshal(it, &m))
			id := m["id"].(string)
			require.False(t, seen[id], "%s twice", id)
			seen[id] = true
		}
		cont = page.Continuation
	}
	assert.Len(t, seen, 37)
}

// readFeedStable walks the feed in small pages while another goroutine
// creates, replaces and deletes other documents and replaces the seeded
// ones: every seeded document comes exactly once.
func (s *suite) readFeedStable(t *testing.T, st store.Store) {
	s.skip(t, SkipFeedStableUnderWrites)
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 60)
	stop := make(chan struct{})
	done := make(chan struct{})
	var writerErr error
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("w%04d", i)
			if _, err := st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": "w"}), nil); err != nil {
				writerErr = fmt.Errorf("concurrent create: %w", err)
				return
			}
			if i%2 == 0 {
				_ = st.Delete(ctx, l, id, &store.WriteOptions{PartitionKey: "w"})
			}
			seeded := fmt.Sprintf("d%03d", i%60)
			_, _ = st.Upsert(ctx, l, doc(t, map[string]any{"id": seeded, "pk": fmt.Sprintf("p%d", (i%60)%3), "n": float64(i % 60), "touched": float64(i)}), nil)
		}
	}()
	// Stop the writer however the walk ends, before the test returns.
	stopWriter := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	defer stopWriter()
	all := feedAll(t, st, l, 3)
	stopWriter()
	require.NoError(t, writerErr)
	for i := 0; i < 60; i++ {
		key := fmt.Sprintf("p%d|d%03d", i%3, i)
		assert.Contains(t, all, key, "a document that existed throughout the walk is returned")
	}
}

func (s *suite) concurrentWriters(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": fmt.Sprint(w)}), nil); err != nil {
					t.Errorf("create %s: %v", id, err)
				}
				// Every writer also races on one shared document.
				if _, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": "shared", "pk": "s", "by": float64(w)}), nil); err != nil {
					t.Errorf("upsert shared: %v", err)
				}
			}
		}()
	}
	// Concurrent creates of the same id: exactly one wins.
	var wins sync.Map
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "race", "pk": "r", "w": float64(w)}), nil)
			if err == nil {
				wins.Store(w, true)
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("racing create: %v", err)
			}
		}()
	}
	wg.Wait()
	n := 0
	wins.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, 1, n, "exactly one racing create wins")
	all := feedAll(t, st, l, 50)
	assert.Len(t, all, writers*each+2)
}

func (s *suite) usage(t *testing.T, st store.Store) {
	s.skip(t, SkipUsage)
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 10)
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, 10, info.Documents)
	assert.Positive(t, info.Bytes)
}

func (s *suite) ttl(t *testing.T, st store.Store) {
	s.skip(t, SkipTTL)
	if s.opts.Advance == nil {
		t.Skip("backend lacks a controllable clock (Options.Advance is nil)")
	}
	def := 60
	l := s.coll(t, st, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: &def})
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "default", "pk": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "short", "pk": "x", "ttl": 10.0}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "forever", "pk": "x", "ttl": -1.0}), nil)
	require.NoError(t, err)
	s.opts.Advance(30 * time.Second)
	_, err = st.Read(ctx, l, "short", &store.ReadOptions{PartitionKey: "x"})
	requireKind(t, err, store.ErrNotFound, "a document past its own ttl is gone")
	_, err = st.Read(ctx, l, "default", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	s.opts.Advance(60 * time.Second)
	_, err = st.Read(ctx, l, "default", &store.ReadOptions{PartitionKey: "x"})
	requireKind(t, err, store.ErrNotFound, "a document past the default ttl is gone")
	got := values(t, queryAll(t, st, l, store.Query{Text: "SELECT VALUE c.id FROM c"}, nil))
	assert.Equal(t, []any{"forever"}, got)
	assert.Len(t, feedAll(t, st, l, 0), 1)
	// An expired id can be created again.
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "short", "pk": "x"}), nil)
	require.NoError(t, err)

	off := s.coll(t, st, byKey("/pk"))
	_, err = st.Create(ctx, off, doc(t, map[string]any{"id": "a", "pk": "x", "ttl": 1.0}), nil)
	require.NoError(t, err)
	s.opts.Advance(time.Hour)
	_, err = st.Read(ctx, off, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err, "without a default TTL a document's ttl is ignored")
}
