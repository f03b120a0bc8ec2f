package spillover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store/memstore"
)

// TestChangesFollowSpillover: a consumer of the database's change feed,
// reading while spillover opens collection after collection, sees every
// document once each, from every collection, the new ones joining the feed
// as they open.
func TestChangesFollowSpillover(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 50, 0.5, ""), CheckInterval: time.Hour})
	require.NoError(t, err)
	defer coord.Close()
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 10 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	defer f.Close()

	consumer := router.New(st, nil)
	require.NoError(t, consumer.Register(db, seed(t, 50, 0.5, ""))) // the shared state decides
	seen := map[string]int{}
	cont := ""
	read := func() {
		for {
			p, err := consumer.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 7})
			require.NoError(t, err)
			for _, it := range p.Items {
				var d struct{ ID string }
				require.NoError(t, json.Unmarshal(it, &d))
				seen[d.ID]++
			}
			cont = p.Continuation
			if p.CaughtUp {
				return
			}
		}
	}
	for i := range 200 {
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint("d", i)}, nil)
		require.NoError(t, err)
		if i%10 == 9 {
			_, err = coord.Check(ctx)
			require.NoError(t, err)
			require.NoError(t, f.Refresh(ctx))
			read()
		}
	}
	read()
	require.NoError(t, coord.Close())
	_, r := current(t, st)
	assert.GreaterOrEqual(t, len(r.Collections()), 4, "spillover opened collections")
	assert.Len(t, seen, 200)
	for id, n := range seen {
		assert.Equal(t, 1, n, "document %s seen once", id)
	}
}
