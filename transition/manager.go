package transition

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/procid"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// The steps of a reshard, as its phase records them.
const (
	StepCopy     = "copy"     // routers read and write current; documents are copied and caught up
	StepCutover  = "cutover"  // writes to moving keys are frozen; the last changes are caught up
	StepSwitched = "switched" // routers read and write next; sources are being cleaned up
)

// ErrReshardInProgress: the database is being resharded to another
// resolver than the one asked for; finish that reshard or abort it first.
var ErrReshardInProgress = errors.New("transition: another reshard is in progress")

// ErrOtherChange: another kind of long-running change (a spillover
// opening its next collection) holds the database's phase; a reshard
// neither starts nor overwrites it, and can be asked again once it ends.
var ErrOtherChange = errors.New("transition: another change is under way")

// ErrTakenOver: another process took the reshard over (this one was
// thought dead: it wrote no heartbeat for the owner TTL); this one stops.
var ErrTakenOver = errors.New("transition: another process took the reshard over")

// ErrPastSwitch: an abort was asked after the switch: the documents' owner is
// the next placement already. Run the reshard to its end, then reshard
// back.
var ErrPastSwitch = errors.New("transition: the reshard is past its switch and cannot be aborted")

// ReshardOptions configure Reshard. A nil *ReshardOptions means defaults.
type ReshardOptions struct {
	// By names the process in the state's history; empty means "host/pid"
	// of this process.
	By string
	// Parallelism is how many documents are copied at once (over all
	// source collections) and how many collections are read at once by
	// the catch-up, the reconciliation and the clean-up; 0 means 4.
	Parallelism int
	// Rate caps the documents copied per second over all collections (a
	// burst of up to a tenth of a second's worth); 0 means no cap. Only
	// the copy is limited: the catch-up and the cutover are not, so the
	// cutover's freeze stays short.
	Rate float64
	// CheckpointEvery is how many documents a collection's copy goes
	// between checkpoints in the state document; 0 means 1000.
	CheckpointEvery int
	// CutoverCap bounds how long writes to moving keys stay frozen; past
	// it the freeze is lifted and the copy catches up again before the
	// next try. 0 means 5 seconds.
	CutoverCap time.Duration
	// CutoverTries is how often the cutover is tried before Reshard fails;
	// 0 means 5.
	CutoverTries int
	// OwnerTTL is how long a reshard recorded as running in another
	// process must go without a new version of the state (its heartbeat)
	// before this one takes it over; 0 means 10 seconds. The running
	// process writes a heartbeat every OwnerTTL/5.
	OwnerTTL time.Duration
	// Routers qualifies the wait for routers to see each new version
	// (shardstate.WaitForRouters); RouterWait bounds it, 0 meaning two
	// minutes.
	Routers    *shardstate.WaitOptions
	RouterWait time.Duration
	// Overlap is how far back a catch-up pass reads by _ts on a store
	// without a change feed; 0 means 2 seconds.
	Overlap time.Duration
	// Spec is the template of collections next names that do not exist;
	// nil means the spec of the first current collection.
	Spec *store.CollectionSpec
	// Progress, when set, is called after each page of work.
	Progress func(Progress)
	// Retry bounds the retries of store calls that were throttled or failed
	// for a transient reason.
	Retry RetryPolicy
	// Logger receives the reshard's log: each step and the resume of a
	// run that died at Info, a cutover given up and tried again, a
	// takeover and an error that stops the run at Warn, each retried store
	// call at Debug. nil means slog.Default().
	Logger *slog.Logger
	// Step, when set, is called at each named point of the protocol
	// ("published", "copied", "caught-up", "frozen", "switched", "cleaned",
	// "done") before it goes on; an error stops the reshard there, as a
	// crash would (tests use it).
	Step func(step string) error
}

// Progress counts a reshard's work.
type Progress struct {
	Step     string
	Total    int64 // documents in the source collections when this run began (the stores' estimate)
	Scanned  int64 // source documents read by the copy
	Copied   int64 // copies written by the copy
	CaughtUp int64 // copies written again by the catch-up
	Verified int64 // copies checked against their sources (a resumed run checks every copy)
	Deleted  int64 // sources removed after the switch
	// Rounds counts the catch-up's rounds in this run (each reads every
	// source's changes up to about when it began); Behind is how many
	// copies the last round had to write again: the catch-up's lag, which
	// the cutover needs small before it freezes the moving keys.
	Rounds  int
	Behind  int64
	Started time.Time
	Rate    float64       // documents scanned per second since Started
	ETA     time.Duration // the copy's time left at Rate; 0 when unknown or done
}

// record is the reshard's part of the state's phase: what it moves between
// and its step. Its progress (positions, owner) is in the progress
// document (see work).
type record struct {
	ID      string          `json:"id"`
	Step    string          `json:"step"`
	From    json.RawMessage `json:"from"`
	To      json.RawMessage `json:"to"`
	Started time.Time       `json:"started"`
	// The progress as releases before 2026-11-28 recorded it, in the
	// phase: read to resume such a reshard (loadWork), never written.
	Feeds   map[string]string `json:"feeds,omitempty"`
	Copy    map[string]string `json:"copy,omitempty"`
	Owner   string            `json:"owner,omitempty"`
	Settled bool              `json:"settled,omitempty"`
}

type phaseDoc struct {
	Reshard *record `json:"reshard,omitempty"`
	// Progress says where the reshard's progress is (progressKey). A
	// release before 2026-11-28, which expects it in the record, refuses a
	// phase with a member it does not know (as another change's), rather
	// than resume the reshard with no positions.
	Progress string `json:"reshardProgress,omitempty"`
}

// progressKey and progressNote are the phase's member naming where the
// reshard's progress is.
const (
	progressKey  = "reshardProgress"
	progressNote = "in the progress document (docshard 2026-11-28 or later)"
)

const copyDone = "done"

// manager runs one reshard.
type manager struct {
	log     *slog.Logger
	st      store.Store // raw with retries
	raw     store.Store // as given
	owner   string      // this run's name in the record
	db      string
	o       ReshardOptions
	from    resolver.Resolver
	to      resolver.Resolver
	rec     *record
	work    work                 // the reshard's progress (see work)
	pdoc    *shardstate.Progress // its progress document as last read or saved
	runner  string               // the owner the progress document names: m.owner once this run took it
	limiter *rate.Limiter
	workers chan struct{} // the copy's pool: a slot per copy in flight

	progMu sync.Mutex // guards prog
	mu     sync.Mutex // guards state, rec, work, pdoc, runner, and checkpoints
	state  *shardstate.State
	prog   Progress
	cnt    struct{ scanned, copied, caught, verified, deleted, behind atomic.Int64 }
	keys   store.CollectionKeys // the key each collection takes for a composite key
	rounds atomic.Int64
}

// Reshard moves a database from the resolver in its shared state to next,
// under live traffic, in the steps docs/design.md#resharding describes;
// every step is recorded in the state document, so calling Reshard again
// (in this or any process) after a crash finishes it. Called when the
// state's resolver is next already, it does nothing. It returns the work
// done.
func Reshard(ctx context.Context, st store.Store, dbLink string, next resolver.Resolver, opts *ReshardOptions) (*Progress, error) {
	return reshard(ctx, st, dbLink, next, opts, false)
}

