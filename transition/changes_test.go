package transition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/proctest"
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

// applyPage applies a page of the feed to view (id -> version), each
// document's version above the one view had, and returns its documents.
func applyPage(t *testing.T, p *router.ChangePage, view map[string]int) []feedItem {
	out := make([]feedItem, len(p.Items))
	for i, it := range p.Items {
		d := &out[i]
		require.NoError(t, json.Unmarshal(it, d))
		if prev, ok := view[d.ID]; ok {
			require.Greater(t, d.V, prev, "document %s: version %d after %d", d.ID, d.V, prev)
		}
		view[d.ID] = d.V
	}
	return out
}

// startWriters starts n writers that write until stop is closed: writer w
// (with a generator seeded by w and seed) writes the document pick names
// ("" skips a turn) at a version one above the last it wrote (2 the
// first time), pausing pause after each write. Wait on the group returned
// after closing stop.
func startWriters(n int, seed uint64, pause time.Duration, stop <-chan struct{}, write func(id string, v int), pick func(w int, rng *rand.Rand) string) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), seed))
			ver := map[string]int{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := pick(w, rng)
				if id == "" {
					continue
				}
				ver[id] = max(ver[id], 1) + 1
				write(id, ver[id])
				time.Sleep(pause)
			}
		})
	}
	return &wg
}

