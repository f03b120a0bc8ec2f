package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

func (s *suite) createRead(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	before := time.Now().Add(-time.Hour).Unix()
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "alice", "pk": "p1", "n": 1.5, "nested": map[string]any{"a": []any{1.0, "x"}}}), wpk("p1"))
	require.NoError(t, err)
	assert.Equal(t, "alice", d.ID)
	assert.NotEmpty(t, d.ETag)
	assert.GreaterOrEqual(t, d.Timestamp, before, "_ts is seconds since the epoch")
	m := body(t, d)
	assert.Equal(t, d.ETag, m["_etag"], "the returned body carries _etag")
	assert.EqualValues(t, d.Timestamp, m["_ts"], "the returned body carries _ts")

	got, err := st.Read(ctx, l, "alice", pk("p1"))
	require.NoError(t, err)
	assert.Equal(t, d.ID, got.ID)
	assert.Equal(t, d.ETag, got.ETag)
	assert.Equal(t, d.Timestamp, got.Timestamp)
	m = body(t, got)
	assert.Equal(t, "alice", m["id"])
	assert.Equal(t, "p1", m["pk"])
	assert.Equal(t, 1.5, m["n"])
	assert.Equal(t, map[string]any{"a": []any{1.0, "x"}}, m["nested"])
	assert.Equal(t, got.ETag, m["_etag"])
	assert.EqualValues(t, got.Timestamp, m["_ts"])

	_, err = st.Read(ctx, l, "bob", pk("p1"))
	requireKind(t, err, store.ErrNotFound, "")
	assert.Contains(t, err.Error(), "bob", "the error names the id")

	// Number and boolean keys; a number key matches whatever Go type
	// carries it.
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "n", "pk": 42.0}), wpk(42))
	require.NoError(t, err)
	for _, k := range []any{42, 42.0, int64(42), float32(42)} {
		got, err = st.Read(ctx, l, "n", pk(k))
		require.NoError(t, err, "key %T", k)
		assert.Equal(t, "n", got.ID)
	}
	if !s.lacks(t, SkipPartitionKeyScopedRead) {
		_, err = st.Read(ctx, l, "n", pk("42"))
		requireKind(t, err, store.ErrNotFound, "the string \"42\" is another key than the number 42")
	}
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "b", "pk": true}), nil)
	require.NoError(t, err)
	_, err = st.Read(ctx, l, "b", pk(true))
	require.NoError(t, err)

	// Ids are case-sensitive and may hold any other character.
	for _, id := range []string{"Alice", "with space", "ünïcødé", "a.b-c_d~e", strings.Repeat("x", 255)} {
		_, err = st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": "p1"}), nil)
		require.NoError(t, err, "id %q", id)
		got, err = st.Read(ctx, l, id, pk("p1"))
		require.NoError(t, err, "id %q", id)
		assert.Equal(t, id, got.ID)
	}
}

func (s *suite) createConflict(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	first, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), nil)
	requireKind(t, err, store.ErrConflict, "")
	assert.Contains(t, err.Error(), `"a"`, "the error names the id")
	got, err := st.Read(ctx, l, "a", pk("x"))
	require.NoError(t, err)
	assert.Equal(t, 1.0, body(t, got)["v"], "a refused create leaves the document as it was")
	assert.Equal(t, first.ETag, got.ETag)
}

func (s *suite) systemProperties(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	fake := map[string]any{"id": "a", "pk": "x", "_etag": `"forged"`, "_ts": 12345.0, "_rid": "forged", "_self": "forged", "v": 1.0}
	d, err := st.Create(ctx, l, doc(t, fake), nil)
	require.NoError(t, err)
	check := func(d *store.Document) {
		t.Helper()
		assert.NotEqual(t, `"forged"`, d.ETag)
		assert.NotEqual(t, int64(12345), d.Timestamp)
		for _, got := range []*store.Document{d, mustRead(t, st, l, "a", "x")} {
			m := body(t, got)
			assert.Equal(t, d.ETag, m["_etag"], "the store's _etag replaces the caller's")
			assert.EqualValues(t, d.Timestamp, m["_ts"], "the store's _ts replaces the caller's")
			assert.NotEqual(t, "forged", m["_rid"])
			assert.NotEqual(t, "forged", m["_self"])
			assert.Equal(t, "x", m["pk"])
		}
	}
	check(d)
	fake["v"] = 2.0
	d, err = st.Replace(ctx, l, "a", doc(t, fake), nil)
	require.NoError(t, err)
	check(d)
	fake["v"] = 3.0
	d, err = st.Upsert(ctx, l, doc(t, fake), nil)
	require.NoError(t, err)
	check(d)
	assert.Equal(t, 3.0, body(t, mustRead(t, st, l, "a", "x"))["v"])
}

