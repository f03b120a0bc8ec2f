package spillover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

const db = "dbs/app"

func seed(t testing.TB, maxDocs int64, fill float64, rangeKey string) *spillover.Resolver {
	t.Helper()
	o := &spillover.Options{PartitionKey: resolver.MustKeyDef("/id"), CollectionPrefix: "log", MaxDocuments: maxDocs, FillRatio: fill}
	if rangeKey != "" {
		o.RangeKey, o.RangeType = resolver.MustKeyDef(rangeKey), spillover.RangeNumber
	}
	r, err := spillover.New([]string{db + "/colls/log0"}, o)
	require.NoError(t, err)
	return r
}

// current returns the spillover the state routes by now.
func current(t testing.TB, st store.Store) (*shardstate.State, *spillover.Resolver) {
	t.Helper()
	s, err := shardstate.Load(context.Background(), st, db)
	require.NoError(t, err)
	r, err := s.Decode()
	require.NoError(t, err)
	return s, r.(*spillover.Resolver)
}

// checkFilled asserts the database's collections follow each other in
// sequence, the resolver names each, every id is stored exactly once, and
// no collection holds more than limit documents.
func checkFilled(t testing.TB, st store.Store, ids map[string]bool, limit int64) []int64 {
	t.Helper()
	return checkFilledUnknown(t, st, ids, nil, limit)
}

// checkFilledUnknown is checkFilled where the documents in unknown (writes
// whose outcome was not known) may be stored, at most once.
func checkFilledUnknown(t testing.TB, st store.Store, ids, unknown map[string]bool, limit int64) []int64 {
	t.Helper()
	ctx := context.Background()
	_, r := current(t, st)
	links, err := st.ListCollections(ctx, db)
	require.NoError(t, err)
	var got []string
	for _, l := range links {
		if l != db+"/colls/"+shardstate.CollectionID {
			got = append(got, l)
		}
	}
	want := r.Collections()
	for i := range want {
		assert.Equal(t, fmt.Sprintf("%s/colls/log%d", db, i), want[i], "collections in sequence")
	}
	assert.ElementsMatch(t, want, got, "every collection is the resolver's, none missing or left over")
	seen := map[string]int{}
	var counts []int64
	for _, l := range want {
		var n int64
		opts := &store.FeedOptions{PageSize: 1000}
		for {
			page, err := st.ReadFeed(ctx, l, opts)
			require.NoError(t, err)
			for _, it := range page.Items {
				var d struct{ ID string }
				require.NoError(t, json.Unmarshal(it, &d))
				seen[d.ID]++
				n++
			}
			if page.Continuation == "" {
				break
			}
			opts.Continuation = page.Continuation
		}
		counts = append(counts, n)
		assert.LessOrEqual(t, n, limit, "%s holds %d documents, the limit is %d", l, n, limit)
	}
	for id := range ids {
		assert.Equal(t, 1, seen[id], "document %s", id)
	}
	for id, n := range seen {
		if !ids[id] {
			assert.True(t, unknown[id] && n == 1, "document %s stored %d times, never acknowledged", id, n)
		}
	}
	return counts
}

// TestCoordinatorFills: four writers through one router; a coordinator
// checking every 5 ms opens collection after collection. Each writer also
// checks after each of its writes, so how far a collection overfills
// depends on the writers' count (at most one write in flight each), never
// on how soon the scheduler runs the coordinator's timer.
func TestCoordinatorFills(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	var coord *spillover.Coordinator
	c := router.New(st, &router.Options{Hooks: router.Hooks{Call: func(ctx context.Context, l, op string, d time.Duration, err error) {
		if coord != nil {
			coord.Observe(ctx, l, op, d, err)
		}
	}}})
	var opened []string
	var mu sync.Mutex
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 100, 0.5, ""), CheckInterval: 5 * time.Millisecond,
		OnOpen: func(l string, _ int64) { mu.Lock(); opened = append(opened, l); mu.Unlock() }})
	require.NoError(t, err)
	defer coord.Close()
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	defer f.Close()

	ids := createConcurrently(ctx, t, c, 4, 150, func(i int) map[string]any { return map[string]any{"n": i} }, func() error {
		_, err := coord.Check(ctx)
		return err
	})
	// Close waits for a background check that may be opening a
	// collection still: after it, the state and the collections agree.
	require.NoError(t, coord.Close())
	counts := checkFilled(t, st, ids, 100)
	mu.Lock()
	t.Logf("600 documents in %v (limit 100, fill ratio 0.5); opened %v", counts, opened)
	mu.Unlock()
	assert.GreaterOrEqual(t, len(counts), 6, "600 documents at 50 to 100 a collection")
	// Every document is read by the router from wherever it is.
	rows, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, "600", string(rows[0]))
	d, err := c.Read(ctx, db, "w0-0", "w0-0")
	require.NoError(t, err)
	assert.Equal(t, "w0-0", d.ID)
}

