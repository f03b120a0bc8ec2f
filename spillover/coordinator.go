package spillover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/procid"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// ErrNotSpillover: the database's shared state routes by another kind of
// resolver than a spillover.
var ErrNotSpillover = errors.New("spillover: the database's resolver is not a spillover")

// ErrPrefixClash: a collection named like the spillover's (its prefix and a
// sequence number) exists that is not one of its collections. It is wrapped
// by a *resolver.ConfigError naming "collectionPrefix".
var ErrPrefixClash = errors.New("a collection with the spillover's prefix exists that is not one of its collections")

// Steps of opening a collection, as CoordinatorOptions.Step names them.
const (
	StepRecorded  = "recorded"  // the phase names the collection being opened
	StepCreated   = "created"   // the collection exists
	StepPublished = "published" // the resolver names it as the newest
)

// opening is the spillover's part of the state's phase: the collection
// being opened, recorded before it is created, so that whichever process
// checks next finishes the job after a crash.
type opening struct {
	Opening string    `json:"opening"` // the collection being opened (the resolver's NextLink)
	Sealing string    `json:"sealing"` // the newest collection, full
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

type phaseDoc struct {
	Spillover *opening `json:"spillover,omitempty"`
}

// CoordinatorOptions configure a Coordinator. A nil *CoordinatorOptions
// means defaults.
type CoordinatorOptions struct {
	// Seed creates the database's state when it has none (the
	// configuration file's resolver the first time); nil means a database
	// without a state is an error wrapping shardstate.ErrNoState.
	Seed resolver.Resolver
	// CheckInterval is how often the newest collection's usage is read; 0
	// means one second.
	CheckInterval time.Duration
	// MinGap is the least time between two checks that Observe asks for
	// (after a throttled or refused write); 0 means CheckInterval/10.
	MinGap time.Duration
	// By names the process in the state's history; empty means "host/pid"
	// of this process.
	By string
	// Routers and RouterWait qualify the wait for every router to route by
	// the version that sealed a collection before its range-key bounds are
	// measured (shardstate.WaitForRouters); RouterWait 0 means a minute.
	Routers    *shardstate.WaitOptions
	RouterWait time.Duration
	// OnOpen, when set, is called after this process published a new
	// newest collection.
	OnOpen func(opened string, version int64)
	// OnError, when set, is called with each failed check of the
	// background loop.
	OnError func(error)
	// Step, when set, is called at each step of opening a collection
	// (StepRecorded, StepCreated, StepPublished) before going on; an
	// error stops there, as a crash would (tests use it).
	Step func(step string) error
}

// Coordinator keeps a spillover database's newest collection from
// overfilling: it reads the newest collection's usage every CheckInterval
// (and soon after a write was throttled or refused for size, through
// Observe) and, once usage reaches the fill ratio, opens the next
// collection. Opening is three compare-and-swap steps on the shared state
// (docs/design.md#spillover): record the collection about to be opened in
// the state's phase, create it from the template, publish the resolver
// naming it as the newest with a new epoch, so routers that still write to
// the sealed one are fenced (on a store.Fencer) and retry by the new
// version. Any process's Coordinator finishes an opening another left
// half-done. With a range key, it then measures each sealed collection's
// bounds and records them in the resolver, so range reads skip it.
//
// Run one in every process that writes (each one's checks are idempotent:
// of two processes seeing the collection full at once, one records the
// opening and both finish it), next to a router that follows the state
// (router.Client.Follow), and pass Observe as the router's Hooks.Call.
type Coordinator struct {
	st   store.Store
	db   string
	opts CoordinatorOptions

	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	checkMu   sync.Mutex // serialises checks

	// refused is the canonical link of the last collection a write was
	// refused for quota (Observe): full, whatever its usage says (a
	// document larger than what maxBytes leaves may be refused below the
	// fill ratio). full asks for a check at once, skipping MinGap.
	refused atomic.Pointer[string]
	full    chan struct{}

	measureMu sync.Mutex
	measuring bool
	tried     map[string]bool // collections measured without a value
	wg        sync.WaitGroup
}

// Start checks the database's state and collections and starts a
// Coordinator for it: the state must route by a spillover (else an error
// wrapping ErrNotSpillover); a collection named like the spillover's that
// is not one of its collections (nor the one an unfinished opening
// names) is refused with a *resolver.ConfigError naming "collectionPrefix"
// (wrapping ErrPrefixClash); the newest collection is created from the
// template when missing, and a sealed one that is missing (deleted: it held
// documents) is a *store.MissingCollectionError naming it, never created
// again empty; then one check runs at once (finishing an opening a crashed
// process left), and a goroutine checks every CheckInterval until Close.
// ctx bounds the start only.
//
// Cost: a state read, a collection listing, a create per missing
// collection, and one check (a state read and a collection-info read).
// Every store call runs through the retry layer (store/retry): st's own
// when st is wrapped already, else a default one.
func Start(ctx context.Context, st store.Store, dbLink string, opts *CoordinatorOptions) (*Coordinator, error) {
	st = retry.Ensure(st) // every call retried once, by the one layer
	o := opt.Of(opts)
	if o.CheckInterval <= 0 {
		o.CheckInterval = time.Second
	}
	if o.MinGap <= 0 {
		o.MinGap = o.CheckInterval / 10
	}
	if o.RouterWait <= 0 {
		o.RouterWait = time.Minute
	}
	if o.By == "" {
		o.By = procid.Identity()
	}
	s, err := shardstate.LoadOrInit(ctx, st, dbLink, o.Seed, nil)
	if err != nil {
		return nil, fmt.Errorf("spillover: %w", err)
	}
	c := &Coordinator{st: st, db: s.Database, opts: o, kick: make(chan struct{}, 1), full: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), tried: map[string]bool{}}
	r, ph, err := c.decode(s)
	if err != nil {
		return nil, err
	}
	if err := CheckCollections(ctx, st, r, ph.pending()); err != nil {
		return nil, err
	}
	// A process that published a new newest collection and died before
	// it raised the fence left routers of the old epoch free to write to
	// the sealed one: raising it again is idempotent.
	if err := shardstate.RaiseFence(ctx, st, s); err != nil {
		return nil, fmt.Errorf("spillover: %w", err)
	}
	if err := c.ensure(ctx, r.wanted()); err != nil {
		return nil, err
	}
	if _, err := c.Check(ctx); err != nil {
		return nil, err
	}
	go c.run()
	return c, nil
}