func mustRead(t *testing.T, st store.Store, l, id string, key any) *store.Document {
	t.Helper()
	d, err := st.Read(ctx, l, id, pk(key))
	require.NoError(t, err, "read %s", id)
	return d
}

func (s *suite) badDocuments(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "keep", "pk": "x"}), nil)
	require.NoError(t, err)
	before := snapshot(t, st, l)
	bad := []struct {
		name string
		doc  string
		want string // the error message holds it
	}{
		{"empty", ``, ""},
		{"malformed", `{"id": "a", `, ""},
		{"trailing comma", `{"id": "a", "pk": "x",}`, ""},
		{"bad escape", `{"id": "a", "pk": "x", "s": "\q"}`, ""},
		{"trailing data", `{"id": "a", "pk": "x"} {}`, ""},
		{"not an object", `["id", "a"]`, "object"},
		{"a string", `"a"`, "object"},
		{"null", `null`, "object"},
		{"no id", `{"pk": "x"}`, "id"},
		{"numeric id", `{"id": 7, "pk": "x"}`, "id"},
		{"null id", `{"id": null, "pk": "x"}`, "id"},
		{"empty id", `{"id": "", "pk": "x"}`, "id"},
		{"long id", `{"id": "` + strings.Repeat("x", store.MaxIDLength+1) + `", "pk": "x"}`, "1023"},
	}
	for _, tc := range bad {
		_, err := st.Create(ctx, l, []byte(tc.doc), nil)
		requireKind(t, err, store.ErrBadRequest, "create: %s", tc.name)
		assert.Contains(t, err.Error(), tc.want, "create: %s: the error names the problem", tc.name)
		_, err = st.Upsert(ctx, l, []byte(tc.doc), nil)
		requireKind(t, err, store.ErrBadRequest, "upsert: %s", tc.name)
		_, err = st.Replace(ctx, l, "keep", []byte(tc.doc), wpk("x"))
		requireKind(t, err, store.ErrBadRequest, "replace: %s", tc.name)
	}
	assert.Equal(t, before, snapshot(t, st, l), "refused writes leave the collection as it was")
	for _, id := range []string{"", strings.Repeat("y", store.MaxIDLength+1), "a\xffb"} {
		_, err = st.Read(ctx, l, id, pk("x"))
		requireKind(t, err, store.ErrBadRequest, "read id %q", id)
		requireKind(t, st.Delete(ctx, l, id, wpk("x")), store.ErrBadRequest, "delete id %q", id)
	}
}

func (s *suite) documentSize(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	big := doc(t, map[string]any{"id": "big", "pk": "x", "blob": strings.Repeat("x", store.MaxDocumentSize)})
	_, err := st.Create(ctx, l, big, nil)
	requireKind(t, err, store.ErrTooLarge, "")
	_, err = st.Read(ctx, l, "big", pk("x"))
	requireKind(t, err, store.ErrNotFound, "a refused document is not stored")
	ok := doc(t, map[string]any{"id": "ok", "pk": "x", "blob": strings.Repeat("x", 1<<20)})
	_, err = st.Create(ctx, l, ok, nil)
	require.NoError(t, err, "a 1 MB document fits")
	before := snapshot(t, st, l)
	tooBig := doc(t, map[string]any{"id": "ok", "pk": "x", "blob": strings.Repeat("y", store.MaxDocumentSize)})
	_, err = st.Replace(ctx, l, "ok", tooBig, nil)
	requireKind(t, err, store.ErrTooLarge, "replace")
	_, err = st.Upsert(ctx, l, tooBig, nil)
	requireKind(t, err, store.ErrTooLarge, "upsert")
	assert.Equal(t, before, snapshot(t, st, l), "refused writes leave the document as it was")
}

