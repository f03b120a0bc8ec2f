package transition_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/transition"
)

// feedFrom reads the database's change feed through c from cont until a
// page is caught up, and returns its items in order and the position.
func feedFrom(ctx context.Context, t *testing.T, c *router.Client, cont string) ([]feedItem, string) {
	t.Helper()
	var items []feedItem
	for {
		p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 25})
		require.NoError(t, err)
		for _, it := range p.Items {
			var d feedItem
			require.NoError(t, json.Unmarshal(it, &d))
			items = append(items, d)
		}
		cont = p.Continuation
		if p.CaughtUp {
			return items, cont
		}
	}
}

// TestChangesAcrossServeRestart: docshard serve keeps its store in a
// directory; a database of 2 collections is resharded to 3 through it,
// then serve is killed (SIGKILL) and started again on the directory. The
// database's change feed, read from the beginning and from tokens taken
// before the reshard and after it (before the restart), reads exactly
// what it read before the restart: no reshard copy (an ETag no writer was
// given), every document's last version (those that moved, from where
// the application wrote them), the database's view.
func TestChangesAcrossServeRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts docshard serve")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv := proctest.StartServe(t, dir)
	st, err := emulatortest.Backend(ctx, srv.Endpoint)
	require.NoError(t, err)
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 10 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)

	acked := map[string]bool{}
	ver := map[string]int{}
	write := func(id string) {
		ver[id]++
		d, err := c.Upsert(ctx, db, doc{ID: id, UserID: "k" + id, V: ver[id]}, nil)
		require.NoError(t, err)
		acked[d.ETag] = true
	}
	const docs = 200
	for i := range docs {
		write(fmt.Sprint(i))
	}
	_, seeded := feedFrom(ctx, t, c, "")
	_, err = transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{
		Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	for i := range 20 {
		write(fmt.Sprint(i * 7))
	}
	_, resharded := feedFrom(ctx, t, c, "")
	tokens := map[string]string{"beginning": "", "before the reshard": seeded, "after it": resharded}
	want := map[string][]feedItem{}
	for name, cont := range tokens {
		want[name], _ = feedFrom(ctx, t, c, cont)
	}
	rows := allDocs(t, c)
	require.Len(t, rows, docs)
	view := map[string]int{}
	for _, it := range want["beginning"] {
		require.True(t, acked[it.ETag], "before the restart: %s v%d is not a write of the application", it.ID, it.V)
		view[it.ID] = it.V
	}
	for _, d := range rows {
		require.Equal(t, d.V, view[d.ID], "before the restart: document %s", d.ID)
	}
	require.NoError(t, f.Close())
	require.NoError(t, st.Close())

	srv.Kill()
	srv = proctest.StartServe(t, dir)
	st, err = emulatortest.Backend(ctx, srv.Endpoint)
	require.NoError(t, err)
	defer st.Close()
	c = router.New(st, nil)
	require.NoError(t, c.Register(db, ring(t, 2))) // the shared state decides; this is its seed
	for name, cont := range tokens {
		got, _ := feedFrom(ctx, t, c, cont)
		copies := 0
		for _, it := range got {
			if !acked[it.ETag] {
				copies++
			}
		}
		assert.Zero(t, copies, "from %s: items no writer was acknowledged (reshard copies) among %d", name, len(got))
		assert.Equal(t, want[name], got, "from %s: the feed reads as before the restart", name)
	}
}
