package docshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// TestDeletedStateNotReseeded: two routers (as two processes would, through
// docshard serve) follow a database; its state document is deleted. The
// running routers refuse writes, saying so, and go on reading; a new Open
// (StateAuto, StateFollow, StateRead) refuses to reseed or to route by its
// file, naming the leases and the fence; state set's Restore brings the
// fleet back on one placement.
func TestDeletedStateNotReseeded(t *testing.T) {
	ctx := context.Background()
	srv := emulatortest.Start(t, nil)
	path := writeConfig(t, "store: {kind: cosmos, endpoint: "+srv.Endpoint+"}\n"+ringYAML)
	slow := &router.FollowOptions{PollInterval: time.Hour, LeaseDuration: 2 * time.Hour}
	var fleet []*docshard.Client
	for range 2 {
		c, err := docshard.Open(ctx, path, &docshard.Options{State: docshard.StateFollow, EnsureCollections: true, Follow: slow})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		fleet = append(fleet, c)
	}
	_, err := fleet[0].Create(ctx, "dbs/app", order{ID: "1", UserID: "ann", Total: 5}, nil)
	require.NoError(t, err)

	st := fleet[0].Store()
	coll, err := shardstate.CollectionLink("dbs/app")
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, coll, "state", &store.WriteOptions{PartitionKey: "state"}))

	for _, c := range fleet {
		err := c.Follower("dbs/app").Refresh(ctx)
		require.ErrorIs(t, err, router.ErrStateLost, "the poll reports it")
		_, err = c.Upsert(ctx, "dbs/app", order{ID: "2", UserID: "bob", Total: 1}, nil)
		require.ErrorIs(t, err, router.ErrStateLost, "writes are refused")
		require.ErrorIs(t, err, shardstate.ErrNoState)
		assert.Contains(t, err.Error(), "the state document of dbs/app is missing")
		assert.Contains(t, err.Error(), "docshard state set")
		_, err = c.Read(ctx, "dbs/app", "1", "ann")
		require.NoError(t, err, "reads go on by the last state: no placement changes without it")
	}

	for _, mode := range []docshard.State{docshard.StateAuto, docshard.StateFollow, docshard.StateRead} {
		_, err := docshard.Open(ctx, path, &docshard.Options{State: mode})
		require.ErrorIs(t, err, shardstate.ErrInUse, "mode %d", mode)
		assert.Contains(t, err.Error(), "2 router lease(s)")
		assert.Contains(t, err.Error(), "docshard state set")
	}
	_, err = shardstate.Load(ctx, st, "dbs/app")
	require.ErrorIs(t, err, shardstate.ErrNoState, "nothing reseeded it")

	r, err := fleet[0].Resolver("dbs/app")
	require.NoError(t, err)
	restored, err := shardstate.Restore(ctx, st, "dbs/app", r, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), restored.Version, "above the lost version 1")
	for _, c := range fleet {
		require.NoError(t, c.Follower("dbs/app").Refresh(ctx))
		_, err = c.Upsert(ctx, "dbs/app", order{ID: "2", UserID: "bob", Total: 1}, nil)
		require.NoError(t, err, "writes resume on the restored state")
	}
	c, err := docshard.Open(ctx, path, nil)
	require.NoError(t, err, "and a new process follows it")
	require.NoError(t, c.Close())
}