// reshard is Reshard; again is set when it looks a second time after
// losing the race to start.
func reshard(ctx context.Context, st store.Store, dbLink string, next resolver.Resolver, opts *ReshardOptions, again bool) (*Progress, error) {
	m, err := newManager(st, dbLink, opts)
	if err != nil {
		return nil, err
	}
	toText, err := resolver.Marshal(next)
	if err != nil {
		return nil, err
	}
	cur, rec, err := m.load(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case rec != nil && !sameJSON(rec.To, toText):
		return nil, fmt.Errorf("%w: %s is moving to %s since %s; finish or abort it first", ErrReshardInProgress, m.db, rec.To, rec.Started.Format(time.RFC3339))
	case rec == nil && sameJSON(cur.Resolver, toText):
		return &m.prog, nil // already there
	case rec == nil:
		if err := m.start(ctx, cur, next, toText); err != nil {
			if errors.Is(err, shardstate.ErrConflict) && !again {
				// Another process started a reshard at the same moment:
				// look again (the same target is joined, and waited for).
				return reshard(ctx, st, dbLink, next, opts, true)
			}
			return &m.prog, err
		}
	default:
		_, owner, known, err := m.runnerOf(ctx, rec)
		if err != nil {
			return &m.prog, err
		}
		if owner != "" || !known {
			// Another process runs it, or ran it and died (or started it
			// and has saved no progress yet): wait until it has written
			// nothing for the owner TTL.
			if rec, err = m.awaitOwner(ctx); err != nil || rec == nil {
				return &m.prog, err // finished meanwhile, or ctx ended
			}
		}
		if err := m.resume(ctx, rec); err != nil {
			return &m.prog, err
		}
		m.log.Info("reshard resumed", "db", m.db, "id", rec.ID, "step", rec.Step, "previousOwner", m.runner)
		if err := m.takeOver(ctx); err != nil {
			return &m.prog, err
		}
		if m.rec.Step != StepSwitched {
			// The run before may have died between a copy and its check
			// of the source, or with copies still on their way: now that
			// its writes are fenced off, every copy is checked against
			// its source once.
			if err := m.reconcile(ctx); err != nil {
				return &m.prog, err
			}
		}
	}
	stop := m.heartbeat(ctx)
	err = m.run(ctx)
	stop()
	if errors.Is(err, store.ErrFenced) {
		err = m.whyFenced(ctx, err)
	}
	if err != nil {
		m.log.Warn("reshard stopped", "db", m.db, "error", err)
		m.release()
	}
	return &m.prog, err
}

// awaitOwner waits until the reshard's state and progress have gone
// unchanged for the owner TTL (its owner is dead), or its owner released
// it, and returns its record; nil when it finished (or moved to another
// target) meanwhile.
func (m *manager) awaitOwner(ctx context.Context) (*record, error) {
	seen, since := m.state.Version, time.Now()
	var seq int64
	if rec, err := recordOf(m.state); err == nil && rec != nil {
		seq, _, _, _ = m.runnerOf(ctx, rec)
	}
	poll := min(m.o.OwnerTTL/5, time.Second)
	for {
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		cur, rec, err := m.load(ctx)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, nil // finished by its owner
		}
		s, owner, known, err := m.runnerOf(ctx, rec)
		if err != nil {
			return nil, err
		}
		switch {
		case cur.Version != seen || s != seq:
			seen, seq, since = cur.Version, s, time.Now()
			if known && owner == "" {
				return rec, nil // released: its owner stopped on an error
			}
		case time.Since(since) > m.o.OwnerTTL:
			return rec, nil
		}
	}
}

// heartbeat saves the progress every OwnerTTL/5 while the run goes on, so
// other processes see it alive (no version of the state); stop ends it.
func (m *manager) heartbeat(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(m.o.OwnerTTL / 5)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			m.mu.Lock()
			if m.rec != nil {
				_ = m.saveLocked(ctx)
			}
			m.mu.Unlock()
		}
	})
	return func() { close(done); wg.Wait() }
}

// release records that no process runs the reshard (this one stopped on
// an error), so the next run need not wait for the owner TTL. Best effort.
func (m *manager) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rec == nil || m.runner != m.owner {
		return
	}
	m.runner = ""
	_ = m.saveLocked(ctx)
}

// load reads the database's state, keeps it as m.state, and returns it
// with the reshard it records (nil when none is under way). Cost: a state
// read.
func (m *manager) load(ctx context.Context) (*shardstate.State, *record, error) {
	cur, err := shardstate.Load(ctx, m.st, m.db)
	if err != nil {
		return nil, nil, err
	}
	m.state = cur
	rec, err := recordOf(cur)
	return cur, rec, err
}

func newManager(st store.Store, dbLink string, opts *ReshardOptions) (*manager, error) {
	o := opt.Of(opts)
	if o.Parallelism <= 0 {
		o.Parallelism = 4
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 1000
	}
	if o.CutoverCap <= 0 {
		o.CutoverCap = 5 * time.Second
	}
	if o.CutoverTries <= 0 {
		o.CutoverTries = 5
	}
	if o.OwnerTTL <= 0 {
		o.OwnerTTL = 10 * time.Second
	}
	if o.RouterWait <= 0 {
		o.RouterWait = 2 * time.Minute
	}
	if o.Overlap <= 0 {
		o.Overlap = 2 * time.Second
	}
	if o.By == "" {
		o.By = procid.Identity()
	}
	coll, err := shardstate.CollectionLink(dbLink)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &manager{log: o.Logger, st: newRetrying(st, o.Retry, o.Logger), raw: st, db: strings.TrimSuffix(coll, "/colls/"+shardstate.CollectionID), o: o}
	m.workers = make(chan struct{}, o.Parallelism)
	m.limiter = rate.NewLimiter(rate.Inf, 1)
	if o.Rate > 0 {
		m.limiter = rate.NewLimiter(rate.Limit(o.Rate), max(1, int(o.Rate/10)))
	}
	m.prog.Started = time.Now()
	var id [4]byte
	_, _ = rand.Read(id[:])
	m.owner = o.By + "/" + hex.EncodeToString(id[:])
	return m, nil
}

