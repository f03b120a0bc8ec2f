package shardstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/store/retry"
)

const db = "dbs/app"

func ring(t testing.TB, n int) resolver.Resolver { return routertest.Ring(t, n) }

// stores runs a test on every backend the state lives on: the embedded
// store in process, and the cosmos backend on docshard serve (the emulator
// in process), as routers in other processes reach it.
func stores(t *testing.T, test func(t *testing.T, st store.Store)) {
	t.Run("memstore", func(t *testing.T) {
		st := memstore.New(nil)
		defer st.Close()
		test(t, st)
	})
	t.Run("serve", func(t *testing.T) {
		srv := emulatortest.Start(t, nil)
		st, err := cosmos.Open(emulatortest.Context(t), &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}})
		require.NoError(t, err)
		defer st.Close()
		test(t, st)
	})
}

func TestInitLoadPublishHistory(t *testing.T) { stores(t, testInitLoadPublishHistory) }

func testInitLoadPublishHistory(t *testing.T, st store.Store) {
	ctx := context.Background()

	_, err := shardstate.Load(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoState)

	s1, err := shardstate.Init(ctx, st, db, ring(t, 2), &shardstate.InitOptions{By: "tester"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), s1.Version)
	assert.Equal(t, int64(1), s1.Epoch)
	assert.Equal(t, "tester", s1.UpdatedBy)
	assert.NotEmpty(t, s1.ETag)

	_, err = shardstate.Init(ctx, st, db, ring(t, 3), nil)
	var ce *shardstate.ConflictError
	require.ErrorAs(t, err, &ce, "a second Init loses to the first")
	assert.Equal(t, int64(1), ce.Current.Version)

	got, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, s1.Resolver, got.Resolver)
	r, err := got.Decode()
	require.NoError(t, err)
	target, err := r.ResolveForCreate("alice")
	require.NoError(t, err)
	assert.Contains(t, []string{"dbs/app/colls/c0", "dbs/app/colls/c1"}, target)

	s2, err := shardstate.Publish(ctx, st, got, shardstate.Change{Resolver: ring(t, 3), Phase: json.RawMessage(`{"name":"copy"}`), NewEpoch: true})
	require.NoError(t, err)
	assert.Equal(t, int64(2), s2.Version)
	assert.Equal(t, int64(2), s2.Epoch)
	assert.JSONEq(t, `{"name":"copy"}`, string(s2.Phase))
	f, ok := st.(store.Fencer)
	require.True(t, ok, "both backends fence")
	fence, err := f.Fence(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, int64(2), fence, "a new epoch raises the store's fence")

	s3, err := shardstate.Publish(ctx, st, s2, shardstate.Change{Phase: json.RawMessage(`null`)})
	require.NoError(t, err)
	assert.Equal(t, int64(3), s3.Version)
	assert.Equal(t, int64(2), s3.Epoch, "no new epoch asked")
	assert.Nil(t, s3.Phase, "null clears the phase")
	assert.Equal(t, s2.Resolver, s3.Resolver, "a nil resolver keeps the current one")

	// A change based on a stale version loses, and says what won.
	_, err = shardstate.Publish(ctx, st, s2, shardstate.Change{})
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, shardstate.ErrConflict)
	assert.Equal(t, int64(2), ce.Expected)
	assert.Equal(t, int64(3), ce.Current.Version)

	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, h, 3)
	for i, s := range h {
		assert.Equal(t, int64(i+1), s.Version)
	}
	assert.JSONEq(t, string(s1.Resolver), string(h[0].Resolver), "(through a query, the cosmos backend may reorder properties: see the closing note)")
	assert.Equal(t, s3.ETag, h[2].ETag, "the current version comes last, with its ETag")
}

// TestConcurrentPublish: many writers race from one version at a time;
// versions never fork, skip or go back, and the history holds exactly the
// winners.
func TestConcurrentPublish(t *testing.T) { stores(t, testConcurrentPublish) }

