package shardstate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store/memstore"
)

// TestHistoryBounded: the history keeps the last HistoryKept versions, so
// its partition does not grow without limit, and what reads its last
// version (InUse, Restore) still finds it.
func TestHistoryBounded(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	const extra = 25
	for range shardstate.HistoryKept + extra {
		s, err = shardstate.Publish(ctx, st, s, shardstate.Change{})
		require.NoError(t, err)
	}
	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, h, shardstate.HistoryKept+1, "the versions kept and the current one")
	assert.Equal(t, int64(extra+1), h[0].Version, "the oldest kept")
	assert.Equal(t, s.Version-1, h[len(h)-2].Version, "the last recorded")
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	info, err := st.CollectionInfo(ctx, coll)
	require.NoError(t, err)
	assert.LessOrEqual(t, info.Documents, int64(shardstate.HistoryKept+1), "the state document and the history kept")

	// The state document lost: the history's last version still shows the
	// fleet, and Restore goes above it.
	require.NoError(t, st.Delete(ctx, coll, "state", nil))
	require.ErrorIs(t, shardstate.InUse(ctx, st, db), shardstate.ErrInUse)
	r, err := shardstate.Restore(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	assert.Equal(t, s.Version+1, r.Version)
}
