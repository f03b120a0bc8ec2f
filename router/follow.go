package router

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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

// ErrLeaseExpired: the database's resolver comes from its shared state
// (Follow), and the router's lease has lapsed: it has not read the state
// it routes by for longer than FollowOptions.LeaseDuration (or renewed its
// lease for three RenewIntervals), so the
// placement it routes by may be old (a reshard may have moved documents
// and deleted their sources meanwhile). It refuses reads, queries and
// writes until a renewal and a state read succeed (the next poll, or
// Refresh). The error is a *LeaseError.
var ErrLeaseExpired = errors.New("router: lease lapsed")

// LeaseError reports a read or write refused because the router's lease
// on the database has lapsed. It wraps ErrLeaseExpired and the last
// renewal's error, if any.
type LeaseError struct {
	Database string
	Router   string        // the router's id
	Op       string        // "read" (a point read or a query page) or "write"
	Version  int64         // the state version the router routes by
	Ago      time.Duration // how long ago the lease lapsed
	Err      error         // why the last renewal failed; nil if none was tried since
}

// Error implements error.
func (e *LeaseError) Error() string {
	s := fmt.Sprintf("router: %s: %s refused: the lease of router %s lapsed %s ago (it has not renewed its lease or read the state in time), so the placement it routes by (version %d) may be old; reads and writes wait for a renewal and a state read",
		e.Database, e.Op, e.Router, e.Ago.Round(time.Millisecond), e.Version)
	if e.Err != nil {
		s += ": last renewal: " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrLeaseExpired and the renewal's error.
func (e *LeaseError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLeaseExpired}
	}
	return []error{ErrLeaseExpired, e.Err}
}

// ErrStateLost: the database's state document, which the router follows,
// is missing (deleted) or went back to an older version (deleted and
// created again): the placement of the database is no longer one the
// whole fleet agrees on. The router refuses writes with an error wrapping
// it (and shardstate.ErrNoState when the document is missing) until a
// version above the one it routes by is published, which `docshard state
// set` (shardstate.Restore) does; it goes on reading by the version it
// has, which stays exact: no placement can change without the document
// (every change is a compare-and-swap on it), and nothing creates it again
// while the routers' leases show they use it (shardstate.ErrInUse).
var ErrStateLost = errors.New("router: the shared state document is missing or went back")

// FollowOptions configure Follow. A nil *FollowOptions means defaults.
type FollowOptions struct {
	// PollInterval is how often the state is read; 0 means two seconds
	// (a change reaches every router within it once its copies are written,
	// as Publish does at once; within StateCopies polls when they could not
	// be, or an earlier docshard published it; docs/design.md#leases-at-scale
	// and #state-copies give the cost).
	PollInterval time.Duration
	// LeaseDuration is how long after a read of the state the router may
	// write by it (shardstate.Lease.ValidFor); 0 means five poll
	// intervals. It must be longer than the poll interval. A change that
	// every router must see first (shardstate.WaitForRouters) waits at
	// most this long (plus a margin) for a router that stopped.
	LeaseDuration time.Duration
	// ShareLease makes the Followers of the database in this process over
	// the same store (the same store.Store value given to router.New) that
	// set it share one lease: it acknowledges the oldest version any of
	// them routes by, and is renewed once per the shortest RenewInterval
	// among them, whatever their number (each still reads the state every
	// PollInterval). RouterID then names the shared lease when the first of
	// them sets it; RouterID() returns the shared lease's id.
	ShareLease bool
	// RenewInterval is how often the lease is renewed while the router
	// reads the state it routes by (it renews on every poll while it
	// cannot, or while writes by an older version are in flight, and once
	// to acknowledge a new version); the lease stands for three of them
	// (shardstate.Lease.HoldFor), and a router that could not renew it
	// for that long refuses writes. 0 means four lease durations. It must
	// be at least the poll interval.
	RenewInterval time.Duration
	// RouterID names this router's lease; it must be unique among the
	// processes sharing the store. Empty means this process's "host/pid"
	// and a random suffix.
	RouterID string
	// Seed is the resolver that creates the state when the database has
	// none (the configuration file's, the first time); nil means a database
	// without a state document is an error wrapping shardstate.ErrNoState.
	Seed resolver.Resolver
	// OnChange, when set, is called after the router switched to a new
	// version (from the polling goroutine, or the caller of Refresh).
	OnChange func(old, current *shardstate.State)
	// OnError, when set, is called with each failed poll: a renewal or a
	// read that failed, a broken or foreign state document (the router
	// keeps the last good state), a state document that is missing or
	// went back (ErrStateLost: writes are refused, and the router logs it
	// once on slog's default logger at level Error).
	OnError func(error)
	// MovingWait bounds how long a write to a key that is being switched
	// to another collection (resolver.ErrMoving: a reshard's cutover) waits
	// for the switch to be published before it fails, and how long a write
	// that a spillover's full newest collection refused
	// (store.ErrQuotaExceeded) waits for the next one; 0 means 10 seconds.
	// While the state says keys are being switched, the router polls every
	// 25 ms.
	MovingWait time.Duration
}

