package router_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// TestInFlightKeepsTheWaitWaiting: a router that renews its lease rarely
// (RenewInterval) and has switched to a new version while a call by the
// old placement is still in flight renews on every poll until that call
// ends, so a change waiting for it (WaitForRouters) keeps waiting rather
// than taking the unchanged lease for lapsed after ValidFor; once the call
// ended the router acknowledges and the wait returns.
func TestInFlightKeepsTheWaitWaiting(t *testing.T) {
	fs := newFenceStore(t)
	st := &blockingReads{Store: fs, id: "1", started: make(chan struct{}, 1), release: make(chan struct{})}
	c := router.New(st, nil)
	const lease = 300 * time.Millisecond
	follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: lease, RenewInterval: time.Hour, RouterID: "r1"})
	for _, l := range links(3) {
		require.NoError(t, fs.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	addUsers(t, c, 3, func(i int) string { return fmt.Sprint("k", i) })

	done := make(chan error, 1)
	go func() {
		_, err := c.Read(ctx, db, "1", "k1")
		done <- err
	}()
	<-st.started // in flight, placed by version 1's resolver
	next := publish(t, fs, 3, true)

	wo := &shardstate.WaitOptions{Poll: 10 * time.Millisecond, Margin: lease / 2}
	wctx, cancel := context.WithTimeout(ctx, 6*lease)
	err := shardstate.WaitForRouters(wctx, fs, db, next.Version, wo)
	cancel()
	var se *shardstate.StaleRoutersError
	require.ErrorAs(t, err, &se, "a router with a call in flight by the old placement is waited for")
	assert.Equal(t, "r1", se.Routers[0].Router)

	close(st.release)
	require.NoError(t, <-done)
	require.NoError(t, shardstate.WaitForRouters(ctx, fs, db, next.Version, wo))
	ls, err := shardstate.Leases(ctx, fs, db)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.Equal(t, next.Version, ls[0].Version, "acknowledged once the call ended")
}
