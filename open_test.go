package docshard_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
)

type order struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	Total  int    `json:"total"`
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

const ringYAML = `
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/o0, dbs/app/colls/o1, dbs/app/colls/o2]}
`

// TestOpenDurable: a configuration file on the durable embedded store
// opens into a client that writes, reads and queries across collections;
// the documents are there after a reopen.
func TestOpenDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := writeConfig(t, "store: {kind: embedded, path: "+filepath.Join(dir, "data")+"}\n"+ringYAML)
	c, err := docshard.Open(ctx, path, &docshard.Options{EnsureCollections: true})
	require.NoError(t, err)
	for i, u := range []string{"ann", "bob", "cy", "dee", "eve"} {
		_, err := c.Create(ctx, "dbs/app", order{ID: u, UserID: u, Total: i}, nil)
		require.NoError(t, err)
	}
	assert.NotNil(t, c.Follower("dbs/app"), "no shared state: seeded from the file and followed")
	assert.Equal(t, path, c.Config().File)
	require.NoError(t, c.Close())

	c, err = docshard.Open(ctx, path, nil)
	require.NoError(t, err)
	defer c.Close()
	doc, err := c.Read(ctx, "dbs/app", "dee", "dee")
	require.NoError(t, err)
	var o order
	require.NoError(t, json.Unmarshal(doc.Body, &o))
	assert.Equal(t, 3, o.Total)
	rows, err := c.Query(ctx, "dbs/app", store.Query{Text: "SELECT VALUE SUM(c.total) FROM c"}, nil)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.JSONEq(t, "10", string(rows[0]))
}

// TestOpenFollowsState: with StateAuto a database whose store holds a
// shared state is routed by it (not by the file), and followed; with
// StateFollow a state is seeded from the file; StateIgnore reads none.
func TestOpenFollowsState(t *testing.T) {
	ctx := context.Background()
	cfg, err := config.Parse([]byte(ringYAML), "yaml")
	require.NoError(t, err)

	c, err := docshard.OpenConfig(ctx, cfg, &docshard.Options{State: docshard.StateFollow})
	require.NoError(t, err)
	defer c.Close()
	f := c.Follower("dbs/app")
	require.NotNil(t, f, "StateFollow seeds and follows")
	assert.Equal(t, int64(1), f.Version())

	// A database whose store holds a state (seeded, then a resolver of two
	// collections published): with StateAuto it is followed, and routed by
	// the state, not by the file's three collections.
	two, err := resolver.Unmarshal([]byte(`{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/o0","dbs/app/colls/o1"]}`))
	require.NoError(t, err)
	path := writeConfig(t, "store: {kind: embedded, path: "+filepath.Join(t.TempDir(), "data")+"}\n"+ringYAML)
	seed, err := docshard.Open(ctx, path, &docshard.Options{State: docshard.StateFollow})
	require.NoError(t, err)
	s, err := shardstate.Load(ctx, seed.Store(), "dbs/app")
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, seed.Store(), s, shardstate.Change{Resolver: two})
	require.NoError(t, err)
	require.NoError(t, seed.Close())

	auto, err := docshard.Open(ctx, path, nil)
	require.NoError(t, err)
	require.NotNil(t, auto.Follower("dbs/app"), "the store holds a state: followed")
	r, err := auto.Resolver("dbs/app")
	require.NoError(t, err)
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Len(t, all, 2, "routed by the state's resolver, not the file's three collections")
	require.NoError(t, auto.Close())

	ignore, err := docshard.Open(ctx, path, &docshard.Options{State: docshard.StateIgnore})
	require.NoError(t, err)
	defer ignore.Close()
	assert.Nil(t, ignore.Follower("dbs/app"))
	r, err = ignore.Resolver("dbs/app")
	require.NoError(t, err)
	all, err = r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Len(t, all, 3, "the file's resolver")
}