// recordOf returns the reshard recorded in a state's phase, if any.
func recordOf(s *shardstate.State) (*record, error) {
	if len(s.Phase) == 0 {
		return nil, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(s.Phase, &keys); err != nil {
		return nil, fmt.Errorf("transition: the phase of %s version %d is not a JSON object: %w", s.Database, s.Version, err)
	}
	for k := range keys {
		if k != "reshard" && k != progressKey { // another change's: never take it for "no reshard" and overwrite it
			return nil, fmt.Errorf("%w: %s version %d records phase %q; the reshard waits for it to end", ErrOtherChange, s.Database, s.Version, k)
		}
	}
	var p phaseDoc
	if err := json.Unmarshal(s.Phase, &p); err != nil {
		return nil, fmt.Errorf("transition: the phase of %s version %d is not a reshard's: %w", s.Database, s.Version, err)
	}
	return p.Reshard, nil
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// epoch is the epoch of the state the reshard acts under: its writes carry
// it, so a store that fences refuses the writes of a reshard process that
// another one has taken over from (a resume raises the epoch), even those
// still on their way when it died.
func (m *manager) epoch() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.Epoch
}

// takeOver saves the progress as this run's, then republishes the state as
// it is with a new epoch, so the writes of the process that ran the reshard
// before (dead, or stopped) are refused from now on by a store that fences
// (and its next save of the progress fails).
func (m *manager) takeOver(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runner = m.owner
	if err := m.saveLocked(ctx); err != nil {
		return err
	}
	return m.publishLocked(ctx, nil, true, m.about()+": resumed by "+m.owner+" (the run before stopped)")
}

// resume takes up reshard rec: its resolvers, and its progress (loadWork).
func (m *manager) resume(ctx context.Context, rec *record) error {
	from, err := resolver.Unmarshal(rec.From)
	if err != nil {
		return fmt.Errorf("transition: the recorded current resolver: %w", err)
	}
	to, err := resolver.Unmarshal(rec.To)
	if err != nil {
		return fmt.Errorf("transition: the recorded next resolver: %w", err)
	}
	m.from, m.to, m.rec = from, to, rec
	m.prog.Step = rec.Step
	return m.loadWork(ctx, rec)
}

// start publishes the transition: current still reads and writes, copies
// may land in next's collections, and every router must know before the
// copy starts (so its queries skip copies and its deletes reach them).
func (m *manager) start(ctx context.Context, cur *shardstate.State, next resolver.Resolver, toText []byte) error {
	from, err := cur.Decode()
	if err != nil {
		return err
	}
	m.from, m.to = from, next
	if _, err := New(resolver.ResolverTarget(from), resolver.ResolverTarget(next), nil); err != nil {
		return fmt.Errorf("transition: from %s's resolver to the next: %w", m.db, err)
	}
	if err := m.ensureCollections(ctx); err != nil {
		return err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	m.work = work{Feeds: map[string]string{}, Copy: map[string]string{}}
	if err := m.positions(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	m.rec, m.runner = &record{ID: hex.EncodeToString(id[:]), Step: StepCopy, From: cur.Resolver, To: toText, Started: time.Now().UTC()}, m.owner
	err = m.startLocked(ctx)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	// Every router must know before the copy starts (a fence stops writes
	// only).
	if err := m.waitRouters(ctx, true, true); err != nil {
		return err
	}
	return m.step("published")
}

// startLocked publishes the transition and saves the first progress; m.mu
// is held. The state's compare-and-swap decides which of two runs started
// at once starts the reshard; the progress is saved right after, before the
// wait for the routers, so a run that joins sees its owner alive.
func (m *manager) startLocked(ctx context.Context) error {
	if err := m.publish(ctx, m.transition(ReadCurrent, false), true, m.about()+": started; copying the moving documents"); err != nil {
		return err
	}
	p, err := shardstate.LoadProgress(ctx, m.st, m.db)
	switch {
	case err == nil:
		m.pdoc = p // a reshard's that ended: replaced
	case !errors.Is(err, shardstate.ErrNoProgress):
		return err
	}
	return m.saveLocked(ctx)
}

// ensureCollections makes next's collections exist, through
// router.WantedCollections and store.EnsureCollections (the one conflict
// rule: one that exists partitioned by another path than next's key is a
// *store.KeyPathError). The spec is the options' Spec, else the first
// current collection's (its TTL and indexing policy; its partition-key
// path only when next reads no documents itself).
func (m *manager) ensureCollections(ctx context.Context) error {
	spec := m.o.Spec
	if spec == nil {
		cur, err := m.from.ResolveForRead(nil)
		if err != nil || len(cur) == 0 {
			return fmt.Errorf("transition: the current resolver names no collection: %v", err)
		}
		info, err := m.st.CollectionInfo(ctx, cur[0])
		if err != nil {
			return fmt.Errorf("transition: reading %s for the new collections' spec: %w", cur[0], err)
		}
		sp := info.Spec
		_, keyed := m.to.(resolver.Provisioner)
		if kd, ok := m.to.(resolver.KeyDefiner); ok && !kd.KeyDef().IsZero() {
			keyed = true
		}
		if keyed {
			sp.PartitionKeyPath = "" // next's own key decides
		}
		spec = &sp
	}
	w, err := router.WantedCollections(m.db, m.to, spec)
	if err != nil {
		return fmt.Errorf("transition: the next resolver's collections: %w", err)
	}
	if _, err := store.EnsureCollections(retry.Repeatable(ctx), m.st, w); err != nil {
		return fmt.Errorf("transition: %w", err)
	}
	return nil
}

// position returns where a catch-up of source starts: the change feed's
// present, or a time on a store without one.
//
// A backend may offer the capability and its server not answer it (the
// cosmos backend against an emulator without a change feed): the position
// is asked once, without retries, and a failure other than the context's
// falls back to the time, which is slower to catch up from but as exact.
func (m *manager) position(ctx context.Context, source string) (string, error) {
	now := "ts:" + time.Now().UTC().Format(time.RFC3339Nano)
	if cf, ok := m.raw.(store.ChangeFeeder); ok {
		page, err := cf.ReadChanges(ctx, source, &store.ChangeFeedOptions{FromNow: true})
		if err == nil {
			return page.Continuation, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("transition: the change feed of %s: %w", source, err)
		}
	}
	return now, nil
}

func (m *manager) transition(mode string, frozen bool) resolver.Resolver {
	t, _ := New(resolver.ResolverTarget(m.from), resolver.ResolverTarget(m.to), &Options{ReadMode: mode, WriteTo: mode, Frozen: frozen})
	return t
}

func (m *manager) publishLocked(ctx context.Context, r resolver.Resolver, newEpoch bool, reason string) error {
	return m.publishWait(ctx, r, newEpoch, false, reason)
}

// publishWait publishes; with a new epoch it waits for the routers to see
// it where the store cannot fence them, or always with waitAll (the start:
// a router that has not seen the transition would count copies in its
// queries, and a fence stops writes only).
func (m *manager) publishWait(ctx context.Context, r resolver.Resolver, newEpoch, waitAll bool, reason string) error {
	if err := m.publish(ctx, r, newEpoch, reason); err != nil {
		return err
	}
	return m.waitRouters(ctx, newEpoch, waitAll)
}

// publish makes r, the record and reason the state's next version; a nil
// r republishes the state as it is (a takeover: the resolver and step of
// whichever version is current when the swap lands).
func (m *manager) publish(ctx context.Context, r resolver.Resolver, newEpoch bool, reason string) error {
	asIs := r == nil
	for {
		if asIs {
			var err error
			if r, err = m.state.Decode(); err != nil {
				return err
			}
		}
		phase, err := json.Marshal(phaseDoc{Reshard: m.rec, Progress: progressNote})
		if err != nil {
			return err
		}
		if m.rec == nil {
			phase = []byte("null")
		}
		next, err := shardstate.Publish(ctx, m.st, m.state, shardstate.Change{Resolver: r, Phase: phase, NewEpoch: newEpoch, By: m.o.By, Reason: reason})
		var ce *shardstate.ConflictError
		if errors.As(err, &ce) && ce.Current != nil && m.isOwnWrite(ce.Current, r, phase, newEpoch) {
			// A retried compare-and-swap whose first attempt took effect
			// (the store failed after writing): the state is this write,
			// but Publish stopped at the conflict before raising the fence
			// of a new epoch: raise it here (a maximum: idempotent).
			m.state = ce.Current
			if newEpoch {
				if err := shardstate.RaiseFence(ctx, m.st, m.state); err != nil {
					return fmt.Errorf("transition: version %d of %s is published, but its fence is not raised yet: %w", m.state.Version, m.db, err)
				}
			}
			return nil
		}
		if errors.As(err, &ce) && ce.Current != nil {
			// Another writer changed the state: carry on only if it is
			// still this reshard (a takeover by another process is not).
			rec, rerr := recordOf(ce.Current)
			if rerr != nil || rec == nil || m.rec == nil || rec.ID != m.rec.ID {
				return fmt.Errorf("transition: the state of %s changed under the reshard: %w", m.db, err)
			}
			if _, owner, known, perr := m.runnerOf(ctx, rec); perr == nil && known && owner != m.runner {
				return fmt.Errorf("%w: %s runs it now", ErrTakenOver, owner)
			}
			if asIs {
				m.rec.Step = rec.Step // the run before went on meanwhile
				m.progMu.Lock()
				m.prog.Step = rec.Step
				m.progMu.Unlock()
			}
			m.state = ce.Current
			continue
		}
		if err != nil {
			return err
		}
		m.state = next
		return nil
	}
}

// waitRouters waits, after a new epoch, for the routers to see it where the
// store cannot fence them, or always with waitAll.
func (m *manager) waitRouters(ctx context.Context, newEpoch, waitAll bool) error {
	if !newEpoch {
		return nil
	}
	if _, fenced := m.st.(store.Fencer); fenced && !waitAll {
		return nil // the store refuses stale writers itself
	}
	wctx, cancel := context.WithTimeout(ctx, m.o.RouterWait)
	defer cancel()
	return shardstate.WaitForRouters(wctx, m.st, m.db, m.state.Version, m.o.Routers)
}

// whyFenced explains a write of this run that the store refused as fenced:
// when another run owns the reshard now (it took it over after this one's
// heartbeat lapsed) or has finished it, the error is ErrTakenOver.
func (m *manager) whyFenced(ctx context.Context, err error) error {
	s, lerr := shardstate.Load(ctx, m.st, m.db)
	if lerr != nil {
		return err
	}
	rec, rerr := recordOf(s)
	if rerr != nil {
		return err
	}
	if rec == nil {
		return fmt.Errorf("%w, and finished it (this run's write was fenced: %w)", ErrTakenOver, err)
	}
	if _, owner, known, perr := m.runnerOf(ctx, rec); perr == nil && known && owner != m.owner {
		return fmt.Errorf("%w: %s runs it now (this run's write was fenced: %w)", ErrTakenOver, owner, err)
	}
	return err
}

// isOwnWrite reports whether cur is the version this run tried to publish
// over m.state: the next version, by this run's name, with the same
// resolver, phase (which names this run as owner) and epoch.
func (m *manager) isOwnWrite(cur *shardstate.State, r resolver.Resolver, phase []byte, newEpoch bool) bool {
	epoch := m.state.Epoch
	if newEpoch {
		epoch++
	}
	got := cur.Phase
	if len(got) == 0 {
		got = []byte("null") // a cleared phase
	}
	if cur.Version != m.state.Version+1 || cur.UpdatedBy != m.o.By || cur.Epoch != epoch || !sameJSON(got, phase) {
		return false
	}
	want, err := resolver.Marshal(r)
	return err == nil && sameJSON(cur.Resolver, want)
}

func (m *manager) step(name string) error {
	m.report(name)
	m.log.Info("reshard step", "db", m.db, "step", name, "scanned", m.cnt.scanned.Load(), "copied", m.cnt.copied.Load(),
		"caughtUp", m.cnt.caught.Load(), "removed", m.cnt.deleted.Load())
	if m.o.Step != nil {
		return m.o.Step(name)
	}
	return nil
}

func (m *manager) report(step string) {
	m.progMu.Lock()
	defer m.progMu.Unlock()
	if step != "" {
		m.prog.Step = step
	}
	m.prog.Scanned, m.prog.Copied, m.prog.CaughtUp, m.prog.Deleted = m.cnt.scanned.Load(), m.cnt.copied.Load(), m.cnt.caught.Load(), m.cnt.deleted.Load()
	m.prog.Verified = m.cnt.verified.Load()
	m.prog.Rounds, m.prog.Behind = int(m.rounds.Load()), m.cnt.behind.Load()
	m.prog.ETA = 0
	if secs := time.Since(m.prog.Started).Seconds(); secs > 0 {
		m.prog.Rate = float64(m.prog.Scanned) / secs
		if left := m.prog.Total - m.prog.Scanned; left > 0 && m.prog.Rate > 0 && (m.prog.Step == StepCopy || m.prog.Step == "published" || m.prog.Step == "") {
			m.prog.ETA = time.Duration(float64(left) / m.prog.Rate * float64(time.Second))
		}
	}
	if m.o.Progress != nil {
		m.o.Progress(m.prog)
	}
}

// run goes on from the recorded step to the end.
func (m *manager) run(ctx context.Context) error {
	m.countSources(ctx)
	if m.rec.Step == StepCopy || m.rec.Step == StepCutover {
		if m.rec.Step == StepCutover {
			// A crash in the cutover: thaw, catch up, and try again.
			if err := m.setStep(ctx, StepCopy, ReadCurrent, false); err != nil {
				return err
			}
		}
		if err := m.copyAll(ctx); err != nil {
			return err
		}
		if err := m.step("copied"); err != nil {
			return err
		}
		if err := m.cutover(ctx); err != nil {
			return err
		}
	}
	if err := m.settle(ctx); err != nil {
		return err
	}
	if err := m.cleanup(ctx); err != nil {
		return err
	}
	if err := m.step("cleaned"); err != nil {
		return err
	}
	m.mu.Lock()
	about := m.about()
	m.rec = nil
	err := m.publishLocked(ctx, m.to, false, about+" done: the moved documents removed from their sources")
	if err == nil {
		m.forget(ctx)
	}
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return m.step("done")
}

func (m *manager) setStep(ctx context.Context, step, mode string, frozen bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	reason := m.about() + ": writes to moving keys frozen for the cutover"
	if !frozen {
		reason = m.about() + ": cutover undone, moving keys thawed; copying and catching up"
	}
	m.rec.Step = step
	return m.publishLocked(ctx, m.transition(mode, frozen), true, reason)
}

// copyAll copies every source collection's moving documents from its
// checkpoint, a few collections at once.
func (m *manager) copyAll(ctx context.Context) error {
	var sources []string
	m.mu.Lock()
	for s, c := range m.work.Copy {
		if c != copyDone {
			sources = append(sources, s)
		}
	}
	m.mu.Unlock()
	sort.Strings(sources)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.o.Parallelism)
	for _, s := range sources {
		g.Go(func() error { return m.copySource(gctx, s) })
	}
	return g.Wait()
}

func (m *manager) copySource(ctx context.Context, source string) error {
	m.mu.Lock()
	tok := m.work.Copy[source]
	m.mu.Unlock()
	since := 0
	for {
		page, err := m.st.ReadFeed(ctx, source, &store.FeedOptions{Continuation: tok, PageSize: 200})
		if err != nil {
			return fmt.Errorf("transition: reading %s: %w", source, err)
		}
		if err := m.copyPage(ctx, source, page.Items); err != nil {
			return err
		}
		m.cnt.scanned.Add(int64(len(page.Items)))
		since += len(page.Items)
		tok = page.Continuation
		if tok == "" {
			tok = copyDone
		}
		if since >= m.o.CheckpointEvery || tok == copyDone {
			since = 0
			if err := m.checkpoint(ctx, func() { m.work.Copy[source] = tok }); err != nil {
				return err
			}
		}
		m.report("")
		if tok == copyDone {
			return nil
		}
	}
}

// copyPage copies a page's moving documents through the pool (see
// inPool), each copy first waiting its turn under the rate limit.
func (m *manager) copyPage(ctx context.Context, source string, docs []json.RawMessage) error {
	return m.inPool(ctx, docs, func(ctx context.Context, doc []byte) (func(context.Context) error, error) {
		mv, err := m.moving(source, doc)
		if err != nil || mv.target == "" {
			return nil, err
		}
		if err := m.limiter.Wait(ctx); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			_, err := m.copyMove(ctx, source, doc, mv, &m.cnt.copied, false)
			return err
		}, nil
	})
}

// inPool runs the work of a page's documents on the reshard's pool of
// workers: as many at once as Parallelism allows over the whole reshard
// (all collections share the pool, so two sources keep as many workers
// busy as ten). prepare, called in order, returns a document's work, or
// nil when it has none. inPool returns when all of it is done, so a
// checkpoint after it never runs ahead of the work.
func (m *manager) inPool(ctx context.Context, docs []json.RawMessage, prepare func(ctx context.Context, doc []byte) (func(context.Context) error, error)) error {
	g, gctx := errgroup.WithContext(ctx)
	err := func() error {
		for _, doc := range docs {
			work, err := prepare(gctx, doc)
			if err != nil {
				return err
			}
			if work == nil {
				continue
			}
			select {
			case m.workers <- struct{}{}:
			case <-gctx.Done():
				return gctx.Err()
			}
			g.Go(func() error {
				defer func() { <-m.workers }()
				return work(gctx)
			})
		}
		return nil
	}()
	if werr := g.Wait(); werr != nil {
		return werr
	}
	return err
}

// copyIn reports whether doc, stored in target, is a copy (the current
// placement puts its key elsewhere), with where it belongs, its key
// (whole: keyIn gives the key each collection takes) and its ETag.
func (m *manager) copyIn(target string, doc []byte) (f Finding, sk any, etag string, ok bool) {
	f = place(m.from, target, doc)
	if f.Want == "" || link.Same(f.Want, target) {
		return f, nil, "", false
	}
	key, _ := m.from.PartitionKey(doc)
	var meta struct {
		ETag string `json:"_etag"`
	}
	_ = json.Unmarshal(doc, &meta)
	return f, key, meta.ETag, true
}

// countSources sets Progress.Total from the source collections' usage;
// a collection that cannot be read leaves it an estimate.
func (m *manager) countSources(ctx context.Context) {
	sources, err := m.from.ResolveForRead(nil)
	if err != nil {
		return
	}
	var total int64
	for _, s := range sources {
		if info, err := m.st.CollectionInfo(ctx, s); err == nil {
			total += info.Documents
		}
	}
	m.progMu.Lock()
	m.prog.Total = total
	m.progMu.Unlock()
}

// forEachIn calls fn with every document of every collection r names, a
// few collections at once (Parallelism).
func (m *manager) forEachIn(ctx context.Context, r resolver.Resolver, fn func(ctx context.Context, coll string, doc []byte) error) error {
	colls, err := r.ResolveForRead(nil)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.o.Parallelism)
	for _, c := range colls {
		g.Go(func() error {
			return m.eachDoc(gctx, c, func(ctx context.Context, doc []byte) error { return fn(ctx, c, doc) })
		})
	}
	return g.Wait()
}

