package storetest

import (
	"context"
	"encoding/json"
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

func (s *suite) collectionLifecycle(t *testing.T, st store.Store) {
	spec := byKey("/userId")
	l := s.coll(t, st, spec)
	err := st.CreateCollection(ctx, l, spec)
	requireKind(t, err, store.ErrConflict, "creating an existing collection")
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, "/userId", info.Spec.PartitionKeyPath)
	assert.Equal(t, l, info.Link)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "userId": "u"}), nil)
	require.NoError(t, err)

	require.NoError(t, st.DeleteCollection(ctx, l))
	requireKind(t, st.DeleteCollection(ctx, l), store.ErrCollectionNotFound, "deleting a deleted collection")
	_, err = st.CollectionInfo(ctx, l)
	requireKind(t, err, store.ErrCollectionNotFound, "")
	if !s.lacks(t, SkipListCollections) {
		list, err := st.ListCollections(ctx, "dbs/"+s.opts.Database)
		require.NoError(t, err)
		assert.NotContains(t, list, l)
	}

	// The same link can be created again, empty, with another spec.
	require.NoError(t, st.CreateCollection(ctx, l, byKey("/other")))
	page, err := st.ReadFeed(ctx, l, nil)
	require.NoError(t, err)
	assert.Empty(t, page.Items, "a re-created collection holds none of the old documents")
	_, err = st.Read(ctx, l, "a", pk("u"))
	requireKind(t, err, store.ErrNotFound, "")
	info, err = st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, "/other", info.Spec.PartitionKeyPath)

	for _, bad := range []string{"not-a-link", "dbs/x", "dbs/x/colls/", "dbs/x/colls/a/b", "dbs/x/colls/a?b"} {
		requireKind(t, st.CreateCollection(ctx, bad, nil), store.ErrBadRequest, "link %q", bad)
	}
	// The default key path is /id: ids are their own keys.
	def := s.coll(t, st, nil)
	_, err = st.Create(ctx, def, []byte(`{"id":"k"}`), nil)
	require.NoError(t, err)
	_, err = st.Read(ctx, def, "k", pk("k"))
	require.NoError(t, err)
}

func (s *suite) listCollections(t *testing.T, st store.Store) {
	a := s.coll(t, st, nil)
	b := s.coll(t, st, nil)
	list, err := st.ListCollections(ctx, "dbs/"+s.opts.Database)
	require.NoError(t, err)
	assert.Contains(t, list, a)
	assert.Contains(t, list, b)
	assert.True(t, sort.StringsAreSorted(list), "sorted: %v", list)
	for _, l := range list {
		assert.Regexp(t, "^dbs/"+s.opts.Database+"/colls/", l, "only the database's collections")
	}
	none, err := st.ListCollections(ctx, fmt.Sprintf("dbs/no-such-database-%d", time.Now().UnixNano()))
	require.NoError(t, err)
	assert.Empty(t, none, "an unknown database has no collections")
	require.NoError(t, st.DeleteCollection(ctx, b))
	list, err = st.ListCollections(ctx, "dbs/"+s.opts.Database)
	require.NoError(t, err)
	assert.Contains(t, list, a)
	assert.NotContains(t, list, b)
	_, err = st.ListCollections(ctx, "not a database link")
	requireKind(t, err, store.ErrBadRequest, "")
}

func (s *suite) collectionSpecKept(t *testing.T, st store.Store) {
	ttl := 3600
	policy := json.RawMessage(`{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/big/?"}]}`)
	l := s.coll(t, st, &store.CollectionSpec{PartitionKeyPath: "/tenant", DefaultTTL: &ttl, Indexing: policy})
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, "/tenant", info.Spec.PartitionKeyPath)
	require.NotNil(t, info.Spec.DefaultTTL)
	assert.Equal(t, 3600, *info.Spec.DefaultTTL)
	require.NotEmpty(t, info.Spec.Indexing)
	var got, want map[string]any
	require.NoError(t, json.Unmarshal(info.Spec.Indexing, &got))
	require.NoError(t, json.Unmarshal(policy, &want))
	for k, v := range want {
		assert.Equal(t, v, got[k], "indexing policy %q", k)
	}
	off := s.coll(t, st, byKey("/tenant"))
	info, err = st.CollectionInfo(ctx, off)
	require.NoError(t, err)
	assert.Nil(t, info.Spec.DefaultTTL, "TTL off reads back as nil")
}

