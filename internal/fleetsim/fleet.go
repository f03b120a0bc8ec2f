package fleetsim

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

// Options configure Run. The zero value runs one follower on the router's
// defaults.
type Options struct {
	// N is the number of followers; 0 means 1.
	N int
	// Follow is each follower's options; its PollInterval, LeaseDuration
	// and RenewInterval (zero: the router's defaults, DefaultPollInterval,
	// five polls and four lease durations) also pace the run. RouterID,
	// Seed and OnChange are set by Run.
	Follow router.FollowOptions
	// Client is each follower's router.Client options. Its RouteCacheSize
	// 0 means none (-1) here: the followers route no documents, and a
	// cache of 4,096 placements each (about 100 KB) would make a fleet of
	// 10,000 measure the garbage collector rather than the protocol.
	Client router.Options
	// Open returns the store follower i reaches (its own connection, as a
	// process of its own has); the Counter wraps it. nil means the store
	// given to Run, shared.
	Open func(ctx context.Context, i int) (store.Store, error)
	// Settle is how long the fleet runs, once every follower started,
	// before the steady state is measured; 0 means two poll intervals.
	Settle time.Duration
	// Window is how long the steady state is measured; 0 means one
	// RenewInterval plus five poll intervals, so every router renews its
	// lease in it at least once.
	Window time.Duration
	// Wait qualifies the change's shardstate.WaitForRouters (nil: its
	// defaults).
	Wait *shardstate.WaitOptions
	// Timeout bounds the wait for the change to reach every follower;
	// 0 means four lease durations plus a minute.
	Timeout time.Duration
	// Charges is the charge table; nil means DefaultCharges.
	Charges *Charges
	// Logf, when set, reports the run's progress.
	Logf func(format string, args ...any)
}

// Result is what Run measured.
type Result struct {
	N int
	// Start is how long starting the fleet took (every Follow returned).
	Start time.Duration
	// Steady is the usage of the steady-state window, which lasted
	// SteadyFor.
	Steady    Snapshot
	SteadyFor time.Duration
	// RUPerSecond is the steady state's charge per second, in total;
	// Busiest is the logical partition charged most, at BusiestRUPerSecond.
	RUPerSecond        float64
	Busiest            Partition
	BusiestRUPerSecond float64
	// PollRate is the state reads made in the steady state per follower
	// and poll interval: 1 when every follower polled on time, less when
	// the machine could not keep up (its figures then measure the
	// machine, and undercount the protocol's cost). A protocol that reads
	// the state otherwise than by point reads of the state document makes
	// it 0.
	PollRate float64
	// Propagation is, for each follower that switched, how long after the
	// change's publish began it routed by the change (its OnChange), in
	// increasing order; Missed counts the followers that had not switched
	// when the run gave up (Options.Timeout).
	Propagation []time.Duration
	Missed      int
	// Published is how long the publish took (shardstate.Publish
	// returned): the propagation times include it.
	Published time.Duration
	// Wait is how long after the publish began shardstate.WaitForRouters
	// returned; WaitErr is its error, if any.
	Wait    time.Duration
	WaitErr error
	// Publish is the usage of the publish's and the wait's own calls;
	// Change is the usage of every call from the publish until the wait
	// returned and every follower switched (ChangeFor), the fleet's
	// polls included; ChangeRU is Change's charge less what the steady
	// state would have charged over ChangeFor: what the change cost the
	// fleet over its steady state.
	Publish   Usage
	Change    Snapshot
	ChangeFor time.Duration
	ChangeRU  float64
}

// Quantile returns the q-quantile (0..1) of the propagation times, by the
// nearest rank; 0 when none switched.
func (r *Result) Quantile(q float64) time.Duration {
	n := len(r.Propagation)
	if n == 0 {
		return 0
	}
	i := int(q*float64(n)+0.999999) - 1
	return r.Propagation[min(max(i, 0), n-1)]
}

// Max is the longest propagation time.
func (r *Result) Max() time.Duration { return r.Quantile(1) }