func testConcurrentPublish(t *testing.T, st store.Store) {
	ctx := context.Background()
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)

	const writers, rounds = 8, 25
	var mu sync.Mutex
	won := map[int64]string{} // version -> the writer that made it
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			by := fmt.Sprintf("writer-%d", w)
			for range rounds {
				cur, err := shardstate.Load(ctx, st, db)
				if !assert.NoError(t, err) {
					return
				}
				next, err := shardstate.Publish(ctx, st, cur, shardstate.Change{By: by, Phase: json.RawMessage(fmt.Sprintf(`{"by":%q}`, by))})
				if errors.Is(err, shardstate.ErrConflict) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				if !assert.Equal(t, cur.Version+1, next.Version) {
					return
				}
				mu.Lock()
				_, dup := won[next.Version]
				assert.False(t, dup, "version %d published twice", next.Version)
				won[next.Version] = by
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NotEmpty(t, won)

	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, h, len(won)+1, "the history holds version 1 and each winner, nothing else")
	for i, s := range h {
		require.Equal(t, int64(i+1), s.Version, "no version skipped")
		if i > 0 {
			assert.Equal(t, won[s.Version], s.UpdatedBy, "version %d is the winner's", s.Version)
			assert.JSONEq(t, fmt.Sprintf(`{"by":%q}`, won[s.Version]), string(s.Phase))
		}
	}
}

// TestBrokenDocuments: a corrupt, truncated or foreign state document is a
// clear error naming it, never a panic.
func TestBrokenDocuments(t *testing.T) {
	ctx := context.Background()
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	good := func(t *testing.T) []byte {
		st := memstore.New(nil)
		defer st.Close()
		_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
		require.NoError(t, err)
		d, err := st.Read(ctx, coll, "state", &store.ReadOptions{PartitionKey: "state"})
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(d.Body, &m))
		for _, k := range []string{"_etag", "_ts", "_rid", "_self"} {
			delete(m, k)
		}
		b, _ := json.Marshal(m)
		return b
	}(t)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good, &m))
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{"foreign", []byte(`{"id":"state","kind":"state","hello":"world"}`), `format ""`},
		{"other format", edit(func(m map[string]any) { m["format"] = "docshard.state/9" }), "docshard.state/9"},
		{"other database", edit(func(m map[string]any) { m["database"] = "dbs/other" }), "another database"},
		{"version 0", edit(func(m map[string]any) { m["version"] = 0 }), "version 0"},
		{"epoch 0", edit(func(m map[string]any) { m["epoch"] = 0 }), "epoch 0"},
		{"no resolver", edit(func(m map[string]any) { delete(m, "resolver") }), "no resolver"},
		{"broken resolver", edit(func(m map[string]any) { m["resolver"] = map[string]any{"kind": "hash", "collections": []any{}} }), "resolver of version 1"},
		{"unknown kind", edit(func(m map[string]any) { m["resolver"] = map[string]any{"kind": "nope"} }), "unknown kind"},
		{"wrong types", edit(func(m map[string]any) { m["version"] = "three" }), "not a state document"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := memstore.New(nil)
			defer st.Close()
			require.NoError(t, st.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: shardstate.KeyPath}))
			_, err := st.Create(ctx, coll, tc.body, &store.WriteOptions{PartitionKey: "state"})
			require.NoError(t, err)
			_, err = shardstate.Load(ctx, st, db)
			require.ErrorIs(t, err, shardstate.ErrInvalidState)
			var de *shardstate.DocumentError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, "state", de.ID)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), coll, "the error names the collection")
		})
	}
}

func TestBadArguments(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	_, err := shardstate.Load(ctx, st, "app")
	assert.ErrorContains(t, err, `database link "app"`)
	_, err = shardstate.Publish(ctx, st, &shardstate.State{Database: db}, shardstate.Change{})
	assert.ErrorContains(t, err, "with its ETag")
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, st, s, shardstate.Change{Phase: json.RawMessage(`{`)})
	assert.ErrorContains(t, err, "Phase is not valid JSON")
	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Database: db, ValidFor: time.Second})
	assert.ErrorContains(t, err, "router's id")
	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Database: db, Router: "r"})
	assert.ErrorContains(t, err, "must be positive")
}