func (s *suite) collectionSpecValidation(t *testing.T, st store.Store) {
	zero, below := 0, -2
	for _, spec := range []*store.CollectionSpec{
		{PartitionKeyPath: "userId"},
		{PartitionKeyPath: "/a//b"},
		{PartitionKeyPath: "/a", DefaultTTL: &zero},
		{PartitionKeyPath: "/a", DefaultTTL: &below},
	} {
		l := s.collLink(t)
		err := st.CreateCollection(ctx, l, spec)
		if err == nil {
			_ = st.DeleteCollection(ctx, l)
		}
		requireKind(t, err, store.ErrBadRequest, "spec %+v", *spec)
	}
}

// missingCollection: every operation on a collection that does not exist
// fails with ErrCollectionNotFound (which is also ErrNotFound), naming it.
func (s *suite) missingCollection(t *testing.T, st store.Store) {
	l := fmt.Sprintf("dbs/%s/colls/missing-%d", s.opts.Database, time.Now().UnixNano())
	ops := map[string]func() error{
		"create":  func() error { _, err := st.Create(ctx, l, []byte(`{"id":"a"}`), nil); return err },
		"upsert":  func() error { _, err := st.Upsert(ctx, l, []byte(`{"id":"a"}`), nil); return err },
		"replace": func() error { _, err := st.Replace(ctx, l, "a", []byte(`{"id":"a"}`), wpk("a")); return err },
		"read":    func() error { _, err := st.Read(ctx, l, "a", pk("a")); return err },
		"delete":  func() error { return st.Delete(ctx, l, "a", wpk("a")) },
		"query": func() error {
			_, err := st.Query(ctx, l, store.Query{Text: "SELECT * FROM c"}, nil)
			return err
		},
		"read feed":         func() error { _, err := st.ReadFeed(ctx, l, nil); return err },
		"collection info":   func() error { _, err := st.CollectionInfo(ctx, l); return err },
		"delete collection": func() error { return st.DeleteCollection(ctx, l) },
	}
	for name, f := range ops {
		err := f()
		requireKind(t, err, store.ErrCollectionNotFound, "%s", name)
		requireKind(t, err, store.ErrNotFound, "%s", name)
		assert.Contains(t, err.Error(), l, "%s: the error names the collection", name)
	}
}

func (s *suite) useAfterClose(t *testing.T, st store.Store) {
	l := s.coll(t, st, nil)
	_, err := st.Create(ctx, l, []byte(`{"id":"a"}`), nil)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	_, err = st.Read(ctx, l, "a", pk("a"))
	requireKind(t, err, store.ErrUnavailable, "read after Close")
	_, err = st.Create(ctx, l, []byte(`{"id":"b"}`), nil)
	requireKind(t, err, store.ErrUnavailable, "create after Close")
	_, err = st.Query(ctx, l, store.Query{Text: "SELECT * FROM c"}, nil)
	requireKind(t, err, store.ErrUnavailable, "query after Close")
	_, err = st.ReadFeed(ctx, l, nil)
	requireKind(t, err, store.ErrUnavailable, "feed after Close")
	requireKind(t, st.CreateCollection(ctx, s.collLink(t), nil), store.ErrUnavailable, "create collection after Close")
	assert.NoError(t, st.Close(), "a second Close is harmless")
}

func (s *suite) contextCanceled(t *testing.T, st store.Store) {
	l := s.coll(t, st, nil)
	_, err := st.Create(ctx, l, []byte(`{"id":"a"}`), nil)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ops := map[string]func() error{
		"create":            func() error { _, err := st.Create(cctx, l, []byte(`{"id":"b"}`), nil); return err },
		"upsert":            func() error { _, err := st.Upsert(cctx, l, []byte(`{"id":"b"}`), nil); return err },
		"replace":           func() error { _, err := st.Replace(cctx, l, "a", []byte(`{"id":"a"}`), nil); return err },
		"read":              func() error { _, err := st.Read(cctx, l, "a", pk("a")); return err },
		"delete":            func() error { return st.Delete(cctx, l, "a", wpk("a")) },
		"query":             func() error { _, err := st.Query(cctx, l, store.Query{Text: "SELECT * FROM c"}, nil); return err },
		"read feed":         func() error { _, err := st.ReadFeed(cctx, l, nil); return err },
		"create collection": func() error { return st.CreateCollection(cctx, s.collLink(t), nil) },
	}
	for name, f := range ops {
		assert.ErrorIs(t, f(), context.Canceled, name)
	}
	got, err := st.Read(ctx, l, "a", pk("a"))
	require.NoError(t, err, "a cancelled delete deleted nothing")
	assert.Equal(t, "a", got.ID)
	page, err := st.ReadFeed(ctx, l, nil)
	require.NoError(t, err)
	assert.Len(t, page.Items, 1, "cancelled writes wrote nothing")
}

