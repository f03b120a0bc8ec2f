package transition_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/store/retry"
	"github.com/docshard/docshard/transition"
)

const db = "dbs/app"

type doc struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	V      int    `json:"v"`
}

// ledger is what the writers were told: each id's last acknowledged value,
// or deleted.
type ledger struct {
	mu      sync.Mutex
	value   map[string]int // id -> v; -1 deleted
	key     map[string]string
	unknown map[string]bool // a write whose outcome the writer could not know
}

func newLedger() *ledger {
	return &ledger{value: map[string]int{}, key: map[string]string{}, unknown: map[string]bool{}}
}

// followEnsured returns a client of st following db (opts: its seed and
// pacing) with the seed's collections made, and its Follower, which the
// caller closes.
func followEnsured(ctx context.Context, t testing.TB, st store.Store, opts *router.FollowOptions) (*router.Client, *router.Follower) {
	t.Helper()
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, opts)
	require.NoError(t, err)
	if _, err := c.EnsureCollections(ctx, db, nil); err != nil {
		_ = f.Close()
		require.NoError(t, err)
	}
	return c, f
}

func (l *ledger) set(id, key string, v int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.value[id], l.key[id] = v, key
}

// writeLoop creates, upserts or replaces with rising values and deletes
// documents of its own through c, one write every interval until stop closes (ids
// prefix-0, prefix-1, ...). ack is told each acknowledged write (v -1: a
// delete), unknown each write whose outcome is not known.
func writeLoop(ctx context.Context, c *router.Client, rng *rand.Rand, prefix string, interval time.Duration, stop <-chan struct{},
	ack func(id, key string, v int), unknown func(id string, err error)) {
	type live struct {
		key string
		v   int
	}
	docs := map[string]*live{}
	var ids []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(interval): // a steady load, not a flood
		}
		var (
			id  string
			d   *live
			err error
		)
		switch r := rng.IntN(10); {
		case r < 4 || len(ids) == 0:
			id, d = fmt.Sprintf("%s-%d", prefix, i), &live{key: fmt.Sprintf("u%d", rng.IntN(500))}
			if _, err = c.Create(ctx, db, doc{ID: id, UserID: d.key, V: 1}, nil); err == nil {
				d.v, docs[id], ids = 1, d, append(ids, id)
			}
		case r < 8:
			id = ids[rng.IntN(len(ids))]
			if d = docs[id]; d.v < 0 {
				continue
			}
			next := doc{ID: id, UserID: d.key, V: d.v + 1}
			if r < 6 {
				_, err = c.Upsert(ctx, db, next, nil)
			} else {
				_, err = c.Replace(ctx, db, id, next, nil)
			}
			if err == nil {
				d.v++
			}
		default:
			id = ids[rng.IntN(len(ids))]
			if d = docs[id]; d.v < 0 {
				continue
			}
			if err = c.Delete(ctx, db, id, d.key, nil); err == nil {
				d.v = -1
			}
		}
		if err != nil {
			unknown(id, err)
			continue
		}
		ack(id, d.key, d.v)
	}
}

// writers run n writeLoops through a router following the state, until
// stop, recording in l; failed writes are counted.
func writers(t *testing.T, c *router.Client, l *ledger, round, n int, stop <-chan struct{}, failed *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			writeLoop(context.Background(), c, rand.New(rand.NewPCG(uint64(w), 9)), fmt.Sprintf("r%d-w%d", round, w), time.Millisecond, stop,
				l.set, func(id string, err error) {
					failed.Add(1)
					l.mu.Lock()
					l.unknown[id] = true
					l.mu.Unlock()
					t.Logf("%s: %v", id, err)
				})
		})
	}
	return &wg
}

// checkPlaced verifies that every document the ledger knows is where r
// puts it, exactly once, with its last value; deleted ones are nowhere;
// nothing else exists.
func checkPlaced(t *testing.T, st store.Store, r resolver.Resolver, l *ledger) {
	t.Helper()
	colls, err := st.ListCollections(context.Background(), db)
	require.NoError(t, err)
	checkPlacedIn(t, st, colls, r, l)
}

// checkPlacedIn is checkPlaced over the collections named, read through
// st's read feed.
func checkPlacedIn(t *testing.T, st store.Store, colls []string, r resolver.Resolver, l *ledger) {
	t.Helper()
	checkFound(t, readFound(t, st, colls), r, l)
}

