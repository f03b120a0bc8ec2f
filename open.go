package docshard

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"

	// Every resolver kind, so resolver JSON decodes wherever this package
	// is used.
	_ "github.com/docshard/docshard/hashring"
	_ "github.com/docshard/docshard/lookup"
	_ "github.com/docshard/docshard/managed"
	_ "github.com/docshard/docshard/rangeresolver"
	_ "github.com/docshard/docshard/spillover"
	_ "github.com/docshard/docshard/transition"
)

// CAEnv names an environment variable holding the path of a PEM file of
// extra certificates to trust for the cosmos store, for the official
// emulator or a local test server; real accounts need none.
const CAEnv = "DOCSHARD_COSMOS_CA"

// State says how Open treats a database's shared state (package
// shardstate).
type State int

const (
	// StateAuto is StateFollow for a client that routes (Open, and
	// RouteDatabase given a client): it follows the database's shared
	// state, seeding it from the configuration's resolver when the store
	// holds none, so a writer opened before the first reshard follows that
	// reshard and its writes are fenced. Without a client (a command that
	// only decides) it is StateRead. Like every mode but StateIgnore, it
	// fails with a *shardstate.InUseError when leases, history or a fence
	// show the state was deleted under a fleet (see RouteDatabase).
	StateAuto State = iota
	// StateFollow always follows the shared state, seeding it from the
	// configuration's resolver when the store holds none.
	StateFollow
	// StateIgnore routes by the configuration's resolver and never reads
	// the shared state (a single process, or tests).
	StateIgnore
	// StateRead routes by the shared state's current version when the
	// store holds one, read once and not followed, and otherwise by the
	// configuration's resolver: for a short-lived reader (a command-line
	// query, a check) that writes nothing, not even a router lease. It is
	// no mode for a writer: one that does not follow is not fenced.
	StateRead
)

// Options configure Open. A nil *Options means defaults.
type Options struct {
	// Router configures the routing client; nil means router's defaults.
	Router *router.Options
	// State says whether databases follow their shared state; the default
	// is StateAuto.
	State State
	// Follow configures following (poll interval, lease); nil means
	// router's defaults. Its Seed is ignored: the configuration's
	// resolver seeds.
	Follow *router.FollowOptions
	// EnsureCollections creates every resolver's missing collections on
	// open.
	EnsureCollections bool
}

// Client is a routing client opened from a configuration: every method of
// router.Client, plus the store and configuration it was opened from.
// Close it when done: it stops following and closes the store.
//
// The methods it has from router.Client (see there for each one's cost):
//
//   - Create, Upsert: write a document to the collection its key resolves to.
//   - Read: a point read by id and partition key.
//   - Replace: replace by id (OldKey moves a document whose key changed).
//   - Delete: delete by id and key (idempotent across a fenced retry).
//   - Patch: a partial update by id and key (Cosmos DB's operations and
//     conditions), exact during a reshard.
//   - ExecuteBatch: a transactional batch on one key's documents, in the
//     one collection the key lives in, all or nothing.
//   - ReadMany: many documents by id and key, one answer per item in the
//     caller's order, each collection read once and in parallel.
//   - Query: a query across the collections it needs, merged exactly
//     (ORDER BY, TOP, OFFSET/LIMIT, aggregates, DISTINCT, GROUP BY).
//   - NewQueryPager: the same, one page at a time with continuation tokens.
//   - Changes: the database's one change feed over all its collections,
//     with one continuation token; a reshard's copies and clean-up are not
//     reported.
//   - EnsureCollections: create a database's missing collections.
//   - Resolver, Version, Databases: what a database routes by.
//   - Register, Unregister, Follow: route a database yourself (Open does
//     this for every database of the configuration; Register refuses a
//     followed database with router.ErrFollowed).
type Client struct {
	*router.Client
	store     store.Store
	cfg       *config.Config
	followers map[string]*router.Follower
}