func TestLoadOrInit(t *testing.T) { stores(t, testLoadOrInit) }

func testLoadOrInit(t *testing.T, st store.Store) {
	ctx := context.Background()
	_, err := shardstate.LoadOrInit(ctx, st, db, nil, nil)
	require.ErrorIs(t, err, shardstate.ErrNoState, "no seed: like Load")
	var wg sync.WaitGroup
	got := make([]*shardstate.State, 8)
	for i := range got {
		wg.Go(func() {
			s, err := shardstate.LoadOrInit(ctx, st, db, ring(t, 2+i), nil)
			assert.NoError(t, err)
			got[i] = s
		})
	}
	wg.Wait()
	for _, s := range got {
		require.NotNil(t, s)
		assert.Equal(t, int64(1), s.Version)
		assert.Equal(t, got[0].Resolver, s.Resolver, "every caller gets the one seed that won")
	}
}

// TestInitStateCollectionPath: the state collection goes through the one
// conflict rule: partitioned by another path it is a *store.KeyPathError;
// by KeyPath spelt another way it is used.
func TestInitStateCollectionPath(t *testing.T) {
	ctx := context.Background()
	coll := db + "/colls/" + shardstate.CollectionID
	st := memstore.New(nil)
	defer st.Close()
	require.NoError(t, st.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: "/id"}))
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	var kpe *store.KeyPathError
	require.ErrorAs(t, err, &kpe)
	assert.Equal(t, store.KeyPathError{Collection: coll, Want: shardstate.KeyPath, Found: "/id"}, *kpe)

	st2 := memstore.New(nil)
	defer st2.Close()
	require.NoError(t, st2.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: `/"kind"`}))
	_, err = shardstate.Init(ctx, st2, db, ring(t, 2), nil)
	require.NoError(t, err)
}

// lostReply applies the first conditional replace and then answers
// ErrUnavailable, as a connection that drops after the service wrote.
type lostReply struct {
	*memstore.Store
	lost atomic.Bool
}

func (s *lostReply) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	d, err := s.Store.Replace(ctx, l, id, doc, o)
	if err == nil && o != nil && o.IfMatch != "" && s.lost.CompareAndSwap(false, true) {
		return nil, &store.Error{Kind: store.ErrUnavailable, Op: "replace", Message: "the connection was reset after the request was sent"}
	}
	return d, err
}

// TestPublishLostReply: a publish whose swap landed but whose answer was
// lost is the publish that happened: it succeeds, and the fence of its new
// epoch is raised. Before, the retried swap was refused and Publish
// reported a conflict with its own write, leaving the store's fence behind
// the state's epoch (a spillover then never fenced the sealed collection),
// whether the caller's context is marked Repeatable (the refusal) or not
// (the unknown outcome).
func TestPublishLostReply(t *testing.T) {
	for _, marked := range []bool{false, true} {
		ctx := context.Background()
		if marked {
			ctx = retry.Repeatable(ctx)
		}
		st := &lostReply{Store: memstore.New(nil)}
		r, err := hashring.New([]string{"dbs/x/colls/a", "dbs/x/colls/b"}, nil)
		require.NoError(t, err)
		cur, err := shardstate.Init(ctx, st, "dbs/x", r, nil)
		require.NoError(t, err)
		next, err := shardstate.Publish(ctx, st, cur, shardstate.Change{NewEpoch: true, By: "me"})
		require.NoError(t, err, "marked=%v", marked)
		require.True(t, st.lost.Load(), "the reply was lost")
		now, err := shardstate.Load(ctx, st, "dbs/x")
		require.NoError(t, err)
		require.Equal(t, now.Version, next.Version)
		require.Equal(t, now.ETag, next.ETag)
		fence, err := st.Fence(ctx, "dbs/x")
		require.NoError(t, err)
		require.Equal(t, now.Epoch, fence, "the fence is raised to the published epoch")
	}
}