// TestCrashWhileOpening: a coordinator stopped after each step of an
// opening leaves a state the next one finishes: the collection named in
// the phase is created (or found) and published, nothing else, and the
// writes made meanwhile stay readable.
func TestCrashWhileOpening(t *testing.T) {
	for _, step := range []string{spillover.StepRecorded, spillover.StepCreated, spillover.StepPublished} {
		t.Run(step, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New(nil)
			crash := errors.New("crashed")
			r := seed(t, 10, 1, "")
			first, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: r, CheckInterval: time.Hour,
				Step: func(s string) error {
					if s == step {
						return crash
					}
					return nil
				}})
			require.NoError(t, err)
			c := router.New(st, nil)
			f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 10 * time.Millisecond, LeaseDuration: 5 * time.Second})
			require.NoError(t, err)
			defer f.Close()
			ids := map[string]bool{}
			for i := range 10 {
				_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i)}, nil)
				require.NoError(t, err)
				ids[fmt.Sprint(i)] = true
			}
			_, err = first.Check(ctx)
			require.ErrorIs(t, err, crash)
			require.NoError(t, first.Close())
			s, _ := current(t, st)
			if step != spillover.StepPublished {
				assert.Contains(t, string(s.Phase), `"opening":"dbs/app/colls/log1"`, "the phase names the collection being opened")
			}
			// Writes made meanwhile go to log1 once published; before, log0
			// is at its limit, its quota refuses them, and they wait for
			// the coordinator that finishes the opening.
			errs := make(chan error, 3)
			for i := 10; i < 13; i++ {
				ids[fmt.Sprint(i)] = true
				go func() {
					_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i)}, nil)
					errs <- err
				}()
			}
			next, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{CheckInterval: time.Hour})
			require.NoError(t, err)
			defer next.Close()
			for range 3 {
				require.NoError(t, <-errs)
			}
			s, r = current(t, st)
			assert.Nil(t, s.Phase, "the opening is finished")
			assert.Equal(t, []string{db + "/colls/log0", db + "/colls/log1"}, r.Collections())
			checkFilled(t, st, ids, 10)
		})
	}
}

// TestPrefixClash: a collection named like the spillover's that is not
// one of its own is refused, naming collectionPrefix.
func TestPrefixClash(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/log4", nil))
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/logbook", nil)) // not prefix+number: no clash
	_, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 10, 0.5, "")})
	require.Error(t, err)
	assert.ErrorIs(t, err, spillover.ErrPrefixClash)
	assert.ErrorIs(t, err, resolver.ErrInvalid)
	var ce *resolver.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "collectionPrefix", ce.Field)
	assert.Contains(t, err.Error(), "dbs/app/colls/log4")

	// Another kind of resolver is refused too.
	st2 := memstore.New(nil)
	other, err := hashring.New([]string{db + "/colls/a"}, nil)
	require.NoError(t, err)
	_, err = spillover.Start(ctx, st2, db, &spillover.CoordinatorOptions{Seed: other})
	assert.ErrorIs(t, err, spillover.ErrNotSpillover)
}

// throttling fails creates with ErrThrottled while on.
type throttling struct {
	store.Store
	mu sync.Mutex
	on bool
}