// Open reads the configuration file at path (YAML, JSON or TOML; see
// package config) and opens it with OpenConfig. Cost: reading the file,
// opening the store (for a durable embedded store, reading its documents;
// for Cosmos DB, a round trip to check the account answers) and a state
// read per database.
func Open(ctx context.Context, path string, opts *Options) (*Client, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg, opts)
}

// OpenConfig opens the store cfg names and registers every database of
// cfg on a new routing client: following the database's shared state
// (StateAuto and StateFollow; seeded from the configuration's resolver
// when the store holds none), or with the configuration's resolver
// (StateIgnore, StateRead without a state). On error nothing stays open.
func OpenConfig(ctx context.Context, cfg *config.Config, opts *Options) (*Client, error) {
	if cfg == nil {
		return nil, fmt.Errorf("docshard: %w: no configuration", config.ErrInvalid)
	}
	o := opt.Of(opts)
	st, err := OpenStore(ctx, cfg.Store, nil)
	if err != nil {
		return nil, err
	}
	c := &Client{Client: router.New(st, o.Router), store: st, cfg: cfg, followers: map[string]*router.Follower{}}
	if err := c.register(ctx, o); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// register puts every database of the configuration on the client.
func (c *Client) register(ctx context.Context, o Options) error {
	for _, db := range c.cfg.Databases {
		if err := c.registerOne(ctx, o, db); err != nil {
			return err
		}
		if o.EnsureCollections {
			if _, err := c.EnsureCollections(ctx, db.Link, nil); err != nil {
				return fmt.Errorf("docshard: %s: %w", db.Link, err)
			}
		}
	}
	return nil
}

// registerOne routes one database, as RouteDatabase chooses.
func (c *Client) registerOne(ctx context.Context, o Options, db config.Database) error {
	rt, err := RouteDatabase(ctx, c.Client, c.store, db, o.State, o.Follow)
	if err != nil {
		return fmt.Errorf("docshard: %s: %w", db.Link, err)
	}
	if rt.Follower != nil {
		c.followers[db.Link] = rt.Follower
	}
	return nil
}

// Routing is what RouteDatabase chose for a database: its shared state or
// the configuration's resolver.
type Routing struct {
	// Database is the database link, as the configuration gives it.
	Database string
	// Resolver is the resolver the database routes by now.
	Resolver resolver.Resolver
	// State is the shared state it routes by (its Version, its Phase: a
	// reshard or a spillover opening under way); nil when it routes by
	// the configuration's resolver.
	State *shardstate.State
	// Seeded: this call published the configuration's resolver as the
	// state's version 1 (StateFollow on a store without one).
	Seeded bool
	// Follower follows the state (StateFollow and StateAuto, given a
	// client); the caller closes it. nil otherwise.
	Follower *router.Follower
	// file is the configuration's resolver, for Notice.
	file resolver.Resolver
}

// sameResolver reports whether r's JSON is doc's (compacted both).
func sameResolver(r resolver.Resolver, doc json.RawMessage) bool {
	b, err := resolver.Marshal(r)
	if err != nil {
		return false
	}
	var x, y bytes.Buffer
	return json.Compact(&x, b) == nil && json.Compact(&y, doc) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

// Notice is the one line to show a person about what the database routes
// by, when it is not simply the configuration's resolver: "dbs/app routes
// by its shared state, version 3 (not by the file's resolver)", or, when
// this call seeded the state, "dbs/app had no shared state; the file's
// resolver is now its version 1 (in dbs/app/colls/_docshard)"; "" when
// the configuration's resolver routes it, with or without a state (a
// state whose resolver is the file's, as resolver.Marshal writes both).
func (r *Routing) Notice() string {
	switch {
	case r.State == nil:
		return ""
	case !r.Seeded && r.file != nil && sameResolver(r.file, r.State.Resolver):
		return ""
	case r.Seeded:
		return fmt.Sprintf("%s had no shared state; the file's resolver is now its version 1 (in %s/colls/%s)", r.Database, r.Database, shardstate.CollectionID)
	}
	return fmt.Sprintf("%s routes by its shared state, version %d (not by the file's resolver)", r.Database, r.State.Version)
}

// RouteDatabase is the one choice between a database's shared state and
// the configuration's resolver (Open and every docshard command make it
// here). Under mode:
//   - StateIgnore: the configuration's resolver; no state is read.
//   - StateRead: the state's current version when st holds one, read once,
//     else the configuration's resolver.
//   - StateAuto: with a client, as StateFollow (a writer that did not
//     follow would keep writing by the file's placement after a reshard,
//     unfenced); without, as StateRead.
//   - StateFollow: the state, seeded from the configuration's resolver
//     when st holds none; followed with a client, read once without.
//
// A database whose state document is missing while leases, history or a
// raised fence show a fleet routes it by one (the document was deleted) is
// an error under every mode but StateIgnore: an *shardstate.InUseError
// naming them and the recovery (`docshard state set`); the file's resolver
// neither seeds a new state nor routes it, which would fork the placement.
//
// st must be the store c routes to (the state is read from it, and the
// follower polls it). With a client c it registers the choice on c (router.Client.Register,
// or router.Client.Follow with fo; fo's Seed is ignored: the
// configuration's resolver seeds), and the caller closes the Routing's
// Follower. A nil c only decides, for a caller that needs the resolver
// alone. Cost: a state read (StateIgnore: none); StateFollow adds one to
// tell a state it seeded; following costs what router.Client.Follow does.
func RouteDatabase(ctx context.Context, c *router.Client, st store.Store, db config.Database, mode State, fo *router.FollowOptions) (*Routing, error) {
	rt := &Routing{Database: db.Link, Resolver: db.Resolver, file: db.Resolver}
	var s *shardstate.State
	var err error
	switch {
	case mode == StateIgnore:
	case c != nil && (mode == StateAuto || mode == StateFollow):
		return rt.follow(ctx, c, st, db, fo)
	case mode == StateFollow:
		if rt.Seeded, err = noState(ctx, st, db.Link); err == nil {
			s, err = shardstate.LoadOrInit(ctx, st, db.Link, db.Resolver, nil)
			rt.Seeded = rt.Seeded && err == nil && s.Version == 1
		}
	default:
		if s, err = shardstate.Load(ctx, st, db.Link); errors.Is(err, shardstate.ErrNoState) {
			s, err = nil, shardstate.InUse(ctx, st, db.Link)
		}
	}
	if err != nil {
		return nil, err
	}
	if s != nil {
		if rt.Resolver, err = s.Decode(); err != nil {
			return nil, err
		}
		rt.State = s
	}
	if c != nil {
		if err := c.Register(db.Link, rt.Resolver); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// follow is RouteDatabase following, under StateAuto or StateFollow:
// the state is seeded from the configuration's resolver when st holds none.
func (rt *Routing) follow(ctx context.Context, c *router.Client, st store.Store, db config.Database, fo *router.FollowOptions) (*Routing, error) {
	o := opt.Of(fo)
	var err error
	if rt.Seeded, err = noState(ctx, st, db.Link); err != nil {
		return nil, err
	}
	o.Seed = db.Resolver
	f, err := c.Follow(ctx, db.Link, &o)
	if err != nil {
		return nil, err
	}
	s := f.State()
	if rt.Resolver, err = s.Decode(); err != nil {
		_ = f.Close()
		return nil, err
	}
	rt.State, rt.Follower, rt.Seeded = s, f, rt.Seeded && s.Version == 1
	return rt, nil
}

// noState reports whether st holds no state for the database. Cost: a
// state read.
func noState(ctx context.Context, st store.Store, dbLink string) (bool, error) {
	_, err := shardstate.Load(ctx, st, dbLink)
	if errors.Is(err, shardstate.ErrNoState) {
		return true, nil
	}
	return false, err
}

// Store returns the store the client routes to (the client does not own
// it apart from Close).
func (c *Client) Store() store.Store { return c.store }

// Config returns the configuration the client was opened from.
func (c *Client) Config() *config.Config { return c.cfg }

// Follower returns the follower of a database routed by its shared state,
// or nil when the database was registered with the configuration's
// resolver.
func (c *Client) Follower(dbLink string) *router.Follower {
	for l, f := range c.followers {
		if link.Same(l, dbLink) {
			return f
		}
	}
	return nil
}

// Close stops following every database (releasing the routers' leases)
// and closes the store.
func (c *Client) Close() error {
	var errs []error
	for _, f := range c.followers {
		errs = append(errs, f.Close())
	}
	c.followers = nil
	errs = append(errs, c.store.Close())
	return errors.Join(errs...)
}

// StoreOptions configure OpenStore. A nil *StoreOptions means defaults.
type StoreOptions struct {
	// Timeout bounds the check that a Cosmos DB account answers; 0 means
	// 30 seconds.
	Timeout time.Duration
	// ReadOnly opens a durable embedded store read-only
	// (memstore.Options.ReadOnly): read-only openers share the directory,
	// writes fail with memstore.ErrReadOnly, and a directory that holds no
	// store yet reads as an empty in-memory one (nothing is created).
	ReadOnly bool
	// LockTimeout is how long a durable embedded store's open waits for
	// another process that holds it (memstore.Options.LockTimeout); 0
	// means 5 seconds.
	LockTimeout time.Duration
}

// OpenStore opens the backend a store configuration names: the embedded
// store (in memory when Path is empty, else durable in that directory) or
// Cosmos DB at Endpoint with the key from DOCSHARD_STORE_KEY (a loopback
// endpoint such as docshard serve needs none; against docshard serve the
// store is a store.Fencer), with the databases and collections that
// Accounts binds in other accounts (each key from its KeyEnv; the store is
// a store.Fencer only when every account is docshard serve). CAEnv adds
// certificates to trust.
func OpenStore(ctx context.Context, sc config.StoreConfig, opts *StoreOptions) (store.Store, error) {
	o := opt.Of(opts)
	switch sc.Kind {
	case config.StoreEmbedded, "":
		if sc.Path == "" {
			return memstore.New(nil), nil
		}
		s, err := memstore.Open(sc.Path, &memstore.Options{ReadOnly: o.ReadOnly, LockTimeout: o.LockTimeout})
		if o.ReadOnly && errors.Is(err, os.ErrNotExist) {
			return memstore.New(nil), nil // nothing there yet, and nothing created
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	case config.StoreCosmos:
		return openCosmos(ctx, sc, o)
	}
	return nil, fmt.Errorf("docshard: %w: store.kind %q: want %s or %s", config.ErrInvalid, sc.Kind, config.StoreEmbedded, config.StoreCosmos)
}

func openCosmos(ctx context.Context, sc config.StoreConfig, o StoreOptions) (store.Store, error) {
	if sc.Key == "" && !cosmos.LoopbackEndpoint(sc.Endpoint) {
		return nil, fmt.Errorf("docshard: store.kind is cosmos but %s_STORE_KEY is not set: export the account key in the environment (only a loopback endpoint may go without)", config.EnvPrefix)
	}
	co := &cosmos.Options{Account: cosmos.Account{Endpoint: sc.Endpoint, Key: sc.Key}}
	for i, a := range sc.Accounts {
		switch {
		case a.Key != "" || cosmos.LoopbackEndpoint(a.Endpoint):
		case a.KeyEnv == "":
			return nil, fmt.Errorf("docshard: store.accounts[%d] (%s at %s) has no keyEnv: name the environment variable that holds the account's key (only a loopback endpoint may go without)", i, a.Bind, a.Endpoint)
		default:
			return nil, fmt.Errorf("docshard: store.accounts[%d] (%s at %s): %s is not set: export the account's key in the environment", i, a.Bind, a.Endpoint, a.KeyEnv)
		}
		if co.Accounts == nil {
			co.Accounts = map[string]cosmos.Account{}
		}
		co.Accounts[a.Bind] = cosmos.Account{Endpoint: a.Endpoint, Key: a.Key}
	}
	if ca := os.Getenv(CAEnv); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("docshard: %s: %w", CAEnv, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("docshard: %s: %s holds no PEM certificate", CAEnv, ca)
		}
		co.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	return cosmos.Open(ctx, co)
}