// TestDefaultOpenFollowsLaterState is the second day's first trap: a
// service opened with the defaults on a store that has no shared state yet,
// then a placement published (as docshard load and reshard do). The
// service must follow it: before, it kept writing by its file's resolver,
// unfenced, and verify found documents misplaced. Register on the followed
// database is refused rather than silently re-routing it.
func TestDefaultOpenFollowsLaterState(t *testing.T) {
	ctx := context.Background()
	path := writeConfig(t, "store: {kind: embedded, path: "+filepath.Join(t.TempDir(), "data")+"}\n"+ringYAML)
	svc, err := docshard.Open(ctx, path, &docshard.Options{EnsureCollections: true})
	require.NoError(t, err)
	defer svc.Close()
	f := svc.Follower("dbs/app")
	require.NotNil(t, f, "the default Open follows the database, seeding its state")

	two, err := resolver.Unmarshal([]byte(`{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/o0","dbs/app/colls/o1"]}`))
	require.NoError(t, err)
	_, err = store.EnsureCollections(ctx, svc.Store(), store.Wanted{Create: []string{"dbs/app/colls/o0", "dbs/app/colls/o1"}, Spec: store.CollectionSpec{PartitionKeyPath: "/userId"}})
	require.NoError(t, err)
	s, err := shardstate.Load(ctx, svc.Store(), "dbs/app")
	require.NoError(t, err)
	next, err := shardstate.Publish(ctx, svc.Store(), s, shardstate.Change{Resolver: two})
	require.NoError(t, err)
	require.NoError(t, f.Refresh(ctx))
	assert.Equal(t, next.Version, f.Version())

	_, err = svc.Create(ctx, "dbs/app", order{ID: "n1", UserID: "zed", Total: 1}, nil)
	require.NoError(t, err)
	want, err := two.ResolveForCreate("zed")
	require.NoError(t, err)
	_, err = svc.Store().Read(ctx, want, "n1", &store.ReadOptions{PartitionKey: "zed"})
	require.NoError(t, err, "written where the published placement puts it")

	err = svc.Register("dbs/app", two)
	require.ErrorIs(t, err, router.ErrFollowed)
	assert.Contains(t, err.Error(), "close the database's Follower first")
}

// TestOpenServe: a configuration naming docshard serve as a cosmos store
// opens through the cosmos backend, fenced, with no key (loopback).
func TestOpenServe(t *testing.T) {
	ctx := context.Background()
	srv := emulatortest.Start(t, nil)
	path := writeConfig(t, "store: {kind: cosmos, endpoint: "+srv.Endpoint+"}\n"+ringYAML)
	c, err := docshard.Open(ctx, path, &docshard.Options{State: docshard.StateFollow, EnsureCollections: true})
	require.NoError(t, err)
	defer c.Close()
	_, isFencer := c.Store().(store.Fencer)
	assert.True(t, isFencer, "docshard serve fences")
	_, err = c.Create(ctx, "dbs/app", order{ID: "1", UserID: "ann", Total: 5}, nil)
	require.NoError(t, err)
	doc, err := c.Read(ctx, "dbs/app", "1", "ann")
	require.NoError(t, err)
	assert.Contains(t, string(doc.Body), `"total":5`)
}

// TestOpenErrors: each mistake is named.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	_, err := docshard.Open(ctx, filepath.Join(t.TempDir(), "missing.yaml"), nil)
	require.ErrorContains(t, err, "missing.yaml")
	_, err = docshard.OpenConfig(ctx, nil, nil)
	require.ErrorIs(t, err, config.ErrInvalid)
	_, err = docshard.OpenStore(ctx, config.StoreConfig{Kind: "mongo"}, nil)
	require.ErrorContains(t, err, `store.kind "mongo"`)
	t.Setenv("DOCSHARD_STORE_KEY", "")
	_, err = docshard.OpenStore(ctx, config.StoreConfig{Kind: config.StoreCosmos, Endpoint: "https://acct.documents.azure.com:443/"}, nil)
	require.ErrorContains(t, err, "DOCSHARD_STORE_KEY")
}