// eachDoc calls fn with every document of a collection, from its read
// feed, a page at a time through the pool (inPool); a missing collection
// has none.
func (m *manager) eachDoc(ctx context.Context, coll string, fn func(ctx context.Context, doc []byte) error) error {
	tok := ""
	for {
		page, err := m.st.ReadFeed(ctx, coll, &store.FeedOptions{Continuation: tok, PageSize: 200})
		if errors.Is(err, store.ErrCollectionNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("transition: reading %s: %w", coll, err)
		}
		if err := m.inPool(ctx, page.Items, func(_ context.Context, doc []byte) (func(context.Context) error, error) {
			return func(ctx context.Context) error { return fn(ctx, doc) }, nil
		}); err != nil {
			return err
		}
		m.report("")
		if tok = page.Continuation; tok == "" {
			return nil
		}
	}
}

// checkpoint saves a change to the reshard's progress (its progress
// document: no version of the state).
func (m *manager) checkpoint(ctx context.Context, change func()) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	change()
	return m.saveLocked(ctx)
}

// catchUpOne copies a document the catch-up found when its key moves (see
// copyMove); a copy equal to it already (a catch-up by time reads
// documents again) is left alone, which costs a read and saves a write.
func (m *manager) catchUpOne(ctx context.Context, source string, doc []byte, count *atomic.Int64) (bool, error) {
	mv, err := m.moving(source, doc)
	if err != nil || mv.target == "" {
		return false, err
	}
	return m.copyMove(ctx, source, doc, mv, count, true)
}