// Ring returns a hash ring over n collections "dbs/{db}/colls/c{i}" of
// db (a database id), keyed by /userId: the placement a run starts from
// (n = 2) and changes to (n = 3).
func Ring(db string, n int) (resolver.Resolver, error) {
	ls := make([]string, n)
	for i := range ls {
		ls[i] = "dbs/" + db + "/colls/c" + strconv.Itoa(i)
	}
	return hashring.New(ls, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
}

// RouterID is the router id of follower i of a run: an identity of its
// own, in the form internal/procid gives a process's ("host/pid") with
// the follower standing for a process ("host/fleetsim-PID-i"), so no two
// followers share one (a protocol that keeps one lease per process keeps
// one per follower).
func RouterID(i int) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/fleetsim-%d-%d", host, os.Getpid(), i)
}

// Run starts opts.N followers of database dbLink ("dbs/{db}") on st, each
// a router.Client of its own (on opts.Open's store, or st), with its own
// router id (RouterID), every call charged to a Counter; lets them run to
// a steady state and measures it; publishes one change (a new resolver
// and a new epoch, as a reshard's switch) and measures its propagation,
// the wait for the routers and its cost; then closes the followers. The
// database must have no state yet: Run seeds it with Ring(db, 2).
func Run(ctx context.Context, st store.Store, dbLink string, opts Options) (*Result, error) {
	o := opts
	if o.N <= 0 {
		o.N = 1
	}
	o.Follow = o.Follow.Resolved() // the router's defaults pace the run
	if o.Settle <= 0 {
		o.Settle = 2 * o.Follow.PollInterval
	}
	if o.Window <= 0 {
		o.Window = o.Follow.RenewInterval + 5*o.Follow.PollInterval
	}
	if o.Client.RouteCacheSize == 0 {
		o.Client.RouteCacheSize = -1
	}
	if o.Timeout <= 0 {
		o.Timeout = 4*o.Follow.LeaseDuration + time.Minute
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	db, err := link.ParseDatabase(dbLink)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: database link %q: %w", dbLink, err)
	}
	from, err := Ring(db, 2)
	if err != nil {
		return nil, err
	}
	to, err := Ring(db, 3)
	if err != nil {
		return nil, err
	}
	coll, err := shardstate.CollectionLink(dbLink)
	if err != nil {
		return nil, err
	}
	counter := NewCounter(o.Charges)
	shared := counter.Wrap(st)
	if _, err := shardstate.Init(ctx, shared, dbLink, from, nil); err != nil {
		return nil, fmt.Errorf("fleetsim: seeding %s: %w", dbLink, err)
	}

	res := &Result{N: o.N}
	var target atomic.Int64 // the version whose switch is timed; above every version until published
	target.Store(1 << 62)
	var t0 atomic.Int64 // when the publish began, ns since base
	base := time.Now()
	switched := make([]atomic.Int64, o.N) // ns after t0 + 1; 0: not yet
	var left atomic.Int64                 // followers yet to switch
	left.Store(int64(o.N))
	all := make(chan struct{})

	followers := make([]*router.Follower, o.N)
	closers := make([]func() error, o.N)
	defer func() {
		// Close in parallel: each releases its lease.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for i, f := range followers {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if f != nil {
					_ = f.Close()
				}
				if closers[i] != nil {
					_ = closers[i]()
				}
			}()
		}
		wg.Wait()
	}()
	// start starts follower i.
	start := func(i int) error {
		fst := shared
		if o.Open != nil {
			raw, err := o.Open(ctx, i)
			if err != nil {
				return fmt.Errorf("fleetsim: opening the store of follower %d: %w", i, err)
			}
			closers[i] = raw.Close
			fst = counter.Wrap(raw)
		}
		fo := o.Follow
		fo.RouterID = RouterID(i)
		fo.Seed = nil
		fo.OnChange = func(_, s *shardstate.State) {
			if s.Version < target.Load() || switched[i].Load() != 0 {
				return
			}
			switched[i].Store(int64(time.Since(base)) - t0.Load() + 1)
			if left.Add(-1) == 0 {
				close(all)
			}
		}
		f, err := router.New(fst, &o.Client).Follow(ctx, dbLink, &fo)
		if err != nil {
			return fmt.Errorf("fleetsim: follower %d: %w", i, err)
		}
		followers[i] = f
		return nil
	}
	// Start them one after the other, follower i no sooner than i/N of a
	// poll interval in: the fleet's polls are spread over the interval,
	// as independent processes' are. (Starting from several goroutines
	// was slower on a loaded machine: the fleet polls sooner, and each
	// Follow waits for its first state's decode behind those polls.)
	begin := time.Now()
	for i := range o.N {
		if d := time.Duration(int64(o.Follow.PollInterval) * int64(i) / int64(o.N)); time.Since(begin) < d {
			time.Sleep(d - time.Since(begin))
		}
		if err := start(i); err != nil {
			return nil, err
		}
	}
	res.Start = time.Since(begin)
	logf("fleetsim: %d followers started in %s", o.N, res.Start.Round(time.Millisecond))

	if err := sleep(ctx, o.Settle); err != nil {
		return nil, err
	}
	s0, w0 := counter.Snapshot(), time.Now()
	if err := sleep(ctx, o.Window); err != nil {
		return nil, err
	}
	s1, w1 := counter.Snapshot(), time.Now()
	res.Steady, res.SteadyFor = s1.Sub(s0), w1.Sub(w0)
	secs := res.SteadyFor.Seconds()
	res.RUPerSecond = res.Steady.Total().RU / secs
	var bu Usage
	res.Busiest, bu = res.Steady.Busiest()
	stateReads := int64(0) // of the state document and of its copies ("state-0", ...)
	for p, u := range res.Steady.ByPartition {
		if p.Link == coll && (p.Key == "state" || strings.HasPrefix(p.Key, "state-")) {
			stateReads += u.Calls[PointRead]
		}
	}
	res.PollRate = float64(stateReads) / float64(o.N) / secs * o.Follow.PollInterval.Seconds()
	res.BusiestRUPerSecond = bu.RU / secs
	logf("fleetsim: steady state %.0f RU/s, busiest %s %.0f RU/s", res.RUPerSecond, res.Busiest, res.BusiestRUPerSecond)

	// The change.
	cur, err := shardstate.Load(ctx, shared, dbLink)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: reading the state: %w", err)
	}
	target.Store(cur.Version + 1)
	c0 := counter.Snapshot()
	published := time.Now()
	t0.Store(int64(published.Sub(base)))
	tctx := WithTag(ctx, "change")
	nextState, err := shardstate.Publish(tctx, shared, cur, shardstate.Change{Resolver: to, NewEpoch: true, By: "fleetsim"})
	if err != nil {
		return nil, fmt.Errorf("fleetsim: publishing the change: %w", err)
	}
	res.Published = time.Since(published)
	wctx, cancel := context.WithTimeout(tctx, o.Timeout)
	defer cancel()
	res.WaitErr = shardstate.WaitForRouters(wctx, shared, dbLink, nextState.Version, o.Wait)
	res.Wait = time.Since(published)
	logf("fleetsim: WaitForRouters returned after %s (%v)", res.Wait.Round(time.Millisecond), res.WaitErr)
	select {
	case <-all:
	case <-wctx.Done():
	}
	c1 := counter.Snapshot()
	res.ChangeFor = time.Since(published)
	res.Change = c1.Sub(c0)
	res.Publish = res.Change.ByTag["change"]
	res.ChangeRU = res.Change.Total().RU - res.RUPerSecond*res.ChangeFor.Seconds()
	for i := range switched {
		if d := switched[i].Load(); d > 0 {
			res.Propagation = append(res.Propagation, time.Duration(d-1))
		} else {
			res.Missed++
		}
	}
	sort.Slice(res.Propagation, func(i, j int) bool { return res.Propagation[i] < res.Propagation[j] })
	if res.Missed > 0 {
		return res, fmt.Errorf("fleetsim: %d of %d followers had not switched to version %d after %s", res.Missed, o.N, nextState.Version, o.Timeout)
	}
	if res.WaitErr != nil {
		return res, fmt.Errorf("fleetsim: waiting for the routers: %w", res.WaitErr)
	}
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
