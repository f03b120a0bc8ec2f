package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestQuotaRefusalOfARing: only a spillover's full newest collection makes
// a write wait for the next version; a ring's collection refusing a write
// for quota is the caller's error at once, not after MovingWait.
func TestQuotaRefusalOfARing(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	const l = "dbs/q/colls/only"
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/id", Quota: &store.Quota{MaxDocuments: 1}}))
	r, err := hashring.New([]string{l}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/id")})
	require.NoError(t, err)
	c := router.New(st, nil)
	f, err := c.Follow(ctx, "dbs/q", &router.FollowOptions{Seed: r, PollInterval: time.Hour, LeaseDuration: 2 * time.Hour, MovingWait: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	_, err = c.Create(ctx, "dbs/q", map[string]any{"id": "a"}, nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "dbs/q", map[string]any{"id": "b"}, nil)
	require.ErrorIs(t, err, store.ErrQuotaExceeded)
	assert.NotContains(t, err.Error(), "waited", "no wait for a next collection a ring never opens")
}
