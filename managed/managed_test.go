package managed_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/managed"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/resolver/resolvertest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

const db = "dbs/app"

func TestDecode(t *testing.T) {
	for _, tc := range []struct{ name, json, field string }{
		{"count 0", `{"kind":"managed","partitionKey":"/u","database":"dbs/app","collectionPrefix":"u","count":0}`, "count"},
		{"no count", `{"kind":"managed","partitionKey":"/u","database":"dbs/app","collectionPrefix":"u"}`, "count"},
		{"no prefix", `{"kind":"managed","partitionKey":"/u","database":"dbs/app","count":2}`, "collectionPrefix"},
		{"bad database", `{"kind":"managed","partitionKey":"/u","database":"app","collectionPrefix":"u","count":2}`, "database"},
		{"template path", `{"kind":"managed","partitionKey":"/u","database":"dbs/app","collectionPrefix":"u","count":2,"template":{"partitionKeyPath":"/v"}}`, "template.partitionKeyPath"},
		{"unknown field", `{"kind":"managed","partitionKey":"/u","database":"dbs/app","collectionPrefix":"u","count":2,"links":[]}`, "links"},
		{"bad hash", `{"kind":"managed","partitionKey":"/u","database":"dbs/app","collectionPrefix":"u","count":2,"hash":"sha7"}`, "hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			resolvertest.ConfigError(t, err, tc.field, "")
		})
	}
	text := `{"kind":"managed","partitionKey":"/userId","database":"dbs/app","collectionPrefix":"u","count":3,"virtualNodes":32,"hash":"xxhash","template":{"defaultTtl":3600}}`
	r, err := resolver.Unmarshal([]byte(text))
	require.NoError(t, err)
	out, err := resolver.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, text, string(out))
	// It places keys as the hash resolver over the same links.
	ring, err := hashring.New([]string{"dbs/app/colls/u0", "dbs/app/colls/u1", "dbs/app/colls/u2"},
		&hashring.Options{PartitionKey: resolver.MustKeyDef("/userId"), VirtualNodes: 32, Hash: "xxhash"})
	require.NoError(t, err)
	for i := range 200 {
		k := fmt.Sprint("key", i)
		a, _ := r.ResolveForCreate(k)
		b, _ := ring.ResolveForCreate(k)
		require.Equal(t, b, a, k)
	}
}

// TestResize: collections are created from the template on start; growing
// 2 → 3 under a writer goes through the transition manager; every document
// is once where the ring puts it, and the new collection has the template.
func TestResize(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	ttl := 3600
	r, err := managed.New(db, "u", 2, &managed.Options{PartitionKey: resolver.MustKeyDef("/userId"), Template: &store.CollectionSpec{DefaultTTL: &ttl}})
	require.NoError(t, err)
	created, err := managed.Ensure(ctx, st, r)
	require.NoError(t, err)
	assert.Equal(t, []string{db + "/colls/u0", db + "/colls/u1"}, created)
	created, err = managed.Ensure(ctx, st, r)
	require.NoError(t, err)
	assert.Empty(t, created, "ensure again creates nothing")

	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: r, PollInterval: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	defer f.Close()
	for i := range 300 {
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i), "userId": fmt.Sprint("u", i%40)}, nil)
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	written := 300
	wg.Go(func() {
		for i := 300; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i), "userId": fmt.Sprint("u", i%40)}, nil)
			if !assert.NoError(t, err) {
				return
			}
			written = i + 1
			time.Sleep(time.Millisecond)
		}
	})
	_, err = managed.Resize(ctx, st, db, 3, &transition.ReshardOptions{Routers: &shardstate.WaitOptions{Margin: 50 * time.Millisecond}})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	cur, err := managed.Current(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, 3, cur.Count())
	rep, err := transition.Verify(ctx, st, db, cur)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%+v", rep)
	assert.EqualValues(t, written, rep.Documents)
	info, err := st.CollectionInfo(ctx, db+"/colls/u2")
	require.NoError(t, err)
	require.NotNil(t, info.Spec.DefaultTTL)
	assert.Equal(t, 3600, *info.Spec.DefaultTTL)
	assert.Equal(t, "/userId", info.Spec.PartitionKeyPath)

	// Resize to the count in force does nothing.
	_, err = managed.Resize(ctx, st, db, 3, nil)
	require.NoError(t, err)
	// Another kind of resolver is refused.
	st2 := memstore.New(nil)
	ring, _ := hashring.New([]string{db + "/colls/a"}, nil)
	_, err = shardstate.Init(ctx, st2, db, ring, nil)
	require.NoError(t, err)
	_, err = managed.Resize(ctx, st2, db, 2, nil)
	assert.ErrorIs(t, err, managed.ErrNotManaged)
}

// TestEnsureConflict: a collection that exists partitioned by another path
// is the one error of the conflict rule (store.EnsureCollections), and the
// old sentinel still matches; the same path spelt another way is none.
func TestEnsureConflict(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	r, err := managed.New(db, "u", 2, &managed.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/u0", &store.CollectionSpec{PartitionKeyPath: `/"userId"`}))
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/u1", &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	_, err = managed.Ensure(ctx, st, r)
	var kpe *store.KeyPathError
	require.ErrorAs(t, err, &kpe)
	assert.Equal(t, store.KeyPathError{Collection: db + "/colls/u1", Want: "/userId", Found: "/tenant"}, *kpe)
	assert.ErrorIs(t, err, managed.ErrPartitionKeyPath)
	assert.ErrorIs(t, err, router.ErrKeyPathMismatch)
}
