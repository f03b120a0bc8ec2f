package transition_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/transition"
)

// TestReshardOnCosmium: a small reshard (2 -> 3, 300 documents, no writers)
// through the cosmos backend against cosmium, the independent emulator. Its
// gaps shape what this can show: it has no change feed (the catch-up runs by
// _ts), ignores If-Match (the conditional deletes of the cleanup and the
// state's compare-and-swap are not checked: one manager, no writers), and
// its query engine is loose (the backend evaluates queries itself). Under
// those limits every document ends once where the new ring puts it.
func TestReshardOnCosmium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cosmium")
	}
	srv := cosmostest.Shared(t)
	t.Cleanup(cosmostest.StopShared)
	ctx := context.Background()
	st, err := cosmos.New(cosmostest.Context(t), &cosmos.Options{
		Account:    cosmos.Account{Endpoint: srv.Endpoint, Key: cosmostest.Key},
		HTTPClient: srv.HTTPClient(),
		QueryMode:  cosmos.QueryLocal,
	})
	require.NoError(t, err)
	defer st.Close()
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	defer f.Close()
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	l := &ledger{value: map[string]int{}, key: map[string]string{}, unknown: map[string]bool{}}
	for i := range 300 {
		id, key := fmt.Sprintf("d%d", i), fmt.Sprintf("u%d", i)
		_, err := c.Create(ctx, db, doc{ID: id, UserID: key, V: 1}, nil)
		require.NoError(t, err)
		l.set(id, key, 1)
	}
	p, err := transition.Reshard(ctx, st, db, ring(t, 3), nil)
	require.NoError(t, err)
	assert.Positive(t, p.Copied)
	// cosmium answers 400 to the container listing azcosmos sends: name them.
	checkPlacedIn(t, st, []string{"dbs/app/colls/c0", "dbs/app/colls/c1", "dbs/app/colls/c2"}, ring(t, 3), l)
}
