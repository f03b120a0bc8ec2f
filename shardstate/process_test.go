package shardstate_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/proctest"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// The multi-process test: routers in child processes (this test binary,
// run again as TestFollowerProcess) reach one docshard serve (in this
// process) through the cosmos backend, as separate services would; this
// process publishes new versions.

// holdStore fails the lease writes of the router while the file hold
// exists: a router whose renewals are held back.
type holdStore struct {
	store.Store
	hold string
}

func (s *holdStore) held(l string) error {
	if !strings.HasSuffix(l, "/"+shardstate.CollectionID) {
		return nil
	}
	if _, err := os.Stat(s.hold); err == nil {
		return &store.Error{Kind: store.ErrUnavailable, Op: "write", Link: l, Message: "renewals held back by the test"}
	}
	return nil
}

func (s *holdStore) Upsert(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if err := s.held(l); err != nil {
		return nil, err
	}
	return s.Store.Upsert(ctx, l, doc, o)
}

func (s *holdStore) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if err := s.held(l); err != nil {
		return nil, err
	}
	return s.Store.Replace(ctx, l, id, doc, o)
}

// TestFollowerProcess is the child: it follows dbs/app and answers
// commands on stdin ("create ID KEY", "version"), printing one line each,
// and "version N" whenever it switches. It is skipped unless
// TestRoutersInProcesses runs it as a child.
func TestFollowerProcess(t *testing.T) {
	cs := emulatortest.Child(t)
	if cs == nil {
		return
	}
	say := proctest.Say
	ctx := context.Background()
	if _, ok := cs.(store.Fencer); !ok {
		say("fatal the cosmos backend offers no fence against docshard serve")
		return
	}
	if n, _ := strconv.Atoi(os.Getenv("PUBLISH")); n > 0 {
		publishRace(ctx, cs, os.Getenv("ROUTER"), n, say)
		return
	}
	st := &holdStore{Store: cs, hold: os.Getenv("HOLD")}
	poll, _ := time.ParseDuration(os.Getenv("POLL"))
	lease, _ := time.ParseDuration(os.Getenv("LEASE"))
	c := router.New(st, nil)
	// RenewInterval: poll, so a router whose renewals are held back
	// refuses writes once they lapse (3 polls), reads or not.
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: poll, LeaseDuration: lease, RenewInterval: poll, RouterID: os.Getenv("ROUTER"),
		OnChange: func(_, cur *shardstate.State) { say("version %d", cur.Version) }})
	if err != nil {
		say("fatal %v", err)
		return
	}
	defer f.Close()
	say("version %d", f.Version())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		switch {
		case len(fields) == 3 && fields[0] == "create":
			_, err := c.Create(ctx, db, map[string]string{"id": fields[1], "userId": fields[2]}, nil)
			switch {
			case err == nil:
				say("ok %s %d", fields[1], f.Version())
			case errors.Is(err, router.ErrLeaseExpired):
				say("lease %s", fields[1])
			default:
				say("err %s %s", fields[1], strings.ReplaceAll(err.Error(), "\n", " "))
			}
		case len(fields) == 1 && fields[0] == "version":
			say("at %d", f.Version())
		}
	}
}

// publishRace tries n changes, each from the state it just read, and says
// which versions it won.
func publishRace(ctx context.Context, st store.Store, by string, n int, say func(string, ...any)) {
	for range n {
		cur, err := shardstate.Load(ctx, st, db)
		if err != nil {
			say("fatal %v", err)
			return
		}
		next, err := shardstate.Publish(ctx, st, cur, shardstate.Change{By: by})
		switch {
		case err == nil:
			say("won %d", next.Version)
		case errors.Is(err, shardstate.ErrConflict):
		default:
			say("fatal %v", err)
			return
		}
	}
	say("done")
}

// child is a router process.
type child struct{ *proctest.Proc }

func startChild(t *testing.T, endpoint, id, hold string, poll, lease time.Duration, env ...string) *child {
	return &child{proctest.Start(t, "TestFollowerProcess", append([]string{emulatortest.EndpointEnv + "=" + endpoint, "ROUTER=" + id, "HOLD=" + hold,
		"POLL=" + poll.String(), "LEASE=" + lease.String()}, env...)...)}
}

// expect waits for a line with the prefix and returns it.
func (c *child) expect(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-c.Lines:
			require.True(t, ok, "the child exited while %q was awaited", prefix)
			require.False(t, strings.HasPrefix(l, "fatal"), l)
			// An answer about the awaited document that is not the one
			// awaited ("lease d4" for "ok d4") fails at once.
			if want, got := strings.Fields(prefix), strings.Fields(l); len(want) == 2 && len(got) >= 2 && got[1] == want[1] && got[0] != want[0] {
				require.FailNow(t, "unexpected answer", "awaiting %q, got %q", prefix, l)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			require.FailNow(t, "timeout", "no %q within %s", prefix, within)
		}
	}
}

func (c *child) send(t *testing.T, line string) { c.Send(t, line) }

