package router

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// Errors of the router. Store errors pass through (test them with the store
// package's sentinels), and so do resolver errors (resolver.ErrNoPartitionKey,
// resolver.ErrKeyType, resolver.ErrNoTarget).
var (
	// ErrUnknownDatabase: no resolver is registered for the database link.
	ErrUnknownDatabase = errors.New("router: no resolver registered for the database")
	// ErrBadContinuation: a continuation token is malformed, corrupt, or
	// belongs to another query, parameter set, partition key or set of
	// collections.
	ErrBadContinuation = errors.New("router: bad continuation token")
	// ErrPartialResults: some collections failed during a query run with
	// PartialResults; the page holds what the others returned and a
	// *PartialError names the failures.
	ErrPartialResults = errors.New("router: partial results")
	// ErrKeyPathMismatch: an existing collection is partitioned by another
	// path than the resolver's partition key, so keyed reads through the
	// router would not find its documents (EnsureCollections reports it).
	ErrKeyPathMismatch = errors.New("router: collection partitioned by another path than the resolver's key")
)

// PartialError lists the collections a query could not read. It wraps
// ErrPartialResults.
type PartialError struct {
	Failed map[string]error // collection link -> its error
}

// Error implements error, naming every failed collection in link order.
func (e *PartialError) Error() string {
	links := make([]string, 0, len(e.Failed))
	for l := range e.Failed {
		links = append(links, l)
	}
	sort.Strings(links)
	var b strings.Builder
	fmt.Fprintf(&b, "router: partial results: %d collection(s) failed:", len(links))
	for _, l := range links {
		fmt.Fprintf(&b, " %s (%v);", l, e.Failed[l])
	}
	return b.String()
}

// Unwrap returns ErrPartialResults.
func (e *PartialError) Unwrap() error { return ErrPartialResults }

// Hooks receive metrics. Any of them may be nil (nil costs nothing: the
// clock is not even read). They are called from the goroutines doing the
// work, so they must be safe for concurrent use and quick.
type Hooks struct {
	// FanOut reports, once per query, how many collections it runs on.
	FanOut func(dbLink string, width int)
	// Call reports one store call: the collection, the operation
	// ("create", "read", "query", ...), its latency and its error. A
	// retried call reports every attempt.
	Call func(link, op string, latency time.Duration, err error)
	// Retry reports a throttled call about to be retried after wait.
	Retry func(link, op string, attempt int, wait time.Duration)
	// Documents reports how many results a query page returned.
	Documents func(dbLink string, n int)
}

// RetryPolicy bounds retries of throttled store calls (errors wrapping
// store.ErrThrottled). Nothing else is retried, so a write is never sent
// twice after an outcome the router cannot know.
type RetryPolicy struct {
	// MaxAttempts is the most attempts per call, the first included; 0
	// means 9. 1 disables retries.
	MaxAttempts int
	// MaxWait caps the total time spent waiting between the attempts of
	// one call; 0 means 30 seconds. A retry-after that would exceed it
	// ends the retries with the throttled error.
	MaxWait time.Duration
	// DefaultWait is the wait when the store gives no retry-after; 0
	// means 100 ms.
	DefaultWait time.Duration
}

// Options configure a Client. A nil *Options means defaults.
type Options struct {
	// MaxDegreeOfParallelism is the default for queries (see
	// QueryOptions): 0 serial, -1 automatic, n at most n store calls at
	// once. A nil *Options means -1, automatic.
	MaxDegreeOfParallelism int
	// MaxBufferedItemCount is the default bound on rows buffered from all
	// collections during a query; 0 means automatic: 100 per collection,
	// at least 2000.
	MaxBufferedItemCount int
	// Retry bounds retries of throttled calls.
	Retry RetryPolicy
	// Hooks receive metrics.
	Hooks Hooks
	// RouteCacheSize is how many placements (a string key's collection
	// for creates, its collections for reads) each registered resolver
	// remembers, so a hot key is hashed once: 0 means 4096, -1 none.
	// Resolvers are pure values (DESIGN.md), so a remembered placement is
	// always right; a new Register starts an empty cache. Each entry costs
	// about 100 bytes plus the key.
	RouteCacheSize int
}

// Client routes calls to the collections of a store. It is safe for
// concurrent use; its resolvers can be swapped under traffic.
type Client struct {
	st    store.Store
	opts  Options
	dbs   atomic.Pointer[registry] // immutable once published
	regMu sync.Mutex               // serialises Register/Unregister
}