// readFound reads the collections named (the state's skipped) whole
// through st's read feed: collection link -> documents.
func readFound(t *testing.T, st store.Store, colls []string) map[string][]json.RawMessage {
	t.Helper()
	ctx := context.Background()
	found := map[string][]json.RawMessage{}
	for _, c := range colls {
		if c == "dbs/app/colls/"+shardstate.CollectionID {
			continue
		}
		found[c] = []json.RawMessage{}
		tok := ""
		for {
			page, err := st.ReadFeed(ctx, c, &store.FeedOptions{Continuation: tok})
			require.NoError(t, err)
			found[c] = append(found[c], page.Items...)
			if tok = page.Continuation; tok == "" {
				break
			}
		}
	}
	return found
}

// checkFound is checkPlaced over documents already read: found holds
// every document of each collection (by link) but the state's. Each kind
// of wrongness is reported once, with how many documents and some of them:
// lost, misplaced (no copy where r puts it: routers do not find it), left
// behind (a second copy elsewhere), stale (the copy in place, or the first,
// older than acknowledged), deleted and back, never acknowledged. It
// returns the ids of the acknowledged documents a router cannot find: lost
// or misplaced.
func checkFound(t *testing.T, found map[string][]json.RawMessage, r resolver.Resolver, l *ledger) (unfound []string) {
	t.Helper()
	wrong := map[string][]string{}
	add := func(kind, format string, args ...any) {
		wrong[kind] = append(wrong[kind], fmt.Sprintf(format, args...))
	}
	type copyOf struct {
		coll string
		d    doc
	}
	copies := map[string][]copyOf{} // by id, in collection order
	for _, c := range slices.Sorted(maps.Keys(found)) {
		for _, raw := range found[c] {
			var d doc
			require.NoError(t, json.Unmarshal(raw, &d))
			copies[d.ID] = append(copies[d.ID], copyOf{c, d})
		}
	}
	for id, cs := range copies {
		want, err := r.ResolveForCreate(cs[0].d.UserID)
		require.NoError(t, err)
		placed := slices.IndexFunc(cs, func(c copyOf) bool { return c.coll == want })
		for i, c := range cs {
			if i != placed {
				if placed >= 0 {
					add("left behind", "%s (key %s) is in %s, and also in %s (value %d)", id, c.d.UserID, want, c.coll, c.d.V)
				} else {
					add("misplaced", "%s (key %s) is in %s only, want %s", id, c.d.UserID, c.coll, want)
					unfound = append(unfound, id)
				}
			}
		}
		c := cs[max(placed, 0)]
		l.mu.Lock()
		v, known := l.value[id]
		unknown := l.unknown[id]
		l.mu.Unlock()
		switch {
		case unknown:
		case !known:
			add("never acknowledged", "%s exists in %s but was never acknowledged", id, c.coll)
		case v < 0:
			add("deleted and back", "%s was deleted and is back, in %s", id, c.coll)
		case v != c.d.V:
			add("stale", "%s in %s has value %d, want %d", id, c.coll, c.d.V, v)
		}
	}
	l.mu.Lock()
	for id, v := range l.value {
		if _, ok := copies[id]; !ok && v >= 0 && !l.unknown[id] {
			add("lost", "%s (value %d, key %s) was acknowledged and is lost", id, v, l.key[id])
			unfound = append(unfound, id)
		}
	}
	l.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(wrong)) {
		w := wrong[kind]
		slices.Sort(w)
		t.Errorf("%d documents %s:%s", len(w), kind, sample(w, 20))
	}
	return unfound
}