// DefaultPollInterval is FollowOptions.PollInterval's default. With the
// lease five of them and its renewal four leases, a router costs a state
// read every 2 s and a lease write every 40 s.
const DefaultPollInterval = 2 * time.Second

// Resolved returns o with the pacing fields left zero set to their
// defaults, as Follow applies them: PollInterval DefaultPollInterval,
// LeaseDuration five polls, RenewInterval four lease durations. Cost: none
// (a copy of o).
func (o FollowOptions) Resolved() FollowOptions {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 5 * o.PollInterval
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = 4 * o.LeaseDuration
	}
	return o
}

// holdFor is how long a renewal of the lease stands (shardstate.Lease.HoldFor):
// three renew intervals, so two renewals may fail before the router stops
// writing.
func (o FollowOptions) holdFor() time.Duration { return 3 * o.RenewInterval }

// newRouterID is a lease id for this process: its "host/pid" and a
// random suffix.
func newRouterID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return procid.Identity() + "/" + hex.EncodeToString(b[:])
}

// fastPoll is the poll interval while the state is frozen.
const fastPoll = 25 * time.Millisecond

// Follower keeps one database of a Client routed by the database's shared
// state document (package shardstate): it polls the document, swaps the
// resolver atomically when the version changes, renews the router's lease,
// and stamps the database's writes with the state's epoch, so a store that
// is a store.Fencer refuses the writes of a router that has not seen a new
// epoch yet. When the store refuses a write as fenced, the router refreshes
// at once and writes again by the new state (see guarded: up to
// maxFencedRetries times, each after a refresh that found a newer version).
//
// Reads, queries and writes are refused with a *LeaseError while the
// lease has lapsed (a check of the clock, no store round trip): a router
// that has not renewed its lease may route by a placement a reshard has
// since cleaned up. Within its lease a router reads by the placement in
// force; a reshard acts on a new placement (cleans up, seals) only after
// every lease acknowledged it or lapsed, so those reads are exact. A new version is acknowledged
// in the lease only after the writes begun under the old one have
// finished, so a change waiting in shardstate.WaitForRouters knows that no
// write by the old version is still on its way.
type Follower struct {
	c  *Client
	st store.Store
	// checkRead and checkWrite are the lease checks the store's retries
	// ask before each attempt (retry.Guard), built once per Follower.
	checkRead, checkWrite func() error
	db                    string
	router                string
	opts                  FollowOptions
	base                  time.Time    // the monotonic origin of deadline
	skew                  atomic.Int64 // added to the clock: tests pause the router (export_test.go)

	state    atomic.Pointer[shardstate.State] // the state routed by
	frozen   atomic.Bool                      // the state refuses writes to moving keys
	hurry    atomic.Int32                     // writes waiting for a spillover's next collection
	changed  atomic.Pointer[chan struct{}]    // closed when the version changes
	deadline atomic.Int64                     // lease end, in ns since base
	lastErr  atomic.Pointer[error]            // the last renewal's error

	lost atomic.Pointer[error] // the state document is missing or went back: writes get this
	// decode is State.DecodeDocument (tests hook it); pending, the decode
	// under way (decodeFor; under mu), nil when none.
	decode  func(*shardstate.State) (resolver.Resolver, error)
	pending *decoding

	mu        sync.Mutex         // serialises polls
	reader    *shardstate.Reader // reads the state: its copy, or the document itself
	lease     *shardstate.Lease  // as last written; nil: none held
	renewSent int64              // when the lease's last renewal was sent (now's clock)
	share     *sharedLease       // the process's lease it shares (ShareLease); nil: its own
	gen       uint64             // share's take seen at its last renewal
	// renewedHeld: the last renewal was on condition of the lease held.
	renewedHeld bool
	keep        bool         // renew on every poll (see poll)
	acked       atomic.Int64 // the version the lease acknowledges (written under mu)
	draining    []*dbEntry   // retired registrations with writes in flight
	entry       *dbEntry     // the registration in force

	stop      chan struct{}
	done      chan struct{}
	kick      chan struct{} // the poll interval changed (frozen or not)
	closeOnce sync.Once
}

