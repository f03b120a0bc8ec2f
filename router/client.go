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

	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
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
	// ErrPlacementChanged: a followed database moved to a placement that
	// runs the query on other collections (a reshard switched) between two
	// pages of a Pager: the pager's merge stands on the old collections,
	// which the reshard's clean-up may empty, so it stops rather than
	// answer by them. Run the query again from its first page.
	ErrPlacementChanged = errors.New("router: the database's placement changed under the query")
	// ErrPartialResults: some collections failed during a query run with
	// PartialResults; the page holds what the others returned and a
	// *PartialError names the failures.
	ErrPartialResults = errors.New("router: partial results")
	// ErrKeyPathMismatch: an existing collection is partitioned by another
	// path than the resolver's partition key, so keyed reads through the
	// router would not find its documents (EnsureCollections reports it as
	// a *store.KeyPathError). It is store.ErrKeyPathMismatch, the one
	// sentinel of that rule.
	ErrKeyPathMismatch = store.ErrKeyPathMismatch
	// ErrFollowed: Register was called for a database this client follows
	// (Follow): the registration would route by a resolver the database's
	// shared state does not hold, misplacing every write a reshard has
	// moved. Change a followed database's placement by publishing it
	// (docshard reshard, or shardstate), or close its Follower first.
	ErrFollowed = errors.New("router: the database follows its shared state")
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

// Hooks receive metrics and open tracing spans. Any of them may be nil
// (nil costs nothing: the clock is not even read). They are called from
// the goroutines doing the work, so they must be safe for concurrent use
// and quick. Each receives the context of the call it reports, so a meter
// can read baggage or exemplars from it.
type Hooks struct {
	// FanOut reports, once per query, how many collections it runs on.
	FanOut func(ctx context.Context, dbLink string, width int)
	// Call reports one store call attempt: its context (the one Span
	// returned, when Span is set), the collection, the operation
	// ("create", "read", "query", ...), its latency and its error. A
	// retried call reports every attempt.
	Call func(ctx context.Context, link, op string, latency time.Duration, err error)
	// Retry reports a failed store call about to be retried after wait:
	// attempt is the number of attempts made, err the last one's error
	// (see RetryPolicy for what is retried).
	Retry func(ctx context.Context, link, op string, attempt int, wait time.Duration, err error)
	// Documents reports how many results a query page returned.
	Documents func(ctx context.Context, dbLink string, n int)
	// Span is called as each store call attempt starts, with the caller's
	// context, the collection and the operation. The store call runs with
	// the context it returns, so a tracer returns one holding its span and
	// the backend's own spans (azcosmos's HTTP requests) nest under it; the
	// function it returns is called with the attempt's outcome. Package
	// router/routerotel opens OpenTelemetry spans here.
	Span func(ctx context.Context, link, op string) (context.Context, func(err error))
}

// Options configure a Client. A nil *Options means defaults.
type Options struct {
	// MaxDegreeOfParallelism is the default for queries (see
	// QueryOptions): 0 or -1 automatic (every collection at once, up to
	// 64), 1 serial, n at most n store calls at once.
	MaxDegreeOfParallelism int
	// MaxBufferedItemCount is the default bound on rows buffered from all
	// collections during a query; 0 means automatic: 100 per collection,
	// at least 2000.
	MaxBufferedItemCount int
	// Retry bounds the retries of store calls (see RetryPolicy for what is
	// retried and the defaults of its zero value).
	Retry RetryPolicy
	// Hooks receive metrics.
	Hooks Hooks
	// RouteCacheSize is how many placements (a string key's collection
	// for creates, its collections for reads) each registered resolver
	// remembers, so a hot key is hashed once: 0 means 4096, -1 none.
	// Resolvers are pure values (docs/design.md#the-resolver-contract), so
	// a remembered placement is always right; a new Register starts an
	// empty cache. Each entry costs about 100 bytes plus the key. A read
	// placement is remembered on a key's second read while no other key
	// has taken its slot in between, so keys read once cost no entry.
	RouteCacheSize int
}

// Client routes calls to the collections of a store. It is safe for
// concurrent use; its resolvers can be swapped under traffic.
type Client struct {
	raw   store.Store  // as given
	st    *retry.Store // raw with retries and hooks: every call goes here (Follower: pollStore)
	caps  store.Store  // st with raw's optional capabilities (Batcher, Patcher, ManyReader)
	opts  Options
	dbs   atomic.Pointer[registry] // immutable once published
	regMu sync.Mutex               // serialises Register/Unregister

	ownedOnce sync.Once           // makes owned
	owned     *localquery.Cursors // results of shared collections (owned.go)

	keys store.CollectionKeys // the kind of each collection a composite key reaches

	feedViews  sync.Map // database link → *feedView: the last change-feed view (changes.go)
	feedTokens sync.Map // database link → *issuedToken: the last change-feed token returned (changes.go)
}

// registry is the set of registrations, immutable once published: a
// change publishes a new registry.
type registry struct {
	byLink map[string]*dbEntry
	list   []*dbEntry // the same entries: a few are found faster by a scan than by hashing
	only   *dbEntry   // the one entry when there is one: entry's inlined case
}