// sample lists up to n of xs, one a line, and how many more there are.
func sample(xs []string, n int) string {
	if len(xs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, x := range xs[:min(n, len(xs))] {
		b.WriteString("\n\t" + x)
	}
	if len(xs) > n {
		fmt.Fprintf(&b, "\n\t... and %d more", len(xs)-n)
	}
	return b.String()
}

// settled checks that the database's state holds no phase and routes by
// want, and returns the state's resolver.
func settled(t *testing.T, st store.Store, want resolver.Resolver) resolver.Resolver {
	t.Helper()
	s, err := shardstate.Load(context.Background(), st, db)
	require.NoError(t, err)
	assert.Nil(t, s.Phase, "the phase is cleared")
	r, err := s.Decode()
	require.NoError(t, err)
	w, _ := resolver.Marshal(want)
	g, _ := resolver.Marshal(r)
	assert.JSONEq(t, string(w), string(g), "the state's resolver")
	return r
}

// seeded returns an embedded store whose database follows a shared state
// seeded with r, holding n documents written through the router, and the
// ledger of them.
func seeded(t *testing.T, r resolver.Resolver, n int) (store.Store, *router.Client, *ledger) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	c, f := followEnsured(ctx, t, st, &router.FollowOptions{Seed: r, PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	t.Cleanup(func() { _ = f.Close() })
	l := newLedger()
	for i := range n {
		id, key := fmt.Sprintf("seed-%d", i), fmt.Sprintf("u%d", i%500)
		_, err := c.Create(ctx, db, doc{ID: id, UserID: key, V: 1}, nil)
		require.NoError(t, err)
		l.set(id, key, 1)
	}
	return st, c, l
}

// TestReshardUnderWrites: 2 collections become 3, then 2 again, then 1
// (removing the last but one) while
// writers create, change and delete documents through routers that follow
// the state; afterwards every acknowledged write is there with its last
// value, every delete holds, and each document is once where the resolver
// puts it.
func TestReshardUnderWrites(t *testing.T) {
	ctx := context.Background()
	two, three := ring(t, 2), ring(t, 3)
	st, c, l := seeded(t, two, 2000)

	for round, next := range []resolver.Resolver{three, two, ring(t, 1)} {
		stop := make(chan struct{})
		var failed atomic.Int64
		wg := writers(t, c, l, round, 4, stop, &failed)
		var steps []string
		prog, err := transition.Reshard(ctx, st, db, next, &transition.ReshardOptions{
			CheckpointEvery: 100,
			Routers:         &shardstate.WaitOptions{Poll: 10 * time.Millisecond},
			Step:            func(s string) error { steps = append(steps, s); return nil },
		})
		close(stop)
		wg.Wait()
		require.NoError(t, err)
		assert.Zero(t, failed.Load(), "no write failed")
		assert.Equal(t, []string{"published", "copied", "caught-up", "frozen", "switched", "cleaned", "done"}, steps)
		t.Logf("scanned %d, copied %d, caught up %d, deleted %d", prog.Scanned, prog.Copied, prog.CaughtUp, prog.Deleted)

		settled(t, st, next)
		checkPlaced(t, st, next, l)

		again, err := transition.Reshard(ctx, st, db, next, nil)
		require.NoError(t, err, "a reshard to where the database is does nothing")
		assert.Zero(t, again.Scanned)
	}
}

// TestReshardResumes: a reshard stopped at each named step (as a crash
// would stop it) is finished by the next call.
func TestReshardResumes(t *testing.T) {
	ctx := context.Background()
	for _, at := range []string{"published", "copied", "caught-up", "frozen", "switched", "cleaned"} {
		t.Run(at, func(t *testing.T) {
			st, _, l := seeded(t, ring(t, 2), 500)
			crash := errors.New("crash")
			_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{CheckpointEvery: 50,
				Step: func(s string) error {
					if s == at {
						return crash
					}
					return nil
				}})
			require.ErrorIs(t, err, crash)
			_, err = transition.Reshard(ctx, st, db, ring(t, 4), nil)
			require.ErrorIs(t, err, transition.ErrReshardInProgress, "another target waits")
			var last transition.Progress
			p, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{Progress: func(p transition.Progress) { last = p }})
			require.NoError(t, err)
			checkPlaced(t, st, ring(t, 3), l)
			assert.Equal(t, "done", last.Step)
			assert.Positive(t, last.Total, "the sources' size")
			if at == "copied" || at == "caught-up" || at == "frozen" {
				assert.Positive(t, p.Verified, "a resume checks the copies")
			}
		})
	}
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	st, c, _ := seeded(t, ring(t, 2), 300)
	rep, err := transition.Verify(ctx, st, db, ring(t, 2))
	require.NoError(t, err)
	assert.True(t, rep.OK())
	assert.Equal(t, int64(300), rep.Documents)

	// Under a resolver over three collections, a third of the keys are
	// misplaced; a document copied by hand is a duplicate.
	rep, err = transition.Verify(ctx, st, db, ring(t, 3))
	require.NoError(t, err)
	assert.False(t, rep.OK())
	assert.NotEmpty(t, rep.Misplaced)
	assert.Empty(t, rep.Duplicates)
	d, err := c.Read(ctx, db, "seed-1", "u1")
	require.NoError(t, err)
	where, _ := ring(t, 2).ResolveForCreate("u1")
	other := "dbs/app/colls/c0"
	if where == other {
		other = "dbs/app/colls/c1"
	}
	_, err = st.Create(ctx, other, d.Body, nil)
	require.NoError(t, err)
	rep, err = transition.Verify(ctx, st, db, ring(t, 2))
	require.NoError(t, err)
	require.Len(t, rep.Duplicates, 1)
	assert.Equal(t, "seed-1", rep.Duplicates[0].ID)
	require.Len(t, rep.Misplaced, 1)
	assert.Equal(t, other, rep.Misplaced[0].Collection)
	assert.Equal(t, where, rep.Misplaced[0].Want)
}