// move is where a moving document goes: its next collection (empty when
// its key stays) and its key (whole: keyIn gives the key each collection
// takes).
type move struct {
	target string
	sk     any
}

// moving works out, with no I/O, whether doc (stored in source) moves.
func (m *manager) moving(source string, doc []byte) (move, error) {
	key, err := m.from.PartitionKey(doc)
	if err != nil {
		return move{}, fmt.Errorf("transition: a document in %s: %w", source, err)
	}
	target, err := m.to.ResolveForCreate(key)
	if err != nil {
		return move{}, fmt.Errorf("transition: placing a document of %s: %w", source, err)
	}
	if link.Same(target, source) {
		return move{}, nil
	}
	return move{target: target, sk: key}, nil
}

// keyIn returns the key collection l takes for a document's key (sk, the
// resolver's whole key): store.CollectionKeys, the whole composite key in
// a hierarchical collection, its first part in one partitioned by the
// first path. A key that is not composite is returned as it is.
func (m *manager) keyIn(ctx context.Context, l string, sk any) (any, error) {
	k, err := m.keys.Key(ctx, m.st, l, sk)
	if err != nil {
		return nil, fmt.Errorf("transition: reading the partition key of %s: %w", l, err)
	}
	return k, nil
}

// copyMove writes the copy of a moving document to its next collection.
// After writing the copy it reads the source again: a source deleted
// meanwhile (a router deletes a moving key in both placements) takes its
// copy with it, whichever came first. With skipEqual, a copy equal to doc
// already is left alone (a read instead of a write).
func (m *manager) copyMove(ctx context.Context, source string, doc []byte, mv move, count *atomic.Int64, skipEqual bool) (bool, error) {
	target := mv.target
	tk, err := m.keyIn(ctx, target, mv.sk)
	if err != nil {
		return false, err
	}
	srcK, err := m.keyIn(ctx, source, mv.sk)
	if err != nil {
		return false, err
	}
	if skipEqual {
		var meta struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(doc, &meta)
		if have, err := m.st.Read(ctx, target, meta.ID, &store.ReadOptions{PartitionKey: tk}); err == nil && sameContent(have.Body, doc) {
			return false, nil
		}
	}
	copied, err := m.st.Upsert(ctx, target, doc, &store.WriteOptions{PartitionKey: tk, Epoch: m.epoch()})
	if err != nil {
		return false, fmt.Errorf("transition: copying to %s: %w", target, err)
	}
	count.Add(1)
	id := copied.ID
	if _, err := m.st.Read(ctx, source, id, &store.ReadOptions{PartitionKey: srcK}); errors.Is(err, store.ErrNotFound) {
		err := m.st.Delete(ctx, target, id, &store.WriteOptions{PartitionKey: tk, IfMatch: copied.ETag, Epoch: m.epoch()})
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPreconditionFailed) {
			return true, fmt.Errorf("transition: removing the copy of %q deleted meanwhile from %s: %w", id, target, err)
		}
	} else if err != nil {
		return true, fmt.Errorf("transition: reading %q in %s again: %w", id, source, err)
	}
	return true, nil
}

// reconcile checks every copy in next's collections against its source:
// a copy whose source is gone is removed, one that differs is written
// again. Cost: a read feed of next's collections and a read per copy.
func (m *manager) reconcile(ctx context.Context) error {
	return m.forEachIn(ctx, m.to, m.reconcileOne)
}

// reconcileOne checks one document of target, when it is a copy.
func (m *manager) reconcileOne(ctx context.Context, target string, doc []byte) error {
	f, sk, etag, ok := m.copyIn(target, doc)
	if !ok {
		return nil // the target's own document
	}
	m.cnt.verified.Add(1)
	wantK, err := m.keyIn(ctx, f.Want, sk)
	if err != nil {
		return err
	}
	tk, err := m.keyIn(ctx, target, sk)
	if err != nil {
		return err
	}
	src, err := m.st.Read(ctx, f.Want, f.ID, &store.ReadOptions{PartitionKey: wantK})
	switch {
	case errors.Is(err, store.ErrNotFound):
		err := m.st.Delete(ctx, target, f.ID, &store.WriteOptions{PartitionKey: tk, IfMatch: etag, Epoch: m.epoch()})
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("transition: removing the orphan copy of %q from %s: %w", f.ID, target, err)
		}
	case err != nil:
		return fmt.Errorf("transition: reading %q in %s: %w", f.ID, f.Want, err)
	case !sameContent(src.Body, doc):
		if _, err := m.catchUpOne(ctx, f.Want, src.Body, &m.cnt.caught); err != nil {
			return err
		}
	}
	return nil
}