func newRegistry(m map[string]*dbEntry) *registry {
	r := &registry{byLink: m}
	for _, e := range m {
		r.list = append(r.list, e)
	}
	if len(r.list) == 1 {
		r.only = r.list[0]
	}
	return r
}

// dbEntry is one registration: a resolver and its placement, and for a
// database routed by its shared state, the follower, the state's version,
// and the writes in flight under this registration.
type dbEntry struct {
	link     string // canonical "dbs/{db}"
	r        resolver.Resolver
	pl       *placement
	follow   *Follower    // nil: registered with Register
	version  atomic.Int64 // the state version (followed registrations)
	inflight atomic.Int64
	retired  atomic.Bool // replaced: writes that find it set look again
}

// New returns a client over st. The client does not own st: Close st
// yourself.
func New(st store.Store, opts *Options) *Client {
	c := &Client{raw: st}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.MaxDegreeOfParallelism == 0 {
		c.opts.MaxDegreeOfParallelism = -1
	}
	c.opts.Retry = c.opts.Retry.WithDefaults()
	if c.opts.RouteCacheSize == 0 {
		c.opts.RouteCacheSize = 4096
	}
	c.st = retry.New(st, retryOptions(c.opts.Retry, &c.opts.Hooks))
	c.caps = c.st.Capable()
	c.dbs.Store(newRegistry(map[string]*dbEntry{}))
	return c
}

// Store returns the store the client routes to, as it was given to New
// (without the client's retries and hooks).
func (c *Client) Store() store.Store { return c.raw }

func dbKey(dbLink string) (string, error) {
	db, err := link.ParseDatabase(dbLink)
	if err != nil {
		return "", fmt.Errorf("router: database link %q: %w", dbLink, err)
	}
	if key := "dbs/" + db; key != dbLink {
		return key, nil
	}
	// Already canonical: keep the caller's string, so a caller passing
	// the same one (a constant) is matched by entry without comparing
	// bytes.
	return dbLink, nil
}

// Register sets the resolver of a database, replacing any earlier one
// atomically: calls already running finish with the resolver they started
// with, later calls see the new one, and no call sees a mixture. It costs a
// copy of the (small) database map; the resolver itself is never copied or
// mutated. A database the client follows (Follow) is refused with
// ErrFollowed: its placement is the shared state's.
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
	if cur := c.dbs.Load().byLink[key]; cur != nil && cur.follow != nil && !cur.follow.closed() {
		return fmt.Errorf("router: Register %s: %w (router %s): publish a new placement with docshard reshard or shardstate, or close the database's Follower first", key, ErrFollowed, cur.follow.router)
	}
	c.setEntry(key, &dbEntry{link: key, r: r, pl: newPlacement(r, c.opts.RouteCacheSize)})
	return nil
}

// install publishes a registration and returns the one it replaces.
func (c *Client) install(e *dbEntry) (old *dbEntry) {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	return c.setEntry(e.link, e)
}

// setEntry publishes the registry with key's entry set to e (nil: removed)
// and returns the entry it had. The caller holds regMu.
func (c *Client) setEntry(key string, e *dbEntry) (old *dbEntry) {
	cur := c.dbs.Load().byLink
	next := make(map[string]*dbEntry, len(cur)+1)
	for k, v := range cur {
		if k != key {
			next[k] = v
		}
	}
	if e != nil {
		next[key] = e
	}
	c.dbs.Store(newRegistry(next))
	return cur[key]
}

// Unregister removes a database's resolver; later calls for it fail with
// ErrUnknownDatabase. A Follower of the database keeps polling until
// closed, and registers again at its next new version: close it instead.
func (c *Client) Unregister(dbLink string) {
	key, err := dbKey(dbLink)
	if err != nil {
		return
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	c.setEntry(key, nil)
}

// unregisterEntry removes key's registration if it is still e.
func (c *Client) unregisterEntry(key string, e *dbEntry) {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if cur := c.dbs.Load().byLink[key]; cur != nil && cur == e {
		c.setEntry(key, nil)
	}
}

// Version returns the shared-state version a database is routed by (see
// Follow); 0 for a database registered with Register. An unregistered
// database is an error wrapping ErrUnknownDatabase.
func (c *Client) Version(dbLink string) (int64, error) {
	e, err := c.entry(dbLink)
	if err != nil {
		return 0, err
	}
	return e.version.Load(), nil
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
// The commonest case, the one registration named as registered, comes
// first; entry is over the compiler's inlining budget, so Read, the
// hottest call, writes that case out itself (a call less: hot reads
// 1.102 → 1.080× the store's, p = 0.002).
func (c *Client) entry(dbLink string) (*dbEntry, error) {
	reg := c.dbs.Load()
	if e := reg.only; e != nil && e.link == dbLink {
		return e, nil
	}
	return c.findEntry(reg, dbLink)
}

// findEntry is entry past its first case.
func (c *Client) findEntry(reg *registry, dbLink string) (*dbEntry, error) {
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

// parallelism resolves MaxDegreeOfParallelism (after defaults: never 0)
// for width collections.
func parallelism(p, width int) int {
	if p < 0 {
		return max(1, min(width, autoParallelism))
	}
	return max(1, min(p, width))
}

// autoParallelism is what -1 means: store calls are I/O bound, so run every
// collection at once, up to this many.
const autoParallelism = 64