// TestAbort: a reshard stopped before its switch is aborted with nothing
// lost and no copy left; after the switch, abort refuses.
func TestAbort(t *testing.T) {
	ctx := context.Background()
	for _, at := range []string{"published", "copied", "frozen"} {
		t.Run(at, func(t *testing.T) {
			st, _, l := seeded(t, ring(t, 3), 600)
			stop := errors.New("stop")
			_, err := transition.Reshard(ctx, st, db, ring(t, 2), &transition.ReshardOptions{Step: func(s string) error {
				if s == at {
					return stop
				}
				return nil
			}})
			require.ErrorIs(t, err, stop)
			_, err = transition.Abort(ctx, st, db, nil)
			require.NoError(t, err)
			s, err := shardstate.Load(ctx, st, db)
			require.NoError(t, err)
			assert.Nil(t, s.Phase)
			checkPlaced(t, st, ring(t, 3), l)
			_, err = transition.Abort(ctx, st, db, nil)
			require.NoError(t, err, "nothing to abort")
		})
	}
	st, _, _ := seeded(t, ring(t, 2), 100)
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{Step: func(s string) error {
		if s == "switched" {
			return errors.New("stop")
		}
		return nil
	}})
	require.Error(t, err)
	_, err = transition.Abort(ctx, st, db, nil)
	require.ErrorIs(t, err, transition.ErrPastSwitch)
}

// faulty injects failures into a store's calls: before the call (nothing
// happened) or after it (it happened, and the caller is told it failed),
// throttles with a retry-after, and unavailability.
type faulty struct {
	store.Store
	mu     sync.Mutex
	rng    *rand.Rand
	p      float64
	always string // an operation that always fails
	n      atomic.Int64
}

func (f *faulty) fault(op string) (before, after error) {
	if op == f.always {
		return &store.Error{Kind: store.ErrUnavailable, Op: op, Message: "injected, for good"}, nil
	}
	f.mu.Lock()
	x, which := f.rng.Float64(), f.rng.IntN(3)
	f.mu.Unlock()
	if x >= f.p {
		return nil, nil
	}
	f.n.Add(1)
	switch which {
	case 0:
		return &store.Error{Kind: store.ErrThrottled, Op: op, RetryAfter: time.Millisecond, Message: "injected"}, nil
	case 1:
		return &store.Error{Kind: store.ErrUnavailable, Op: op, Message: "injected before"}, nil
	}
	return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Message: "injected after"}
}

func faultDo[T any](f *faulty, op string, fn func() (T, error)) (T, error) {
	before, after := f.fault(op)
	if before != nil {
		var zero T
		return zero, before
	}
	v, err := fn()
	if err == nil && after != nil {
		var zero T
		return zero, after
	}
	return v, err
}