func (s *throttling) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	s.mu.Lock()
	on := s.on
	s.mu.Unlock()
	if on && !strings.HasSuffix(l, "/"+shardstate.CollectionID) {
		return nil, &store.Error{Kind: store.ErrThrottled, Op: "create", Link: l, RetryAfter: time.Millisecond}
	}
	return s.Store.Create(ctx, l, doc, o)
}

// TestObserveChecksSoon: with no scheduled check for an hour, a throttled
// write makes the coordinator check within MinGap and open the next
// collection.
func TestObserveChecksSoon(t *testing.T) {
	ctx := context.Background()
	st := &throttling{Store: memstore.New(nil)}
	opened := make(chan string, 1)
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 5, 1, ""), CheckInterval: time.Hour, MinGap: time.Millisecond, OnError: func(err error) { t.Log(err) },
		OnOpen: func(l string, _ int64) { opened <- l }})
	require.NoError(t, err)
	defer coord.Close()
	// One attempt per call: the throttled create below asks for one
	// check, which the background loop takes before it opens log1, so no
	// second request is left pending once log1 is open.
	c := router.New(st, &router.Options{Retry: router.RetryPolicy{MaxAttempts: 1}, Hooks: router.Hooks{Call: coord.Observe}})
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 10 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	defer f.Close()
	for i := range 5 {
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i)}, nil)
		require.NoError(t, err)
	}
	select {
	case l := <-opened:
		t.Fatalf("opened %s before anything asked", l)
	case <-time.After(50 * time.Millisecond):
	}
	st.mu.Lock()
	st.on = true
	st.mu.Unlock()
	_, err = c.Create(ctx, db, map[string]any{"id": "x"}, nil)
	require.ErrorIs(t, err, store.ErrThrottled)
	select {
	case l := <-opened:
		assert.Equal(t, db+"/colls/log1", l)
	case <-time.After(5 * time.Second):
		t.Fatal("a throttled write did not lead to a check")
	}
	// A failed read, feed or collection call asks for nothing: no check,
	// so no opening follows, though log1 is at its fill point (and its
	// limit: a sixth write would be refused for quota, which would).
	st.mu.Lock()
	st.on = false
	st.mu.Unlock()
	require.Eventually(t, func() bool { return f.Version() > 1 }, 5*time.Second, 10*time.Millisecond)
	for i := range 5 {
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint("again-", i)}, nil)
		require.NoError(t, err)
	}
	for _, op := range []string{"read", "query", "read feed", "read collection", "create collection"} {
		coord.Observe(ctx, db+"/colls/log1", op, 0, &store.Error{Kind: store.ErrThrottled})
	}
	select {
	case l := <-opened:
		t.Fatalf("a failed read led to a check, which opened %s", l)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestMeasuredRanges: with a range key, sealed collections get bounds and
// a range read skips those that cannot hold it.
func TestMeasuredRanges(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	coord, c, f := coordinated(t, st, seed(t, 10, 1, "/n"))
	for i := range 30 {
		if i%10 == 0 && i > 0 {
			opened, err := coord.Check(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, opened)
			require.NoError(t, f.Refresh(ctx))
		}
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i), "n": i}, nil)
		require.NoError(t, err)
	}
	require.NoError(t, f.Refresh(ctx))
	for _, l := range []string{db + "/colls/log0", db + "/colls/log1"} {
		require.NoError(t, coord.Measure(ctx, l))
	}
	_, r := current(t, st)
	assert.Empty(t, r.Unmeasured())
	got, err := r.ResolveForRead(rangeresolver.Range[float64]{Low: 12, High: 15})
	require.NoError(t, err)
	assert.Equal(t, []string{db + "/colls/log2", db + "/colls/log1"}, got)
	require.NoError(t, c.Register("dbs/view", r)) // not followed: to query by the range
	_ = got
}

