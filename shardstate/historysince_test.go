package shardstate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store/memstore"
)

// TestHistorySinceAndETag: HistorySince returns the versions after the
// one given, the current last; ETag is the current document's ETag, as
// Load reads it; both say ErrNoState for a database without a state.
func TestHistorySinceAndETag(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	_, err := shardstate.ETag(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoState)
	_, err = shardstate.HistorySince(ctx, st, db, 0)
	require.ErrorIs(t, err, shardstate.ErrNoState)

	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	for _, n := range []int{3, 4} {
		s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, n), NewEpoch: true})
		require.NoError(t, err)
	}
	versions := func(after int64) []int64 {
		h, err := shardstate.HistorySince(ctx, st, db, after)
		require.NoError(t, err)
		var out []int64
		for _, x := range h {
			out = append(out, x.Version)
		}
		return out
	}
	assert.Equal(t, []int64{1, 2, 3}, versions(0))
	assert.Equal(t, []int64{2, 3}, versions(1))
	assert.Equal(t, []int64{3}, versions(2))
	assert.Equal(t, []int64{3}, versions(3))
	etag, err := shardstate.ETag(ctx, st, db)
	require.NoError(t, err)
	cur, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, cur.ETag, etag)
	assert.Equal(t, s.ETag, etag)
}