func (s *suite) replace(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	first, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0, "gone": true}), nil)
	require.NoError(t, err)
	second, err := st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), wpk("x"))
	require.NoError(t, err)
	assert.NotEqual(t, first.ETag, second.ETag, "every write changes the ETag")
	got := mustRead(t, st, l, "a", "x")
	assert.Equal(t, second.ETag, got.ETag)
	m := body(t, got)
	assert.Equal(t, 2.0, m["v"])
	assert.NotContains(t, m, "gone", "a replace overwrites the whole document")
	// Without a key in the options, the body's key is used.
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 3.0}), nil)
	require.NoError(t, err)
	assert.Equal(t, 3.0, body(t, mustRead(t, st, l, "a", "x"))["v"])

	before := snapshot(t, st, l)
	_, err = st.Replace(ctx, l, "zz", doc(t, map[string]any{"id": "zz", "pk": "x"}), nil)
	requireKind(t, err, store.ErrNotFound, "replacing a missing document")
	assert.Contains(t, err.Error(), "zz")
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "b", "pk": "x"}), nil)
	requireKind(t, err, store.ErrBadRequest, "the body's id differs from the id replaced")
	assert.Equal(t, before, snapshot(t, st, l))
	assert.Len(t, before, 1, "a replace creates nothing")
}

func (s *suite) upsert(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	a, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err, "an upsert creates")
	b, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), wpk("x"))
	require.NoError(t, err, "an upsert replaces")
	assert.NotEqual(t, a.ETag, b.ETag)
	got := mustRead(t, st, l, "a", "x")
	assert.Equal(t, b.ETag, got.ETag)
	assert.Equal(t, 2.0, body(t, got)["v"])
	assert.Len(t, feedAll(t, st, l, 0), 1)
}

func (s *suite) deleteDoc(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "b", "pk": "x"}), nil)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, l, "a", wpk("x")))
	_, err = st.Read(ctx, l, "a", pk("x"))
	requireKind(t, err, store.ErrNotFound, "a deleted document is gone")
	err = st.Delete(ctx, l, "a", wpk("x"))
	requireKind(t, err, store.ErrNotFound, "deleting a deleted document")
	assert.Contains(t, err.Error(), `"a"`)
	all := feedAll(t, st, l, 0)
	assert.Len(t, all, 1)
	assert.Contains(t, all, "x|b", "a delete removes only its document")
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "again": true}), nil)
	require.NoError(t, err, "a deleted id can be created again")
	assert.Equal(t, true, body(t, mustRead(t, st, l, "a", "x"))["again"])
}

func (s *suite) ifMatchReplace(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	d2, err := st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), &store.WriteOptions{PartitionKey: "x", IfMatch: d.ETag})
	require.NoError(t, err, "the current ETag matches")
	for _, stale := range []string{d.ETag, `"no-such-etag"`} {
		_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 3.0}), &store.WriteOptions{PartitionKey: "x", IfMatch: stale})
		requireKind(t, err, store.ErrPreconditionFailed, "If-Match %s", stale)
	}
	got := mustRead(t, st, l, "a", "x")
	assert.Equal(t, d2.ETag, got.ETag)
	assert.Equal(t, 2.0, body(t, got)["v"], "the refused writes changed nothing")
}

func (s *suite) ifMatchDelete(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), nil)
	require.NoError(t, err)
	requireKind(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "x", IfMatch: d.ETag}), store.ErrPreconditionFailed, "")
	got := mustRead(t, st, l, "a", "x")
	require.NoError(t, st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "x", IfMatch: got.ETag}))
	_, err = st.Read(ctx, l, "a", pk("x"))
	requireKind(t, err, store.ErrNotFound, "")
}

func (s *suite) ifMatchUpsert(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	d, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 1.0}), nil)
	require.NoError(t, err)
	d2, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 2.0}), &store.WriteOptions{IfMatch: d.ETag})
	require.NoError(t, err)
	_, err = st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": 3.0}), &store.WriteOptions{IfMatch: d.ETag})
	requireKind(t, err, store.ErrPreconditionFailed, "")
	got := mustRead(t, st, l, "a", "x")
	assert.Equal(t, d2.ETag, got.ETag)
	assert.Equal(t, 2.0, body(t, got)["v"])
	// If-Match applies to the replace: an upsert that creates ignores it,
	// as Cosmos DB does.
	_, err = st.Upsert(ctx, l, doc(t, map[string]any{"id": "new", "pk": "x"}), &store.WriteOptions{IfMatch: d.ETag})
	require.NoError(t, err)
	mustRead(t, st, l, "new", "x")
}