// TestHistorySinceAndETag: HistorySince returns the versions after the
// one given, the current last; ETag is the current document's ETag, as
// Load reads it; both say ErrNoState for a database without a state.
func TestHistorySinceAndETag(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	_, err := shardstate.ETag(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoState)
	_, err = shardstate.HistorySince(ctx, st, db, 0)
	require.ErrorIs(t, err, shardstate.ErrNoState)

	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	for _, n := range []int{3, 4} {
		s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, n), NewEpoch: true})
		require.NoError(t, err)
	}
	versions := func(after int64) []int64 {
		h, err := shardstate.HistorySince(ctx, st, db, after)
		require.NoError(t, err)
		var out []int64
		for _, x := range h {
			out = append(out, x.Version)
		}
		return out
	}
	assert.Equal(t, []int64{1, 2, 3}, versions(0))
	assert.Equal(t, []int64{2, 3}, versions(1))
	assert.Equal(t, []int64{3}, versions(2))
	assert.Equal(t, []int64{3}, versions(3))
	etag, err := shardstate.ETag(ctx, st, db)
	require.NoError(t, err)
	cur, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, cur.ETag, etag)
	assert.Equal(t, s.ETag, etag)
}

// TestHistoryBounded: the history keeps the last HistoryKept versions, so
// its partition does not grow without limit, and what reads its last
// version (InUse, Restore) still finds it.
func TestHistoryBounded(t *testing.T) {
	ctx := context.Background()
	st, s, coll := initialized(t)
	var err error
	const extra = 25
	for range shardstate.HistoryKept + extra {
		s, err = shardstate.Publish(ctx, st, s, shardstate.Change{})
		require.NoError(t, err)
	}
	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, h, shardstate.HistoryKept+1, "the versions kept and the current one")
	assert.Equal(t, int64(extra+1), h[0].Version, "the oldest kept")
	assert.Equal(t, s.Version-1, h[len(h)-2].Version, "the last recorded")
	info, err := st.CollectionInfo(ctx, coll)
	require.NoError(t, err)
	assert.LessOrEqual(t, info.Documents, int64(shardstate.HistoryKept+1+shardstate.StateCopies), "the state document, its copies and the history kept")

	// The state document lost: the history's last version still shows the
	// fleet, and Restore goes above it.
	require.NoError(t, st.Delete(ctx, coll, "state", &store.WriteOptions{PartitionKey: "state"}))
	require.ErrorIs(t, shardstate.InUse(ctx, st, db), shardstate.ErrInUse)
	r, err := shardstate.Restore(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	assert.Equal(t, s.Version+1, r.Version)
}

// The copies of the state the routers poll (shardstate.StateCopies,
// docs/design.md#state-copies): kept at the state's version by Publish,
// brought forward by the routers and by WaitForRouters when a publish
// left them behind, never moved back, and traces of a fleet when the state
// document is lost.