// catchUp is one round of the catch-up: it copies again what was written
// to moving keys since each source's position, up to about when the round
// began (see catchUpSource; frozen: the writes to moving keys are frozen),
// and moves the positions on; it returns how many copies it wrote (the
// lag, Progress.Behind).
func (m *manager) catchUp(ctx context.Context, frozen bool) (int64, error) {
	m.mu.Lock()
	feeds := make(map[string]string, len(m.work.Feeds))
	sources := make([]string, 0, len(m.work.Feeds))
	for s, p := range m.work.Feeds {
		feeds[s] = p
		sources = append(sources, s)
	}
	m.mu.Unlock()
	var total atomic.Int64
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.o.Parallelism)
	for _, s := range sources {
		mu.Lock()
		pos := feeds[s]
		mu.Unlock()
		g.Go(func() error {
			next, err := m.catchUpSource(gctx, s, pos, frozen, &total)
			mu.Lock()
			feeds[s] = next
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	m.cnt.caught.Add(total.Load())
	if err != nil {
		return total.Load(), err
	}
	m.rounds.Add(1)
	m.cnt.behind.Store(total.Load())
	m.report("")
	return total.Load(), m.checkpoint(ctx, func() { m.work.Feeds = feeds })
}

// catchUpSource is one round of the catch-up of a source from pos: its
// change feed (or, on a store without one, its documents by _ts) up to
// about when the round began (frozen: the writes to moving keys are
// frozen, see below), so a round ends however fast the source is written.
// It returns the position the next round starts from.
func (m *manager) catchUpSource(ctx context.Context, source, pos string, frozen bool, total *atomic.Int64) (string, error) {
	if since, ok := strings.CutPrefix(pos, "ts:"); ok {
		return m.catchUpByTime(ctx, source, since, total)
	}
	cf, ok := m.st.(store.ChangeFeeder)
	if !ok {
		return pos, fmt.Errorf("transition: %s's catch-up position is a change-feed position, and the store has no change feed", source)
	}
	// The round ends at an empty page, or after a page that reaches a
	// change made after the round began (by _ts, in seconds): when the
	// writes to moving keys are frozen, after it began by more than the
	// clocks' overlap, so that every change before the freeze is read.
	until := time.Now().Unix()
	if frozen {
		until = time.Now().Add(m.o.Overlap).Unix()
	}
	for {
		page, err := cf.ReadChanges(ctx, source, &store.ChangeFeedOptions{Continuation: pos, PageSize: 200})
		if err != nil {
			return pos, fmt.Errorf("transition: the change feed of %s: %w", source, err)
		}
		if err := m.catchUpPage(ctx, source, page.Items, total); err != nil {
			return pos, err
		}
		pos = page.Continuation
		if len(page.Items) == 0 || stampOf(page.Items[len(page.Items)-1]) > until {
			return pos, nil
		}
	}
}

// stampOf returns a stored document's _ts; 0 when it has none.
func stampOf(doc []byte) int64 {
	var meta struct {
		TS int64 `json:"_ts"`
	}
	_ = json.Unmarshal(doc, &meta)
	return meta.TS
}

// catchUpPage copies again the moving documents of a page of changes,
// through the pool (see inPool): a page holds each document once.
func (m *manager) catchUpPage(ctx context.Context, source string, docs []json.RawMessage, total *atomic.Int64) error {
	err := m.inPool(ctx, docs, func(_ context.Context, doc []byte) (func(context.Context) error, error) {
		mv, err := m.moving(source, doc)
		if err != nil || mv.target == "" {
			return nil, err
		}
		return func(ctx context.Context) error {
			_, err := m.copyMove(ctx, source, doc, mv, total, true)
			return err
		}, nil
	})
	m.report("")
	return err
}

// catchUpByTime is the catch-up of a store without a change feed: every
// document whose _ts is at or after the position less the overlap, and
// not past the round's start plus the overlap (later ones are the next
// round's).
func (m *manager) catchUpByTime(ctx context.Context, source, since string, total *atomic.Int64) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, since)
	if err != nil {
		return "ts:" + since, fmt.Errorf("transition: %s's catch-up position %q: %w", source, since, err)
	}
	started := time.Now().UTC()
	q := store.Query{Text: "SELECT * FROM c WHERE c._ts >= @ts AND c._ts <= @until", Parameters: []store.Param{
		{Name: "@ts", Value: t.Add(-m.o.Overlap).Unix()}, {Name: "@until", Value: started.Add(m.o.Overlap).Unix()}}}
	opts := &store.QueryOptions{PageSize: 200}
	for {
		page, err := m.st.Query(ctx, source, q, opts)
		if err != nil {
			return "ts:" + since, fmt.Errorf("transition: catching up %s: %w", source, err)
		}
		if err := m.catchUpPage(ctx, source, page.Items, total); err != nil {
			return "ts:" + since, err
		}
		if page.Continuation == "" {
			return "ts:" + started.Format(time.RFC3339Nano), nil
		}
		opts.Continuation = page.Continuation
	}
}

// maxRounds bounds the catch-up rounds before each freeze; smallLag is a
// lag (copies a round wrote again) small enough to freeze at once.
const (
	maxRounds = 10
	smallLag  = 100
)

// cutover catches up until little is left (or the lag stops shrinking),
// freezes writes to moving keys, catches up the rest, and switches, the
// moving keys still frozen (settle thaws them); past CutoverCap it thaws
// and tries again, and after CutoverTries it thaws and fails, saying why.
func (m *manager) cutover(ctx context.Context) error {
	for try := 1; ; try++ {
		// Catch up until little is left, or a round leaves no less behind
		// than the one before (the writes to moving keys outpace the
		// catch-up: only the freeze ends them), or maxRounds rounds.
		prev := int64(-1)
		for round := 1; round <= maxRounds; round++ {
			n, err := m.catchUp(ctx, false)
			if err != nil {
				return err
			}
			m.log.Info("reshard catch-up round", "db", m.db, "round", m.rounds.Load(), "behind", n)
			if n < smallLag || (prev >= 0 && n >= prev) {
				break
			}
			prev = n
		}
		if err := m.step("caught-up"); err != nil {
			return err
		}
		if err := m.setStep(ctx, StepCutover, ReadCurrent, true); err != nil {
			return err
		}
		if err := m.step("frozen"); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, m.o.CutoverCap)
		_, err := m.catchUp(cctx, true)
		if err == nil {
			// Still within the cap: the switch. Writes to moving keys stay
			// frozen until the routers have acknowledged it (settle), so a
			// router that still reads by the current placement reads what
			// the next one holds.
			m.mu.Lock()
			m.rec.Step, m.work.Settled = StepSwitched, false
			err = m.publishLocked(cctx, m.transition(ReadNext, true), true,
				fmt.Sprintf("%s: switched reads and writes to the %s (moving keys frozen until every router has seen it)", m.about(), count(m.to, true)))
			m.mu.Unlock()
		}
		cancel()
		if err == nil {
			return m.step("switched")
		}
		if ctx.Err() != nil || try >= m.o.CutoverTries {
			// Thawed before it stops, even when ctx ended: a reshard left
			// frozen would refuse writes to moving keys until it is resumed.
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			terr := m.setStep(tctx, StepCopy, ReadCurrent, false)
			cancel()
			if terr != nil {
				err = fmt.Errorf("%w; and thawing the moving keys failed, so writes to them are refused until the reshard is run again: %w", err, terr)
			}
			return fmt.Errorf("transition: the cutover of %s did not finish within %s in %d tries (the last catch-up round before the freeze copied %d documents again, after %d rounds: if writes to moving keys outpace the catch-up, raise CutoverCap, within the routers' MovingWait, or Parallelism, or lower the write rate, then run the reshard again; nothing is lost meanwhile): %w",
				m.db, m.o.CutoverCap, try, m.cnt.behind.Load(), m.rounds.Load(), err)
		}
		m.log.Warn("reshard cutover past its cap: writes thawed, catching up before the next try", "db", m.db, "try", try, "cap", m.o.CutoverCap, "error", err)
		if err := m.setStep(ctx, StepCopy, ReadCurrent, false); err != nil {
			return err
		}
	}
}