// registry is the set of registrations, immutable once published: a
// change publishes a new registry.
type registry struct {
	byLink map[string]*dbEntry
	list   []*dbEntry // the same entries: a few are found faster by a scan than by hashing
}

func newRegistry(m map[string]*dbEntry) *registry {
	r := &registry{byLink: m}
	for _, e := range m {
		r.list = append(r.list, e)
	}
	return r
}

// dbEntry is one registration: a resolver and what the router derived from
// it. It is immutable apart from the cache, whose slots are atomic.
type dbEntry struct {
	link  string // canonical "dbs/{db}"
	r     resolver.Resolver
	kd    resolver.KeyDef // zero when the resolver has none
	cache *routeCache     // nil when off
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
	if c.opts.Retry.MaxAttempts <= 0 {
		c.opts.Retry.MaxAttempts = 9
	}
	if c.opts.Retry.MaxWait <= 0 {
		c.opts.Retry.MaxWait = 30 * time.Second
	}
	if c.opts.Retry.DefaultWait <= 0 {
		c.opts.Retry.DefaultWait = 100 * time.Millisecond
	}
	if c.opts.RouteCacheSize == 0 {
		c.opts.RouteCacheSize = 4096
	}
	c.dbs.Store(newRegistry(map[string]*dbEntry{}))
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

// keyDefiner is implemented by resolvers that read documents by a
// partition-key path (hash, range, lookup).
type keyDefiner interface {
	KeyDef() resolver.KeyDef
}

// Register sets the resolver of a database, replacing any earlier one
// atomically: calls already running finish with the resolver they started
// with, later calls see the new one, and no call sees a mixture. It costs a
// copy of the (small) database map; the resolver itself is never copied or
// mutated.
func (c *Client) Register(dbLink string, r resolver.Resolver) error {
	key, err := dbKey(dbLink)
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("router: Register %s with a nil resolver", dbLink)
	}
	e := &dbEntry{link: key, r: r}
	if kd, ok := r.(keyDefiner); ok {
		e.kd = kd.KeyDef()
	}
	if c.opts.RouteCacheSize > 0 {
		e.cache = newRouteCache(c.opts.RouteCacheSize)
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	old := c.dbs.Load().byLink
	next := make(map[string]*dbEntry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[key] = e
	c.dbs.Store(newRegistry(next))
	return nil
}

// Unregister removes a database's resolver; later calls for it fail with
// ErrUnknownDatabase.
func (c *Client) Unregister(dbLink string) {
	key, err := dbKey(dbLink)
	if err != nil {
		return
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	old := c.dbs.Load().byLink
	next := make(map[string]*dbEntry, len(old))
	for k, v := range old {
		if k != key {
			next[k] = v
		}
	}
	c.dbs.Store(newRegistry(next))
}

// Databases returns the registered database links, sorted.
func (c *Client) Databases() []string {
	dbs := c.dbs.Load().byLink
	out := make([]string, 0, len(dbs))
	for k := range dbs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Resolver returns the resolver registered for a database, or an error
// wrapping ErrUnknownDatabase.
func (c *Client) Resolver(dbLink string) (resolver.Resolver, error) {
	e, err := c.entry(dbLink)
	if err != nil {
		return nil, err
	}
	return e.r, nil
}

// entry returns a database's registration. The canonical "dbs/{db}" form
// needs no parsing, and a few registrations are scanned rather than hashed.
func (c *Client) entry(dbLink string) (*dbEntry, error) {
	reg := c.dbs.Load()
	if len(reg.list) <= 8 {
		for _, e := range reg.list {
			if e.link == dbLink {
				return e, nil
			}
		}
	} else if e, ok := reg.byLink[dbLink]; ok {
		return e, nil
	}
	dbs := reg.byLink
	key, err := dbKey(dbLink)
	if err != nil {
		return nil, err
	}
	e, ok := dbs[key]
	if !ok {
		return nil, fmt.Errorf("%w: %s (registered: %s)", ErrUnknownDatabase, dbLink, strings.Join(c.Databases(), ", "))
	}
	return e, nil
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
// paths run the loop without allocating a closure:
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
// it replaces *err with one wrapping the context's error.
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
		*err = fmt.Errorf("router: %s %s: %w (while waiting to retry after: %w)", op, l, ctx.Err(), *err)
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
