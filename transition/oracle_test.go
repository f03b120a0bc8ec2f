package transition_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

func ringBy(t testing.TB, path string, n int) resolver.Resolver {
	links := make([]string, n)
	for i := range links {
		links[i] = "dbs/app/colls/c" + string(rune('0'+i))
	}
	r, err := hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef(path)})
	require.NoError(t, err)
	return r
}

// TestOracleAtEveryStep: with writers paused at each step of a reshard
// (2 -> 3, then 3 -> 2), the oracle corpus's queries answer through a
// router following the state exactly as one collection holding every
// document does.
func TestOracleAtEveryStep(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	docs := routertest.GenerateDocs(rand.New(rand.NewPCG(8, 8)), 400)
	ref := "dbs/ref/colls/all"
	require.NoError(t, st.CreateCollection(ctx, ref, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	refClient := router.New(st, nil)
	one, err := hashring.New([]string{ref}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
	require.NoError(t, err)
	require.NoError(t, refClient.Register("dbs/ref", one))
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ringBy(t, "/pk", 2), PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	defer f.Close()
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	for _, d := range docs {
		_, err := c.Create(ctx, db, d, nil)
		require.NoError(t, err)
		_, err = refClient.Create(ctx, "dbs/ref", d, nil)
		require.NoError(t, err)
	}
	queries := routertest.DeterminedCorpus()
	checked := 0
	check := func(step string) error {
		require.NoError(t, f.Refresh(ctx))
		for _, text := range queries {
			q := store.Query{Text: text, Parameters: routertest.CorpusParams}
			want, err := refClient.Query(ctx, "dbs/ref", q, nil)
			require.NoError(t, err)
			got, err := c.Query(ctx, db, q, &router.QueryOptions{PageSize: 11})
			require.NoError(t, err, "%s at %s", text, step)
			same, w, g, err := routertest.SameAnswer(text, want, got)
			require.NoError(t, err)
			assert.True(t, same, "%s at step %s (version %d):\nwant %v\n got %v", text, step, f.Version(), w, g)
			checked++
		}
		return nil
	}
	for _, n := range []int{3, 2} {
		_, err := transition.Reshard(ctx, st, db, ringBy(t, "/pk", n), &transition.ReshardOptions{CheckpointEvery: 50, Step: check})
		require.NoError(t, err)
	}
	t.Logf("%d answers compared over 2 reshards", checked)
}