// copyVersions reads every copy of the state as stored: its version, 0
// when missing.
func copyVersions(t *testing.T, st store.Store) []int64 {
	t.Helper()
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	out := make([]int64, shardstate.StateCopies)
	for i := range out {
		k := fmt.Sprintf("state-%d", i)
		d, err := st.Read(context.Background(), coll, k, &store.ReadOptions{PartitionKey: k})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		require.NoError(t, err)
		var v struct {
			Version   int64  `json:"version"`
			StateETag string `json:"stateETag"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &v))
		require.NotEmpty(t, v.StateETag, "copy %d names the state document's ETag", i)
		out[i] = v.Version
	}
	return out
}

func all(n int, v int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestStateCopies: Init and Publish keep every copy at the state's
// version; a Reader answers the state document on its first read and its
// copy afterwards, with the state document's ETag, so a state it read can
// be published on.
func TestStateCopies(t *testing.T) { stores(t, testStateCopies) }

func testStateCopies(t *testing.T, st store.Store) {
	ctx := context.Background()
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	assert.Equal(t, all(shardstate.StateCopies, 1), copyVersions(t, st))
	s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, 3)})
	require.NoError(t, err)
	assert.Equal(t, all(shardstate.StateCopies, 2), copyVersions(t, st))

	r, err := shardstate.NewReader(db, "host/1")
	require.NoError(t, err)
	for i := range 3 {
		got, err := r.Peek(ctx, st, false)
		require.NoError(t, err)
		assert.Equal(t, s.Version, got.Version, "read %d", i)
		assert.Equal(t, s.ETag, got.ETag, "read %d: the state document's ETag", i)
		assert.JSONEq(t, string(s.Resolver), string(got.Resolver))
	}
	got, err := r.Peek(ctx, st, false)
	require.NoError(t, err)
	next, err := shardstate.Publish(ctx, st, got, shardstate.Change{Reason: "from a copy"})
	require.NoError(t, err, "a state read from a copy carries the state document's ETag")
	assert.Equal(t, s.Version+1, next.Version)
}

// refusingCopies refuses every write to a copy of the state while refuse
// is set, as a publisher that crashed right after its swap leaves them.
type refusingCopies struct {
	store.Store
	mu     sync.Mutex
	refuse bool
}

var errRefused = errors.New("test: copy writes refused")

func (s *refusingCopies) refused(o *store.WriteOptions) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, _ := o.PartitionKey.(string)
	return s.refuse && strings.HasPrefix(k, "state-")
}

func (s *refusingCopies) set(v bool) { s.mu.Lock(); s.refuse = v; s.mu.Unlock() }

func (s *refusingCopies) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if s.refused(o) {
		return nil, errRefused
	}
	return s.Store.Create(ctx, l, doc, o)
}

func (s *refusingCopies) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	if s.refused(o) {
		return nil, errRefused
	}
	return s.Store.Replace(ctx, l, id, doc, o)
}

// TestCopiesBroughtForward: a publish whose copy writes all failed still
// publishes (the copies lag); a router's Reader never answers the lagging
// copy's older version once it read the newer one, and brings its copy
// forward on its next read of the state document; WaitForRouters brings
// every copy forward before it counts the version as published, so every
// router read after that finds it.
func TestCopiesBroughtForward(t *testing.T) {
	ctx := context.Background()
	st := &refusingCopies{Store: memstore.New(nil)}
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	r, err := shardstate.NewReader(db, "host/1")
	require.NoError(t, err)
	_, err = r.Peek(ctx, st, false) // the state document: version 1
	require.NoError(t, err)
	got, err := r.Peek(ctx, st, false) // its copy, read once: version 1
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Version)

	st.set(true)
	s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, 3)})
	require.NoError(t, err, "the swap is the publish; the copies are brought forward later")
	assert.Equal(t, all(shardstate.StateCopies, 1), copyVersions(t, st), "every copy lags")
	got, err = r.Peek(ctx, st, true) // the state document
	require.NoError(t, err)
	require.Equal(t, s.Version, got.Version)
	got, err = r.Peek(ctx, st, false) // the lagging copy, refused: the state document again
	require.NoError(t, err)
	assert.Equal(t, s.Version, got.Version, "never back to the lagging copy's version")

	st.set(false)
	got, err = r.Peek(ctx, st, false) // the copy lags: read the document, bring the copy forward
	require.NoError(t, err)
	assert.Equal(t, s.Version, got.Version)
	forward := 0
	for _, v := range copyVersions(t, st) {
		if v == s.Version {
			forward++
		}
	}
	assert.Equal(t, 1, forward, "the reader brought its own copy forward")

	require.NoError(t, shardstate.WaitForRouters(ctx, st, db, s.Version, nil))
	assert.Equal(t, all(shardstate.StateCopies, s.Version), copyVersions(t, st), "the wait brought every copy forward")
}

// countingReads counts point reads by partition-key value.
type countingReads struct {
	store.Store
	mu    sync.Mutex
	reads map[string]int
}

func (s *countingReads) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	s.mu.Lock()
	k, _ := o.PartitionKey.(string)
	s.reads[k]++
	s.mu.Unlock()
	return s.Store.Read(ctx, l, id, o)
}

// TestReadersSpreadOverCopies: routers' polls fall on the copies by their
// router ids, and on the state document only once in StateCopies reads,
// so no partition takes much more than its share.
func TestReadersSpreadOverCopies(t *testing.T) {
	ctx := context.Background()
	st := &countingReads{Store: memstore.New(nil), reads: map[string]int{}}
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	st.reads = map[string]int{}
	const routers, polls = 400, 2 * shardstate.StateCopies
	for i := range routers {
		r, err := shardstate.NewReader(db, fmt.Sprintf("host-%d/fleet-%d", i%7, i))
		require.NoError(t, err)
		for range polls {
			_, err := r.Peek(ctx, st, false)
			require.NoError(t, err)
		}
	}
	t.Logf("reads by partition: %v", st.reads)
	share := routers * polls / (shardstate.StateCopies + 1)
	assert.Equal(t, routers*polls/shardstate.StateCopies, st.reads["state"], "the state document once in StateCopies reads")
	for i := range shardstate.StateCopies {
		k := fmt.Sprintf("state-%d", i)
		assert.Positive(t, st.reads[k], k)
		assert.LessOrEqual(t, st.reads[k], 2*share, "%s takes at most twice its share", k)
	}
}

// initialized returns an embedded store holding dbs/app's state at version
// 1 (ring(2)), and the state collection's link.
func initialized(t *testing.T) (*memstore.Store, *shardstate.State, string) {
	t.Helper()
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	s, err := shardstate.Init(context.Background(), st, db, ring(t, 2), nil)
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	return st, s, coll
}

// TestRestoreAboveCopies: a state document lost at its first version
// (no history, no lease) still shows in its copies: InUse reports them,
// and Restore goes above them (a new version 1 would be the copies'
// version with another resolver).
func TestRestoreAboveCopies(t *testing.T) {
	ctx := context.Background()
	st, _, coll := initialized(t)
	require.NoError(t, st.Delete(ctx, coll, "state", &store.WriteOptions{PartitionKey: "state"}))
	err := shardstate.InUse(ctx, st, db)
	var iu *shardstate.InUseError
	require.ErrorAs(t, err, &iu)
	assert.Equal(t, int64(1), iu.Copies)
	assert.Contains(t, err.Error(), "copies of the state up to version 1")
	s, err := shardstate.Restore(ctx, st, db, ring(t, 3), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Version)
	assert.Equal(t, all(shardstate.StateCopies, 2), copyVersions(t, st))
}

// TestNewEpochAboveFence: a state whose epoch fell below the store's fence
// (every write stamped with it is refused) is restored by one change with
// a new epoch: the epoch lands above the fence, not one above the old
// epoch, so the writes it stamps go through.
func TestNewEpochAboveFence(t *testing.T) { stores(t, testNewEpochAboveFence) }

func testNewEpochAboveFence(t *testing.T, st store.Store) {
	ctx := context.Background()
	s1, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	f := st.(store.Fencer)
	_, err = f.RaiseFence(ctx, db, 7)
	require.NoError(t, err)
	require.NoError(t, st.CreateCollection(ctx, "dbs/app/colls/c0", &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	_, err = st.Create(ctx, "dbs/app/colls/c0", []byte(`{"id":"a","userId":"a"}`), &store.WriteOptions{PartitionKey: "a", Epoch: s1.Epoch})
	require.ErrorIs(t, err, store.ErrFenced, "the state's epoch is below the fence: writes are wedged")

	s2, err := shardstate.Publish(ctx, st, s1, shardstate.Change{Resolver: ring(t, 3), NewEpoch: true})
	require.NoError(t, err)
	assert.Equal(t, int64(2), s2.Version, "the version still grows by one")
	assert.Equal(t, int64(8), s2.Epoch, "above every epoch the fence says was in use")
	fence, err := f.Fence(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, int64(8), fence)
	_, err = st.Create(ctx, "dbs/app/colls/c0", []byte(`{"id":"a","userId":"a"}`), &store.WriteOptions{PartitionKey: "a", Epoch: s2.Epoch})
	require.NoError(t, err, "one change unwedged the writes")

	got, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err, "a state whose epoch is above its version loads")
	assert.Equal(t, int64(8), got.Epoch)

	// A new epoch over an unwedged state is one above the last, as before.
	s3, err := shardstate.Publish(ctx, st, got, shardstate.Change{NewEpoch: true})
	require.NoError(t, err)
	assert.Equal(t, int64(9), s3.Epoch)
}

// TestMissingStateNotReseeded: a state document deleted while a fleet uses
// the database (a router's lease, the history, a raised fence) is not
// created again by Init (or LoadOrInit's seed): that would fork the
// placement. Restore puts it back above everything the fleet saw.
func TestMissingStateNotReseeded(t *testing.T) { stores(t, testMissingStateNotReseeded) }

func testMissingStateNotReseeded(t *testing.T, st store.Store) {
	ctx := context.Background()
	require.NoError(t, shardstate.InUse(ctx, st, db), "a new database")
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, 3), NewEpoch: true})
	require.NoError(t, err)
	s, err = shardstate.Publish(ctx, st, s, shardstate.Change{NewEpoch: true})
	require.NoError(t, err)
	require.Equal(t, int64(3), s.Version)
	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "r1", Database: db, Version: 3, Epoch: 3, ValidFor: time.Minute})
	require.NoError(t, err)

	coll, err := shardstate.CollectionLink(db)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, coll, "state", &store.WriteOptions{PartitionKey: "state"}))

	for name, reseed := range map[string]func() error{
		"Init":       func() error { _, err := shardstate.Init(ctx, st, db, ring(t, 2), nil); return err },
		"LoadOrInit": func() error { _, err := shardstate.LoadOrInit(ctx, st, db, ring(t, 2), nil); return err },
		"InUse":      func() error { return shardstate.InUse(ctx, st, db) },
	} {
		err := reseed()
		require.ErrorIs(t, err, shardstate.ErrInUse, name)
		require.ErrorIs(t, err, shardstate.ErrNoState, name)
		var ie *shardstate.InUseError
		require.ErrorAs(t, err, &ie, name)
		assert.Len(t, ie.Leases, 1)
		assert.Equal(t, int64(2), ie.History)
		assert.Equal(t, int64(3), ie.Fence)
		for _, want := range []string{"state document of dbs/app is missing", "r1 (version 3)", "history up to version 2", "fence at epoch 3", "docshard state set"} {
			assert.Contains(t, err.Error(), want, name)
		}
	}
	_, err = shardstate.Load(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoState, "nothing was reseeded")

	r, err := shardstate.Restore(ctx, st, db, ring(t, 3), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(4), r.Version, "one above the lost version 3")
	assert.Equal(t, int64(4), r.Epoch, "above the fence")
	fence, err := st.(store.Fencer).Fence(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, int64(4), fence, "routers that read the lost version are fenced")
	_, err = shardstate.Restore(ctx, st, db, ring(t, 3), nil)
	var ce *shardstate.ConflictError
	require.ErrorAs(t, err, &ce, "a state that exists is not restored over")
	assert.Equal(t, int64(4), ce.Current.Version)
}

func TestProgress(t *testing.T) { stores(t, testProgress) }

// testProgress: the progress document is saved by compare-and-swap beside
// the state, and saving it is no version of the state; a save over a stale
// copy, or a second first save, is a *ProgressConflictError carrying the
// winner; a version's reason is kept in the state and its history.
func testProgress(t *testing.T, st store.Store) {
	ctx := context.Background()
	s1, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	_, err = shardstate.LoadProgress(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoProgress)

	p1, err := shardstate.SaveProgress(ctx, st, db, nil, shardstate.Progress{Change: "r1", Owner: "a", Body: json.RawMessage(`{"n":1}`), UpdatedBy: "a"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), p1.Seq)
	assert.NotEmpty(t, p1.ETag)
	p2, err := shardstate.SaveProgress(ctx, st, db, p1, shardstate.Progress{Change: "r1", Owner: "a", Body: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	assert.Equal(t, int64(2), p2.Seq)
	got, err := shardstate.LoadProgress(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, "r1", got.Change)
	assert.Equal(t, "a", got.Owner)
	assert.JSONEq(t, `{"n":2}`, string(got.Body))
	assert.Equal(t, p2.ETag, got.ETag)

	// Over a stale copy, and a second first save: refused, with the winner.
	for _, prev := range []*shardstate.Progress{p1, nil} {
		_, err = shardstate.SaveProgress(ctx, st, db, prev, shardstate.Progress{Change: "r1", Owner: "b", Body: json.RawMessage(`{}`)})
		var ce *shardstate.ProgressConflictError
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, shardstate.ErrConflict)
		require.NotNil(t, ce.Current)
		assert.Equal(t, int64(2), ce.Current.Seq)
		assert.Equal(t, "a", ce.Current.Owner)
	}

	now, err := shardstate.Load(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, s1.Version, now.Version, "saving progress is no version of the state")

	// Removed only while it is the copy given.
	require.NoError(t, shardstate.DeleteProgress(ctx, st, p1))
	_, err = shardstate.LoadProgress(ctx, st, db)
	require.NoError(t, err, "a stale copy removes nothing")
	require.NoError(t, shardstate.DeleteProgress(ctx, st, p2))
	_, err = shardstate.LoadProgress(ctx, st, db)
	require.ErrorIs(t, err, shardstate.ErrNoProgress)
	_, err = shardstate.SaveProgress(ctx, st, db, p2, shardstate.Progress{Change: "r1", Body: json.RawMessage(`{}`)})
	var ce *shardstate.ProgressConflictError
	require.ErrorAs(t, err, &ce, "a save over a removed document")
	assert.Nil(t, ce.Current)

	s2, err := shardstate.Publish(ctx, st, now, shardstate.Change{Resolver: ring(t, 3), Reason: "three now"})
	require.NoError(t, err)
	assert.Equal(t, "three now", s2.Reason)
	s3, err := shardstate.Publish(ctx, st, s2, shardstate.Change{})
	require.NoError(t, err)
	assert.Empty(t, s3.Reason, "a reason is the version's own")
	h, err := shardstate.History(ctx, st, db)
	require.NoError(t, err)
	require.Len(t, h, 3)
	assert.Equal(t, []string{"", "three now", ""}, []string{h[0].Reason, h[1].Reason, h[2].Reason})
}

// TestProgressLostReply: a save whose replace landed but whose answer was
// lost is the save that happened.
func TestProgressLostReply(t *testing.T) {
	ctx := context.Background()
	st := &lostReply{Store: memstore.New(nil)}
	_, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	p1, err := shardstate.SaveProgress(ctx, st, db, nil, shardstate.Progress{Change: "r1", Body: json.RawMessage(`{}`)})
	require.NoError(t, err)
	p2, err := shardstate.SaveProgress(ctx, st, db, p1, shardstate.Progress{Change: "r1", Body: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	require.True(t, st.lost.Load(), "the reply was lost")
	got, err := shardstate.LoadProgress(ctx, st, db)
	require.NoError(t, err)
	assert.Equal(t, p2.ETag, got.ETag)
	assert.Equal(t, int64(2), got.Seq)
}

// TestProgressBroken: a progress document of another database or format
// is a *DocumentError naming it.
func TestProgressBroken(t *testing.T) {
	ctx := context.Background()
	st, _, coll := initialized(t)
	_, err := st.Upsert(ctx, coll, []byte(`{"id":"progress","kind":"progress","format":"docshard.state/1","database":"dbs/other","change":"r","seq":1,"body":{}}`),
		&store.WriteOptions{PartitionKey: "progress"})
	require.NoError(t, err)
	_, err = shardstate.LoadProgress(ctx, st, db)
	var de *shardstate.DocumentError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "progress", de.ID)
	assert.ErrorIs(t, err, shardstate.ErrInvalidState)
	assert.Contains(t, err.Error(), `database "dbs/other", want "dbs/app"`)
}
