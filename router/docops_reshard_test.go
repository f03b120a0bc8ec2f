package router_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

// TestPatchAndBatchWaitForSwitch: while a reshard's cutover freezes a
// moving key, a patch and a batch on it wait for the switch and then land
// in the new placement (where the copy is), never on the old copy; a key
// that stays is patched at once.
func TestPatchAndBatchWaitForSwitch(t *testing.T) {
	st, c, f, cur, next := cutover(t, 5*time.Second)
	moving, staying := movingKey(t, cur, next), stayingKey(t, cur, next)
	for _, k := range []string{moving, staying} {
		_, err := c.Create(ctx, db, userDoc("a", k, 1), nil)
		require.NoError(t, err)
	}
	src, _ := cur.ResolveForCreate(moving)
	dst, _ := next.ResolveForCreate(moving)

	frozen, switched := frozenAndSwitched(t, cur, next)
	publishChange(t, st, shardstate.Change{Resolver: frozen, NewEpoch: true})
	require.NoError(t, f.Refresh(ctx))

	_, err := c.Patch(ctx, db, "a", staying, []store.PatchOp{incrOp("/age", 1)}, nil)
	require.NoError(t, err, "a key that stays is not held")

	patched := make(chan error, 1)
	batched := make(chan error, 1)
	go func() {
		_, err := c.Patch(ctx, db, "a", moving, []store.PatchOp{incrOp("/age", 10)}, nil)
		patched <- err
	}()
	go func() {
		_, err := c.ExecuteBatch(ctx, db, moving, []store.BatchOp{{Kind: store.BatchCreate, Doc: userDoc("b", moving, 1)}, {Kind: store.BatchRead, ID: "a"}})
		batched <- err
	}()
	select {
	case err := <-patched:
		t.Fatalf("the patch of a frozen key did not wait: %v", err)
	case err := <-batched:
		t.Fatalf("the batch of a frozen key did not wait: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	// The reshard's copy, then the switch.
	d, err := st.Read(ctx, src, "a", &store.ReadOptions{PartitionKey: moving})
	require.NoError(t, err)
	_, err = st.Create(ctx, dst, d.Body, nil)
	require.NoError(t, err)
	publishChange(t, st, shardstate.Change{Resolver: switched, NewEpoch: true})
	for _, ch := range []chan error{patched, batched} {
		select {
		case err := <-ch:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting call did not go on after the switch")
		}
	}
	got, err := st.Read(ctx, dst, "a", &store.ReadOptions{PartitionKey: moving})
	require.NoError(t, err)
	assert.Contains(t, string(got.Body), `"age":11`, "patched in the new placement")
	old, err := st.Read(ctx, src, "a", &store.ReadOptions{PartitionKey: moving})
	require.NoError(t, err)
	assert.Equal(t, d.ETag, old.ETag, "the old copy is untouched")
	_, err = st.Read(ctx, dst, "b", &store.ReadOptions{PartitionKey: moving})
	require.NoError(t, err, "the batch ran in the new placement")
	_, err = st.Read(ctx, src, "b", &store.ReadOptions{PartitionKey: moving})
	require.ErrorIs(t, err, store.ErrNotFound, "and nothing of it in the old one")
}

// TestPatchUnderReadBoth: under a transition that reads both placements
// and writes the next, a patch of a document still in the current
// placement moves it, patched, to the next (as Replace would), and
// reads find it there once; a batch on the moving key is refused with
// resolver.ErrMoving rather than split; read-many reads either placement.
func TestPatchUnderReadBoth(t *testing.T) {
	st := newMem(t)
	cur, next := ring(t, 2), ring(t, 3)
	key, src, dst := moving(t, st, 3, "/userId", cur, next)
	old, err := st.Create(ctx, src, userDoc("a", key, 1), nil)
	require.NoError(t, err)
	c := router.New(st, nil)
	tr, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadBoth, WriteTo: transition.WriteNext})
	require.NoError(t, err)
	require.NoError(t, c.Register(db, tr))

	_, err = c.Patch(ctx, db, "a", key, []store.PatchOp{incrOp("/age", 1)}, &router.PatchOptions{IfMatch: `"stale"`})
	require.ErrorIs(t, err, store.ErrPreconditionFailed)
	_, err = c.Patch(ctx, db, "a", key, []store.PatchOp{setOp(t, "/userId", "zz")}, nil)
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Equal(t, 1, countDocs(t, st, "a"), "refused patches moved nothing")

	d, err := c.Patch(ctx, db, "a", key, []store.PatchOp{incrOp("/age", 4)}, &router.PatchOptions{IfMatch: old.ETag, Condition: "FROM c WHERE c.age = 1"})
	require.NoError(t, err)
	assert.Contains(t, string(d.Body), `"age":5`)
	_, err = st.Read(ctx, dst, "a", &store.ReadOptions{PartitionKey: key})
	require.NoError(t, err, "the patched document is where the key is written")
	_, err = st.Read(ctx, src, "a", &store.ReadOptions{PartitionKey: key})
	require.ErrorIs(t, err, store.ErrNotFound, "and no longer where it was")
	d, err = c.Patch(ctx, db, "a", key, []store.PatchOp{incrOp("/age", 1)}, nil)
	require.NoError(t, err, "a second patch finds it in place")
	assert.Contains(t, string(d.Body), `"age":6`)

	_, err = c.ExecuteBatch(ctx, db, key, []store.BatchOp{{Kind: store.BatchRead, ID: "a"}})
	require.ErrorIs(t, err, resolver.ErrMoving, "a batch is not split over two placements")
	_, err = st.Create(ctx, src, userDoc("b", key, 1), nil)
	require.NoError(t, err)
	res, err := c.ReadMany(ctx, db, []router.ReadItem{{ID: "b", Key: key}, {ID: "a", Key: key}, {ID: "c", Key: key}})
	require.NoError(t, err)
	assert.True(t, res[0].Found && res[1].Found && !res[2].Found)
}