// TestSealedCollectionDeleted: a sealed collection that was deleted is
// reported, naming it and what to do, not created again empty; the newest
// one is created when missing.
func TestSealedCollectionDeleted(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	r, err := spillover.New([]string{db + "/colls/log0", db + "/colls/log1"},
		&spillover.Options{PartitionKey: resolver.MustKeyDef("/id"), CollectionPrefix: "log", MaxDocuments: 10})
	require.NoError(t, err)
	_, err = shardstate.Init(ctx, st, db, r, nil)
	require.NoError(t, err)
	// The newest exists, the sealed one is gone: it was deleted.
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/log1", &store.CollectionSpec{PartitionKeyPath: "/id"}))
	_, err = spillover.Start(ctx, st, db, nil)
	var mce *store.MissingCollectionError
	require.ErrorAs(t, err, &mce)
	assert.Equal(t, db+"/colls/log0", mce.Collection)
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.Contains(t, err.Error(), "restore it")
	_, err = st.CollectionInfo(ctx, db+"/colls/log0")
	require.ErrorIs(t, err, store.ErrNotFound, "the sealed collection is not created again")

	// Restored, it starts.
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/log0", &store.CollectionSpec{PartitionKeyPath: "/id"}))
	coord, err := spillover.Start(ctx, st, db, nil)
	require.NoError(t, err)
	require.NoError(t, coord.Close())

	// A configuration that starts with a sealed collection on a new store
	// (none of its collections exists: nothing was ever stored) makes them
	// all.
	fresh := memstore.New(nil)
	coord, err = spillover.Start(ctx, fresh, db, &spillover.CoordinatorOptions{Seed: r})
	require.NoError(t, err)
	require.NoError(t, coord.Close())
	for _, l := range []string{db + "/colls/log0", db + "/colls/log1"} {
		_, err = fresh.CollectionInfo(ctx, l)
		require.NoError(t, err, l)
	}
}

// TestCoordinatorKeyPathConflict: a collection partitioned by another path
// is the one error of the conflict rule; the same path spelt another way
// is none.
func TestCoordinatorKeyPathConflict(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/log0", &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	_, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 10, 0.5, "")})
	var kpe *store.KeyPathError
	require.ErrorAs(t, err, &kpe)
	assert.Equal(t, store.KeyPathError{Collection: db + "/colls/log0", Want: "/id", Found: "/tenant"}, *kpe)
	assert.ErrorIs(t, err, router.ErrKeyPathMismatch)

	st2 := memstore.New(nil)
	require.NoError(t, st2.CreateCollection(ctx, db+"/colls/log0", &store.CollectionSpec{PartitionKeyPath: `/"id"`}))
	coord, err := spillover.Start(ctx, st2, db, &spillover.CoordinatorOptions{Seed: seed(t, 10, 0.5, "")})
	require.NoError(t, err)
	require.NoError(t, coord.Close())
}

// TestMeasureWaitsForRouters: after an opening, the one step that depends
// on every router having moved on, measuring the sealed collection's
// bounds (so range reads skip it), waits for each router's lease to
// acknowledge the version that sealed it (or lapse): a router that has
// not polled since the opening holds it, and the bounds are published
// only after it refreshed.
func TestMeasureWaitsForRouters(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	var f *router.Follower
	waited := 0
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 10, 1, "/n"), CheckInterval: time.Hour,
		Routers: &shardstate.WaitOptions{Poll: time.Millisecond, Pending: func(pending []*shardstate.Lease) {
			for _, l := range pending {
				if l.Router != "lagging" {
					continue
				}
				waited++
				_, r := current(t, st)
				assert.Equal(t, []string{db + "/colls/log0"}, r.Unmeasured(), "no bounds while a router may write by the old version")
				assert.NoError(t, f.Refresh(ctx)) // the router polls: it acknowledges the opening
			}
		}}})
	require.NoError(t, err)
	defer coord.Close()
	c := router.New(st, nil)
	f, err = c.Follow(ctx, db, &router.FollowOptions{RouterID: "lagging", PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	require.NoError(t, err)
	defer f.Close()
	for i := range 10 {
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i), "n": i}, nil)
		require.NoError(t, err)
	}
	opened, err := coord.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, db+"/colls/log1", opened)
	require.NoError(t, coord.Measure(ctx, db+"/colls/log0"))
	assert.Equal(t, 1, waited, "the measurement waited for the lagging router once")
	_, r := current(t, st)
	assert.Empty(t, r.Unmeasured(), "measured once every router moved on")
}