// pending is the collection an unfinished opening names, or "".
func (p phaseDoc) pending() string {
	if p.Spillover == nil {
		return ""
	}
	return p.Spillover.Opening
}

// CheckCollections refuses a database whose collections clash with the
// spillover r: a collection named r's prefix and a sequence number that is
// neither one of r's collections nor pending (the one an unfinished
// opening names). The error is a *resolver.ConfigError naming
// "collectionPrefix" and wrapping ErrPrefixClash. Cost: a collection
// listing.
func CheckCollections(ctx context.Context, st store.Store, r *Resolver, pending string) error {
	links, err := st.ListCollections(ctx, r.Database())
	if err != nil {
		return fmt.Errorf("spillover: listing the collections of %s: %w", r.Database(), err)
	}
	own := map[string]bool{}
	for _, l := range r.colls {
		own[canonical(l)] = true
	}
	if pending != "" {
		own[canonical(pending)] = true
	}
	for _, l := range links {
		c, err := link.ParseCollection(l)
		if err != nil {
			continue
		}
		if _, ok := r.Sequence(c.Collection); ok && !own[c.String()] {
			return &resolver.ConfigError{Field: "collectionPrefix", Value: r.Prefix(), Err: ErrPrefixClash,
				Reason: fmt.Sprintf("collection %s exists and is not one of the spillover's collections (another resolver's, or left by hand); choose another prefix, or remove it", l)}
		}
	}
	return nil
}

// decode returns the spillover of state s and its phase.
func (c *Coordinator) decode(s *shardstate.State) (*Resolver, phaseDoc, error) {
	var ph phaseDoc
	rv, err := s.Decode()
	if err != nil {
		return nil, ph, fmt.Errorf("spillover: %s version %d: %w", c.db, s.Version, err)
	}
	r, ok := rv.(*Resolver)
	if !ok {
		return nil, ph, fmt.Errorf("%w: %s routes by kind %q (version %d)", ErrNotSpillover, c.db, kindOf(rv), s.Version)
	}
	if len(s.Phase) > 0 {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(s.Phase, &raw); err != nil {
			return nil, ph, fmt.Errorf("spillover: %s version %d: the phase is not a JSON object: %w", c.db, s.Version, err)
		}
		for k := range raw {
			if k != "spillover" {
				return nil, ph, fmt.Errorf("spillover: %s version %d: another change is under way (phase %q); the spillover waits for it", c.db, s.Version, k)
			}
		}
		if err := json.Unmarshal(s.Phase, &ph); err != nil {
			return nil, ph, fmt.Errorf("spillover: %s version %d: the phase: %w", c.db, s.Version, err)
		}
	}
	if p := ph.pending(); p != "" && !link.Same(p, r.NextLink()) {
		return nil, ph, fmt.Errorf("spillover: %s version %d: the phase opens %s, but the collection after the newest is %s", c.db, s.Version, p, r.NextLink())
	}
	return r, ph, nil
}

