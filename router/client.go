package router

import (
	"context"
	"errors"
	"fmt"

	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// Errors of the router. Store errors pass through unchanged (test them with
// the store package's sentinels); resolver errors too.
var (
	// ErrUnknownDatabase: no resolver is registered for the database link.
	ErrUnknownDatabase = errors.New("router: no resolver registered for the database")
	// ErrBadContinuation: a continuation token is malformed, corrupt, or
	// belongs to another query, database or set of collections.
	ErrBadContinuation = errors.New("router: bad continuation token")
	// ErrPartialResults: some collections failed during a query run with
	// PartialResults; the page holds what the others returned and
	// *PartialError names the failures.
	ErrPartialResults = errors.New("router: partial results")
)

// PartialError lists the collections a query could not read.
type PartialError struct {
	Failed map[string]error // collection link -> its error
}

// Error implements error.
func (e *PartialError) Error() string {
	links := make([]string, 0, len(e.Failed))
	for l := range e.Failed {
		links = append(links, l)
	}
	sort.Strings(links)
	msg := fmt.Sprintf("router: partial results: %d collection(s) failed:", len(links))
	for _, l := range links {
		msg += fmt.Sprintf(" %s (%v);", l, e.Failed[l])
	}
	return msg
}

// Unwrap returns ErrPartialResults.
func (e *PartialError) Unwrap() error { return ErrPartialResults }

// Hooks receive metrics. Any of them may be nil. They are called from the
// goroutines doing the work and must be safe for concurrent use and quick.
type Hooks struct {
	// FanOut reports how many collections a query runs on.
	FanOut func(dbLink string, width int)
	// Call reports one store call: the collection, the operation
	// ("create", "read", "query", ...), its latency and its error.
	Call func(link, op string, latency time.Duration, err error)
	// Retry reports a throttled call about to be retried after wait.
	Retry func(link, op string, attempt int, wait time.Duration)
	// Documents reports the results a query page returned.
	Documents func(dbLink string, n int)
}

// RetryPolicy bounds retries of throttled store calls.
type RetryPolicy struct {
	// MaxAttempts is the most attempts per call, the first included; 0
	// means 9. 1 disables retries.
	MaxAttempts int
	// MaxWait caps the total time spent waiting between attempts of one
	// call; 0 means 30 seconds.
	MaxWait time.Duration
	// DefaultWait is the wait when the store gives no retry-after; 0
	// means 100 ms.
	DefaultWait time.Duration
}

// Options configure a Client. A nil *Options means defaults.
type Options struct {
	// MaxDegreeOfParallelism is the default for queries (see
	// QueryOptions): 0 serial, -1 automatic, n at most n collections at
	// once. The zero Options value means -1 here, automatic.
	MaxDegreeOfParallelism int
	// MaxBufferedItemCount is the default bound on rows buffered across
	// collections during a query; 0 means 2000.
	MaxBufferedItemCount int
	// Retry bounds retries of throttled calls.
	Retry RetryPolicy
	// Hooks receive metrics.
	Hooks Hooks
}

// Client routes calls to the collections of a store.
type Client struct {
	st    store.Store
	opts  Options
	dbs   atomic.Pointer[map[string]resolver.Resolver]
	regMu sync.Mutex
}

// New returns a client over st. The client does not own st: Close st
// yourself.
func New(st store.Store, opts *Options) *Client {
	c := &Client{st: st}
	if opts != nil {
		c.opts = *opts
	} else {
		c.opts.MaxDegreeOfParallelism = -1
	}
	if c.opts.MaxBufferedItemCount <= 0 {
		c.opts.MaxBufferedItemCount = 2000
	}
	if c.opts.Retry.MaxAttempts <= 0 {
		c.opts.Retry.MaxAttempts = 9
	}
	if c.opts.Retry.MaxWait <= 0 {
		c.opts.Retry.MaxWait = 30 * time.Second
	}
	if c.opts.Retry.DefaultWait <= 0 {
		c.opts.Retry.DefaultWait = 100 * time.Millisecond
	}
	empty := map[string]resolver.Resolver{}
	c.dbs.Store(&empty)
	return c
}

// Store returns the store the client routes to.
func (c *Client) Store() store.Store { return c.st }

func dbKey(dbLink string) (string, error) {
	db, err := link.ParseDatabase(dbLink)
	if err != nil {
		return "", fmt.Errorf("router: database link %q: %w", dbLink, err)
	}
	return "dbs/" + db, nil
}

// Register sets the resolver of a database, replacing any earlier one
// atomically: calls already running finish with the resolver they started
// with, later calls see the new one. It costs a copy of the (small)
// database map.
func (c *Client) Register(dbLink string, r resolver.Resolver) error {
	key, err := dbKey(dbLink)
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("router: Register %s with a nil resolver", dbLink)
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	old := *c.dbs.Load()
	next := make(map[string]resolver.Resolver, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[key] = r
	c.dbs.Store(&next)
	return nil
}

// Unregister removes a database's resolver.
func (c *Client) Unregister(dbLink string) {
	key, err := dbKey(dbLink)
	if err != nil {
		return
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	old := *c.dbs.Load()
	next := make(map[string]resolver.Resolver, len(old))
	for k, v := range old {
		if k != key {
			next[k] = v
		}
	}
	c.dbs.Store(&next)
}

// Resolver returns the resolver registered for a database.
func (c *Client) Resolver(dbLink string) (resolver.Resolver, error) {
	dbs := *c.dbs.Load()
	if r, ok := dbs[dbLink]; ok { // the canonical "dbs/{db}" needs no parsing
		return r, nil
	}
	key, err := dbKey(dbLink)
	if err != nil {
		return nil, err
	}
	r, ok := dbs[key]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownDatabase, dbLink)
	}
	return r, nil
}

// call runs one store operation with the retry policy and the hooks.
func (c *Client) call(ctx context.Context, l, op string, fn func() error) error {
	var r retrier
	for {
		start := r.begin(c)
		err := fn()
		if !r.again(ctx, c, l, op, start, &err) {
			return err
		}
	}
}

// retrier is the retry loop's state, kept on the caller's stack so hot
// paths can run the loop without allocating a closure:
//
//	var r retrier
//	for {
//		start := r.begin(c)
//		d, err := store call
//		if !r.again(ctx, c, link, op, start, &err) { return d, err }
//	}
type retrier struct {
	attempt int
	waited  time.Duration
}

// begin starts an attempt; it reads the clock only when a Call hook wants
// the latency.
func (r *retrier) begin(c *Client) time.Time {
	r.attempt++
	if c.opts.Hooks.Call != nil {
		return time.Now()
	}
	return time.Time{}
}

// again reports the attempt to the hooks and decides whether to retry: only
// a throttled error, within the attempt and wait bounds, after the store's
// retry-after (waited out here, honouring ctx). On giving up during a wait
// it replaces *err with the context's error.
func (r *retrier) again(ctx context.Context, c *Client, l, op string, start time.Time, err *error) bool {
	if h := c.opts.Hooks.Call; h != nil {
		h(l, op, time.Since(start), *err)
	}
	if *err == nil {
		return false
	}
	wait, throttled := store.RetryAfter(*err)
	if !throttled || r.attempt >= c.opts.Retry.MaxAttempts {
		return false
	}
	if wait <= 0 {
		wait = c.opts.Retry.DefaultWait
	}
	if r.waited+wait > c.opts.Retry.MaxWait {
		return false
	}
	if h := c.opts.Hooks.Retry; h != nil {
		h(l, op, r.attempt, wait)
	}
	t := time.NewTimer(wait)
	select {
	case <-ctx.Done():
		t.Stop()
		*err = fmt.Errorf("%w (while waiting to retry: %v)", ctx.Err(), *err)
		return false
	case <-t.C:
	}
	r.waited += wait
	return true
}

// parallelism resolves MaxDegreeOfParallelism for width collections.
func parallelism(p, width int) int {
	switch {
	case p == 0:
		return 1
	case p < 0:
		return max(1, min(width, autoParallelism))
	}
	return max(1, min(p, width))
}

// autoParallelism is what -1 means: store calls are I/O bound, so run every
// collection at once, up to this many.
const autoParallelism = 64
