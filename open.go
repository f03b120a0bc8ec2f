package docshard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/link"
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
	// StateAuto follows the database's shared state when the store holds
	// one, and otherwise routes by the configuration's resolver.
	StateAuto State = iota
	// StateFollow always follows the shared state, seeding it from the
	// configuration's resolver when the store holds none.
	StateFollow
	// StateIgnore routes by the configuration's resolver and never reads
	// the shared state (a single process, or tests).
	StateIgnore
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
// cfg on a new routing client: with the database's shared state when the
// store holds one (StateAuto), else with the configuration's resolver. On
// error nothing stays open.
func OpenConfig(ctx context.Context, cfg *config.Config, opts *Options) (*Client, error) {
	if cfg == nil {
		return nil, fmt.Errorf("docshard: %w: no configuration", config.ErrInvalid)
	}
	o := store.OptionsOf(opts)
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

// registerOne routes one database: by its followed shared state, or by the
// configuration's resolver. Under StateAuto, Follow without a seed finds
// out whether the state exists (ErrNoState when not) in the read it makes
// anyway.
func (c *Client) registerOne(ctx context.Context, o Options, db config.Database) error {
	if o.State == StateIgnore {
		return c.Register(db.Link, db.Resolver)
	}
	fo := store.OptionsOf(o.Follow)
	fo.Seed = nil
	if o.State == StateFollow {
		fo.Seed = db.Resolver
	}
	f, err := c.Follow(ctx, db.Link, &fo)
	switch {
	case err == nil:
		c.followers[db.Link] = f
		return nil
	case o.State == StateAuto && errors.Is(err, shardstate.ErrNoState):
		return c.Register(db.Link, db.Resolver)
	}
	return fmt.Errorf("docshard: %s: %w", db.Link, err)
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
// store is a store.Fencer). CAEnv adds certificates to trust.
func OpenStore(ctx context.Context, sc config.StoreConfig, opts *StoreOptions) (store.Store, error) {
	o := store.OptionsOf(opts)
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