// settle waits, after the switch and before the clean-up deletes anything,
// until every router has acknowledged the switch or let its lease lapse
// (shardstate.WaitForRouters), whether or not the store fences writes:
// reads are not fenced, so a router that has not seen the switch reads
// the current placement, whose sources the clean-up removes. While it
// waits, writes to moving keys stay frozen (at most CutoverCap; a router
// waits for them within its MovingWait), so such a router reads what the
// next placement holds: the wait costs the writes to moving keys that
// long, and nothing else. A router that has not answered by then may
// read the moving keys' state as of the switch; the freeze is lifted and
// the wait goes on, up to RouterWait, for it to acknowledge or lapse.
// The outcome is recorded (record.Settled), so a resumed run waits too.
func (m *manager) settle(ctx context.Context) error {
	m.mu.Lock()
	settled, version := m.work.Settled, m.state.Version
	r, err := m.state.Decode()
	m.mu.Unlock()
	if err != nil {
		return err
	}
	frozen := false
	if t, ok := r.(*Resolver); ok {
		frozen = t.Frozen()
	}
	switch {
	case settled && frozen:
		// A run that stopped in the clean-up's freeze (settleSuspects).
		return m.thaw(ctx, true)
	case settled:
		return nil
	case frozen:
		// The routers poll every 25 ms while the state is frozen: so does
		// this wait, unless told otherwise, to keep the freeze short.
		wo := opt.Of(m.o.Routers)
		if wo.Poll <= 0 {
			wo.Poll = frozenPoll
		}
		wctx, cancel := context.WithTimeout(ctx, m.o.CutoverCap)
		err := shardstate.WaitForRouters(wctx, m.st, m.db, version, &wo)
		cancel()
		var stale *shardstate.StaleRoutersError
		switch {
		case err == nil:
			settled = true
		case errors.As(err, &stale) && ctx.Err() == nil:
			m.log.Warn("reshard switch: routers did not acknowledge it within the cutover cap; writes thawed, waiting for them before the clean-up",
				"db", m.db, "cap", m.o.CutoverCap, "error", err)
		default:
			_ = m.thaw(ctx, false)
			return fmt.Errorf("transition: waiting for the routers of %s to acknowledge the switch: %w", m.db, err)
		}
		if err := m.thaw(ctx, settled); err != nil {
			return err
		}
	}
	if !settled {
		wctx, cancel := context.WithTimeout(ctx, m.o.RouterWait)
		err := shardstate.WaitForRouters(wctx, m.st, m.db, version, m.o.Routers)
		cancel()
		if err != nil {
			return fmt.Errorf("transition: waiting for the routers of %s to acknowledge the switch before the clean-up (stop or restart the routers named, or wait for their leases to lapse, then run the reshard again): %w", m.db, err)
		}
		if err := m.checkpoint(ctx, func() { m.work.Settled = true }); err != nil {
			return err
		}
	}
	m.log.Info("reshard switch acknowledged by every router", "db", m.db, "version", version)
	return nil
}

// frozenPoll is how often settle reads the leases while the moving keys
// are frozen (as often as a following router polls a frozen state).
const frozenPoll = 25 * time.Millisecond

// thaw publishes the switched transition unfrozen, recording settled in
// the progress first (a resume that finds it settled and frozen thaws).
func (m *manager) thaw(ctx context.Context, settled bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.work.Settled = settled
	if err := m.saveLocked(ctx); err != nil {
		return err
	}
	reason := m.about() + ": every router saw the switch; moving keys thawed, removing the moved documents from their sources"
	if !settled {
		reason = m.about() + ": moving keys thawed; waiting for the routers to see the switch before the clean-up"
	}
	return m.publishLocked(ctx, m.transition(ReadNext, false), false, reason)
}

// suspect is a moving source document the clean-up could not remove yet:
// its copy was missing, or it or its copy changed under the clean-up.
type suspect struct {
	source string
	id     string
	sk     any
}