func (f *faulty) Create(ctx context.Context, l string, d []byte, o *store.WriteOptions) (*store.Document, error) {
	return faultDo(f, "create", func() (*store.Document, error) { return f.Store.Create(ctx, l, d, o) })
}
func (f *faulty) Upsert(ctx context.Context, l string, d []byte, o *store.WriteOptions) (*store.Document, error) {
	return faultDo(f, "upsert", func() (*store.Document, error) { return f.Store.Upsert(ctx, l, d, o) })
}
func (f *faulty) Replace(ctx context.Context, l, id string, d []byte, o *store.WriteOptions) (*store.Document, error) {
	return faultDo(f, "replace", func() (*store.Document, error) { return f.Store.Replace(ctx, l, id, d, o) })
}
func (f *faulty) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	return faultDo(f, "read", func() (*store.Document, error) { return f.Store.Read(ctx, l, id, o) })
}
func (f *faulty) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	_, err := faultDo(f, "delete", func() (struct{}, error) { return struct{}{}, f.Store.Delete(ctx, l, id, o) })
	return err
}
func (f *faulty) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	return faultDo(f, "query", func() (*store.Page, error) { return f.Store.Query(ctx, l, q, o) })
}
func (f *faulty) ReadFeed(ctx context.Context, l string, o *store.FeedOptions) (*store.Page, error) {
	return faultDo(f, "read feed", func() (*store.Page, error) { return f.Store.ReadFeed(ctx, l, o) })
}

// TestReshardUnderFaults: with a tenth of the reshard's store calls
// throttled or failing (some after they took effect), the reshard retries
// within its bounds and finishes with nothing lost, while writers go on;
// a call that always fails ends it with an error that says so.
func TestReshardUnderFaults(t *testing.T) {
	ctx := context.Background()
	st, c, l := seeded(t, ring(t, 2), 1500)
	f := &faulty{Store: st, rng: rand.New(rand.NewPCG(3, 3)), p: 0.1}
	stop := make(chan struct{})
	var failed atomic.Int64
	wg := writers(t, c, l, 0, 2, stop, &failed)
	_, err := transition.Reshard(ctx, f, db, ring(t, 3), &transition.ReshardOptions{
		CheckpointEvery: 100, Retry: transition.RetryPolicy{Policy: retry.Policy{MaxAttempts: 20, DefaultWait: time.Millisecond}}})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	assert.Zero(t, failed.Load())
	assert.Positive(t, f.n.Load())
	t.Logf("%d faults injected", f.n.Load())
	checkPlaced(t, st, ring(t, 3), l)

	f = &faulty{Store: st, rng: rand.New(rand.NewPCG(4, 4)), always: "upsert"}
	_, err = transition.Reshard(ctx, f, db, ring(t, 2), &transition.ReshardOptions{Retry: transition.RetryPolicy{Policy: retry.Policy{MaxAttempts: 3, DefaultWait: time.Millisecond}}})
	require.ErrorIs(t, err, store.ErrUnavailable)
	assert.ErrorContains(t, err, "failed 3 times")
	f.always = ""
	_, err = transition.Reshard(ctx, f, db, ring(t, 2), nil)
	require.NoError(t, err, "resumed once the store is well")
	checkPlaced(t, st, ring(t, 2), l)
}

// TestStaleRouterAcrossCutover: a router that never polls on its own (an
// hour between polls) keeps writing through a reshard; every write it
// sends with the old version is refused by the store's fence, it refreshes,
// and the write goes where the new version puts it (Vitess #9453: writes
// accepted at the source after the switch). Nothing is lost.
func TestStaleRouterAcrossCutover(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 1000)
	stale, f := idleFollower(t, st)
	stop := make(chan struct{})
	var failed atomic.Int64
	wg := writers(t, stale, l, 7, 2, stop, &failed)
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{
		Routers: &shardstate.WaitOptions{Poll: 10 * time.Millisecond}, RouterWait: 10 * time.Second})
	close(stop)
	wg.Wait()
	// The stale router does not poll by itself within the test: the
	// reshard's waits for routers end because its writes, refused by the
	// fence, make it refresh and acknowledge each new version.
	require.NoError(t, err)
	assert.Zero(t, failed.Load())
	assert.Greater(t, f.Version(), int64(1), "the stale router moved on, by its refreshes")
	checkPlaced(t, st, ring(t, 3), l)
}