// TestKindsRegistered: importing the front door registers every resolver
// kind: JSON of each decodes.
func TestKindsRegistered(t *testing.T) {
	for _, js := range []string{
		`{"kind":"hash","partitionKey":"/k","collections":["dbs/a/colls/c0"]}`,
		`{"kind":"range","partitionKey":"/k","keyType":"string","ranges":[{"low":"a","high":"m","target":"dbs/a/colls/c0"}]}`,
		`{"kind":"lookup","partitionKey":"/k","entries":{"x":"dbs/a/colls/c0"},"default":"dbs/a/colls/c1"}`,
	} {
		_, err := resolver.Unmarshal([]byte(js))
		assert.NoError(t, err, js)
	}
}

// TestRouteDatabase: the one choice between the shared state and the
// file's resolver, for every mode, with and without a client, on a store
// with and without a state.
func TestRouteDatabase(t *testing.T) {
	ctx := context.Background()
	cfg, err := config.Parse([]byte(ringYAML), "yaml")
	require.NoError(t, err)
	db := cfg.Databases[0]
	two, err := resolver.Unmarshal([]byte(`{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/o0","dbs/app/colls/o1"]}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		mode     docshard.State
		state    bool // the store holds a state (of two collections)
		client   bool
		colls    int // collections routed by
		version  int64
		seeded   bool
		followed bool
		notice   string
	}{
		{name: "ignore, state", mode: docshard.StateIgnore, state: true, client: true, colls: 3},
		{name: "read, no state", mode: docshard.StateRead, colls: 3},
		{name: "read, state", mode: docshard.StateRead, state: true, colls: 2, version: 2, notice: "dbs/app routes by its shared state, version 2 (not by the file's resolver)"},
		{name: "read, state, client", mode: docshard.StateRead, state: true, client: true, colls: 2, version: 2, notice: "version 2"},
		{name: "auto, no state, client", mode: docshard.StateAuto, client: true, colls: 3, version: 1, seeded: true, followed: true,
			notice: "dbs/app had no shared state; the file's resolver is now its version 1 (in dbs/app/colls/_docshard)"},
		{name: "auto, no state, no client", mode: docshard.StateAuto, colls: 3},
		{name: "auto, state, client", mode: docshard.StateAuto, state: true, client: true, colls: 2, version: 2, followed: true, notice: "version 2"},
		{name: "auto, state, no client", mode: docshard.StateAuto, state: true, colls: 2, version: 2, notice: "version 2"},
		{name: "follow, no state, client", mode: docshard.StateFollow, client: true, colls: 3, version: 1, seeded: true, followed: true,
			notice: "dbs/app had no shared state; the file's resolver is now its version 1 (in dbs/app/colls/_docshard)"},
		{name: "follow, no state, no client", mode: docshard.StateFollow, colls: 3, version: 1, seeded: true, notice: "now its version 1"},
		{name: "follow, state, client", mode: docshard.StateFollow, state: true, client: true, colls: 2, version: 2, followed: true, notice: "version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := docshard.OpenStore(ctx, config.StoreConfig{}, nil)
			require.NoError(t, err)
			defer st.Close()
			if tc.state {
				s, err := shardstate.Init(ctx, st, db.Link, db.Resolver, nil)
				require.NoError(t, err)
				_, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: two})
				require.NoError(t, err)
			}
			var c *router.Client
			if tc.client {
				c = router.New(st, nil)
			}
			rt, err := docshard.RouteDatabase(ctx, c, st, db, tc.mode, nil)
			require.NoError(t, err)
			if rt.Follower != nil {
				defer rt.Follower.Close()
			}
			links, err := rt.Resolver.ResolveForRead(nil)
			require.NoError(t, err)
			assert.Len(t, links, tc.colls)
			if tc.client {
				r, err := c.Resolver(db.Link)
				require.NoError(t, err, "registered on the client")
				links, err := r.ResolveForRead(nil)
				require.NoError(t, err)
				assert.Len(t, links, tc.colls)
			}
			if tc.version == 0 {
				assert.Nil(t, rt.State)
			} else {
				require.NotNil(t, rt.State)
				assert.Equal(t, tc.version, rt.State.Version)
			}
			assert.Equal(t, tc.seeded, rt.Seeded)
			assert.Equal(t, tc.followed, rt.Follower != nil)
			if tc.notice == "" {
				assert.Empty(t, rt.Notice())
			} else {
				assert.Contains(t, rt.Notice(), tc.notice)
			}
		})
	}
}

// TestNoticeOnlyWhenDifferent: a state whose resolver is the file's gets
// no notice (every command printed "routes by its shared state (not by the
// file's resolver)" even then); one that differs does.
func TestNoticeOnlyWhenDifferent(t *testing.T) {
	ctx := context.Background()
	path := writeConfig(t, "store: {kind: embedded, path: "+filepath.Join(t.TempDir(), "data")+"}\n"+ringYAML)
	cfg, err := config.Load(path)
	require.NoError(t, err)
	seed, err := docshard.Open(ctx, path, &docshard.Options{State: docshard.StateFollow})
	require.NoError(t, err)
	st := seed.Store()
	rt, err := docshard.RouteDatabase(ctx, nil, st, cfg.Databases[0], docshard.StateRead, nil)
	require.NoError(t, err)
	require.NotNil(t, rt.State)
	assert.Empty(t, rt.Notice(), "the state holds the file's resolver")

	two, err := resolver.Unmarshal([]byte(`{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/o0","dbs/app/colls/o1"]}`))
	require.NoError(t, err)
	s, err := shardstate.Load(ctx, st, "dbs/app")
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: two})
	require.NoError(t, err)
	rt, err = docshard.RouteDatabase(ctx, nil, st, cfg.Databases[0], docshard.StateRead, nil)
	require.NoError(t, err)
	assert.Equal(t, "dbs/app routes by its shared state, version 2 (not by the file's resolver)", rt.Notice())
	require.NoError(t, seed.Close())
}

// TestOpenStoreWithAccounts: a configuration's store.accounts places each
// bound collection in its account; an account beyond loopback without its
// key is refused before anything is sent, naming the entry and what to set.
func TestOpenStoreWithAccounts(t *testing.T) {
	first, second := emulatortest.Start(t, nil), emulatortest.Start(t, nil)
	ctx := emulatortest.Context(t)
	sc := config.StoreConfig{Kind: config.StoreCosmos, Endpoint: first.Endpoint,
		Accounts: []config.Account{{Bind: "dbs/app/colls/far", Endpoint: second.Endpoint}}}
	st, err := docshard.OpenStore(ctx, sc, nil)
	require.NoError(t, err)
	defer st.Close()
	require.Implements(t, (*store.Fencer)(nil), st, "every account is docshard serve")
	for _, l := range []string{"dbs/app/colls/near", "dbs/app/colls/far"} {
		require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	}
	_, err = second.Store.CollectionInfo(ctx, "dbs/app/colls/far")
	require.NoError(t, err, "the bound collection is in the second account")
	_, err = second.Store.CollectionInfo(ctx, "dbs/app/colls/near")
	require.ErrorIs(t, err, store.ErrCollectionNotFound)
	colls, err := st.ListCollections(ctx, "dbs/app")
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/far", "dbs/app/colls/near"}, colls)

	for _, tt := range []struct {
		name string
		acct config.Account
		want string
	}{
		{"no keyEnv", config.Account{Bind: "dbs/app", Endpoint: "https://b.documents.azure.com:443/"},
			"store.accounts[0] (dbs/app at https://b.documents.azure.com:443/) has no keyEnv"},
		{"keyEnv unset", config.Account{Bind: "dbs/app", Endpoint: "https://b.documents.azure.com:443/", KeyEnv: "DOCSHARD_TEST_UNSET_KEY"},
			"DOCSHARD_TEST_UNSET_KEY is not set: export the account's key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := docshard.OpenStore(ctx, config.StoreConfig{Kind: config.StoreCosmos, Endpoint: first.Endpoint, Accounts: []config.Account{tt.acct}}, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
