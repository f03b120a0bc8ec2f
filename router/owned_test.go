package router_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

func ringOn(t testing.TB, n int) *hashring.Resolver {
	r, err := hashring.New(links(n), &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
	require.NoError(t, err)
	return r
}

// TestQueriesExactDuringTransition: while copies of moving documents sit in
// collections that belong to both placements, queries under a transition
// resolver answer exactly as one collection holding every document once:
// before the switch (read mode current: copies on their way in are
// skipped) and after it (read mode next: sources left behind are skipped).
// Read mode both, which does not filter, double-counts: the test would
// notice a filter that did nothing.
func TestQueriesExactDuringTransition(t *testing.T) {
	docs := routertest.GenerateDocs(rand.New(rand.NewPCG(7, 7)), 300)
	for _, tc := range []struct {
		name     string
		from, to int
	}{
		{"grow 2 to 3", 2, 3},   // sources keep collections that are in both placements
		{"shrink 3 to 2", 3, 2}, // copies land in collections of both placements
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newMem(t)
			cur, next := ringOn(t, tc.from), ringOn(t, tc.to)
			ref := "dbs/ref/colls/all"
			require.NoError(t, st.CreateCollection(ctx, ref, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
			for _, l := range links(max(tc.from, tc.to)) {
				require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
			}
			moved := 0
			for _, d := range docs {
				body, err := json.Marshal(d)
				require.NoError(t, err)
				_, err = st.Create(ctx, ref, body, nil)
				require.NoError(t, err)
				src, err := cur.ResolveForCreate(d["pk"])
				require.NoError(t, err)
				_, err = st.Create(ctx, src, body, nil)
				require.NoError(t, err)
				if dst, _ := next.ResolveForCreate(d["pk"]); dst != src {
					_, err = st.Create(ctx, dst, body, nil) // the copy
					require.NoError(t, err)
					moved++
				}
			}
			require.Positive(t, moved)

			c := router.New(st, nil)
			refClient := router.New(st, nil)
			one, err := hashring.New([]string{ref}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
			require.NoError(t, err)
			require.NoError(t, refClient.Register("dbs/ref", one))
			check := func(mode string, wantExact bool) {
				tr, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: mode})
				require.NoError(t, err)
				require.NoError(t, c.Register(db, tr))
				differ := 0
				for _, text := range routertest.DeterminedCorpus() {
					q := store.Query{Text: text, Parameters: routertest.CorpusParams}
					want, err := refClient.Query(ctx, "dbs/ref", q, nil)
					require.NoError(t, err, text)
					for _, pageSize := range []int{0, 7} {
						got, err := c.Query(ctx, db, q, &router.QueryOptions{PageSize: pageSize})
						require.NoError(t, err, text)
						same, w, g, err := routertest.SameAnswer(text, want, got)
						require.NoError(t, err)
						if wantExact {
							assert.True(t, same, "%s (read mode %s, page size %d):\nwant %v\n got %v", text, mode, pageSize, w, g)
						} else if !same {
							differ++
						}
					}
				}
				if !wantExact {
					assert.Positive(t, differ, "read mode %s reads copies twice", mode)
				}
			}
			check(transition.ReadCurrent, true)
			check(transition.ReadNext, true)
			check(transition.ReadBoth, false)
		})
	}
}

// TestDeleteDuringTransition: a moving key is deleted from both
// placements, so its copy cannot reappear; If-Match applies to the owner's
// copy.
func TestDeleteDuringTransition(t *testing.T) {
	st := newMem(t)
	cur, next := ringOn(t, 2), ringOn(t, 3)
	key, src, dst := moving(t, st, 3, "/pk", cur, next)
	c := router.New(st, nil)
	for _, mode := range []string{transition.ReadCurrent, transition.ReadNext} {
		tr, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: mode, WriteTo: mode})
		require.NoError(t, err)
		require.NoError(t, c.Register(db, tr))
		body := []byte(`{"id":"doc","pk":"` + key + `"}`)
		a, err := st.Create(ctx, src, body, nil)
		require.NoError(t, err)
		b, err := st.Create(ctx, dst, body, nil)
		require.NoError(t, err)
		owner := a
		if mode == transition.ReadNext {
			owner = b
		}
		stale := "\"stale\""
		require.ErrorIs(t, c.Delete(ctx, db, "doc", key, &router.WriteOptions{IfMatch: stale}), store.ErrPreconditionFailed, mode)
		require.Equal(t, 2, countDocs(t, st, "doc"), "nothing deleted")
		require.NoError(t, c.Delete(ctx, db, "doc", key, &router.WriteOptions{IfMatch: owner.ETag}), mode)
		for _, l := range []string{src, dst} {
			_, err := st.Read(ctx, l, "doc", &store.ReadOptions{PartitionKey: key})
			assert.ErrorIs(t, err, store.ErrNotFound, "%s: %s keeps no copy", mode, l)
		}
		require.ErrorIs(t, c.Delete(ctx, db, "doc", key, nil), store.ErrNotFound)
	}
}

// moving creates the collections of links(n) on st, keyed by pkPath, and
// returns a key that cur and next place apart, with its collection in
// each.
func moving(t *testing.T, st store.Store, n int, pkPath string, cur, next resolver.Resolver) (key, src, dst string) {
	createColls(t, st, n, pkPath)
	key = movingKey(t, cur, next)
	src, _ = cur.ResolveForCreate(key)
	dst, _ = next.ResolveForCreate(key)
	return key, src, dst
}

// TestPagerPlacedBeforeTransition: a query prepared by a plain ring and
// first run once the follower switched to a transition over the same
// collections (a reshard 4 -> 2 publishing its copy step) reads through
// the transition's owner filter, not the ring's plain view: a copy that
// landed in a collection of both placements is not counted.
func TestPagerPlacedBeforeTransition(t *testing.T) {
	st := newMem(t)
	cur, next := ringOn(t, 4), ringOn(t, 2)
	key, src, dst := moving(t, st, 4, "/pk", cur, next)
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: cur})
	body := []byte(`{"id":"doc","pk":"` + key + `"}`)
	_, err := c.Create(ctx, db, json.RawMessage(body), nil)
	require.NoError(t, err)

	p := c.NewQueryPager(db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	tr, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadCurrent, WriteTo: transition.WriteCurrent})
	require.NoError(t, err)
	publishChange(t, st, shardstate.Change{Resolver: tr, NewEpoch: true, By: "test"})
	require.NoError(t, f.Refresh(ctx))
	_, err = st.Create(ctx, dst, body, nil) // the copy, once every router acknowledged
	require.NoError(t, err)
	require.NotEqual(t, src, dst)

	page, err := p.NextPage(ctx)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.JSONEq(t, "1", string(page.Items[0]), "the copy in %s is not counted; its source in %s is", dst, src)
}