// optimisticConcurrency runs read-modify-replace increments with If-Match
// from several goroutines, retrying on ErrPreconditionFailed: no increment
// may be lost.
func (s *suite) optimisticConcurrency(t *testing.T, st store.Store) {
	s.skipIf(t, SkipIfMatchOnReplace)
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "counter", "pk": "c", "n": 0.0}), nil)
	require.NoError(t, err)
	const workers, each = 6, 10
	var wg sync.WaitGroup
	var conflicts sync.Map
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				for attempt := 0; ; attempt++ {
					if attempt > 1000 {
						t.Errorf("worker %d: no progress", w)
						return
					}
					cur, err := st.Read(ctx, l, "counter", pk("c"))
					if err != nil {
						t.Errorf("read: %v", err)
						return
					}
					var m map[string]any
					if err := json.Unmarshal(cur.Body, &m); err != nil {
						t.Errorf("body: %v", err)
						return
					}
					next := doc(t, map[string]any{"id": "counter", "pk": "c", "n": m["n"].(float64) + 1})
					_, err = st.Replace(ctx, l, "counter", next, &store.WriteOptions{PartitionKey: "c", IfMatch: cur.ETag})
					if err == nil {
						break
					}
					if !errors.Is(err, store.ErrPreconditionFailed) {
						t.Errorf("replace: %v", err)
						return
					}
					conflicts.Store(fmt.Sprint(w, i, attempt), true)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, float64(workers*each), body(t, mustRead(t, st, l, "counter", "c"))["n"], "no increment lost")
	n := 0
	conflicts.Range(func(any, any) bool { n++; return true })
	t.Logf("%d increments, %d refused stale replaces retried", workers*each, n)
}