// Follow routes a database by its shared state document: it reads the
// state (creating it from opts.Seed when there is none), takes the
// router's lease, registers the state's resolver (replacing any earlier
// registration), and polls from a goroutine until Close. ctx bounds the
// first read and lease only.
//
// Cost: a state read per poll interval (of one of the copies of the
// state, shardstate.StateCopies, on all but every StateCopies-th) and a
// lease write per renew interval (and one per version acknowledged);
// writes to the
// database pay a clock read and two atomic additions for the lease check
// and the in-flight count; point reads and query pages, a clock read for
// the lease check.
func (c *Client) Follow(ctx context.Context, dbLink string, opts *FollowOptions) (*Follower, error) {
	key, err := dbKey(dbLink)
	if err != nil {
		return nil, err
	}
	o := opt.Of(opts).Resolved()
	if o.LeaseDuration <= o.PollInterval {
		return nil, fmt.Errorf("router: Follow %s: LeaseDuration %s must be longer than PollInterval %s", key, o.LeaseDuration, o.PollInterval)
	}
	if o.RenewInterval < o.PollInterval {
		return nil, fmt.Errorf("router: Follow %s: RenewInterval %s must be at least PollInterval %s", key, o.RenewInterval, o.PollInterval)
	}
	if e, err := c.entry(key); err == nil && e.follow != nil && !e.follow.closed() {
		return nil, fmt.Errorf("router: Follow %s: the database is followed already (router %s); close that Follower first", key, e.follow.router)
	}
	explicitID := o.RouterID
	if o.RouterID == "" {
		o.RouterID = newRouterID()
	}
	if o.MovingWait <= 0 {
		o.MovingWait = 10 * time.Second
	}
	f := &Follower{c: c, st: c.pollStore(o.PollInterval), db: key, router: o.RouterID, opts: o, base: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1), decode: (*shardstate.State).DecodeDocument}
	f.checkRead = func() error { return f.leased("read") }
	f.checkWrite = func() error { return f.leased("write") }
	ch := make(chan struct{})
	f.changed.Store(&ch)
	if o.ShareLease {
		if f.share = joinShared(c.raw, key, explicitID, f); f.share != nil {
			f.router = f.share.router
		}
	}
	if f.reader, err = shardstate.NewReader(key, f.router); err == nil {
		err = f.start(ctx)
	}
	if err != nil {
		if f.share != nil {
			f.share.leave(f)
		}
		return nil, err
	}
	return f, nil
}

// start reads (or seeds) the state and polls it once, then polls from a
// goroutine.
func (f *Follower) start(ctx context.Context) error {
	key, o := f.db, f.opts
	if _, err := shardstate.Peek(ctx, f.st, key); err != nil {
		// Seed it (the state is decoded when polled, just below).
		if !errors.Is(err, shardstate.ErrNoState) || o.Seed == nil {
			return fmt.Errorf("router: Follow %s: %w", key, err)
		}
		if _, err := shardstate.LoadOrInit(ctx, f.st, key, o.Seed, nil); err != nil {
			return fmt.Errorf("router: Follow %s: %w", key, err)
		}
	}
	if err := f.poll(ctx, true); err != nil {
		return fmt.Errorf("router: Follow %s: %w", key, err)
	}
	go f.run()
	return nil
}

func (f *Follower) closed() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// RouterID returns the id of the router's lease.
func (f *Follower) RouterID() string { return f.router }

// State returns the state the router routes by.
func (f *Follower) State() *shardstate.State { return f.state.Load() }

// Version returns the state version the router routes by.
func (f *Follower) Version() int64 { return f.state.Load().Version }

