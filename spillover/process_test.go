package spillover_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store"
)

// The multi-process test: docshard serve (in this process) holds the
// store; writer processes (this test binary, run again as
// TestSpillWriterChild) write through routers that follow the state, each
// with a Coordinator.

// Settings of the multi-process test: a small limit, so that the writers
// open a dozen collections; a check every 20 ms.
const (
	procLimit = 200
	procFill  = 0.5
	procCheck = 20 * time.Millisecond
)

// TestSpillWriterChild is a writer process: it creates $DOCS documents
// "$NAME-i" (2 writers, each waiting 3 ms after a write), printing "ack ID" for
// each acknowledged one and "unknown ID" for one whose outcome it does not
// know; with $STOP_AT it prints "at STEP" when its coordinator reaches that
// step of an opening and waits there to be killed. It is skipped unless
// TestSpilloverProcesses runs it as a child.
func TestSpillWriterChild(t *testing.T) {
	st := emulatortest.Child(t)
	if st == nil {
		return
	}
	ctx := context.Background()
	say := proctest.Say
	stopAt := os.Getenv("STOP_AT")
	var coord atomic.Pointer[spillover.Coordinator]
	c := router.New(st, &router.Options{Hooks: router.Hooks{Call: func(ctx context.Context, l, op string, d time.Duration, err error) {
		if co := coord.Load(); co != nil {
			co.Observe(ctx, l, op, d, err)
		}
	}}})
	co, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{CheckInterval: procCheck, By: os.Getenv("NAME"),
		OnOpen:  func(l string, v int64) { say("opened %s %d", l, v) },
		OnError: func(err error) { say("checkerr %v", err) },
		Step: func(s string) error {
			if s == stopAt {
				say("at %s", s)
				select {} // wait to be killed
			}
			return nil
		}})
	if err != nil {
		say("fatal %v", err)
		return
	}
	coord.Store(co)
	defer co.Close()
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 100 * time.Millisecond, LeaseDuration: 5 * time.Second})
	if err != nil {
		say("fatal %v", err)
		return
	}
	defer f.Close()
	say("started")
	n, _ := strconv.Atoi(os.Getenv("DOCS"))
	name := os.Getenv("NAME")
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < n; i += 2 {
				id := fmt.Sprintf("%s-%d", name, i)
				if _, err := c.Create(ctx, db, map[string]any{"id": id, "i": i, "by": name}, nil); err != nil {
					say("unknown %s %s", id, strings.ReplaceAll(err.Error(), "\n", " "))
					continue
				}
				say("ack %s", id)
				time.Sleep(3 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	say("done")
}

type acks struct {
	mu      sync.Mutex
	ok      map[string]bool
	unknown map[string]bool
}

// collect reads a child's lines into a until it ends or says want; it
// returns the last line.
func (a *acks) collect(t *testing.T, p *proctest.Proc, want string) string {
	for line := range p.Lines {
		f := strings.Fields(line)
		switch {
		case f[0] == "fatal":
			t.Errorf("writer: %s", line)
		case f[0] == "ack":
			a.mu.Lock()
			a.ok[f[1]] = true
			a.mu.Unlock()
		case f[0] == "unknown":
			a.mu.Lock()
			a.unknown[f[1]] = true
			a.mu.Unlock()
			t.Logf("writer: %s", line)
		case f[0] == "checkerr":
			t.Logf("writer: %s", line)
		}
		if line == want || strings.HasPrefix(line, want) {
			return line
		}
	}
	return ""
}

// TestSpilloverProcesses: a writer process killed while its coordinator
// opens the next collection (after recording it), a second killed at the
// next step (after creating it), then four writer processes through
// docshard serve filling a small limit. The opening the killed ones left
// is finished; collections follow in sequence with no gap, none left out
// of the resolver; every acknowledged document is stored exactly once; no
// collection holds more than its limit.
func TestSpilloverProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	docs := 300
	if v, err := strconv.Atoi(os.Getenv("DOCSHARD_SPILL_DOCS")); err == nil {
		docs = v
	}
	ctx := emulatortest.Context(t)
	srv, st := emulatortest.StartBackend(ctx, t)
	require.Implements(t, (*store.Fencer)(nil), st)
	_, err := shardstate.Init(ctx, st, db, seed(t, procLimit, procFill, ""), nil)
	require.NoError(t, err)
	a := &acks{ok: map[string]bool{}, unknown: map[string]bool{}}
	start := func(name string, n int, env ...string) *proctest.Proc {
		return proctest.Start(t, "TestSpillWriterChild", append([]string{emulatortest.EndpointEnv + "=" + srv.Endpoint,
			"NAME=" + name, "DOCS=" + strconv.Itoa(n)}, env...)...)
	}

	// A writer whose coordinator stops after recording the opening of
	// log1: killed there, its writes still going to the full log0.
	p := start("crash1", 10*procLimit, "STOP_AT="+spillover.StepRecorded)
	require.Equal(t, "at recorded", a.collect(t, p, "at "))
	p.Kill()
	a.collect(t, p, "\x00")
	s, _ := current(t, st)
	require.Contains(t, string(s.Phase), `"opening":"dbs/app/colls/log1"`)
	// The next one finishes it as it starts, and is killed after
	// creating log1, before publishing it.
	p = start("crash2", 0, "STOP_AT="+spillover.StepCreated)
	require.Equal(t, "at created", a.collect(t, p, "at "))
	p.Kill()
	a.collect(t, p, "\x00")
	s, r := current(t, st)
	require.Contains(t, string(s.Phase), `"opening":"dbs/app/colls/log1"`)
	require.Equal(t, []string{db + "/colls/log0"}, r.Collections(), "log1 exists but is not published yet")
	_, err = st.CollectionInfo(ctx, db+"/colls/log1")
	require.NoError(t, err)

	began := time.Now()
	var wg sync.WaitGroup
	for i := range 4 {
		p := start(fmt.Sprintf("w%d", i), docs)
		wg.Go(func() {
			assert.Equal(t, "done", a.collect(t, p, "done"))
			// "done" comes before the writer's coordinator closes: a
			// check of it may be opening a collection still. Closing
			// waits for that check, so once the process has exited,
			// every opening it began is finished.
			a.collect(t, p, "\x00")
			assert.NoError(t, p.Cmd.Wait(), "writer %d exits cleanly", i)
		})
	}
	wg.Wait()
	took := time.Since(began)
	for id := range a.unknown {
		assert.False(t, a.ok[id], "%s both acknowledged and unknown", id)
	}
	s, _ = current(t, st)
	assert.Nil(t, s.Phase)
	ids := map[string]bool{}
	for id := range a.ok {
		ids[id] = true
	}
	// The killed writer's writes in flight when it was killed may be
	// stored, unacknowledged: as unknown as those the others could not
	// tell.
	for i := range 10 * procLimit {
		if id := fmt.Sprintf("crash1-%d", i); !a.ok[id] {
			a.unknown[id] = true
		}
	}
	counts := checkFilledUnknown(t, st, ids, a.unknown, procLimit)
	t.Logf("%d acknowledged documents (%d by the killed writer), 4 × %d by the others in %s: %d collections holding %v (limit %d, opened at %d)",
		len(a.ok), len(a.ok)-4*docs, docs, took.Round(time.Millisecond), len(counts), counts, procLimit, int(procLimit*procFill))
	assert.GreaterOrEqual(t, len(counts), 4*docs/procLimit, "the writers opened collections")
}