func (s *suite) sameIDDifferentKey(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x", "v": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "y", "v": "y"}), nil)
	require.NoError(t, err, "ids are unique within a partition-key value only")
	for _, k := range []string{"x", "y"} {
		assert.Equal(t, k, body(t, mustRead(t, st, l, "a", k))["v"])
	}
	all := feedAll(t, st, l, 0)
	assert.Contains(t, all, "x|a")
	assert.Contains(t, all, "y|a")
	got := values(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE c.v FROM c WHERE c.id = "a"`}, nil))
	assert.ElementsMatch(t, []any{"x", "y"}, got)
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "y", "v": "y2"}), wpk("y"))
	require.NoError(t, err)
	assert.Equal(t, "x", body(t, mustRead(t, st, l, "a", "x"))["v"], "a replace touches its key's document only")
	require.NoError(t, st.Delete(ctx, l, "a", wpk("x")))
	assert.Equal(t, "y2", body(t, mustRead(t, st, l, "a", "y"))["v"], "a delete removes its key's document only")
}

func (s *suite) partitionKeyScopedRead(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
	before := snapshot(t, st, l)
	_, err = st.Read(ctx, l, "a", pk("other"))
	requireKind(t, err, store.ErrNotFound, "a read with another partition key finds nothing")
	requireKind(t, st.Delete(ctx, l, "a", wpk("other")), store.ErrNotFound, "nor does a delete")
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "other"}), wpk("other"))
	requireKind(t, err, store.ErrNotFound, "nor a replace")
	assert.Equal(t, before, snapshot(t, st, l))
}

func (s *suite) partitionKeyMismatch(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "body-key"}), wpk("given-key"))
	requireKind(t, err, store.ErrBadRequest, "")
	assert.Contains(t, err.Error(), "body-key", "the error names the body's key")
	assert.Contains(t, err.Error(), "given-key", "and the given one")
	_, err = st.Upsert(ctx, l, doc(t, map[string]any{"id": "a", "pk": "body-key"}), wpk("given-key"))
	requireKind(t, err, store.ErrBadRequest, "")
	assert.Empty(t, feedAll(t, st, l, 0), "nothing was written")
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "body-key"}), nil)
	require.NoError(t, err)
	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "pk": "body-key", "v": 1.0}), wpk("given-key"))
	requireKind(t, err, store.ErrBadRequest, "")
	assert.NotContains(t, body(t, mustRead(t, st, l, "a", "body-key")), "v")
}

// readWithoutPartitionKey: a read or delete without a key finds the id's
// only document, and refuses to guess when several keys hold the id.
func (s *suite) readWithoutPartitionKey(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "a", "pk": "x"}), nil)
	require.NoError(t, err)
	got, err := st.Read(ctx, l, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, "x", body(t, got)["pk"])
	_, err = st.Read(ctx, l, "zz", nil)
	requireKind(t, err, store.ErrNotFound, "")
	require.NoError(t, st.Delete(ctx, l, "a", nil))
	_, err = st.Read(ctx, l, "a", pk("x"))
	requireKind(t, err, store.ErrNotFound, "")

	if !s.lacks(t, SkipSameIDDifferentKey) {
		for _, k := range []string{"x", "y"} {
			_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "dup", "pk": k}), nil)
			require.NoError(t, err)
		}
		_, err = st.Read(ctx, l, "dup", nil)
		requireKind(t, err, store.ErrBadRequest, "an ambiguous id needs its key")
		assert.Contains(t, err.Error(), "partition key")
		requireKind(t, st.Delete(ctx, l, "dup", nil), store.ErrBadRequest, "")
		assert.Len(t, feedAll(t, st, l, 0), 2, "nothing deleted")
	}
	// Under the default key path the id is the key: never ambiguous.
	def := s.coll(t, st, nil)
	_, err = st.Create(ctx, def, []byte(`{"id":"k"}`), nil)
	require.NoError(t, err)
	_, err = st.Read(ctx, def, "k", nil)
	require.NoError(t, err)
}

// undefinedPartitionKey: a document with no value at the key path is
// stored under the undefined key, store.None, distinct from null.
func (s *suite) undefinedPartitionKey(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, []byte(`{"id":"u","v":"none"}`), nil)
	require.NoError(t, err)
	got, err := st.Read(ctx, l, "u", pk(store.None))
	require.NoError(t, err)
	assert.Equal(t, "none", body(t, got)["v"])
	if !s.lacks(t, SkipPartitionKeyScopedRead) {
		_, err = st.Read(ctx, l, "u", pk(store.Null))
		requireKind(t, err, store.ErrNotFound, "the undefined key is not null")
		_, err = st.Read(ctx, l, "u", pk(""))
		requireKind(t, err, store.ErrNotFound, "nor the empty string")
	}
	_, err = st.Create(ctx, l, []byte(`{"id":"w"}`), wpk(store.None))
	require.NoError(t, err, "None given for a document without a key")
	_, err = st.Create(ctx, l, []byte(`{"id":"z"}`), wpk("x"))
	requireKind(t, err, store.ErrBadRequest, "a key given for a document without one")
	_, err = st.Create(ctx, l, []byte(`{"id":"z","pk":"x"}`), wpk(store.None))
	requireKind(t, err, store.ErrBadRequest, "None given for a document with a key")
	if !s.lacks(t, SkipSameIDDifferentKey) && !s.lacks(t, SkipNullPartitionKey) {
		_, err = st.Create(ctx, l, []byte(`{"id":"u","pk":null,"v":"null"}`), nil)
		require.NoError(t, err, "the same id under null is another document")
		assert.Equal(t, "null", body(t, mustRead(t, st, l, "u", store.Null))["v"])
		assert.Equal(t, "none", body(t, mustRead(t, st, l, "u", store.None))["v"])
	}
	if !s.lacks(t, SkipPartitionKeyScopedQuery) {
		ids := sortedStrings(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE c.id FROM c`}, &store.QueryOptions{PartitionKey: store.None}))
		assert.Equal(t, []string{"u", "w"}, ids, "a query scoped to None sees the documents without a key")
	}
	_, err = st.Replace(ctx, l, "u", []byte(`{"id":"u","v":"none2"}`), wpk(store.None))
	require.NoError(t, err)
	assert.Equal(t, "none2", body(t, mustRead(t, st, l, "u", store.None))["v"])
	require.NoError(t, st.Delete(ctx, l, "u", wpk(store.None)))
	_, err = st.Read(ctx, l, "u", pk(store.None))
	requireKind(t, err, store.ErrNotFound, "")
}