func kindOf(r resolver.Resolver) string {
	if k, ok := r.(resolver.Kinded); ok {
		return k.Kind()
	}
	return fmt.Sprintf("%T", r)
}

// create makes collection l exist, created from r's template, through
// store.EnsureCollections (the one conflict rule: one that exists must be
// partitioned by the template's path, else a *store.KeyPathError).
func (c *Coordinator) create(ctx context.Context, r *Resolver, l string) error {
	return c.ensure(ctx, store.Wanted{Create: []string{l}, Spec: r.Template()})
}

func (c *Coordinator) ensure(ctx context.Context, w store.Wanted) error {
	if _, err := store.EnsureCollections(retry.Repeatable(ctx), c.st, w); err != nil {
		return fmt.Errorf("spillover: %w", err)
	}
	return nil
}

// Observe is a router.Hooks.Call: a write to a collection that was
// throttled (store.ErrThrottled) asks for a check soon (at most one per
// MinGap); a write refused for quota (store.ErrQuotaExceeded: the
// collection is at its limit) marks the collection full and asks for a
// check at once, which opens the next collection if it is the newest; the
// router sends the refused write there once it is published. Cost: two
// errors.Is on failed calls; nothing on successful ones.
func (c *Coordinator) Observe(_ context.Context, l, op string, _ time.Duration, err error) {
	if err == nil || !(errors.Is(err, store.ErrThrottled) || errors.Is(err, store.ErrQuotaExceeded)) {
		return
	}
	switch op {
	case "create", "upsert", "replace": // the router's writes
	default:
		return // reads, queries, feeds, collection calls: usage is not the cause
	}
	ask := c.kick
	if errors.Is(err, store.ErrQuotaExceeded) {
		if cl, err := link.Canonical(l); err == nil {
			c.refused.Store(&cl)
			ask = c.full
		}
	}
	select {
	case ask <- struct{}{}:
	default:
	}
}

// Close stops the background checks and waits for a measurement under
// way. It does not touch the store.
func (c *Coordinator) Close() error {
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
		c.wg.Wait()
	})
	return nil
}

func (c *Coordinator) run() {
	defer close(c.done)
	t := time.NewTimer(c.opts.CheckInterval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-c.stop:
			return
		case <-c.full: // a write was refused: it waits for the next collection
		case <-c.kick:
			if wait := c.opts.MinGap - time.Since(last); wait > 0 {
				select {
				case <-c.stop:
					return
				case <-c.full:
				case <-time.After(wait):
				}
			}
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*c.opts.CheckInterval+10*time.Second)
		_, err := c.Check(ctx)
		cancel()
		last = time.Now()
		if err != nil && c.opts.OnError != nil {
			c.opts.OnError(err)
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(c.opts.CheckInterval)
	}
}

// Check reads the state and the newest collection's usage once: it
// finishes an opening under way, or opens the next collection when the
// newest is full (its usage at the fill ratio, or a write to it refused
// for quota, as Observe saw), and returns the collection it published ("" when none).
// Losing a compare-and-swap is not an error: the check reads the state
// again and looks again (up to checkAttempts times), since the other
// writer may have changed something else (this coordinator's own
// background measurement of a sealed collection, say) and the newest
// collection is still full. Cost: a state read and a collection-info
// read; opening adds a collection create and two state changes.
func (c *Coordinator) Check(ctx context.Context) (string, error) {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	for range checkAttempts - 1 {
		opened, err := c.checkOnce(ctx)
		if !errors.Is(err, errLostRace) {
			return opened, err
		}
	}
	opened, err := c.checkOnce(ctx)
	if errors.Is(err, errLostRace) {
		return "", nil // the state keeps changing under us: the next check looks again
	}
	return opened, err
}