// quota: a collection created with a Quota reports it back, and refuses
// every write that would take it past either bound with ErrQuotaExceeded
// and nothing written, however many writers race for the last places;
// writes that do not grow it (a replace of the same size, a delete) go on,
// and a delete makes room again.
func (s *suite) quota(t *testing.T, st store.Store) {
	const maxDocs = 20
	l := s.coll(t, st, &store.CollectionSpec{PartitionKeyPath: "/pk", Quota: &store.Quota{MaxDocuments: maxDocs}})
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	require.NotNil(t, info.Spec.Quota, "the quota reads back")
	assert.Equal(t, store.Quota{MaxDocuments: maxDocs}, *info.Spec.Quota)

	// 8 writers race for 20 places with 48 creates and upserts.
	var mu sync.Mutex
	var stored []string
	refused := 0
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 6 {
				doc := []byte(fmt.Sprintf(`{"id":"w%d-%d","pk":"p%d"}`, w, i, i%3))
				var err error
				if i%2 == 0 {
					_, err = st.Create(ctx, l, doc, nil)
				} else {
					_, err = st.Upsert(ctx, l, doc, nil)
				}
				mu.Lock()
				if err == nil {
					stored = append(stored, fmt.Sprintf("w%d-%d", w, i))
				} else if assert.ErrorIs(t, err, store.ErrQuotaExceeded) {
					refused++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, stored, maxDocs, "exactly the quota's documents are stored")
	assert.Equal(t, 48-maxDocs, refused)
	info, err = st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, maxDocs, info.Documents)
	n := 0
	opts := &store.FeedOptions{}
	for {
		page, err := st.ReadFeed(ctx, l, opts)
		require.NoError(t, err)
		n += len(page.Items)
		if opts.Continuation = page.Continuation; opts.Continuation == "" {
			break
		}
	}
	assert.Equal(t, maxDocs, n, "nothing refused was written")

	// Full: a replace of one stored document goes on; a new one does not,
	// until a delete makes room.
	var w, i int
	_, err = fmt.Sscanf(stored[0], "w%d-%d", &w, &i)
	require.NoError(t, err)
	key := fmt.Sprintf("p%d", i%3)
	_, err = st.Replace(ctx, l, stored[0], []byte(fmt.Sprintf(`{"id":%q,"pk":%q}`, stored[0], key)), nil)
	require.NoError(t, err, "a replace adds no document")
	_, err = st.Upsert(ctx, l, []byte(`{"id":"late","pk":"p0"}`), nil)
	requireKind(t, err, store.ErrQuotaExceeded, "the 21st document")
	require.NoError(t, st.Delete(ctx, l, stored[0], &store.WriteOptions{PartitionKey: key}))
	_, err = st.Create(ctx, l, []byte(`{"id":"late","pk":"p0"}`), nil)
	require.NoError(t, err, "a delete made room")

	// Bytes: a write that would grow the collection past maxBytes is
	// refused, whether it adds a document or grows one.
	b := s.coll(t, st, &store.CollectionSpec{PartitionKeyPath: "/pk", Quota: &store.Quota{MaxBytes: 400}})
	_, err = st.Create(ctx, b, []byte(`{"id":"a","pk":"x","pad":"`+strings.Repeat("a", 100)+`"}`), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, b, []byte(`{"id":"b","pk":"x","pad":"`+strings.Repeat("b", 300)+`"}`), nil)
	requireKind(t, err, store.ErrQuotaExceeded, "a document past maxBytes")
	_, err = st.Replace(ctx, b, "a", []byte(`{"id":"a","pk":"x","pad":"`+strings.Repeat("a", 400)+`"}`), nil)
	requireKind(t, err, store.ErrQuotaExceeded, "a replace that grows past maxBytes")
	d, err := st.Read(ctx, b, "a", &store.ReadOptions{PartitionKey: "x"})
	require.NoError(t, err)
	assert.Contains(t, string(d.Body), strings.Repeat("a", 100)+`"`, "the refused replace changed nothing")
	_, err = st.Replace(ctx, b, "a", []byte(`{"id":"a","pk":"x","pad":"short"}`), nil)
	require.NoError(t, err, "a replace that shrinks")

	// A negative bound is refused.
	neg := s.collLink(t)
	err = st.CreateCollection(ctx, neg, &store.CollectionSpec{PartitionKeyPath: "/pk", Quota: &store.Quota{MaxDocuments: -1}})
	if err == nil {
		_ = st.DeleteCollection(ctx, neg)
	}
	requireKind(t, err, store.ErrBadRequest, "a negative quota")
}
