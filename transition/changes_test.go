package transition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

// feedItem is what the change-feed consumer reads of a document.
type feedItem struct {
	ID   string `json:"id"`
	V    int    `json:"v"`
	ETag string `json:"_etag"`
}

// allDocs queries every document's id and v through c, again when the
// placement changed under the query (a reshard's last versions).
func allDocs(t *testing.T, c *router.Client) []feedItem {
	t.Helper()
	for {
		rows, err := c.Query(context.Background(), db, store.Query{Text: "SELECT c.id, c.v FROM c"}, nil)
		if errors.Is(err, router.ErrPlacementChanged) {
			continue
		}
		require.NoError(t, err)
		out := make([]feedItem, len(rows))
		for i, r := range rows {
			require.NoError(t, json.Unmarshal(r, &out[i]))
		}
		return out
	}
}

// TestChangesAcrossReshard: a database of 2 collections becomes 3 under
// writers while a consumer reads its change feed through another client;
// the consumer sees every document's versions in order, nothing that is
// not an acknowledged write of the application (a reshard copy has an ETag
// no writer was given), and ends with the database's view.
func TestChangesAcrossReshard(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)

	var mu sync.Mutex
	acked := map[string]bool{} // ETags of acknowledged writes
	write := func(id string, v int) {
		d, err := c.Upsert(ctx, db, doc{ID: id, UserID: "k" + id, V: v}, nil)
		if assert.NoError(t, err) {
			mu.Lock()
			acked[d.ETag] = true
			mu.Unlock()
		}
	}
	for i := range 600 {
		write(fmt.Sprint("s", i), 1)
	}

	consumer := router.New(st, nil)
	cf, err := consumer.Follow(ctx, db, &router.FollowOptions{PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cf.Close() })
	last := map[string]int{}
	var reported []string
	cont := ""
	read := func() bool {
		p, err := consumer.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 50})
		require.NoError(t, err)
		for _, it := range p.Items {
			var d feedItem
			require.NoError(t, json.Unmarshal(it, &d))
			if prev, ok := last[d.ID]; ok {
				require.Greater(t, d.V, prev, "document %s: version %d after %d", d.ID, d.V, prev)
			}
			last[d.ID] = d.V
			reported = append(reported, d.ETag)
		}
		cont = p.Continuation
		return p.CaughtUp
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			ver := map[string]int{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprint("s", rng.IntN(600))
				if rng.IntN(3) == 0 {
					id = fmt.Sprintf("w%d-%d", w, rng.IntN(200))
				}
				if id[0] == 's' && w != 0 {
					continue // one writer per document, so versions rise
				}
				ver[id] = max(ver[id], 1) + 1
				write(id, ver[id])
				time.Sleep(time.Millisecond)
			}
		}()
	}
	done := make(chan error, 1)
	go func() {
		_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{
			CheckpointEvery: 100,
			Routers:         &shardstate.WaitOptions{Poll: 10 * time.Millisecond},
		})
		done <- err
	}()
	var rerr error
	for waiting := true; waiting; {
		select {
		case rerr = <-done:
			waiting = false
		default:
			read()
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, rerr)
	for !read() {
	}

	rows := allDocs(t, c)
	require.NotEmpty(t, rows)
	for _, d := range rows {
		assert.Equal(t, d.V, last[d.ID], "document %s: the consumer's version", d.ID)
	}
	assert.Len(t, last, len(rows), "the consumer holds no document the database lacks")
	copies := 0
	for _, e := range reported {
		if !acked[e] {
			copies++
		}
	}
	assert.Zero(t, copies, "reported writes no writer made (reshard copies) among %d", len(reported))
}

// TestChangesTokenAcrossReshards: tokens taken before, during (at every
// step) and after reshards 2 → 3 → 2 each resume after them: the consumer
// ends with the database's view, every version in order, and no item that
// no writer was acknowledged, though the documents that moved were
// cleaned up from where the token last read them.
func TestChangesTokenAcrossReshards(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 10 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	acked := map[string]bool{}
	var mu sync.Mutex
	ver := map[string]int{}
	write := func(id string) {
		ver[id]++
		d, err := c.Upsert(ctx, db, doc{ID: id, UserID: "k" + id, V: ver[id]}, nil)
		require.NoError(t, err)
		mu.Lock()
		acked[d.ETag] = true
		mu.Unlock()
	}
	for i := range 300 {
		write(fmt.Sprint(i))
	}
	// read applies the feed from cont to its present to view.
	read := func(view map[string]int, cont string) (string, int) {
		copies := 0
		for {
			p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 25})
			require.NoError(t, err)
			for _, it := range p.Items {
				var d feedItem
				require.NoError(t, json.Unmarshal(it, &d))
				if prev, ok := view[d.ID]; ok {
					require.Greater(t, d.V, prev, "document %s", d.ID)
				}
				view[d.ID] = d.V
				mu.Lock()
				if !acked[d.ETag] {
					copies++
				}
				mu.Unlock()
			}
			cont = p.Continuation
			if p.CaughtUp {
				return cont, copies
			}
		}
	}
	// A consumer that stopped at a token, with the view it had then.
	type consumer struct {
		name string
		view map[string]int
		cont string
	}
	consumers := []consumer{{name: "beginning", view: map[string]int{}}}
	cur := consumer{view: map[string]int{}}
	cur.cont, _ = read(cur.view, "")
	consumers = append(consumers, consumer{name: "seeded", view: maps.Clone(cur.view), cont: cur.cont})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 2} {
		_, err := transition.Reshard(ctx, st, db, ring(t, n), &transition.ReshardOptions{
			CheckpointEvery: 50,
			Routers:         &shardstate.WaitOptions{Poll: 5 * time.Millisecond},
			Step: func(s string) error {
				for i := 0; i < 40 && s != "frozen" && s != "switched"; i++ {
					// writes, some to documents that move (frozen at these two steps)
					write(fmt.Sprint(rng.IntN(300)))
				}
				cur.cont, _ = read(cur.view, cur.cont)
				consumers = append(consumers, consumer{name: fmt.Sprintf("to %d at %s", n, s), view: maps.Clone(cur.view), cont: cur.cont})
				return nil
			},
		})
		require.NoError(t, err)
	}
	for range 50 {
		write(fmt.Sprint(rng.IntN(300)))
	}
	rows := allDocs(t, c)
	require.Len(t, rows, 300)
	for _, k := range consumers {
		_, copies := read(k.view, k.cont)
		assert.Zero(t, copies, "%s: items no writer was acknowledged", k.name)
		for _, d := range rows {
			assert.Equal(t, d.V, k.view[d.ID], "%s: document %s", k.name, d.ID)
		}
	}
}