// TestReshardOwner: two runs started at once agree on one owner, and the
// other returns when it finishes; a run started while another is alive
// (writing its heartbeat, though stuck in a step) waits for it rather than
// taking over. (A dead owner taken over after the owner TTL is the kill
// test's case.)
func TestReshardOwner(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 800)
	opts := &transition.ReshardOptions{OwnerTTL: 300 * time.Millisecond, CheckpointEvery: 50}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = transition.Reshard(ctx, st, db, ring(t, 3), opts) })
	}
	wg.Wait()
	// One runs it and the other waits; on a busy host the owner's
	// heartbeat can lapse past the short TTL, and then the waiter takes
	// over and the first stops with ErrTakenOver. Never both.
	for i, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, transition.ErrTakenOver, "run %d", i)
		}
	}
	require.False(t, errs[0] != nil && errs[1] != nil, "both runs failed: %v; %v", errs[0], errs[1])
	checkPlaced(t, st, ring(t, 3), l)

	// A live run held at "copied": its heartbeat goes on.
	block := make(chan struct{})
	held := make(chan struct{})
	dead := make(chan error, 1)
	go func() {
		_, err := transition.Reshard(ctx, st, db, ring(t, 2), &transition.ReshardOptions{OwnerTTL: time.Second,
			Step: func(s string) error {
				if s == "copied" {
					close(held)
					<-block
				}
				return nil
			}})
		dead <- err
	}()
	// A second run sees the heartbeat and waits, well past the TTL; once
	// the first is let go it finishes, and the second returns.
	<-held
	start := time.Now()
	second := make(chan error, 1)
	go func() {
		_, err := transition.Reshard(ctx, st, db, ring(t, 2), &transition.ReshardOptions{OwnerTTL: time.Second})
		second <- err
	}()
	time.Sleep(2500 * time.Millisecond) // well past the TTL: the heartbeat keeps the owner alive
	select {
	case err := <-second:
		t.Fatalf("the second run did not wait for the live owner: %v", err)
	default:
	}
	close(block)
	require.NoError(t, <-dead)
	require.NoError(t, <-second)
	assert.Greater(t, time.Since(start), 2500*time.Millisecond)
	checkPlaced(t, st, ring(t, 2), l)
}

// TestReshardLogs: the manager logs each step through the given slog
// logger.
func TestReshardLogs(t *testing.T) {
	ctx := context.Background()
	st, _, _ := seeded(t, ring(t, 2), 200)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{Logger: log, Routers: &shardstate.WaitOptions{Poll: 10 * time.Millisecond}})
	require.NoError(t, err)
	out := buf.String()
	for _, step := range []string{"published", "copied", "caught-up", "frozen", "switched", "cleaned", "done"} {
		assert.Contains(t, out, `msg="reshard step" db=dbs/app step=`+step+" ")
	}
}

// TestReshardLeavesOtherPhases: a phase another change recorded (a
// spillover opening its next collection) is neither taken for "no reshard"
// nor overwritten: the reshard refuses with ErrOtherChange and the state
// stays as it was.
func TestReshardLeavesOtherPhases(t *testing.T) {
	ctx := context.Background()
	st, _, _ := seeded(t, ring(t, 2), 50)
	cur, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	phase := json.RawMessage(`{"spillover":{"pending":"dbs/app/colls/c2"}}`)
	held, err := shardstate.Publish(ctx, st, cur, shardstate.Change{Phase: phase, By: "spillover"})
	require.NoError(t, err)

	_, err = transition.Reshard(ctx, st, db, ring(t, 3), nil)
	require.ErrorIs(t, err, transition.ErrOtherChange)
	assert.Contains(t, err.Error(), `"spillover"`)
	now, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, held.Version, now.Version, "nothing published")
	assert.JSONEq(t, string(phase), string(now.Phase))
}

// TestReshardKeyPathConflict: a next collection that exists partitioned by
// another path than the next resolver's key is the one error of the
// conflict rule, before anything is published or copied.
func TestReshardKeyPathConflict(t *testing.T) {
	ctx := context.Background()
	st, _, _ := seeded(t, ring(t, 2), 10)
	require.NoError(t, st.CreateCollection(ctx, "dbs/app/colls/c2", &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), nil)
	var kpe *store.KeyPathError
	require.ErrorAs(t, err, &kpe)
	assert.Equal(t, store.KeyPathError{Collection: "dbs/app/colls/c2", Want: "/userId", Found: "/tenant"}, *kpe)
	assert.ErrorIs(t, err, router.ErrKeyPathMismatch)
	s, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	assert.Nil(t, s.Phase, "nothing was published")
}