// Refresh reads the state now (renewing the lease first when a renewal
// is due), switching to a new version if there is one; the router calls it
// itself when the store refuses a write as fenced. Cost: a state read, and
// a lease write when due.
func (f *Follower) Refresh(ctx context.Context) error {
	if f.closed() {
		return fmt.Errorf("router: %s: the follower is closed", f.db)
	}
	// A decode under way ends first, so the poll below finds its version
	// in force: the refreshes of many writes fenced at once then do not
	// queue their polls ahead of the decode's switch.
	f.mu.Lock()
	d := f.pending
	f.mu.Unlock()
	if d != nil {
		_ = f.await(ctx, d) // its error, if any, the poll meets again
	}
	return f.poll(ctx, true)
}

// Close stops following: the polling goroutine ends, the database is
// unregistered (later calls fail with ErrUnknownDatabase) and the lease is
// released, so changes need not wait for it to lapse.
func (f *Follower) Close() error {
	var err error
	f.closeOnce.Do(func() {
		close(f.stop)
		<-f.done
		f.mu.Lock()
		defer f.mu.Unlock()
		f.c.unregisterEntry(f.db, f.entry)
		f.deadline.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.PollInterval)
		defer cancel()
		if f.share == nil || f.share.leave(f) {
			err = shardstate.ReleaseLease(ctx, f.st, f.db, f.router)
		}
	})
	return err
}

func (f *Follower) run() {
	defer close(f.done)
	t := time.NewTimer(f.opts.PollInterval)
	defer t.Stop()
	interval := func() time.Duration {
		if f.frozen.Load() || f.hurry.Load() > 0 {
			return min(f.opts.PollInterval, fastPoll)
		}
		return f.opts.PollInterval
	}
	for {
		select {
		case <-f.stop:
			return
		case <-f.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(interval())
			continue
		case <-t.C:
		}
		t.Reset(interval())
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.LeaseDuration)
		err := f.poll(ctx, false)
		cancel()
		if err != nil && f.opts.OnError != nil {
			f.opts.OnError(err)
		}
	}
}

// now is the monotonic time since base.
func (f *Follower) now() int64 { return int64(time.Since(f.base)) + f.skew.Load() }

// poll renews the lease, then reads the state and switches to it. The
// order matters: a change published before the lease was written is seen
// by the read, so a router never takes a lease and then writes by a state
// older than one a waiting change saw published (shardstate.Lease).
//
// The state is peeked (read without decoding its resolver), and a new
// resolver is decoded apart (decodeFor), so a decode costing up to
// resolver.MaxWork never holds up the lease's renewals: until it ends the
// router routes by the version in force, whose lease it keeps renewing
// (acknowledging that version, so a change waiting for the routers waits
// for it). With wait (Follow, Refresh) poll returns once the new version
// is in force, or its decode failed; without (the polling goroutine), at
// once, the decode going on behind.
func (f *Follower) poll(ctx context.Context, wait bool) error {
	f.mu.Lock()
	locked := true
	defer func() {
		if locked {
			f.mu.Unlock()
		}
	}()
	f.settle()
	cur := f.state.Load()
	held := f.lease != nil
	renewed := false
	if f.lease == nil || f.keep || cur == nil || f.lease.Version != f.acked.Load() || f.now()-f.renewSent >= int64(f.opts.RenewInterval) {
		if err := f.renew(ctx, cur); err != nil {
			return err
		}
		held = held && f.lease.ETag != "" && f.renewedHeld
		renewed = true
	}
	sent := f.now() // the state read's
	// Follow and Refresh read the state document itself, and so does a
	// router that found it missing or gone back, until it is back: its
	// copy still holds the lost version.
	s, err := f.reader.Peek(ctx, f.st, wait || f.lost.Load() != nil)
	switch {
	case err == nil && cur != nil && s.Version < cur.Version:
		err = f.stateLost(fmt.Sprintf("the state of %s went back from version %d to %d (was it deleted and created again?)", f.db, cur.Version, s.Version), cur, nil)
	case errors.Is(err, shardstate.ErrNoState) && cur != nil:
		err = f.stateLost(fmt.Sprintf("the state document of %s is missing (deleted?)", f.db), cur, err)
	}
	// keep: the lease was renewed without a break under the version in
	// force, so a waiting change keeps waiting for it: writing (and
	// reading) by the last good state stays safe while the new one is
	// unusable or still being decoded, as long as the router renews on
	// every poll (f.keep), which it does until it reads the version in
	// force again.
	keep := held && cur != nil
	if err != nil {
		if keep && renewed {
			f.extend(f.renewSent)
		}
		f.keep = true
		return err
	}
	if f.lost.Swap(nil) != nil {
		slog.Default().Info("docshard: the shared state is back; writes resume", "database", f.db, "router", f.router, "version", s.Version)
	}
	changed := cur == nil || s.Version != cur.Version
	switch {
	case changed && f.entry != nil && s.Epoch == cur.Epoch && bytes.Equal(s.Resolver, cur.Resolver):
		// The same placement under a new version (a reshard's heartbeat
		// or checkpoint): the registration goes on, route cache and all,
		// and its writes in flight are as good under the new version.
		f.entry.version.Store(s.Version)
		f.state.Store(s)
		f.settle()
	case changed:
		d := f.decodeFor(s, sent)
		if keep && renewed {
			f.extend(f.renewSent)
		}
		f.keep = true
		f.mu.Unlock()
		locked = false
		if !wait {
			return nil
		}
		return f.await(ctx, d)
	}
	f.extend(sent)
	if changed {
		f.acknowledge(ctx, s, cur)
	}
	f.keep = f.pending != nil || f.acked.Load() != s.Version
	return nil
}