// raceOnce is a store on which the first replace of the state document
// loses its compare-and-swap: just before it, another writer publishes a
// change of its own (as the coordinator's background measurement does).
type raceOnce struct {
	store.Store
	once sync.Once
}

func (r *raceOnce) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if id == "state" {
		r.once.Do(func() {
			s, err := shardstate.Load(ctx, r.Store, db)
			if err == nil {
				_, err = shardstate.Publish(ctx, r.Store, s, shardstate.Change{By: "another writer"})
			}
			if err != nil {
				panic(err)
			}
		})
	}
	return r.Store.Replace(ctx, l, id, doc, o)
}

// TestCheckLostRaceLooksAgain: a check whose opening loses the state's
// compare-and-swap to an unrelated change reads the state again and opens
// the full collection. Before, it returned "" and the opening waited for
// the next scheduled check (an hour here), while writes overfilled the
// collection (examples/spillover failed that way under -race).
func TestCheckLostRaceLooksAgain(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(nil)
	defer mem.Close()
	st := &raceOnce{Store: mem}
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 10, 0.5, ""), CheckInterval: time.Hour})
	require.NoError(t, err)
	defer coord.Close()
	for i := range 5 {
		_, err := mem.Create(ctx, db+"/colls/log0", []byte(fmt.Sprintf(`{"id":"%d"}`, i)), &store.WriteOptions{PartitionKey: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	opened, err := coord.Check(ctx)
	require.NoError(t, err)
	assert.Equal(t, db+"/colls/log1", opened, "the full collection's successor is opened in this check")
	_, r := current(t, mem)
	assert.Len(t, r.Collections(), 2)
}

// TestChangesFollowSpillover: a consumer of the database's change feed,
// reading while spillover opens collection after collection, sees every
// document once each, from every collection, the new ones joining the feed
// as they open.
func TestChangesFollowSpillover(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	coord, c, f := coordinated(t, st, seed(t, 50, 0.5, ""))

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

// TestLimitHolds: maxDocuments and maxBytes are limits no collection
// exceeds, whatever the write rate. Eight writers create documents as fast
// as the store takes them through one router, on the embedded store and
// through docshard serve, with a coordinator that never checks on its
// schedule (CheckInterval an hour): the only thing that stops a collection
// from filling past its limit is the store's quota, set on the collections
// the coordinator creates; a write it refuses is sent on to the next
// collection, so every write succeeds, once.
func TestLimitHolds(t *testing.T) {
	const writers, perWriter = 8, 60
	for _, tc := range []struct {
		name    string
		backend string
		docs    int64 // maxDocuments
		bytes   int64 // maxBytes
	}{
		{"documents, embedded", "memstore", 50, 0},
		{"bytes, embedded", "memstore", 0, 6000},
		{"documents, serve", "serve", 50, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := emulatortest.Context(t)
			var st store.Store
			if tc.backend == "serve" {
				_, st = emulatortest.StartBackend(ctx, t)
			} else {
				st = memstore.New(nil)
			}
			defer st.Close()
			r, err := spillover.New([]string{db + "/colls/log0"}, &spillover.Options{PartitionKey: resolver.MustKeyDef("/id"),
				CollectionPrefix: "log", MaxDocuments: tc.docs, MaxBytes: tc.bytes, FillRatio: 0.9})
			require.NoError(t, err)
			coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: r, CheckInterval: time.Hour,
				OnError: func(err error) { t.Log(err) }, OnOpen: func(l string, v int64) { t.Logf("%s opened %s", time.Now().Format("05.000"), l) }})
			require.NoError(t, err)
			defer coord.Close()
			c := router.New(st, &router.Options{Hooks: router.Hooks{Call: coord.Observe}})
			f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 20 * time.Millisecond, LeaseDuration: 5 * time.Second})
			require.NoError(t, err)
			defer f.Close()

			ids := createConcurrently(ctx, t, c, writers, perWriter, func(int) map[string]any { return map[string]any{"pad": strings.Repeat("x", 40)} }, nil)
			require.NoError(t, coord.Close())
			limit := tc.docs
			if limit == 0 {
				limit = writers * perWriter
			}
			counts := checkFilled(t, st, ids, limit)
			_, cur := current(t, st)
			for _, l := range cur.Collections() {
				info, err := st.CollectionInfo(ctx, l)
				require.NoError(t, err)
				if tc.bytes > 0 {
					assert.LessOrEqual(t, info.Bytes, tc.bytes, "%s holds %d bytes, the limit is %d", l, info.Bytes, tc.bytes)
				}
			}
			t.Logf("%d documents in %v", writers*perWriter, counts)
			assert.Greater(t, len(counts), 1, "the writers filled more than one collection")
		})
	}
}