// outpacing is a store whose every catch-up read (a page of a change
// feed, while the keys are not frozen) first writes every moving document
// of the collection read again through a router: writes to moving keys
// that always outpace the catch-up, whatever its speed.
type outpacing struct {
	*skipping
	c      *router.Client
	l      *ledger
	moving map[string][]string // collection -> ids of its moving documents
	mu     sync.Mutex
	v      map[string]int
	writes atomic.Int64
}

func (o *outpacing) ReadChanges(ctx context.Context, l string, opts *store.ChangeFeedOptions) (*store.ChangePage, error) {
	if s, err := shardstate.Load(ctx, o.skipping.Store, db); err == nil {
		if r, err := s.Decode(); err == nil {
			if t, ok := r.(*transition.Resolver); ok && !t.Frozen() && t.ReadMode() == transition.ReadCurrent {
				for _, id := range o.moving[l] {
					o.mu.Lock()
					o.v[id]++
					v := o.v[id]
					o.mu.Unlock()
					o.l.mu.Lock()
					key := o.l.key[id]
					o.l.mu.Unlock()
					if _, err := o.c.Upsert(ctx, db, doc{ID: id, UserID: key, V: v}, nil); err != nil {
						return nil, fmt.Errorf("the writer: %w", err)
					}
					o.l.set(id, key, v)
					o.writes.Add(1)
				}
			}
		}
	}
	return o.skipping.ReadChanges(ctx, l, opts)
}

// TestCatchUpBounded: writes to moving keys that outpace the catch-up do
// not keep the reshard from finishing: after a few rounds that do not
// shrink, the moving keys are frozen and the rest is drained. Nothing is
// lost, and the progress shows the rounds and the lag.
func TestCatchUpBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, c, l := seeded(t, ring(t, 2), 300)
	o := &outpacing{skipping: &skipping{Store: st, skipped: true}, c: c, l: l, moving: map[string][]string{}, v: map[string]int{}}
	for _, m := range movingSeeds(t, 300, ring(t, 2), ring(t, 3)) {
		o.moving[m.from] = append(o.moving[m.from], m.id)
		o.v[m.id] = 1
	}
	var rounds, behind atomic.Int64
	_, err := transition.Reshard(ctx, o, db, ring(t, 3), &transition.ReshardOptions{
		Overlap: time.Millisecond, // a round reads the changes up to the second after it began
		Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond},
		Progress: func(p transition.Progress) {
			rounds.Store(int64(p.Rounds))
			if p.Behind > 0 {
				behind.Store(p.Behind)
			}
		},
	})
	require.NoError(t, err)
	assert.Positive(t, o.writes.Load(), "the writer wrote")
	assert.GreaterOrEqual(t, rounds.Load(), int64(2), "the catch-up went round, then froze")
	assert.Positive(t, behind.Load(), "the progress showed the lag")
	checkPlaced(t, st, ring(t, 3), l)
}

// TestCutoverGivesUp: a cutover that cannot finish within its cap and
// tries stops the reshard with an error that says why and what to change;
// nothing is lost, and the next run finishes.
func TestCutoverGivesUp(t *testing.T) {
	ctx := context.Background()
	st, _, l := seeded(t, ring(t, 2), 300)
	_, err := transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{
		CutoverCap: time.Nanosecond, CutoverTries: 2, Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "did not finish within 1ns in 2 tries")
	assert.ErrorContains(t, err, "raise CutoverCap")
	s, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	r, err := s.Decode()
	require.NoError(t, err)
	tr, ok := r.(*transition.Resolver)
	require.True(t, ok, "the reshard is still recorded")
	assert.False(t, tr.Frozen(), "the moving keys are thawed")
	assert.Equal(t, transition.ReadCurrent, tr.ReadMode())

	_, err = transition.Reshard(ctx, st, db, ring(t, 3), &transition.ReshardOptions{Routers: &shardstate.WaitOptions{Poll: 5 * time.Millisecond}})
	require.NoError(t, err)
	checkPlaced(t, st, ring(t, 3), l)
}
