package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// SkipHierarchicalPartitionKey is the case of a hierarchical key
// (CollectionSpec.PartitionKeyPaths, Cosmos DB's MultiHash): the spec
// kept; ids scoped by the full key; point operations under the full key,
// and any other number of values refused; a key that differs from the
// body's refused; queries and change feeds by the full key and by a prefix;
// a batch under the full key.
const SkipHierarchicalPartitionKey = "HierarchicalPartitionKey"

func (s *suite) hierarchicalKey(t *testing.T, st store.Store) {
	paths := []string{"/tenant", "/user", "/session"}
	l := s.coll(t, st, &store.CollectionSpec{PartitionKeyPaths: paths})
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, paths, info.Spec.KeyPaths(), "the spec keeps the paths")
	assert.Empty(t, info.Spec.PartitionKeyPath)

	key := func(t, u, s string) partitionkey.CompositeKey { return partitionkey.CompositeKey{t, u, s} }
	put := func(id, tn, u, ss string) {
		t.Helper()
		_, err := st.Create(ctx, l, doc(t, map[string]any{"id": id, "tenant": tn, "user": u, "session": ss, "v": 1}), wpk(key(tn, u, ss)))
		require.NoError(t, err)
	}
	put("a", "t1", "u1", "s1")
	put("a", "t1", "u1", "s2") // the same id under another full key
	put("b", "t1", "u2", "s1")
	put("c", "t2", "u1", "s1")
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "d", "tenant": "t2", "user": "u2"}), nil)
	require.NoError(t, err, "a document missing a key value is stored, None in its place")

	d, err := st.Read(ctx, l, "a", pk(key("t1", "u1", "s2")))
	require.NoError(t, err)
	assert.Equal(t, "s2", body(t, d)["session"])
	d, err = st.Read(ctx, l, "d", pk(partitionkey.CompositeKey{"t2", "u2", store.None}))
	require.NoError(t, err, "None stands for the missing value")
	assert.Equal(t, "d", d.ID)
	_, err = st.Read(ctx, l, "a", pk(key("t1", "u1", "s3")))
	requireKind(t, err, store.ErrNotFound, "another full key finds nothing")

	for _, k := range []any{"t1", partitionkey.CompositeKey{"t1", "u1"}, []any{"t1", "u1", "s1", "x"}} {
		_, err = st.Read(ctx, l, "a", pk(k))
		requireKind(t, err, store.ErrBadRequest, "a point read under %v (not the full key)", k)
		requireKind(t, st.Delete(ctx, l, "a", wpk(k)), store.ErrBadRequest, "a delete under %v", k)
	}
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "e", "tenant": "t1", "user": "u1", "session": "s1"}), wpk(key("t1", "u1", "s9")))
	requireKind(t, err, store.ErrBadRequest, "a key that differs from the body's")

	_, err = st.Replace(ctx, l, "a", doc(t, map[string]any{"id": "a", "tenant": "t1", "user": "u1", "session": "s1", "v": 2}), wpk([]any{"t1", "u1", "s1"}))
	require.NoError(t, err, "a []any is a composite key too")
	assert.EqualValues(t, 1, body(t, mustRead(t, st, l, "a", key("t1", "u1", "s2")))["v"], "a replace touches its full key's document only")

	ids := func(k any) []string {
		t.Helper()
		var out []string
		for _, it := range QueryAll(t, st, l, store.Query{Text: "SELECT * FROM c"}, &store.QueryOptions{PartitionKey: k, PageSize: 1}) {
			m := object(t, it)
			out = append(out, fmt.Sprintf("%v/%v", m["id"], m["session"]))
		}
		return out
	}
	assert.ElementsMatch(t, []string{"a/s1"}, ids(key("t1", "u1", "s1")), "a query by the full key")
	assert.ElementsMatch(t, []string{"a/s1", "a/s2"}, ids(partitionkey.CompositeKey{"t1", "u1"}), "by a prefix of two values")
	assert.ElementsMatch(t, []string{"a/s1", "a/s2", "b/s1"}, ids(partitionkey.CompositeKey{"t1"}), "by a prefix of one value")
	assert.ElementsMatch(t, []string{"a/s1", "a/s2", "b/s1"}, ids("t1"), "a lone scalar is a prefix of one value")
	assert.ElementsMatch(t, []string{"d/<nil>"}, ids(partitionkey.CompositeKey{"t2", "u2"}))
	_, err = st.Query(ctx, l, store.Query{Text: "SELECT * FROM c"}, &store.QueryOptions{PartitionKey: []any{"t1", "u1", "s1", "x"}})
	requireKind(t, err, store.ErrBadRequest, "a query under more values than paths")
	n, cont := 0, ""
	for i := 0; i == 0 || cont != ""; i++ {
		require.Less(t, i, 100, "the feed does not end")
		page, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 2, Continuation: cont})
		require.NoError(t, err)
		n, cont = n+len(page.Items), page.Continuation
	}
	assert.Equal(t, 5, n, "the read feed walks every key")

	if cf, ok := st.(store.ChangeFeeder); ok {
		items, _ := changes(t, cf, l, store.ChangeFeedOptions{PartitionKey: partitionkey.CompositeKey{"t1", "u1"}, PageSize: 1})
		var got []string
		for _, m := range items {
			got = append(got, fmt.Sprintf("%v/%v", m["id"], m["session"]))
		}
		assert.ElementsMatch(t, []string{"a/s1", "a/s2"}, got, "the change feed of a prefix")
		items, _ = changes(t, cf, l, store.ChangeFeedOptions{PartitionKey: key("t2", "u1", "s1")})
		assert.Len(t, items, 1, "the change feed of a full key")
	}

	if bt, ok := st.(store.Batcher); ok {
		k := key("t3", "u1", "s1")
		mk := func(id string) []byte {
			return doc(t, map[string]any{"id": id, "tenant": "t3", "user": "u1", "session": "s1"})
		}
		res, err := bt.ExecuteBatch(ctx, l, k, []store.BatchOp{bCreate(mk("x")), bUpsert(mk("y")), bRead("a")}, nil)
		require.Error(t, err, "the batch's read finds no a under its key")
		assert.Nil(t, res)
		res, err = bt.ExecuteBatch(ctx, l, k, []store.BatchOp{bCreate(mk("x")), bUpsert(mk("y")), bRead("x")}, nil)
		require.NoError(t, err)
		require.Len(t, res, 3)
		assert.Equal(t, "x", res[2].Document.ID)
		_, err = bt.ExecuteBatch(ctx, l, partitionkey.CompositeKey{"t3", "u1"}, []store.BatchOp{bRead("x")}, nil)
		requireKind(t, err, store.ErrBadRequest, "a batch under a prefix")
		_, err = bt.ExecuteBatch(ctx, l, key("t3", "u1", "s2"), []store.BatchOp{bCreate(mk("z"))}, nil)
		requireKind(t, err, store.ErrBadRequest, "a batch document under another key")
	}

	bad := []*store.CollectionSpec{
		{PartitionKeyPaths: []string{"/a", "/b", "/c", "/d"}},
		{PartitionKeyPaths: []string{"/a", "/a"}},
		{PartitionKeyPaths: []string{"/a", "/a/b"}},
		{PartitionKeyPaths: []string{"/a", "b"}},
		{PartitionKeyPath: "/a", PartitionKeyPaths: []string{"/a", "/b"}},
	}
	for _, sp := range bad {
		requireKind(t, st.CreateCollection(ctx, s.collLink(t), sp), store.ErrBadRequest, "spec %+v", *sp)
	}
}
