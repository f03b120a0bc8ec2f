package shardstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// TestNewEpochAboveFence: a state whose epoch fell below the store's fence
// (every write stamped with it is refused) is restored by one change with
// a new epoch: the epoch lands above the fence, not one above the old
// epoch, so the writes it stamps go through.
func TestNewEpochAboveFence(t *testing.T) { stores(t, testNewEpochAboveFence) }

func testNewEpochAboveFence(t *testing.T, st store.Store) {
	ctx := context.Background()
	s1, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	f := st.(store.Fencer)
	_, err = f.RaiseFence(ctx, db, 7)
	require.NoError(t, err)
	require.NoError(t, st.CreateCollection(ctx, "dbs/app/colls/c0", &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	_, err = st.Create(ctx, "dbs/app/colls/c0", []byte(`{"id":"a","userId":"a"}`), &store.WriteOptions{PartitionKey: "a", Epoch: s1.Epoch})
	require.ErrorIs(t, err, store.ErrFenced, "the state's epoch is below the fence: writes are wedged")

	s2, err := shardstate.Publish(ctx, st, s1, shardstate.Change{Resolver: ring(t, 3), NewEpoch: true})
	require.NoError(t, err)
	assert.Equal(t, int64(2), s2.Version, "the version still grows by one")
	assert.Equal(t, int64(8), s2.Epoch, "above every epoch the fence says was in use")
	fence, err := f.Fence(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, int64(8), fence)
	_, err = st.Create(ctx, "dbs/app/colls/c0", []byte(`{"id":"a","userId":"a"}`), &store.WriteOptions{PartitionKey: "a", Epoch: s2.Epoch})
	require.NoError(t, err, "one change unwedged the writes")

	got, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err, "a state whose epoch is above its version loads")
	assert.Equal(t, int64(8), got.Epoch)

	// A new epoch over an unwedged state is one above the last, as before.
	s3, err := shardstate.Publish(ctx, st, got, shardstate.Change{NewEpoch: true})
	require.NoError(t, err)
	assert.Equal(t, int64(9), s3.Epoch)
}

// TestMissingStateNotReseeded: a state document deleted while a fleet uses
// the database (a router's lease, the history, a raised fence) is not
// created again by Init (or LoadOrInit's seed): that would fork the
// placement. Restore puts it back above everything the fleet saw.
func TestMissingStateNotReseeded(t *testing.T) { stores(t, testMissingStateNotReseeded) }

func testMissingStateNotReseeded(t *testing.T, st store.Store) {
	ctx := context.Background()
	require.NoError(t, shardstate.InUse(ctx, st, db), "a new database")
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, 3), NewEpoch: true})
	require.NoError(t, err)
	s, err = shardstate.Publish(ctx, st, s, shardstate.Change{NewEpoch: true})
	require.NoError(t, err)
	require.Equal(t, int64(3), s.Version)
	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "r1", Database: db, Version: 3, Epoch: 3, ValidFor: time.Minute})
	require.NoError(t, err)

	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, coll, "state", &store.WriteOptions{PartitionKey: "state"}))

	for name, reseed := range map[string]func() error{
		"Init":       func() error { _, err := shardstate.Init(ctx, st, db, ring(t, 2), nil); return err },
		"LoadOrInit": func() error { _, err := shardstate.LoadOrInit(ctx, st, db, ring(t, 2), nil); return err },
		"InUse":      func() error { return shardstate.InUse(ctx, st, db) },
	} {
		err := reseed()
		require.ErrorIs(t, err, shardstate.ErrInUse, name)
		require.ErrorIs(t, err, shardstate.ErrNoState, name)
		var ie *shardstate.InUseError
		require.ErrorAs(t, err, &ie, name)
		assert.Len(t, ie.Leases, 1)
		assert.Equal(t, int64(2), ie.History)
		assert.Equal(t, int64(3), ie.Fence)
		for _, want := range []string{"state document of dbs/app is missing", "r1 (version 3)", "history up to version 2", "fence at epoch 3", "docshard state set"} {
			assert.Contains(t, err.Error(), want, name)
		}
	}
	_, err = shardstate.Load(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoState, "nothing was reseeded")

	r, err := shardstate.Restore(ctx, st, db, ring(t, 3), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(4), r.Version, "one above the lost version 3")
	assert.Equal(t, int64(4), r.Epoch, "above the fence")
	fence, err := st.(store.Fencer).Fence(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, int64(4), fence, "routers that read the lost version are fenced")
	_, err = shardstate.Restore(ctx, st, db, ring(t, 3), nil)
	var ce *shardstate.ConflictError
	require.ErrorAs(t, err, &ce, "a state that exists is not restored over")
	assert.Equal(t, int64(4), ce.Current.Version)
}