// TestRoutersInProcesses: two router processes and this one publishing:
// both converge to each version (the time each took, about one poll
// interval on a quiet machine, is logged, not asserted); a router whose renewals are held back has
// its writes refused once its lease lapses, and writes again after.
func TestRoutersInProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := emulatortest.Context(t)
	srv, st := emulatortest.StartBackend(ctx, t)
	require.Implements(t, (*store.Fencer)(nil), st, "docshard serve fences")
	for i := range 4 {
		require.NoError(t, st.CreateCollection(ctx, fmt.Sprintf("dbs/app/colls/c%d", i), &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)

	const poll, lease = 200 * time.Millisecond, 1500 * time.Millisecond
	hold := filepath.Join(t.TempDir(), "hold")
	a := startChild(t, srv.Endpoint, "router-a", filepath.Join(t.TempDir(), "never"), poll, lease)
	b := startChild(t, srv.Endpoint, "router-b", hold, poll, lease)
	a.expect(t, "version 1", 30*time.Second)
	b.expect(t, "version 1", 30*time.Second)

	// Converge: each version reaches both. The bound is for a hung child
	// only: a loaded machine may delay a poll by seconds.
	for v := int64(2); v <= 4; v++ {
		cur, err := shardstate.Load(ctx, st, db)
		require.NoError(t, err)
		start := time.Now()
		_, err = shardstate.Publish(ctx, st, cur, shardstate.Change{Resolver: ring(t, int(v)), By: "publisher"})
		require.NoError(t, err)
		want := "version " + strconv.FormatInt(v, 10)
		a.expect(t, want, 30*time.Second)
		b.expect(t, want, 30*time.Second)
		t.Logf("version %d reached both routers in %s", v, time.Since(start).Round(time.Millisecond))
	}
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, 4, &shardstate.WaitOptions{Poll: 50 * time.Millisecond}))

	a.send(t, "create d1 alice")
	assert.Equal(t, "ok d1 4", a.expect(t, "ok d1", 10*time.Second))

	// Hold b's renewals back: its writes are refused once the lease lapses.
	require.NoError(t, os.WriteFile(hold, nil, 0o600))
	time.Sleep(lease + poll)
	b.send(t, "create d2 bob")
	b.expect(t, "lease d2", 10*time.Second)
	a.send(t, "create d3 carol")
	a.expect(t, "ok d3", 10*time.Second)

	// A change waits for b no longer than its lease (plus the margin): b
	// neither acknowledges nor renews.
	cur, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	next, err := shardstate.Publish(ctx, st, cur, shardstate.Change{Resolver: ring(t, 2), NewEpoch: true})
	require.NoError(t, err)
	a.expect(t, "version 5", 30*time.Second)
	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, next.Version, &shardstate.WaitOptions{Poll: 50 * time.Millisecond}))

	// Released, b takes a new lease, reads version 5 and writes again.
	require.NoError(t, os.Remove(hold))
	b.expect(t, "version 5", 10*time.Second)
	b.send(t, "create d4 dave")
	assert.Equal(t, "ok d4 5", b.expect(t, "ok d4", 10*time.Second))

	// A router that has not polled since a new epoch (its poll interval is
	// an hour) is refused by docshard serve itself, refreshes, and writes by
	// the new version.
	slow := startChild(t, srv.Endpoint, "router-slow", filepath.Join(t.TempDir(), "never"), time.Hour, 2*time.Hour)
	slow.expect(t, "version 5", 30*time.Second)
	cur, err = shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, st, cur, shardstate.Change{Resolver: ring(t, 3), NewEpoch: true})
	require.NoError(t, err)
	slow.send(t, "create d5 erin")
	assert.Equal(t, "ok d5 6", slow.expect(t, "ok d5", 10*time.Second), "fenced, refreshed, written by version 6")

	// With the lease check bypassed altogether, docshard serve alone
	// refuses a write stamped with the old epoch.
	_, err = st.Create(ctx, "dbs/app/colls/c0", []byte(`{"id":"d6","userId":"frank"}`), &store.WriteOptions{PartitionKey: "frank", Epoch: cur.Epoch})
	require.ErrorIs(t, err, store.ErrFenced)
	_, err = st.Create(ctx, "dbs/app/colls/c0", []byte(`{"id":"d6","userId":"frank"}`), &store.WriteOptions{PartitionKey: "frank", Epoch: cur.Epoch + 1})
	require.NoError(t, err, "the current epoch writes")
}

// TestPublishRaceAcrossProcesses: four processes race to publish from the
// versions they read; versions never fork, skip or go back, and the history
// holds exactly the winners.
func TestPublishRaceAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := emulatortest.Context(t)
	srv, st := emulatortest.StartBackend(ctx, t)
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	won := map[int64]string{}
	var children []*child
	for i := range 4 {
		children = append(children, startChild(t, srv.Endpoint, fmt.Sprintf("publisher-%d", i), "", 0, 0, "PUBLISH=30"))
	}
	for i, c := range children {
		for l := range c.Lines {
			require.False(t, strings.HasPrefix(l, "fatal"), l)
			if l == "done" {
				break
			}
			v, err := strconv.ParseInt(strings.TrimPrefix(l, "won "), 10, 64)
			require.NoError(t, err, l)
			prev, dup := won[v]
			require.False(t, dup, "version %d won by publisher-%d and %s", v, i, prev)
			won[v] = fmt.Sprintf("publisher-%d", i)
		}
	}
	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, h, len(won)+1)
	for i, s := range h {
		require.Equal(t, int64(i+1), s.Version, "no version skipped")
		if i > 0 {
			assert.Equal(t, won[s.Version], s.UpdatedBy, "version %d", s.Version)
		}
	}
	t.Logf("%d of 120 attempts won", len(won))
}