// renew writes the lease naming the version acknowledged (taking it anew
// when it was lost), and records when the renewal was sent; renewedHeld
// says whether it was renewed on condition of the ETag held (unbroken).
// Called with f.mu held.
func (f *Follower) renew(ctx context.Context, cur *shardstate.State) error {
	if f.share != nil {
		return f.renewShared(ctx)
	}
	sent := f.now()
	l := shardstate.Lease{Router: f.router, Database: f.db, Version: f.acked.Load(), ValidFor: f.opts.LeaseDuration,
		HoldFor: f.opts.holdFor(), RenewedAt: time.Now()}
	if cur != nil {
		l.Epoch = cur.Epoch
	}
	f.renewedHeld = f.lease != nil
	if f.lease != nil {
		l.ETag = f.lease.ETag
	}
	lease, err := shardstate.RenewLease(ctx, f.st, l)
	if errors.Is(err, shardstate.ErrLeaseLost) {
		// A change found the lease lapsed and removed it: take a new one;
		// the state read after it then decides.
		f.renewedHeld = false
		l.ETag = ""
		lease, err = shardstate.RenewLease(ctx, f.st, l)
	}
	if err != nil {
		f.lease = nil
		f.lastErr.Store(&err)
		return err
	}
	f.lease, f.renewSent = lease, sent
	f.lastErr.Store(nil)
	return nil
}

// renewShared is renew for a Follower that shares the process's lease.
func (f *Follower) renewShared(ctx context.Context) error {
	return f.share.renew(ctx, f, f.keep)
}

// extend lets the router write until LeaseDuration after readSent (when
// it sent a read of the state that found the version in force, or a
// renewal made while it could not read it), but not past HoldFor after
// its last renewal was sent. Called with f.mu held.
func (f *Follower) extend(readSent int64) {
	if f.share != nil && !f.share.readAfterTake(f, readSent) {
		return // read before the shared lease was (re)taken
	}
	d := min(readSent+int64(f.opts.LeaseDuration), f.renewSent+int64(f.opts.holdFor()))
	if d > f.deadline.Load() {
		f.deadline.Store(d)
	}
}

// await waits until decode d ended (or the newer one that superseded it)
// and returns its error.
func (f *Follower) await(ctx context.Context, d *decoding) error {
	for {
		select {
		case <-d.done:
		case <-ctx.Done():
			return fmt.Errorf("router: %s: waiting for version %d's resolver to decode: %w", f.db, d.s.Version, ctx.Err())
		}
		if d.next == nil {
			return d.err
		}
		d = d.next // superseded by a newer version's decode: that one ends the wait
	}
}

// decoding is the decode of a new version's resolver, apart from the
// polls (decodeFor).
type decoding struct {
	s    *shardstate.State
	sent int64         // when the renewal before s was read was sent (now's clock)
	done chan struct{} // closed when s is in force, or will not be (err, next)
	err  error         // set before done closes
	next *decoding     // the newer version's decode that superseded this one
}

