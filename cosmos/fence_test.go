package cosmos_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
)

// TestOpenTellsDocshardServe: Open gives a store.Fencer against docshard
// serve only. Against cosmium (as against Cosmos DB) the store is not
// one, and stamped writes are written as any other.
func TestOpenTellsDocshardServe(t *testing.T) {
	require.Implements(t, (*store.Fencer)(nil), emulatorStore(t))

	cosmium := cosmostest.Shared(t)
	ctx := cosmostest.Context(t)
	st, err := cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: cosmium.Endpoint, Key: cosmostest.Key}, HTTPClient: cosmium.HTTPClient(), QueryMode: cosmos.QueryLocal})
	require.NoError(t, err)
	defer st.Close()
	_, isFencer := st.(store.Fencer)
	assert.False(t, isFencer, "cosmium is not docshard serve")
	l := fmt.Sprintf("dbs/open%d/colls/c", time.Now().UnixNano())
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	defer st.DeleteCollection(ctx, l)
	_, err = st.Create(ctx, l, []byte(`{"id":"a","pk":"p"}`), &store.WriteOptions{Epoch: 7})
	require.NoError(t, err, "the epoch is ignored")

	// docshard serve as the default account, cosmium bound to one
	// collection: not every account can fence, so the store does not.
	srv := emulatortest.Shared(t)
	mixed, err := cosmos.Open(ctx, &cosmos.Options{
		Account:    cosmos.Account{Endpoint: srv.Endpoint},
		Accounts:   map[string]cosmos.Account{l: {Endpoint: cosmium.Endpoint, Key: cosmostest.Key}},
		HTTPClient: cosmium.HTTPClient(),
	})
	require.NoError(t, err)
	defer mixed.Close()
	_, isFencer = mixed.(store.Fencer)
	assert.False(t, isFencer, "an account that is not docshard serve")
}

// TestFenceAcrossAccounts: a database whose collections live on two
// docshard serve endpoints is fenced on both.
func TestFenceAcrossAccounts(t *testing.T) {
	first, second := emulatortest.Start(t, nil), emulatortest.Start(t, nil)
	ctx := emulatortest.Context(t)
	const db = "dbs/spread"
	onSecond := db + "/colls/second"
	st, err := cosmos.Open(ctx, &cosmos.Options{
		Account:  cosmos.Account{Endpoint: first.Endpoint},
		Accounts: map[string]cosmos.Account{onSecond: {Endpoint: second.Endpoint}},
	})
	require.NoError(t, err)
	defer st.Close()
	f := st.(store.Fencer)
	for _, l := range []string{db + "/colls/first", onSecond} {
		require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	}
	got, err := f.RaiseFence(ctx, db, 4)
	require.NoError(t, err)
	assert.EqualValues(t, 4, got)
	for _, srv := range []*emulatortest.Server{first, second} {
		fence, err := srv.Store.(store.Fencer).Fence(ctx, db)
		require.NoError(t, err)
		assert.EqualValues(t, 4, fence, "raised on %s", srv.Endpoint)
	}
	_, err = second.Store.(store.Fencer).RaiseFence(ctx, db, 6)
	require.NoError(t, err)
	got, err = f.Fence(ctx, db)
	require.NoError(t, err)
	assert.EqualValues(t, 4, got, "the fence in force everywhere is the lowest")
	_, err = st.Create(ctx, onSecond, []byte(`{"id":"a","pk":"p"}`), &store.WriteOptions{Epoch: 5})
	assert.ErrorIs(t, err, store.ErrFenced, "the bound collection's server fences it")
	_, err = st.Create(ctx, db+"/colls/first", []byte(`{"id":"a","pk":"p"}`), &store.WriteOptions{Epoch: 5})
	require.NoError(t, err)
}

// TestFenceSurvivesServeRestart: a fence raised through the backend is
// there after docshard serve restarts on its directory.
func TestFenceSurvivesServeRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := emulatortest.Context(t)
	srv, err := emulatortest.New(&emulatortest.Options{Dir: dir})
	require.NoError(t, err)
	st, err := cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}})
	require.NoError(t, err)
	const l = "dbs/restart/colls/c"
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	_, err = st.(store.Fencer).RaiseFence(ctx, "dbs/restart", 3)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.NoError(t, srv.Close())

	srv = emulatortest.Start(t, &emulatortest.Options{Dir: dir})
	st, err = cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}})
	require.NoError(t, err)
	defer st.Close()
	got, err := st.(store.Fencer).Fence(ctx, "dbs/restart")
	require.NoError(t, err)
	assert.EqualValues(t, 3, got)
	_, err = st.Upsert(ctx, l, []byte(`{"id":"a","pk":"p"}`), &store.WriteOptions{Epoch: 2})
	require.ErrorIs(t, err, store.ErrFenced)
	assert.False(t, errors.Is(err, store.ErrPreconditionFailed))
	assert.Contains(t, err.Error(), "fence is 3", "the error names the fence")
}

// TestBatchErrorsThroughTheBackend: what the backend refuses before
// sending, and what docshard serve says of a failed operation.
func TestBatchErrorsThroughTheBackend(t *testing.T) {
	st := emulatorStore(t)
	ctx := emulatortest.Context(t)
	l := fmt.Sprintf("dbs/batcherrors/colls/c%d", time.Now().UnixNano())
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	defer st.DeleteCollection(ctx, l)
	b := st.(store.Batcher)
	_, err := b.ExecuteBatch(ctx, l, "p", []store.BatchOp{{Kind: store.BatchRead, ID: `a"b`}}, nil)
	var be *store.BatchError
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "quote", "an id azcosmos cannot send")
	_, err = b.ExecuteBatch(ctx, l, store.None, []store.BatchOp{{Kind: store.BatchRead, ID: "a"}}, nil)
	assert.ErrorIs(t, err, store.ErrBadRequest, "the undefined key is not mapped yet")

	_, err = b.ExecuteBatch(ctx, l, "p", []store.BatchOp{
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"x","pk":"p"}`)},
		{Kind: store.BatchReplace, ID: "missing", Doc: []byte(`{"id":"missing","pk":"p"}`)},
	}, nil)
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 1, be.Index)
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.Contains(t, err.Error(), `replace `+l+` id "missing"`)
	assert.Contains(t, err.Error(), "no document under partition key", "the server's reason")
}