// followedRing2 is an embedded store and a client following its database,
// seeded with a ring of 2 collections that exist, polling every poll.
func followedRing2(t *testing.T, poll time.Duration) (store.Store, *router.Client) {
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	c := router.New(st, nil)
	f, err := c.Follow(context.Background(), db, &router.FollowOptions{Seed: ring(t, 2), PollInterval: poll, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	_, err = c.EnsureCollections(context.Background(), db, nil)
	require.NoError(t, err)
	return st, c
}

// TestChangesAcrossReshard: a database of 2 collections becomes 3 under
// writers while a consumer reads its change feed through another client;
// the consumer sees every document's versions in order, nothing that is
// not an acknowledged write of the application (a reshard copy has an ETag
// no writer was given), and ends with the database's view.
func TestChangesAcrossReshard(t *testing.T) {
	ctx := context.Background()
	st, c := followedRing2(t, 20*time.Millisecond)

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
		for _, d := range applyPage(t, p, last) {
			reported = append(reported, d.ETag)
		}
		cont = p.Continuation
		return p.CaughtUp
	}

	stop := make(chan struct{})
	wg := startWriters(3, 3, time.Millisecond, stop, write, func(w int, rng *rand.Rand) string {
		id := fmt.Sprint("s", rng.IntN(600))
		if rng.IntN(3) == 0 {
			id = fmt.Sprintf("w%d-%d", w, rng.IntN(200))
		}
		if id[0] == 's' && w != 0 {
			return "" // one writer per document, so versions rise
		}
		return id
	})
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
	st, c := followedRing2(t, 10*time.Millisecond)
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
			for _, d := range applyPage(t, p, view) {
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

// TestChangesChild is a child process of TestChangesKilled: a consumer of
// the database's change feed through docshard serve. It resumes from the
// token in $TOKEN_FILE (when there is one), prints "item ID V ETAG" per
// document, "page" after each page, and keeps the page's token in the
// file after printing it, polling until killed (or, with $UNTIL_CAUGHT_UP,
// until a page is caught up: "caught up").
func TestChangesChild(t *testing.T) {
	st := emulatortest.Child(t)
	if st == nil {
		return
	}
	ctx := context.Background()
	say := proctest.Say
	c := router.New(st, nil)
	if err := c.Register(db, ring(t, 2)); err != nil { // the shared state decides; this is its seed
		say("fatal %v", err)
		return
	}
	file := os.Getenv("TOKEN_FILE")
	b, _ := os.ReadFile(file)
	cont := strings.TrimSpace(string(b))
	say("started")
	for {
		p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: 20})
		if err != nil {
			say("fatal %v", err)
			return
		}
		for _, it := range p.Items {
			var d feedItem
			if err := json.Unmarshal(it, &d); err != nil {
				say("fatal %v", err)
				return
			}
			say("item %s %d %s", d.ID, d.V, d.ETag)
		}
		say("page")
		cont = p.Continuation
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(cont), 0o600); err != nil {
			say("fatal %v", err)
			return
		}
		if err := os.Rename(tmp, file); err != nil {
			say("fatal %v", err)
			return
		}
		if p.CaughtUp {
			if os.Getenv("UNTIL_CAUGHT_UP") != "" {
				say("caught up")
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// consumerLog is what the consumer processes printed, in order, run by
// run.
type consumerLog struct {
	mu   sync.Mutex
	runs [][]feedItem
}

// consume runs a consumer process and records its items as one run; it
// returns the process.
func (l *consumerLog) consume(t *testing.T, endpoint, tokenFile string, env ...string) (*proctest.Proc, <-chan struct{}) {
	p := proctest.Start(t, "TestChangesChild", append([]string{emulatortest.EndpointEnv + "=" + endpoint, "TOKEN_FILE=" + tokenFile}, env...)...)
	l.mu.Lock()
	l.runs = append(l.runs, nil)
	run := len(l.runs) - 1
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for line := range p.Lines {
			f := strings.Fields(line)
			switch {
			case len(f) == 4 && f[0] == "item":
				v, _ := strconv.Atoi(f[2])
				l.mu.Lock()
				l.runs[run] = append(l.runs[run], feedItem{ID: f[1], V: v, ETag: f[3]})
				l.mu.Unlock()
			case len(f) > 0 && f[0] == "fatal":
				t.Errorf("consumer: %s", line)
			}
		}
	}()
	return p, done
}

// TestChangesKilled is the change feed's kill test, through docshard
// serve: writers upsert documents while the database is resharded 2 → 4 →
// 2 by processes killed with SIGKILL at random moments (each followed by
// another run), and a consumer process reading the database's change feed
// is killed and resumed from its last token again and again. Afterwards
// the consumer's view (its items applied in order) equals the database;
// within each consumer run every document's versions rise; and every item
// it was given is an acknowledged write (a reshard copy or clean-up would
// carry an ETag no writer was given).
func TestChangesKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	srv, st := emulatortest.StartBackend(ctx, t)
	c, f := followEnsured(ctx, t, st, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
	defer f.Close()

	var mu sync.Mutex
	acked := map[string]bool{}
	write := func(id string, v int) {
		d, err := c.Upsert(ctx, db, doc{ID: id, UserID: "k" + id, V: v}, nil)
		if err != nil {
			return // its outcome is unknown: its ETag, if it landed, is not acked
		}
		mu.Lock()
		acked[d.ETag] = true
		mu.Unlock()
	}
	const seeds = 1000
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < seeds; i += 4 {
				write(fmt.Sprint("s", i), 1)
			}
		})
	}
	wg.Wait()

	stop := make(chan struct{})
	writers := startWriters(3, 17, 2*time.Millisecond, stop, write, func(w int, rng *rand.Rand) string {
		id := fmt.Sprintf("s%d", w+3*rng.IntN(seeds/3)) // writer w owns s(w+3k)
		if rng.IntN(4) == 0 {
			id = fmt.Sprintf("w%d-%d", w, rng.IntN(100))
		}
		return id
	})

	log := &consumerLog{}
	tokenFile := filepath.Join(t.TempDir(), "token")
	consumerStop := make(chan struct{})
	consumerDone := make(chan int)
	go func() { // the consumer, killed and resumed until the reshards end
		rng := rand.New(rand.NewPCG(23, 23))
		kills := 0
		for {
			p, done := log.consume(t, srv.Endpoint, tokenFile)
			select {
			case <-consumerStop:
				p.Kill()
				<-done
				consumerDone <- kills
				return
			case <-time.After(time.Duration(200+rng.IntN(1300)) * time.Millisecond):
			}
			p.Kill()
			<-done
			kills++
		}
	}()

	rng := rand.New(rand.NewPCG(29, 29))
	for _, target := range []int{4, 2} {
		for range 2 { // killed at random moments
			p := startProc(t, "reshard", srv.Endpoint, fmt.Sprintf("TARGET=%d", target))
			for line := range p.Lines {
				if line == "started" {
					break
				}
				require.False(t, strings.HasPrefix(line, "fatal"), line)
			}
			time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
			p.Kill()
		}
		runToEnd(t, srv.Endpoint, fmt.Sprintf("TARGET=%d", target))
	}
	close(stop)
	writers.Wait()
	close(consumerStop)
	kills := <-consumerDone
	// A last run from the last token, to the present.
	p, done := log.consume(t, srv.Endpoint, tokenFile, "UNTIL_CAUGHT_UP=1")
	<-done
	_ = p.Cmd.Wait()

	view := map[string]int{}
	items, copies := 0, 0
	for i, run := range log.runs {
		last := map[string]int{}
		for _, it := range run {
			items++
			if prev, ok := last[it.ID]; ok {
				assert.Greater(t, it.V, prev, "consumer run %d: document %s: version %d after %d", i, it.ID, it.V, prev)
			}
			last[it.ID] = it.V
			view[it.ID] = it.V
			if !acked[it.ETag] {
				copies++
			}
		}
	}
	assert.Zero(t, copies, "items no writer was acknowledged (reshard copies) among %d", items)
	rows := allDocs(t, c)
	require.Len(t, rows, len(view), "the consumer holds every document, and no other")
	for _, d := range rows {
		assert.Equal(t, d.V, view[d.ID], "document %s: the consumer's version", d.ID)
	}
	t.Logf("%d consumer runs (%d killed), %d items, %d documents", len(log.runs), kills, items, len(rows))
}

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