// cleanup removes the moved documents from their sources, each only with
// proof that nothing is lost: its copy exists and is as new (the source
// is removed If-Match the ETag it has), or its copy is older and is
// written again first (If-Match the copy's ETag: a copy that moved on
// meanwhile is newer). A source whose copy is missing is never taken for
// a delete: a router deletes a moving key from both placements, the copy
// first (see settleSuspects), so a source that still exists was not
// deleted, and it is copied again (a copy walk may have skipped it).
func (m *manager) cleanup(ctx context.Context) error {
	var mu sync.Mutex
	var suspects []suspect
	err := m.forEachIn(ctx, m.from, func(ctx context.Context, source string, doc []byte) error {
		sus, err := m.cleanOne(ctx, source, doc, false)
		if sus != nil {
			mu.Lock()
			suspects = append(suspects, *sus)
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return err
	}
	return m.settleSuspects(ctx, suspects)
}

// maxSettleRounds bounds the frozen rounds of settleSuspects in which no
// suspect was resolved.
const maxSettleRounds = 3

// settleSuspects resolves the documents the clean-up left: those whose
// source is gone meanwhile were deleted through a router (from both
// placements); for the others, writes and deletes of moving keys are
// frozen under a new epoch (so no router's delete is half done, between
// its copy and its source: a store that fences refuses its second half,
// on one that cannot every router is waited for), then each missing copy
// is made again from its source (a create, with the epoch) before the
// source is removed, If-Match. The freeze lasts at most CutoverCap a
// round. Cost: nothing when there are none; else a read per suspect, and
// per round two state versions (and, where the store cannot fence, a
// wait for the routers).
func (m *manager) settleSuspects(ctx context.Context, suspects []suspect) error {
	// First without a freeze: a router's delete that was half done when
	// the clean-up read the copy has removed the source since.
	var err error
	if suspects, err = m.resolveSuspects(ctx, suspects, false); err != nil || len(suspects) == 0 {
		return err
	}
	for idle := 0; len(suspects) > 0; {
		if idle == maxSettleRounds {
			return fmt.Errorf("transition: the clean-up of %s: %d source documents (%q in %s, ...) changed under %d freezes of their keys: is a process writing to the sources without a router that follows the state?",
				m.db, len(suspects), suspects[0].id, suspects[0].source, maxSettleRounds)
		}
		m.log.Info("reshard clean-up: copying again the documents whose copy is missing, moving keys frozen", "db", m.db, "documents", len(suspects))
		// A new epoch: a store that fences refuses the rest of a router's
		// delete begun before (it deletes again, frozen, after the thaw);
		// one that cannot is waited for.
		m.mu.Lock()
		err := m.publishLocked(ctx, m.transition(ReadNext, true), true,
			fmt.Sprintf("%s: moving keys frozen to copy %d documents again in the clean-up", m.about(), len(suspects)))
		m.mu.Unlock()
		if err != nil {
			_ = m.thaw(ctx, true)
			return fmt.Errorf("transition: freezing the moving keys of %s for the clean-up: %w", m.db, err)
		}
		cctx, cancel := context.WithTimeout(ctx, m.o.CutoverCap)
		left, err := m.resolveSuspects(cctx, suspects, true)
		cancel()
		if terr := m.thaw(ctx, true); terr != nil {
			return terr
		}
		switch {
		case err != nil && ctx.Err() == nil && cctx.Err() != nil:
			// Past the cap: the rest in the next freeze.
		case err != nil:
			return err
		}
		if len(left) == len(suspects) {
			idle++
		}
		suspects = left
	}
	return nil
}

// resolveSuspects reads each suspect's source again and cleans it (see
// cleanOne); it returns those still unresolved. A source gone meanwhile
// was deleted through a router. On an error, the suspects not reached are
// returned with it.
func (m *manager) resolveSuspects(ctx context.Context, suspects []suspect, frozen bool) ([]suspect, error) {
	var left []suspect
	for i, s := range suspects {
		srcK, err := m.keyIn(ctx, s.source, s.sk)
		if err != nil {
			return append(left, suspects[i:]...), err
		}
		src, err := m.st.Read(ctx, s.source, s.id, &store.ReadOptions{PartitionKey: srcK})
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return append(left, suspects[i:]...), fmt.Errorf("transition: reading %q in %s: %w", s.id, s.source, err)
		}
		sus, err := m.cleanOne(ctx, s.source, src.Body, frozen)
		if err != nil {
			return append(left, suspects[i:]...), err
		}
		if sus != nil {
			left = append(left, *sus)
		}
	}
	return left, nil
}

// cleanOne removes one source document when its key moved and the proof
// is there (see cleanup); otherwise it returns it as a suspect. With
// frozen (no router writes or deletes moving keys, none is half done), a
// missing copy is made again from doc before the source is removed.
func (m *manager) cleanOne(ctx context.Context, source string, doc []byte, frozen bool) (*suspect, error) {
	mv, err := m.moving(source, doc)
	if err != nil || mv.target == "" {
		return nil, err
	}
	target, sk := mv.target, mv.sk
	tk, err := m.keyIn(ctx, target, sk)
	if err != nil {
		return nil, err
	}
	srcK, err := m.keyIn(ctx, source, sk)
	if err != nil {
		return nil, err
	}
	var meta struct {
		ID   string `json:"id"`
		ETag string `json:"_etag"`
		TS   int64  `json:"_ts"`
	}
	if err := json.Unmarshal(doc, &meta); err != nil {
		return nil, fmt.Errorf("transition: a document in %s: %w", source, err)
	}
	sus := &suspect{source: source, id: meta.ID, sk: sk}
	copyDoc, err := m.st.Read(ctx, target, meta.ID, &store.ReadOptions{PartitionKey: tk})
	switch {
	case errors.Is(err, store.ErrNotFound):
		// No proof of a delete: a router deletes a moving key's copy and
		// then its source, and may be between the two; or the copy walk
		// skipped the document. Under the freeze neither can be under way:
		// the copy is made again (a create: a copy written meanwhile wins).
		if !frozen {
			return sus, nil
		}
		if _, err := m.st.Create(ctx, target, doc, &store.WriteOptions{PartitionKey: tk, Epoch: m.epoch()}); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return sus, nil
			}
			return nil, fmt.Errorf("transition: copying %q to %s again: %w", meta.ID, target, err)
		}
		m.cnt.caught.Add(1)
	case err != nil:
		return nil, fmt.Errorf("transition: reading %q in %s: %w", meta.ID, target, err)
	case !sameContent(doc, copyDoc.Body) && meta.TS > copyDoc.Timestamp:
		// The source was written after its last copy: copy it again unless
		// the copy moved on meanwhile (then the copy is the newer).
		_, err := m.st.Replace(ctx, target, meta.ID, doc, &store.WriteOptions{PartitionKey: tk, IfMatch: copyDoc.ETag, Epoch: m.epoch()})
		switch {
		case errors.Is(err, store.ErrNotFound):
			return sus, nil // deleted meanwhile: no proof either way yet
		case err != nil && !errors.Is(err, store.ErrPreconditionFailed):
			return nil, fmt.Errorf("transition: copying %q to %s again: %w", meta.ID, target, err)
		}
	}
	err = m.st.Delete(ctx, source, meta.ID, &store.WriteOptions{PartitionKey: srcK, IfMatch: meta.ETag, Epoch: m.epoch()})
	switch {
	case errors.Is(err, store.ErrPreconditionFailed):
		return sus, nil // the source changed since it was read: look again
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("transition: removing %q from %s: %w", meta.ID, source, err)
	}
	m.cnt.deleted.Add(1)
	return nil, nil
}

// sameContent compares two stored documents without their system
// properties.
func sameContent(a, b []byte) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for _, m := range []map[string]any{x, y} {
		for _, k := range []string{"_etag", "_ts", "_rid", "_self", "_attachments", "_lsn"} {
			delete(m, k)
		}
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// Abort ends a reshard before its switch and returns the database to the
// resolver it had: the copies made so far are removed (each If-Match, while
// routers still skip them in queries), then the former resolver is
// published again. Nothing the routers wrote is touched: before the switch
// they write to the current placement only. After the switch it fails with
// ErrPastSwitch. With no reshard in progress it does nothing. Stop the
// process running the reshard first: Abort does not wait for it.
func Abort(ctx context.Context, st store.Store, dbLink string, opts *ReshardOptions) (*Progress, error) {
	m, err := newManager(st, dbLink, opts)
	if err != nil {
		return nil, err
	}
	_, rec, err := m.load(ctx)
	if err != nil || rec == nil {
		return &m.prog, err
	}
	if rec.Step == StepSwitched {
		return &m.prog, fmt.Errorf("%w: %s routes by the next placement since the switch; run the reshard to its end", ErrPastSwitch, m.db)
	}
	if err := m.resume(ctx, rec); err != nil {
		return &m.prog, err
	}
	if err := m.takeOver(ctx); err != nil {
		return &m.prog, err
	}
	if m.rec.Step == StepSwitched {
		return &m.prog, fmt.Errorf("%w: %s routes by the next placement since the switch; run the reshard to its end", ErrPastSwitch, m.db)
	}
	if m.rec.Step == StepCutover {
		if err := m.setStep(ctx, StepCopy, ReadCurrent, false); err != nil {
			return &m.prog, err
		}
	}
	if err := m.forEachIn(ctx, m.to, m.removeCopy); err != nil {
		return &m.prog, err
	}
	m.mu.Lock()
	about := m.about()
	m.rec = nil
	err = m.publishWait(ctx, m.from, true, true, fmt.Sprintf("%s aborted: the copies removed; back to the %s", about, count(m.from, true)))
	if err == nil {
		m.forget(ctx)
	}
	m.mu.Unlock()
	m.report("aborted")
	return &m.prog, err
}

// removeCopy deletes a document of target that the current placement
// puts elsewhere (one of the reshard's copies).
func (m *manager) removeCopy(ctx context.Context, target string, doc []byte) error {
	f, sk, etag, ok := m.copyIn(target, doc)
	if !ok {
		return nil
	}
	tk, err := m.keyIn(ctx, target, sk)
	if err != nil {
		return err
	}
	err = m.st.Delete(ctx, target, f.ID, &store.WriteOptions{PartitionKey: tk, IfMatch: etag, Epoch: m.epoch()})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("transition: removing the copy of %q from %s: %w", f.ID, target, err)
	}
	m.cnt.deleted.Add(1)
	return nil
}