// decodeFor returns the decode of s's resolver, starting it unless one is
// under way for s's version. When it ends, the decode switches to s (if
// no newer decode was started meanwhile) and acknowledges it. Called
// with f.mu held.
func (f *Follower) decodeFor(s *shardstate.State, sent int64) *decoding {
	if d := f.pending; d != nil && d.s.Version == s.Version && bytes.Equal(d.s.Resolver, s.Resolver) {
		return d
	}
	d := &decoding{s: s, sent: sent, done: make(chan struct{})}
	if f.pending != nil {
		f.pending.next = d
	}
	f.pending = d
	decode := f.decode
	go func() {
		r, err := decode(s)
		failed := f.install(d, r, err)
		close(d.done)
		if failed && f.opts.OnError != nil {
			f.opts.OnError(d.err) // outside f.mu: it may call Refresh
		}
	}()
	return d
}

// install ends decode d with its outcome: it switches to d's state and
// acknowledges it, unless the decode failed (d.err is set, and install
// reports true), the follower closed, or a newer decode superseded it.
func (f *Follower) install(d *decoding, r resolver.Resolver, err error) (failed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending != d {
		return false // a newer version is being decoded
	}
	f.pending = nil
	cur := f.state.Load()
	switch {
	case f.closed():
		d.err = fmt.Errorf("router: %s: the follower is closed", f.db)
	case err != nil:
		d.err = fmt.Errorf("router: %s: version %d: %w", f.db, d.s.Version, err)
		return true
	case cur != nil && cur.Version >= d.s.Version:
	default:
		f.switchTo(d.s, r)
		// d.s was read at d.sent.
		f.extend(d.sent)
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.LeaseDuration)
		defer cancel()
		f.acknowledge(ctx, d.s, cur)
	}
	return false
}

// acknowledge writes the lease naming s now rather than at the next poll
// (a change waiting for the routers goes on a poll interval sooner), once
// no write by an earlier version is in flight, and tells OnChange. Called
// with f.mu held, after switching from cur to s.
func (f *Follower) acknowledge(ctx context.Context, s, cur *shardstate.State) {
	switch {
	case f.lease == nil || f.acked.Load() != s.Version:
	case f.share != nil:
		_ = f.share.renew(ctx, f, false) // written once no member lags
	default:
		_ = f.renew(ctx, s) // a failure is the next poll's to mend, as any renewal's
	}
	f.keep = f.pending != nil || f.acked.Load() != s.Version
	if cur != nil && f.opts.OnChange != nil {
		f.opts.OnChange(cur, s)
	}
}

// stateLost refuses writes with an error saying what, from now until a
// state above cur is read, and logs it when it starts: every router of the
// fleet says so loudly. The error wraps ErrStateLost and cause.
func (f *Follower) stateLost(what string, cur *shardstate.State, cause error) error {
	var err error = &lostError{
		text: fmt.Sprintf("router: %s: writes refused: %s; restore it with `docshard state set -c FILE RESOLVER.json` (shardstate.Restore) giving the resolver the fleet routes by (this router reads by version %d's); writes resume when a version above %d is published",
			f.db, what, cur.Version, cur.Version),
		errs: []error{ErrStateLost}}
	if cause != nil {
		err.(*lostError).errs = append(err.(*lostError).errs, cause)
	}
	if f.lost.Swap(&err) == nil {
		slog.Default().Error("docshard: "+err.Error(), "database", f.db, "router", f.router)
	}
	return err
}

// lostError is the error of ErrStateLost: its text, and what it wraps.
type lostError struct {
	text string
	errs []error
}

func (e *lostError) Error() string   { return e.text }
func (e *lostError) Unwrap() []error { return e.errs }