func (s *suite) nullPartitionKey(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	_, err := st.Create(ctx, l, []byte(`{"id":"n","pk":null}`), wpk(store.Null))
	require.NoError(t, err)
	_, err = st.Create(ctx, l, []byte(`{"id":"s","pk":"null"}`), nil)
	require.NoError(t, err)
	got := mustRead(t, st, l, "n", store.Null)
	assert.Nil(t, body(t, got)["pk"])
	if !s.lacks(t, SkipPartitionKeyScopedRead) {
		_, err = st.Read(ctx, l, "n", pk("null"))
		requireKind(t, err, store.ErrNotFound, "JSON null is not the string \"null\"")
	}
	mustRead(t, st, l, "s", "null")
	if !s.lacks(t, SkipPartitionKeyScopedQuery) {
		ids := sortedStrings(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE c.id FROM c`}, &store.QueryOptions{PartitionKey: store.Null}))
		assert.Equal(t, []string{"n"}, ids)
	}
}

// nothingHalfWritten tries every kind of failing write and checks the
// collection is exactly as it was (texts, ETags, timestamps, usage).
func (s *suite) nothingHalfWritten(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 5)
	a, err := st.Read(ctx, l, "d000", pk("p0"))
	require.NoError(t, err)
	stale := a.ETag
	_, err = st.Replace(ctx, l, "d000", doc(t, map[string]any{"id": "d000", "pk": "p0", "n": 0.0, "s": "red", "v": 2.0}), nil)
	require.NoError(t, err)
	before := snapshot(t, st, l)
	var usage *store.CollectionInfo
	if !s.lacks(t, SkipUsage) {
		usage, err = st.CollectionInfo(ctx, l)
		require.NoError(t, err)
	}
	type attempt struct {
		name  string
		needs string // a skip key the attempt depends on
		kind  error
		do    func() error
	}
	w := func(f func() (*store.Document, error)) func() error {
		return func() error { _, err := f(); return err }
	}
	attempts := []attempt{
		{"create conflict", "", store.ErrConflict, w(func() (*store.Document, error) {
			return st.Create(ctx, l, doc(t, map[string]any{"id": "d001", "pk": "p1", "x": 1.0}), nil)
		})},
		{"replace missing", "", store.ErrNotFound, w(func() (*store.Document, error) {
			return st.Replace(ctx, l, "nope", doc(t, map[string]any{"id": "nope", "pk": "p1"}), nil)
		})},
		{"delete missing", "", store.ErrNotFound, func() error { return st.Delete(ctx, l, "nope", wpk("p1")) }},
		{"replace stale", SkipIfMatchOnReplace, store.ErrPreconditionFailed, w(func() (*store.Document, error) {
			return st.Replace(ctx, l, "d000", doc(t, map[string]any{"id": "d000", "pk": "p0", "x": 1.0}), &store.WriteOptions{IfMatch: stale})
		})},
		{"upsert stale", SkipIfMatchOnUpsert, store.ErrPreconditionFailed, w(func() (*store.Document, error) {
			return st.Upsert(ctx, l, doc(t, map[string]any{"id": "d000", "pk": "p0", "x": 1.0}), &store.WriteOptions{IfMatch: stale})
		})},
		{"delete stale", SkipIfMatchOnDelete, store.ErrPreconditionFailed, func() error {
			return st.Delete(ctx, l, "d000", &store.WriteOptions{PartitionKey: "p0", IfMatch: stale})
		}},
		{"too large", SkipDocumentSize, store.ErrTooLarge, w(func() (*store.Document, error) {
			return st.Upsert(ctx, l, doc(t, map[string]any{"id": "d002", "pk": "p2", "blob": strings.Repeat("z", store.MaxDocumentSize)}), nil)
		})},
		{"bad id", "", store.ErrBadRequest, w(func() (*store.Document, error) {
			return st.Upsert(ctx, l, []byte(`{"id":"`+strings.Repeat("d", store.MaxIDLength+1)+`","pk":"p2"}`), nil)
		})},
		{"malformed", "", store.ErrBadRequest, w(func() (*store.Document, error) {
			return st.Upsert(ctx, l, []byte(`{"id":"d002","pk":"p2",`), nil)
		})},
		{"key mismatch", SkipPartitionKeyMismatch, store.ErrBadRequest, w(func() (*store.Document, error) {
			return st.Upsert(ctx, l, doc(t, map[string]any{"id": "d002", "pk": "p2"}), wpk("p1"))
		})},
		{"id mismatch", "", store.ErrBadRequest, w(func() (*store.Document, error) {
			return st.Replace(ctx, l, "d002", doc(t, map[string]any{"id": "d003", "pk": "p0"}), nil)
		})},
	}
	for _, a := range attempts {
		if a.needs != "" && s.lacks(t, a.needs) {
			continue
		}
		requireKind(t, a.do(), a.kind, "%s", a.name)
		require.Equal(t, before, snapshot(t, st, l), "after %s the collection is as it was", a.name)
	}
	if usage != nil {
		after, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		assert.Equal(t, usage.Documents, after.Documents)
		assert.Equal(t, usage.Bytes, after.Bytes)
	}
}

// concurrentWriters: writers of distinct documents (create, upsert,
// delete) and racing creators of one id.
func (s *suite) concurrentWriters(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": fmt.Sprint(w)}), nil); err != nil {
					t.Errorf("create %s: %v", id, err)
				}
				if _, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": id, "pk": fmt.Sprint(w), "n": float64(i)}), nil); err != nil {
					t.Errorf("upsert %s: %v", id, err)
				}
				if i%4 == 3 {
					if err := st.Delete(ctx, l, id, wpk(fmt.Sprint(w))); err != nil {
						t.Errorf("delete %s: %v", id, err)
					}
				}
			}
		})
	}
	// Concurrent creates of one id: exactly one wins.
	var wins sync.Map
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "race", "pk": "r", "w": float64(w)}), nil)
			if err == nil {
				wins.Store(w, true)
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("racing create: %v", err)
			}
		})
	}
	wg.Wait()
	n := 0
	wins.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, 1, n, "exactly one racing create wins")
	all := feedAll(t, st, l, 50)
	assert.Len(t, all, writers*(each-each/4)+1)
	if !s.lacks(t, SkipUsage) {
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		assert.EqualValues(t, len(all), info.Documents)
	}
}

// atomicUpsert: concurrent upserts of one stored document all succeed,
// readers find it throughout, and one writer's version is what remains.
func (s *suite) atomicUpsert(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	const writers, each = 8, 20
	_, err := st.Create(ctx, l, doc(t, map[string]any{"id": "shared", "pk": "s", "by": -1.0}), nil)
	require.NoError(t, err)
	readWhileWriting(2, writers, func(int) bool {
		if _, err := st.Read(ctx, l, "shared", pk("s")); err != nil {
			t.Errorf("read shared: %v", err)
			return false
		}
		return true
	}, func(w int) {
		for i := 0; i < each; i++ {
			if _, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": "shared", "pk": "s", "by": float64(w)}), nil); err != nil {
				t.Errorf("upsert shared: %v", err)
			}
		}
	})
	all := feedAll(t, st, l, 50)
	require.Len(t, all, 1, "one document, never two")
	for _, got := range all {
		assert.GreaterOrEqual(t, got["by"], 0.0, "a writer's version")
	}
}

func (s *suite) usage(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Zero(t, info.Documents)
	seed(t, st, l, 10)
	info, err = st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, 10, info.Documents)
	var sum int64
	for _, m := range feedAll(t, st, l, 0) {
		sum += int64(len(doc(t, m))) // at least the text of what is stored
	}
	assert.GreaterOrEqual(t, info.Bytes, sum*9/10, "bytes are those of the stored texts")
	require.NoError(t, st.Delete(ctx, l, "d000", wpk("p0")))
	_, err = st.Replace(ctx, l, "d001", doc(t, map[string]any{"id": "d001", "pk": "p1", "blob": strings.Repeat("x", 10000)}), nil)
	require.NoError(t, err)
	after, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.EqualValues(t, 9, after.Documents)
	assert.Greater(t, after.Bytes, info.Bytes+9000, "a bigger replace grows the bytes")
}

func (s *suite) ttl(t *testing.T, st store.Store) {
	if s.opts.Advance == nil {
		t.Skip("the backend has no controllable clock (Options.Advance is nil)")
	}
	def := 60
	l := s.coll(t, st, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: &def})
	for _, m := range []map[string]any{
		{"id": "default", "pk": "x"},
		{"id": "short", "pk": "x", "ttl": 10.0},
		{"id": "long", "pk": "x", "ttl": 200.0},
		{"id": "forever", "pk": "x", "ttl": -1.0},
		{"id": "refreshed", "pk": "x"},
	} {
		_, err := st.Create(ctx, l, doc(t, m), nil)
		require.NoError(t, err)
	}
	for _, bad := range []string{`0`, `-2`, `1.5`, `"10"`, `null`, `2147483648`} {
		_, err := st.Create(ctx, l, []byte(`{"id":"bad","pk":"x","ttl":`+bad+`}`), nil)
		requireKind(t, err, store.ErrBadRequest, "ttl %s", bad)
	}
	s.opts.Advance(30 * time.Second)
	_, err := st.Read(ctx, l, "short", pk("x"))
	requireKind(t, err, store.ErrNotFound, "a document past its own ttl is gone")
	mustRead(t, st, l, "default", "x")
	// A write restarts the clock of a document.
	_, err = st.Replace(ctx, l, "refreshed", doc(t, map[string]any{"id": "refreshed", "pk": "x"}), nil)
	require.NoError(t, err)
	s.opts.Advance(40 * time.Second) // 70 s after the creates, 40 after the replace
	_, err = st.Read(ctx, l, "default", pk("x"))
	requireKind(t, err, store.ErrNotFound, "a document past the default ttl is gone")
	requireKind(t, st.Delete(ctx, l, "default", wpk("x")), store.ErrNotFound, "an expired document cannot be deleted")
	_, err = st.Replace(ctx, l, "default", doc(t, map[string]any{"id": "default", "pk": "x"}), nil)
	requireKind(t, err, store.ErrNotFound, "nor replaced")
	want := []string{"forever", "long", "refreshed"}
	assert.Equal(t, want, sortedStrings(t, QueryAll(t, st, l, store.Query{Text: "SELECT VALUE c.id FROM c"}, nil)), "queries skip expired documents")
	assert.Len(t, feedAll(t, st, l, 1), 3, "the feed skips expired documents")
	if !s.lacks(t, SkipUsage) {
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		assert.EqualValues(t, 3, info.Documents, "usage counts live documents")
	}
	// An expired id can be created again.
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "short", "pk": "x"}), nil)
	require.NoError(t, err)
	s.opts.Advance(200 * time.Second)
	assert.Equal(t, []string{"forever"}, sortedStrings(t, QueryAll(t, st, l, store.Query{Text: "SELECT VALUE c.id FROM c"}, nil)))

	// With TTL on but no default (-1), only documents with a ttl expire.
	on := -1
	l2 := s.coll(t, st, &store.CollectionSpec{PartitionKeyPath: "/pk", DefaultTTL: &on})
	_, err = st.Create(ctx, l2, doc(t, map[string]any{"id": "keep", "pk": "x"}), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l2, doc(t, map[string]any{"id": "go", "pk": "x", "ttl": 5.0}), nil)
	require.NoError(t, err)
	s.opts.Advance(time.Minute)
	mustRead(t, st, l2, "keep", "x")
	_, err = st.Read(ctx, l2, "go", pk("x"))
	requireKind(t, err, store.ErrNotFound, "")

	// Without a default TTL a document's ttl is ignored.
	off := s.coll(t, st, byKey("/pk"))
	_, err = st.Create(ctx, off, doc(t, map[string]any{"id": "a", "pk": "x", "ttl": 1.0}), nil)
	require.NoError(t, err)
	s.opts.Advance(time.Hour)
	mustRead(t, st, off, "a", "x")
}

// SkipReadMany is the case key of store.ManyReader: documents read by
// (id, key) in the items' order, missing ones nil, malformed items
// refused. A backend that is not a ManyReader skips it by itself.
const SkipReadMany = "ReadMany"

func (s *suite) readMany(t *testing.T, st store.Store) {
	mr := capability[store.ManyReader](t, st, "store.ManyReader")
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 9) // d000..d008, keys p0, p1, p2 in turn
	items := []store.ItemRef{
		{ID: "d004", PartitionKey: "p1"},
		{ID: "d000", PartitionKey: "p0"},
		{ID: "d001", PartitionKey: "p0"}, // under another key: missing
		{ID: "nope", PartitionKey: "p0"},
		{ID: "d004", PartitionKey: "p1"}, // twice
		{ID: "d008"},                     // by id alone, as Read finds it
	}
	docs, err := mr.ReadMany(ctx, l, items)
	require.NoError(t, err)
	require.Len(t, docs, len(items), "one answer per item")
	for i, want := range []string{"d004", "d000", "", "", "d004", "d008"} {
		if want == "" {
			assert.Nil(t, docs[i], "item %d is missing", i)
			continue
		}
		require.NotNil(t, docs[i], "item %d", i)
		assert.Equal(t, want, docs[i].ID, "item %d", i)
		assert.Equal(t, mustRead(t, st, l, want, items[i].PartitionKey).ETag, docs[i].ETag, "item %d is the stored version", i)
	}

	docs, err = mr.ReadMany(ctx, l, nil)
	require.NoError(t, err)
	assert.Empty(t, docs)
	_, err = mr.ReadMany(ctx, l, []store.ItemRef{{ID: "d000", PartitionKey: "p0"}, {ID: "", PartitionKey: "p0"}})
	requireKind(t, err, store.ErrBadRequest, "an empty id")
	assert.Contains(t, err.Error(), "item 1", "the error names the item")
	_, err = mr.ReadMany(ctx, l+"-missing", items[:1])
	requireKind(t, err, store.ErrCollectionNotFound, "a missing collection")
}
