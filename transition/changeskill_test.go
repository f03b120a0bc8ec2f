package transition_test

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// TestChangesChild is a child process of TestChangesKilled: a consumer of
// the database's change feed through docshard serve. It resumes from the
// token in $TOKEN_FILE (when there is one), prints "item ID V ETAG" per
// document, "page" after each page, and keeps the page's token in the
// file after printing it, polling until killed (or, with $UNTIL_CAUGHT_UP,
// until a page is caught up: "caught up").
func TestChangesChild(t *testing.T) {
	proctest.Child(t)
	ctx := context.Background()
	say := proctest.Say
	st, err := emulatortest.ChildBackend(ctx)
	if err != nil {
		say("fatal %v", err)
		return
	}
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
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(t, 2), PollInterval: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	defer f.Close()
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)

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
	for w := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 17))
			ver := map[string]int{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("s%d", w+3*rng.IntN(seeds/3)) // writer w owns s(w+3k)
				if rng.IntN(4) == 0 {
					id = fmt.Sprintf("w%d-%d", w, rng.IntN(100))
				}
				ver[id] = max(ver[id], 1) + 1
				write(id, ver[id])
				time.Sleep(2 * time.Millisecond)
			}
		})
	}

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
	wg.Wait()
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
