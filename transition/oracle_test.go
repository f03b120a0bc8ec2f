package transition_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/spillover"
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
	c, f := followEnsured(ctx, t, st, &router.FollowOptions{Seed: ringBy(t, "/pk", 2), PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	defer f.Close()
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

// TestVerifySpillover: a document is in place in any collection its
// resolver reads its key from; a spillover reads every one of its
// collections, so documents in sealed collections are in place, and only
// one in a collection it does not name is misplaced (with Want the newest,
// where it would be written).
func TestVerifySpillover(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	r, err := spillover.New([]string{db + "/colls/log0", db + "/colls/log1"},
		&spillover.Options{PartitionKey: resolver.MustKeyDef("/id"), CollectionPrefix: "log", MaxDocuments: 10})
	require.NoError(t, err)
	for _, l := range []string{"log0", "log1", "other"} {
		require.NoError(t, st.CreateCollection(ctx, db+"/colls/"+l, nil))
		_, err := st.Create(ctx, db+"/colls/"+l, []byte(`{"id":"in-`+l+`"}`), nil)
		require.NoError(t, err)
	}
	rep, err := transition.Verify(ctx, st, db, r)
	require.NoError(t, err)
	assert.Equal(t, int64(3), rep.Documents)
	assert.Empty(t, rep.Duplicates)
	require.Len(t, rep.Misplaced, 1)
	assert.Equal(t, transition.Finding{ID: "in-other", Key: `"in-other"`, Collection: db + "/colls/other", Want: db + "/colls/log1"}, rep.Misplaced[0])
}

// TestReshardOnCosmium: a small reshard (2 -> 3, 300 documents, no writers)
// through the cosmos backend against cosmium, the independent emulator. Its
// gaps shape what this can show: it has no change feed (the catch-up runs by
// _ts), ignores If-Match (the conditional deletes of the cleanup and the
// state's compare-and-swap are not checked: one manager, no writers), and
// its query engine is loose (the backend evaluates queries itself). Under
// those limits every document ends once where the new ring puts it.
func TestReshardOnCosmium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cosmium")
	}
	srv := cosmostest.Shared(t)
	t.Cleanup(cosmostest.StopShared)
	ctx := context.Background()
	st, err := cosmos.New(cosmostest.Context(t), &cosmos.Options{
		Account:    cosmos.Account{Endpoint: srv.Endpoint, Key: cosmostest.Key},
		HTTPClient: srv.HTTPClient(),
		QueryMode:  cosmos.QueryLocal,
	})
	require.NoError(t, err)
	defer st.Close()
	c, f := followEnsured(ctx, t, st, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
	defer f.Close()
	l := newLedger()
	for i := range 300 {
		id, key := fmt.Sprintf("d%d", i), fmt.Sprintf("u%d", i)
		_, err := c.Create(ctx, db, doc{ID: id, UserID: key, V: 1}, nil)
		require.NoError(t, err)
		l.set(id, key, 1)
	}
	p, err := transition.Reshard(ctx, st, db, ring(t, 3), nil)
	require.NoError(t, err)
	assert.Positive(t, p.Copied)
	// cosmium answers 400 to the container listing azcosmos sends: name them.
	checkPlacedIn(t, st, []string{"dbs/app/colls/c0", "dbs/app/colls/c1", "dbs/app/colls/c2"}, ring(t, 3), l)
}

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
