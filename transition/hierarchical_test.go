package transition_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

func compositeRing(t *testing.T, n int) resolver.Resolver {
	t.Helper()
	ls := ""
	for i := range n {
		if i > 0 {
			ls += ","
		}
		ls += fmt.Sprintf(`"dbs/app/colls/h%d"`, i)
	}
	r, err := resolver.Unmarshal(fmt.Appendf(nil, `{"kind":"hash","partitionKey":["/tenant","/userId"],"collections":[%s]}`, ls))
	require.NoError(t, err)
	return r
}

// TestReshardCompositeKey: a resolver whose key has two paths reshards
// from 2 collections (one partitioned by its first path, made before
// hierarchical collections, one hierarchical) to 3 (the new one
// hierarchical): the moves read, write and delete each document under the
// key its collections take, and afterwards every document is once where
// the next resolver puts it, under its full key where the collection is
// hierarchical, and reads through the router find it.
func TestReshardCompositeKey(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.CreateCollection(ctx, "dbs/app/colls/h0", &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: compositeRing(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	created, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/h1"}, created)

	type member struct {
		ID     string `json:"id"`
		Tenant string `json:"tenant"`
		UserID string `json:"userId"`
	}
	var docs []member
	for i := range 300 {
		d := member{ID: fmt.Sprint("m", i%100), Tenant: fmt.Sprint("t", i%3), UserID: fmt.Sprint("u", i)}
		_, err := c.Create(ctx, db, d, nil)
		require.NoError(t, err)
		docs = append(docs, d)
	}

	next := compositeRing(t, 3)
	_, err = transition.Reshard(ctx, st, db, next, &transition.ReshardOptions{Routers: &shardstate.WaitOptions{Poll: 10 * time.Millisecond}})
	require.NoError(t, err)
	info, err := st.CollectionInfo(ctx, "dbs/app/colls/h2")
	require.NoError(t, err)
	assert.True(t, info.Spec.Hierarchical(), "the new collection is hierarchical")

	total := 0
	for _, l := range []string{"dbs/app/colls/h0", "dbs/app/colls/h1", "dbs/app/colls/h2"} {
		rows, err := st.Query(ctx, l, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
		require.NoError(t, err)
		var n int
		_, err = fmt.Sscan(string(rows.Items[0]), &n)
		require.NoError(t, err)
		total += n
	}
	assert.Equal(t, len(docs), total, "each document once")
	rep, err := transition.Verify(ctx, st, db, next)
	require.NoError(t, err)
	assert.Equal(t, int64(len(docs)), rep.Documents)
	assert.Empty(t, rep.Duplicates, "one id under several full keys is no duplicate")
	assert.Empty(t, rep.Misplaced)
	for _, d := range docs {
		k := partitionkey.CompositeKey{d.Tenant, d.UserID}
		l, err := next.ResolveForCreate(k)
		require.NoError(t, err)
		var sk any = k
		if l == "dbs/app/colls/h0" {
			sk = d.Tenant
		}
		_, err = st.Read(ctx, l, d.ID, &store.ReadOptions{PartitionKey: sk})
		require.NoError(t, err, "%s under %v in %s", d.ID, k, l)
		_, err = c.Read(ctx, db, d.ID, k)
		require.NoError(t, err)
	}
}
