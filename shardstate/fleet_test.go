package shardstate_test

import (
	"context"
	"testing"

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
