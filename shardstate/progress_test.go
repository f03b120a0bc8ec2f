package shardstate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func TestProgress(t *testing.T) { stores(t, testProgress) }

// testProgress: the progress document is saved by compare-and-swap beside
// the state, and saving it is no version of the state; a save over a stale
// copy, or a second first save, is a *ProgressConflictError carrying the
// winner; a version's reason is kept in the state and its history.
func testProgress(t *testing.T, st store.Store) {
	ctx := context.Background()
	s1, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	_, err = shardstate.LoadProgress(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoProgress)

	p1, err := shardstate.SaveProgress(ctx, st, db, nil, shardstate.Progress{Change: "r1", Owner: "a", Body: json.RawMessage(`{"n":1}`), UpdatedBy: "a"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), p1.Seq)
	assert.NotEmpty(t, p1.ETag)
	p2, err := shardstate.SaveProgress(ctx, st, db, p1, shardstate.Progress{Change: "r1", Owner: "a", Body: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	assert.Equal(t, int64(2), p2.Seq)
	got, err := shardstate.LoadProgress(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, "r1", got.Change)
	assert.Equal(t, "a", got.Owner)
	assert.JSONEq(t, `{"n":2}`, string(got.Body))
	assert.Equal(t, p2.ETag, got.ETag)

	// Over a stale copy, and a second first save: refused, with the winner.
	for _, prev := range []*shardstate.Progress{p1, nil} {
		_, err = shardstate.SaveProgress(ctx, st, db, prev, shardstate.Progress{Change: "r1", Owner: "b", Body: json.RawMessage(`{}`)})
		var ce *shardstate.ProgressConflictError
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, shardstate.ErrConflict)
		require.NotNil(t, ce.Current)
		assert.Equal(t, int64(2), ce.Current.Seq)
		assert.Equal(t, "a", ce.Current.Owner)
	}

	now, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, s1.Version, now.Version, "saving progress is no version of the state")

	// Removed only while it is the copy given.
	require.NoError(t, shardstate.DeleteProgress(ctx, st, p1))
	_, err = shardstate.LoadProgress(ctx, st, db)
	require.NoError(t, err, "a stale copy removes nothing")
	require.NoError(t, shardstate.DeleteProgress(ctx, st, p2))
	_, err = shardstate.LoadProgress(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoProgress)
	_, err = shardstate.SaveProgress(ctx, st, db, p2, shardstate.Progress{Change: "r1", Body: json.RawMessage(`{}`)})
	var ce *shardstate.ProgressConflictError
	require.ErrorAs(t, err, &ce, "a save over a removed document")
	assert.Nil(t, ce.Current)

	s2, err := shardstate.Publish(ctx, st, now, shardstate.Change{Resolver: ring(t, 3), Reason: "three now"})
	require.NoError(t, err)
	assert.Equal(t, "three now", s2.Reason)
	s3, err := shardstate.Publish(ctx, st, s2, shardstate.Change{})
	require.NoError(t, err)
	assert.Empty(t, s3.Reason, "a reason is the version's own")
	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, h, 3)
	assert.Equal(t, []string{"", "three now", ""}, []string{h[0].Reason, h[1].Reason, h[2].Reason})
}

// TestProgressLostReply: a save whose replace landed but whose answer was
// lost is the save that happened.
func TestProgressLostReply(t *testing.T) {
	ctx := context.Background()
	st := &lostReply{Store: memstore.New(nil)}
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	p1, err := shardstate.SaveProgress(ctx, st, db, nil, shardstate.Progress{Change: "r1", Body: json.RawMessage(`{}`)})
	require.NoError(t, err)
	p2, err := shardstate.SaveProgress(ctx, st, db, p1, shardstate.Progress{Change: "r1", Body: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	require.True(t, st.lost.Load(), "the reply was lost")
	got, err := shardstate.LoadProgress(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, p2.ETag, got.ETag)
	assert.Equal(t, int64(2), got.Seq)
}

// TestProgressBroken: a progress document of another database or format
// is a *DocumentError naming it.
func TestProgressBroken(t *testing.T) {
	ctx := context.Background()
	st, _, coll := initialized(t)
	_, err := st.Upsert(ctx, coll, []byte(`{"id":"progress","kind":"progress","format":"docshard.state/1","database":"dbs/other","change":"r","seq":1,"body":{}}`),
		&store.WriteOptions{PartitionKey: "progress"})
	require.NoError(t, err)
	_, err = shardstate.LoadProgress(ctx, st, db)
	var de *shardstate.DocumentError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "progress", de.ID)
	assert.ErrorIs(t, err, shardstate.ErrInvalidState)
	assert.Contains(t, err.Error(), `database "dbs/other", want "dbs/app"`)
}