// checkAttempts bounds how often Check reads the state again after losing
// a compare-and-swap.
const checkAttempts = 8

// errLostRace: a state change lost its compare-and-swap; Check reads the
// state again.
var errLostRace = errors.New("spillover: the state changed meanwhile")

// checkOnce is one round of Check, with errLostRace when a publish lost
// its compare-and-swap.
func (c *Coordinator) checkOnce(ctx context.Context) (string, error) {
	s, err := shardstate.Load(ctx, c.st, c.db)
	if err != nil {
		return "", fmt.Errorf("spillover: %w", err)
	}
	r, ph, err := c.decode(s)
	if err != nil {
		return "", err
	}
	if ph.Spillover != nil {
		return c.finish(ctx, s, r)
	}
	info, err := c.st.CollectionInfo(ctx, r.Newest())
	if errors.Is(err, store.ErrNotFound) {
		return "", c.create(ctx, r, r.Newest())
	}
	if err != nil {
		return "", fmt.Errorf("spillover: reading the usage of %s: %w", r.Newest(), err)
	}
	if !r.Full(info.Documents, info.Bytes) && !c.wasRefused(r.Newest()) {
		c.measureLater(r)
		return "", nil
	}
	next := r.NextLink()
	if _, err := c.st.CollectionInfo(ctx, next); err == nil {
		// Another process may have opened it since the state was read.
		if now, err := shardstate.Load(ctx, c.st, c.db); err != nil || now.Version != s.Version {
			return "", nil
		}
		return "", &resolver.ConfigError{Field: "collectionPrefix", Value: r.Prefix(), Err: ErrPrefixClash,
			Reason: fmt.Sprintf("the next collection %s exists already, but no opening of it was recorded", next)}
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("spillover: reading %s: %w", next, err)
	}
	p, _ := json.Marshal(phaseDoc{Spillover: &opening{Opening: next, Sealing: r.Newest(), By: c.opts.By, At: time.Now().UTC()}})
	s, err = shardstate.Publish(ctx, c.st, s, shardstate.Change{Phase: p, By: c.opts.By})
	if errors.Is(err, shardstate.ErrConflict) {
		return "", errLostRace
	}
	if err != nil {
		return "", fmt.Errorf("spillover: recording the opening of %s: %w", next, err)
	}
	if err := c.step(StepRecorded); err != nil {
		return "", err
	}
	return c.finish(ctx, s, r)
}

// wasRefused reports whether a write to collection l was refused for
// quota (Observe).
func (c *Coordinator) wasRefused(l string) bool {
	p := c.refused.Load()
	return p != nil && *p == canonical(l)
}

func (c *Coordinator) step(name string) error {
	if c.opts.Step == nil {
		return nil
	}
	if err := c.opts.Step(name); err != nil {
		return fmt.Errorf("spillover: stopped at step %s: %w", name, err)
	}
	return nil
}

// finish creates the collection state s's phase opens and publishes r with
// it as the newest, a new epoch and no phase.
func (c *Coordinator) finish(ctx context.Context, s *shardstate.State, r *Resolver) (string, error) {
	next := r.NextLink()
	if err := c.create(ctx, r, next); err != nil {
		return "", err
	}
	if err := c.step(StepCreated); err != nil {
		return "", err
	}
	r2, err := r.WithNext()
	if err != nil {
		return "", fmt.Errorf("spillover: adding %s: %w", next, err)
	}
	ns, err := shardstate.Publish(ctx, c.st, s, shardstate.Change{Resolver: r2, Phase: json.RawMessage("null"), NewEpoch: true, By: c.opts.By})
	if errors.Is(err, shardstate.ErrConflict) {
		return "", errLostRace // another process finished it, or changed the state: look again
	}
	if err != nil && ns == nil {
		return "", fmt.Errorf("spillover: publishing %s as the newest collection: %w", next, err)
	}
	if err != nil {
		// Published, but the fence could not be raised: raise it again.
		if ferr := shardstate.RaiseFence(ctx, c.st, ns); ferr != nil {
			return next, fmt.Errorf("spillover: %s is the newest collection from version %d, but the fence is not raised yet: %w", next, ns.Version, ferr)
		}
	}
	if err := c.step(StepPublished); err != nil {
		return next, err
	}
	if c.opts.OnOpen != nil {
		c.opts.OnOpen(next, ns.Version)
	}
	return next, nil
}
