package router_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

const compositeRing = `{"kind":"hash","partitionKey":["/tenant","/userId"],"collections":["dbs/app/colls/h0","dbs/app/colls/h1","dbs/app/colls/h2"]}`

type member struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	UserID string `json:"userId"`
	N      int    `json:"n"`
}

// TestCompositeResolverUsesHierarchicalCollections: a resolver whose
// partitionKey lists two paths gets MultiHash collections from
// EnsureCollections, and the router hands the store the whole key: ids
// are unique per full key, point operations and queries (full key and
// prefix) find the documents, over the embedded store and over serve.
func TestCompositeResolverUsesHierarchicalCollections(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"memstore": func(t *testing.T) store.Store { return newMem(t) },
		"serve": func(t *testing.T) store.Store {
			_, st := emulatortest.StartBackend(emulatortest.Context(t), t)
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			r, err := resolver.Unmarshal([]byte(compositeRing))
			require.NoError(t, err)
			c := router.New(st, nil)
			require.NoError(t, c.Register(db, r))
			created, err := c.EnsureCollections(ctx, db, nil)
			require.NoError(t, err)
			require.Len(t, created, 3)
			for _, l := range created {
				info, err := st.CollectionInfo(ctx, l)
				require.NoError(t, err)
				assert.Equal(t, []string{"/tenant", "/userId"}, info.Spec.KeyPaths(), l)
			}

			// One id under two full keys of one tenant: two documents.
			var docs []member
			for i := range 12 {
				docs = append(docs, member{ID: fmt.Sprint("m", i%6), Tenant: fmt.Sprint("t", i%2), UserID: fmt.Sprint("u", i), N: i})
			}
			for _, d := range docs {
				_, err := c.Create(ctx, db, d, nil)
				require.NoError(t, err, d)
			}
			key := func(d member) partitionkey.CompositeKey { return partitionkey.CompositeKey{d.Tenant, d.UserID} }
			for _, d := range docs {
				got, err := c.Read(ctx, db, d.ID, key(d))
				require.NoError(t, err, d)
				var m member
				require.NoError(t, json.Unmarshal(got.Body, &m))
				assert.Equal(t, d, m)
				// The store holds it under the full key where the ring puts it.
				l, err := r.ResolveForCreate(key(d))
				require.NoError(t, err)
				_, err = st.Read(ctx, l, d.ID, &store.ReadOptions{PartitionKey: key(d)})
				require.NoError(t, err, "%s in %s under %v", d.ID, l, key(d))
			}

			ids := func(k any) []string {
				t.Helper()
				rows, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE c.userId FROM c"}, &router.QueryOptions{PartitionKey: k})
				require.NoError(t, err, k)
				var out []string
				for _, row := range rows {
					var s string
					require.NoError(t, json.Unmarshal(row, &s))
					out = append(out, s)
				}
				sort.Strings(out)
				return out
			}
			assert.Equal(t, []string{"u3"}, ids(partitionkey.CompositeKey{"t1", "u3"}), "full key")
			assert.Equal(t, []string{"u1", "u11", "u3", "u5", "u7", "u9"}, ids(partitionkey.CompositeKey{"t1"}), "prefix")
			assert.Equal(t, []string{"u1", "u11", "u3", "u5", "u7", "u9"}, ids("t1"), "prefix as a scalar")
			assert.Len(t, ids(nil), 12, "no key")

			// Replace in place, then with a new user (a move between full keys).
			d := docs[3]
			d.N = 100
			_, err = c.Replace(ctx, db, d.ID, d, nil)
			require.NoError(t, err)
			moved := d
			moved.UserID = "u99"
			_, err = c.Replace(ctx, db, d.ID, moved, &router.ReplaceOptions{OldKey: key(d)})
			require.NoError(t, err)
			_, err = c.Read(ctx, db, d.ID, key(d))
			require.ErrorIs(t, err, store.ErrNotFound)
			got, err := c.Read(ctx, db, d.ID, key(moved))
			require.NoError(t, err)
			var m member
			require.NoError(t, json.Unmarshal(got.Body, &m))
			assert.Equal(t, moved, m)

			// Delete under the full key removes that document only.
			require.NoError(t, c.Delete(ctx, db, moved.ID, key(moved), nil))
			_, err = c.Read(ctx, db, moved.ID, key(moved))
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = c.Read(ctx, db, docs[9].ID, key(docs[9])) // same id "m3", another key
			require.NoError(t, err)
			assert.Len(t, ids(nil), 11)
		})
	}
}

// TestCompositeResolverKeepsFirstPathCollections: collections a composite
// resolver made before hierarchical collections (partitioned by its first
// path) stay valid: EnsureCollections accepts them, and the router hands
// them the first part of the key, as before.
func TestCompositeResolverKeepsFirstPathCollections(t *testing.T) {
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	r, err := resolver.Unmarshal([]byte(compositeRing))
	require.NoError(t, err)
	for _, l := range []string{"dbs/app/colls/h0", "dbs/app/colls/h1"} {
		require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	}
	c := router.New(st, nil)
	require.NoError(t, c.Register(db, r))
	created, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/h2"}, created)
	info, err := st.CollectionInfo(ctx, "dbs/app/colls/h2")
	require.NoError(t, err)
	assert.True(t, info.Spec.Hierarchical())

	for i := range 12 {
		d := member{ID: fmt.Sprint("m", i), Tenant: fmt.Sprint("t", i%2), UserID: fmt.Sprint("u", i), N: i}
		k := partitionkey.CompositeKey{d.Tenant, d.UserID}
		_, err := c.Create(ctx, db, d, nil)
		require.NoError(t, err)
		_, err = c.Read(ctx, db, d.ID, k)
		require.NoError(t, err)
		l, err := r.ResolveForCreate(k)
		require.NoError(t, err)
		var sk any = k
		if l != "dbs/app/colls/h2" {
			sk = d.Tenant
		}
		_, err = st.Read(ctx, l, d.ID, &store.ReadOptions{PartitionKey: sk})
		require.NoError(t, err, "%s in %s under %v", d.ID, l, sk)
		d.N = -1
		_, err = c.Replace(ctx, db, d.ID, d, nil)
		require.NoError(t, err)
	}
	rows, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, &router.QueryOptions{PartitionKey: "t1"})
	require.NoError(t, err)
	assert.JSONEq(t, `[6]`, string(mustJSON(t, rows)))
	require.NoError(t, c.Delete(ctx, db, "m1", partitionkey.CompositeKey{"t1", "u1"}, nil))

	// A template naming the first path creates first-path collections, and
	// accepts the hierarchical one too.
	require.NoError(t, st.DeleteCollection(ctx, "dbs/app/colls/h1"))
	created, err = c.EnsureCollections(ctx, db, &store.CollectionSpec{PartitionKeyPath: "/tenant"})
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/h1"}, created)
	info, err = st.CollectionInfo(ctx, "dbs/app/colls/h1")
	require.NoError(t, err)
	assert.Equal(t, []string{"/tenant"}, info.Spec.KeyPaths())

	// Another path is still refused.
	_, err = c.EnsureCollections(ctx, db, &store.CollectionSpec{PartitionKeyPath: "/userId"})
	var kpe *store.KeyPathError
	require.ErrorAs(t, err, &kpe)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
