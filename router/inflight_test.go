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

// TestHeldPagerAcrossAPlacementChange: a Pager placed its query on the
// collections of the version in force; when the database moves to a
// placement that reads other collections (a reshard's switch), whose
// clean-up then empties the old ones, its next page must not answer by
// the old collections. A new version that keeps them changes nothing.
func TestHeldPagerAcrossAPlacementChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moved bool // the new version reads other collections
	}{{"same collections", false}, {"other collections", true}} {
		t.Run(tc.name, func(t *testing.T) {
			st := newFenceStore(t)
			c := router.New(st, nil)
			f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
			for _, l := range links(3) {
				require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
			}
			addUsers(t, c, 30, func(i int) string { return fmt.Sprint("k", i) })
			p := c.NewQueryPager(db, store.Query{Text: "SELECT * FROM c ORDER BY c.age"}, &router.QueryOptions{PageSize: 5})
			_, err := p.NextPage(ctx)
			require.NoError(t, err)

			n := 2
			if tc.moved {
				n = 3
			}
			publish(t, st, n, true) // a new epoch: a new registration either way
			require.NoError(t, f.Refresh(ctx))
			page, err := p.NextPage(ctx)
			if !tc.moved {
				require.NoError(t, err)
				assert.Len(t, page.Items, 5)
				return
			}
			require.ErrorIs(t, err, router.ErrPlacementChanged)
			assert.Contains(t, err.Error(), "run it again from its first page")
		})
	}
}

// blockingReads holds every Read of id until release is closed, telling
// started when one begins.
type blockingReads struct {
	store.Store
	id      string
	started chan struct{}
	release chan struct{}
}

func (s *blockingReads) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	if id == s.id {
		s.started <- struct{}{}
		<-s.release
	}
	return s.Store.Read(ctx, l, id, o)
}

// TestReadInFlightHoldsTheAcknowledgement: a router acknowledges a new
// version (in its lease, which a reshard waits for before its clean-up)
// only once the reads it began by the old placement have ended, as it
// does for writes: otherwise the clean-up could delete what such a read
// is about to read.
func TestReadInFlightHoldsTheAcknowledgement(t *testing.T) {
	fs := newFenceStore(t)
	st := &blockingReads{Store: fs, id: "1", started: make(chan struct{}, 1), release: make(chan struct{})}
	c := router.New(st, nil)
	f := follow(t, c, &router.FollowOptions{Seed: ring(t, 2), PollInterval: time.Hour, LeaseDuration: 2 * time.Hour, RouterID: "r1"})
	for _, l := range links(3) {
		require.NoError(t, fs.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	addUsers(t, c, 3, func(i int) string { return fmt.Sprint("k", i) })

	done := make(chan error, 1)
	go func() {
		_, err := c.Read(ctx, db, "1", "k1")
		done <- err
	}()
	<-st.started // the read is in flight, placed by version 1's resolver
	next := publish(t, fs, 3, true)
	require.NoError(t, f.Refresh(ctx))
	leaseVersion := func() int64 {
		ls, err := shardstate.Leases(ctx, fs, db)
		require.NoError(t, err)
		require.Len(t, ls, 1)
		return ls[0].Version
	}
	assert.Less(t, leaseVersion(), next.Version, "acknowledged with a read by the old placement in flight")

	close(st.release)
	require.NoError(t, <-done)
	require.NoError(t, f.Refresh(ctx))
	assert.Equal(t, next.Version, leaseVersion(), "acknowledged once the read ended")
}