// TestDocumentOpsDuringReshard: writers patch counters (increments) and
// run batches (a create and an increment) through a router following the
// state while the database is resharded 2 -> 3 -> 2; afterwards every
// counter holds exactly the increments that were acknowledged, every
// batch's documents are there, and each document is stored once.
func TestDocumentOpsDuringReshard(t *testing.T) {
	st := newMem(t)
	c := router.New(st, nil)
	follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	const counters = 40
	for i := range counters {
		_, err := c.Create(ctx, db, userDoc(fmt.Sprint("c", i), fmt.Sprint("k", i), 0), nil)
		require.NoError(t, err)
	}
	var acked [counters]atomic.Int64
	var batches sync.Map // id -> key of documents created by acknowledged batches
	var failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := rng.IntN(counters)
				id, key := fmt.Sprint("c", i), fmt.Sprint("k", i)
				if n%3 == 0 {
					nid := fmt.Sprintf("b%d-%d", w, n)
					_, err := c.ExecuteBatch(ctx, db, key, []store.BatchOp{{Kind: store.BatchCreate, Doc: userDoc(nid, key, 0)}, {Kind: store.BatchPatch, ID: id, Patch: []store.PatchOp{incrOp("/age", 1)}}})
					if err == nil {
						acked[i].Add(1)
						batches.Store(nid, key)
					} else {
						failures.Add(1)
						t.Errorf("batch on %s: %v", key, err)
					}
					continue
				}
				if _, err := c.Patch(ctx, db, id, key, []store.PatchOp{incrOp("/age", 1)}, nil); err == nil {
					acked[i].Add(1)
				} else {
					failures.Add(1)
					t.Errorf("patch of %s: %v", id, err)
				}
			}
		})
	}
	for _, n := range []int{3, 2} {
		_, err := transition.Reshard(ctx, st, db, ring(t, n), &transition.ReshardOptions{CheckpointEvery: 20})
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	require.Zero(t, failures.Load())
	res := make([]router.ReadItem, counters)
	for i := range res {
		res[i] = router.ReadItem{ID: fmt.Sprint("c", i), Key: fmt.Sprint("k", i)}
	}
	got, err := c.ReadMany(ctx, db, res)
	require.NoError(t, err)
	total := int64(0)
	for i, r := range got {
		require.True(t, r.Found, "counter %d", i)
		var u user
		require.NoError(t, json.Unmarshal(r.Document.Body, &u))
		assert.Equal(t, acked[i].Load(), int64(u.Age), "counter %d holds every acknowledged increment, once", i)
		assert.Equal(t, 1, countDocs(t, st, res[i].ID), "counter %d is stored once", i)
		total += acked[i].Load()
	}
	nb := 0
	batches.Range(func(id, key any) bool {
		nb++
		_, err := c.Read(ctx, db, id.(string), key)
		assert.NoError(t, err, "batch document %s", id)
		return true
	})
	t.Logf("%d increments and %d batches acknowledged across 2 reshards", total, nb)
	require.Positive(t, total)
}
