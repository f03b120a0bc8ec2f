package router_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

func setOp(t testing.TB, path string, v any) store.PatchOp {
	raw, err := store.PatchValue(v)
	require.NoError(t, err)
	return store.PatchOp{Op: store.PatchSet, Path: path, Value: raw}
}

func incrOp(path string, by int) store.PatchOp {
	return store.PatchOp{Op: store.PatchIncrement, Path: path, Value: json.RawMessage(fmt.Sprint(by))}
}

func userDoc(id, key string, age int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"userId":%q,"age":%d}`, id, key, age)
}

// bare is a store without optional capabilities.
type bare struct{ store.Store }

// TestPatchRouted: a patch goes to the collection of its key; its errors
// are the store's; bad input is refused before anything is sent, with an
// error that says what is wrong.
func TestPatchRouted(t *testing.T) {
	st := newMem(t)
	c := setup(t, 3, st, nil)
	addUsers(t, c, 30, func(i int) string { return fmt.Sprint("u", i%7) })
	d, err := c.Patch(ctx, db, "4", "u4", []store.PatchOp{setOp(t, "/name", "four"), incrOp("/age", 10)}, nil)
	require.NoError(t, err)
	var u user
	require.NoError(t, json.Unmarshal(d.Body, &u))
	assert.Equal(t, user{ID: "4", UserID: "u4", Name: "four", Age: 14}, u)
	l, _ := ring(t, 3).ResolveForCreate("u4")
	stored, err := st.Read(ctx, l, "4", &store.ReadOptions{PartitionKey: "u4"})
	require.NoError(t, err)
	assert.Equal(t, d.ETag, stored.ETag, "patched where the key lives")

	_, err = c.Patch(ctx, db, "4", "u4", []store.PatchOp{incrOp("/age", 1)}, &router.PatchOptions{IfMatch: `"stale"`})
	require.ErrorIs(t, err, store.ErrPreconditionFailed)
	_, err = c.Patch(ctx, db, "4", "u4", []store.PatchOp{incrOp("/age", 1)}, &router.PatchOptions{Condition: "FROM c WHERE c.age > 100"})
	require.ErrorIs(t, err, store.ErrPreconditionFailed)
	d, err = c.Patch(ctx, db, "4", "u4", []store.PatchOp{incrOp("/age", 1)}, &router.PatchOptions{IfMatch: d.ETag, Condition: "FROM c WHERE c.age = 14"})
	require.NoError(t, err)
	_, err = c.Patch(ctx, db, "4", "u5", []store.PatchOp{incrOp("/age", 1)}, nil)
	require.ErrorIs(t, err, store.ErrNotFound, "under another key")

	eleven := make([]store.PatchOp, 11)
	for i := range eleven {
		eleven[i] = setOp(t, fmt.Sprint("/f", i), i)
	}
	for _, tc := range []struct {
		name string
		ops  []store.PatchOp
		opts *router.PatchOptions
		want string
	}{
		{"eleven operations", eleven, nil, "a patch holds 1 to 10 operations, got 11"},
		{"no operations", nil, nil, "a patch holds 1 to 10 operations, got 0"},
		{"a bad path", []store.PatchOp{setOp(t, "name", 1)}, nil, `path "name": want /property`},
		{"an unknown operation", []store.PatchOp{{Op: "copy", Path: "/a", From: "/b"}}, nil, "unknown operation: want add, set, replace, remove, incr or move"},
		{"a system property", []store.PatchOp{setOp(t, "/_etag", "x")}, nil, "_etag is a system property"},
		{"a malformed condition", []store.PatchOp{setOp(t, "/a", 1)}, &router.PatchOptions{Condition: "WHERE c.a = 1"}, "patch condition"},
		{"the partition key", []store.PatchOp{setOp(t, "/userId", "u9")}, nil, "cannot change the document's partition key"},
	} {
		_, err := c.Patch(ctx, db, "4", "u4", tc.ops, tc.opts)
		require.ErrorIs(t, err, store.ErrBadRequest, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		assert.Contains(t, err.Error(), `"4"`, "%s: the error names the document", tc.name)
	}
	now, err := st.Read(ctx, l, "4", &store.ReadOptions{PartitionKey: "u4"})
	require.NoError(t, err)
	assert.Equal(t, d.ETag, now.ETag, "refused patches wrote nothing")

	_, err = c.Patch(ctx, db, "4", nil, []store.PatchOp{incrOp("/age", 1)}, nil)
	require.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	plain := router.New(bare{st}, nil)
	require.NoError(t, plain.Register(db, ring(t, 3)))
	_, err = plain.Patch(ctx, db, "4", "u4", []store.PatchOp{incrOp("/age", 1)}, nil)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	assert.Contains(t, err.Error(), "not a store.Patcher")
}

// TestExecuteBatchRouted: a batch runs in the collection of its key, all
// or nothing; a batch that writes a document of another key is refused
// before anything is sent, naming the operation.
func TestExecuteBatchRouted(t *testing.T) {
	st := newMem(t)
	c := setup(t, 3, st, nil)
	addUsers(t, c, 10, func(i int) string { return "k" })
	ops := []store.BatchOp{
		{Kind: store.BatchCreate, Doc: userDoc("new", "k", 1)},
		{Kind: store.BatchReplace, ID: "3", Doc: userDoc("3", "k", 33)},
		{Kind: store.BatchDelete, ID: "4"},
		{Kind: store.BatchRead, ID: "new"},
		{Kind: store.BatchPatch, ID: "new", Patch: []store.PatchOp{incrOp("/age", 41)}},
	}
	res, err := c.ExecuteBatch(ctx, db, "k", ops)
	require.NoError(t, err)
	require.Len(t, res, 5)
	assert.Contains(t, string(res[4].Document.Body), `"age":42`, "the patch sees the create")
	assert.Equal(t, "new", res[3].Document.ID)
	l, _ := ring(t, 3).ResolveForCreate("k")
	info, err := st.CollectionInfo(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, int64(10), info.Documents, "ten: one created, one deleted")

	// A failing operation: nothing written.
	_, err = c.ExecuteBatch(ctx, db, "k", []store.BatchOp{
		{Kind: store.BatchUpsert, Doc: userDoc("x", "k", 1)},
		{Kind: store.BatchCreate, Doc: userDoc("new", "k", 2)},
	})
	var be *store.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 1, be.Index)
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = c.Read(ctx, db, "x", "k")
	require.ErrorIs(t, err, store.ErrNotFound, "all or nothing")

	// Mixed keys.
	_, err = c.ExecuteBatch(ctx, db, "k", []store.BatchOp{
		{Kind: store.BatchUpsert, Doc: userDoc("y", "k", 1)},
		{Kind: store.BatchCreate, Doc: userDoc("z", "other", 2)},
	})
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 1, be.Index)
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), `"z"`)
	assert.Contains(t, err.Error(), `"other"`, "names the document's key (the store's check: one key path)")
	_, err = c.Read(ctx, db, "y", "k")
	require.ErrorIs(t, err, store.ErrNotFound, "nothing sent")

	_, err = c.ExecuteBatch(ctx, db, "k", nil)
	require.ErrorIs(t, err, store.ErrBadRequest, "an empty batch is the store's to refuse")
	_, err = c.ExecuteBatch(ctx, db, nil, ops)
	require.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	plain := router.New(bare{st}, nil)
	require.NoError(t, plain.Register(db, ring(t, 3)))
	_, err = plain.ExecuteBatch(ctx, db, "k", ops)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	assert.Contains(t, err.Error(), "not a store.Batcher")
}

// TestReadManyRouted: items over several collections are answered in the
// caller's order, missing ones reported as not found; through a store
// without ManyReader too (point reads).
func TestReadManyRouted(t *testing.T) {
	st := newMem(t)
	c := setup(t, 4, st, nil)
	addUsers(t, c, 40, func(i int) string { return fmt.Sprint("u", i%9) })
	plain := router.New(bare{st}, nil)
	require.NoError(t, plain.Register(db, ring(t, 4)))
	items := []router.ReadItem{{ID: "39", Key: "u3"}, {ID: "0", Key: "u0"}, {ID: "1", Key: "u0"}, {ID: "nope", Key: "u2"}, {ID: "17", Key: "u8"}, {ID: "0", Key: "u0"}}
	for name, cl := range map[string]*router.Client{"ManyReader": c, "point reads": plain} {
		res, err := cl.ReadMany(ctx, db, items)
		require.NoError(t, err, name)
		require.Len(t, res, len(items))
		for i, it := range items {
			d, err := c.Read(ctx, db, it.ID, it.Key)
			if errors.Is(err, store.ErrNotFound) {
				assert.False(t, res[i].Found, "%s: item %d", name, i)
				assert.Nil(t, res[i].Document)
				continue
			}
			require.NoError(t, err)
			require.True(t, res[i].Found, "%s: item %d", name, i)
			assert.Equal(t, d.ETag, res[i].Document.ETag, "%s: item %d", name, i)
		}
		res, err = cl.ReadMany(ctx, db, nil)
		require.NoError(t, err)
		assert.Empty(t, res)
		_, err = cl.ReadMany(ctx, db, []router.ReadItem{{ID: "0", Key: "u0"}, {ID: "1"}})
		require.ErrorIs(t, err, resolver.ErrNoPartitionKey, name)
		assert.Contains(t, err.Error(), "item 1")
	}
}

// TestBatchKeyOfCompositeDocuments: a routed batch under a composite key
// refuses a document that carries another key, with nothing written, in
// collections partitioned by the key's first path too, whose own check
// sees the first part alone (the router reads each document's key there);
// a document of the right key in the same batch is not written either.
func TestBatchKeyOfCompositeDocuments(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template *store.CollectionSpec
	}{
		{"hierarchical collections", nil},
		{"collections partitioned by the first path", &store.CollectionSpec{PartitionKeyPath: "/tenant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newMem(t)
			r, err := resolver.Unmarshal([]byte(compositeRing))
			require.NoError(t, err)
			c := router.New(st, nil)
			require.NoError(t, c.Register(db, r))
			_, err = c.EnsureCollections(ctx, db, tc.template)
			require.NoError(t, err)

			key := partitionkey.CompositeKey{"t1", "u1"}
			_, err = c.ExecuteBatch(ctx, db, key, []store.BatchOp{
				{Kind: store.BatchUpsert, Doc: []byte(`{"id":"a","tenant":"t1","userId":"u1"}`)},
				{Kind: store.BatchUpsert, Doc: []byte(`{"id":"b","tenant":"t1","userId":"u2"}`)},
			})
			var be *store.BatchError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, 1, be.Index)
			require.ErrorIs(t, err, store.ErrBadRequest)
			assert.Contains(t, err.Error(), `"b"`)
			for id, k := range map[string]partitionkey.CompositeKey{"a": key, "b": {"t1", "u2"}} {
				_, err = c.Read(ctx, db, id, k)
				require.ErrorIs(t, err, store.ErrNotFound, "%s: nothing written", id)
			}

			res, err := c.ExecuteBatch(ctx, db, key, []store.BatchOp{
				{Kind: store.BatchUpsert, Doc: []byte(`{"id":"a","tenant":"t1","userId":"u1"}`)},
			})
			require.NoError(t, err)
			require.Len(t, res, 1)
			_, err = c.Read(ctx, db, "a", key)
			require.NoError(t, err)
		})
	}
}