// TestCollectionWithoutQuota: a collection created before quotas (by an
// older docshard) keeps working: it takes writes past its limit, as it
// did, until the coordinator's check opens the next, which has the quota.
func TestCollectionWithoutQuota(t *testing.T) {
	ctx := emulatortest.Context(t)
	st := memstore.New(nil)
	defer st.Close()
	require.NoError(t, st.CreateCollection(ctx, db+"/colls/log0", &store.CollectionSpec{PartitionKeyPath: "/id"}))
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed(t, 10, 1, ""), CheckInterval: time.Hour})
	require.NoError(t, err)
	defer coord.Close()
	c := router.New(st, &router.Options{Hooks: router.Hooks{Call: coord.Observe}})
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	require.NoError(t, err)
	defer f.Close()
	for i := range 15 {
		_, err := c.Create(ctx, db, map[string]any{"id": fmt.Sprint(i)}, nil)
		require.NoError(t, err, "no quota on log0: it takes the 11th document and more")
	}
	opened, err := coord.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, db+"/colls/log1", opened)
	info, err := st.CollectionInfo(ctx, db+"/colls/log1")
	require.NoError(t, err)
	require.NotNil(t, info.Spec.Quota, "the collections the coordinator opens have the quota")
	assert.Equal(t, store.Quota{MaxDocuments: 10}, *info.Spec.Quota)
	require.NoError(t, f.Refresh(ctx))
	rows, err := c.Query(ctx, db, store.Query{Text: "SELECT VALUE COUNT(1) FROM c"}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, "15", string(rows[0]))
}

// createConcurrently creates writers×perWriter documents through c, from
// writers goroutines at once: writer w's i-th is doc(i) with the id
// "w{w}-{i}" added, followed by after() when after is not nil. It returns
// the ids written; a failed write or after fails the test and stops that
// writer.
func createConcurrently(ctx context.Context, t *testing.T, c *router.Client, writers, perWriter int, doc func(i int) map[string]any, after func() error) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%d", w, i)
				d := doc(i)
				d["id"] = id
				_, err := c.Create(ctx, db, d, nil)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				ids[id] = true
				mu.Unlock()
				if after != nil && !assert.NoError(t, after()) {
					return
				}
			}
		})
	}
	wg.Wait()
	return ids
}

// coordinated starts a spillover coordinator on st for db (checking only
// when asked) and a client following db's state every 10 ms; both close
// when the test ends, the follower first.
func coordinated(t *testing.T, st store.Store, seed resolver.Resolver) (*spillover.Coordinator, *router.Client, *router.Follower) {
	t.Helper()
	ctx := context.Background()
	coord, err := spillover.Start(ctx, st, db, &spillover.CoordinatorOptions{Seed: seed, CheckInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = coord.Close() })
	c := router.New(st, nil)
	f, err := c.Follow(ctx, db, &router.FollowOptions{PollInterval: 10 * time.Millisecond, LeaseDuration: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return coord, c, f
}