// switchTo registers r, s's resolver, retiring the registration in
// force: its writes in flight are waited for (settle) before the lease
// acknowledges s. Called with f.mu held.
func (f *Follower) switchTo(s *shardstate.State, r resolver.Resolver) {
	e := &dbEntry{link: f.db, r: r, pl: newPlacement(r, f.c.opts.RouteCacheSize), follow: f}
	e.version.Store(s.Version)
	e.pl.stamp(s.Epoch)
	old := f.c.install(e)
	f.entry = e
	f.state.Store(s)
	fr, ok := r.(resolver.Freezer)
	if was := f.frozen.Swap(ok && fr.Frozen()); was != f.frozen.Load() {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	ch := make(chan struct{})
	close(*f.changed.Swap(&ch))
	if old != nil {
		old.retired.Store(true)
		f.draining = append(f.draining, old)
	}
	f.settle()
}

// settle acknowledges the version in force once no write begun under an
// earlier registration is still in flight.
func (f *Follower) settle() {
	live := f.draining[:0]
	for _, e := range f.draining {
		if e.inflight.Load() > 0 {
			live = append(live, e)
		}
	}
	clear(f.draining[len(live):])
	f.draining = live
	if len(live) == 0 && f.entry != nil {
		f.acked.Store(f.entry.version.Load())
	}
}

// enter admits a call of a followed database (op: "read" or "write")
// under registration e: it counts the call in flight, so the router
// acknowledges a new version only once the calls by the placement it
// replaces have ended (a reshard's clean-up, which waits for every
// router's acknowledgement, never deletes what a read in flight may still
// be reading, nor races a write by the old placement), then checks the
// lease. It reports false, counting nothing, when e was replaced meanwhile
// (look the database up again); with an error, nothing is counted either.
// The caller ends the count: e.inflight.Add(-1). Cost: a clock read and
// two atomic additions (the callers add one context for retry.Guard).
func (e *dbEntry) enter(op string) (bool, error) {
	e.inflight.Add(1)
	if e.retired.Load() {
		e.inflight.Add(-1)
		return false, nil
	}
	if err := e.follow.leased(op); err != nil {
		e.inflight.Add(-1)
		return false, err
	}
	return true, nil
}

// beginRead admits a read of a followed database by e's registration, or
// by the one that replaced it (see enter), and returns the registration
// to read by and the context to read with, whose store retries ask the
// lease before each attempt (retry.Guard), as writes' do; the caller ends
// the count on the registration: e.inflight.Add(-1).
func (c *Client) beginRead(ctx context.Context, e *dbEntry) (context.Context, *dbEntry, error) {
	for {
		if e.follow == nil { // unfollowed since: counted, harmless
			e.inflight.Add(1)
			return ctx, e, nil
		}
		ok, err := e.enter("read")
		if err != nil {
			return ctx, e, err
		}
		if ok {
			return retry.Guard(ctx, e.follow.checkRead), e, nil
		}
		if e, err = c.entry(e.link); err != nil {
			return ctx, nil, err
		}
	}
}

// leased checks the lease before op ("read" or "write"): a clock read, no
// store round trip.
func (f *Follower) leased(op string) error {
	if op == "write" {
		if p := f.lost.Load(); p != nil {
			return *p
		}
	}
	if late := f.now() - f.deadline.Load(); late >= 0 {
		le := &LeaseError{Database: f.db, Router: f.router, Op: op, Version: f.Version(), Ago: time.Duration(late)}
		if p := f.lastErr.Load(); p != nil {
			le.Err = *p
		}
		return le
	}
	return nil
}

// awaitChange waits until the version changes from the one whose change
// channel is ch (a write found its key moving, or a spillover's newest
// collection full), for at most MovingWait since *since (set on the first
// wait); what names what the write waits for in the error.
func (f *Follower) awaitChange(ctx context.Context, ch chan struct{}, since *time.Time, what string) error {
	if since.IsZero() {
		*since = time.Now()
	}
	left := f.opts.MovingWait - time.Since(*since)
	if left <= 0 {
		return fmt.Errorf("waited %s for %s to be published", f.opts.MovingWait, what)
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("waited %s for %s to be published", f.opts.MovingWait, what)
	}
}

// awaitSpill is awaitChange for a write refused because a spillover's
// newest collection is full: while it waits, the state is polled every
// fastPoll, so the write learns of the next collection soon after a
// coordinator publishes it.
func (f *Follower) awaitSpill(ctx context.Context, ch chan struct{}, since *time.Time) error {
	if f.hurry.Add(1) == 1 {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	defer f.hurry.Add(-1)
	return f.awaitChange(ctx, ch, since, "the next collection")
}

// spiller is a resolver that writes to one collection at a time and
// replaces it with a new one when it fills (a spillover:
// spillover.Resolver.Newest).
type spiller interface{ Newest() string }

// spills reports whether err is a write refused for quota by the newest
// collection of r, a spillover, with nothing written: the write waits for
// the next collection, which the spillover's coordinator opens.
func spills(r resolver.Resolver, err error) bool {
	sp, ok := r.(spiller)
	if !ok || !errors.Is(err, store.ErrQuotaExceeded) {
		return false
	}
	var me *MoveError
	if errors.As(err, &me) && me.Duplicate {
		return false
	}
	var se *store.Error
	return errors.As(err, &se) && link.Same(se.Link, sp.Newest())
}

// maxFencedRetries bounds how often one write is sent again after the
// store refused it as fenced: each time follows a refresh that found a
// newer version, so more than one happens only when versions follow each
// other faster than a write completes.
const maxFencedRetries = 8

// guarded runs a write on a database: directly for a registered resolver;
// for a followed one, after the lease check and counted in flight. These
// are not retries of failed store calls (the client's retry layer,
// store/retry, has already retried those under the RetryPolicy inside op):
// they are the three cases where the write was refused because the router
// routed it by a placement that is being replaced, and is made again, from
// the placement on, by the new one:
//
//   - resolver.ErrMoving (the key is frozen by a reshard's cutover; nothing
//     was sent): the write waits for the next version, at most
//     FollowOptions.MovingWait in all, then is placed again;
//   - store.ErrFenced (the store refused the write atomically; nothing was
//     written): the router refreshes the state at once and, when the
//     refresh found a newer version, places the write again, at most
//     maxFencedRetries times; a refresh that finds no newer version ends
//     the write with the fenced error;
//   - store.ErrQuotaExceeded from the newest collection of a spillover
//     (it is full; nothing was written): the write waits for the next
//     version, which names the next collection (the spillover's
//     coordinator opens it on seeing the refusal through Hooks.Call),
//     polling every 25 ms meanwhile, at most FollowOptions.MovingWait in
//     all (shared with the moving wait), then is placed again.
//
// The store's own retries (store/retry) of the write ask the lease again
// before each attempt (retry.Guard): a write throttled past the moment the
// router's lease lapsed stops with the *LeaseError instead of being sent
// again.
func guarded[T any](c *Client, ctx context.Context, dbLink string, op func(ctx context.Context, e *dbEntry) (T, error)) (T, error) {
	retries := 0
	var moving time.Time // when the write first found its key moving
	for {
		e, err := c.entry(dbLink)
		if err != nil {
			var zero T
			return zero, err
		}
		if e.follow == nil {
			return op(ctx, e)
		}
		ok, err := e.enter("write")
		if err != nil {
			var zero T
			return zero, err
		}
		if !ok {
			continue // replaced between the lookup and the count: use the new one
		}
		changed := e.follow.changed.Load()
		// The store's retries ask the lease again before each attempt: a
		// write throttled past its lease's end is not sent again.
		v, err := op(retry.Guard(ctx, e.follow.checkWrite), e)
		e.inflight.Add(-1)
		if errors.Is(err, resolver.ErrMoving) {
			if e.follow.Version() != e.version.Load() {
				continue // switched meanwhile
			}
			if werr := e.follow.awaitChange(ctx, *changed, &moving, "the switch"); werr != nil {
				return v, fmt.Errorf("%w (%w)", err, werr)
			}
			continue
		}
		if spills(e.r, err) {
			if e.follow.Version() != e.version.Load() {
				continue // the next collection is published already
			}
			if werr := e.follow.awaitSpill(ctx, *changed, &moving); werr != nil {
				return v, fmt.Errorf("%w (%w)", err, werr)
			}
			continue
		}
		if !errors.Is(err, store.ErrFenced) || retries == maxFencedRetries {
			return v, err
		}
		retries++
		if rerr := e.follow.Refresh(ctx); rerr != nil {
			return v, fmt.Errorf("%w (and refreshing the state failed: %w)", err, rerr)
		}
		if ver := e.version.Load(); e.follow.Version() == ver {
			return v, fmt.Errorf("%w (the state is still version %d: is another process fencing with a newer epoch than it published?)", err, ver)
		}
	}
}
