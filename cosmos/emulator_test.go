package cosmos_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/storetest"
)

// emulatorStore connects the backend to the test binary's docshard
// emulator, with no key: a loopback endpoint defaults to the emulator key.
// Open finds docshard serve there, so the store is a store.Fencer.
func emulatorStore(t testing.TB) store.Store {
	srv := emulatortest.Shared(t)
	s, err := cosmos.Open(emulatortest.Context(t), &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}})
	require.NoError(t, err)
	require.Implements(t, (*store.Fencer)(nil), s, "against docshard serve")
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformanceEmulator runs the conformance suite through the real
// azcosmos client against docshard's own emulator, with its clock moved
// for TTL.
func TestConformanceEmulator(t *testing.T) {
	srv := emulatortest.Shared(t)
	storetest.Run(t, func(t *testing.T) store.Store { return emulatorStore(t) }, &storetest.Options{Advance: srv.Advance})
}

// TestRouterOracleOnEmulator runs the router's oracle over the backend
// against docshard's emulator, as TestRouterOracleOnCosmium does against
// cosmium.
func TestRouterOracleOnEmulator(t *testing.T) {
	cfg := routertest.Config{Store: emulatorStore, Docs: 150, Queries: 60, Splits: []int{2, 7}, PageSizes: []int{3, 17}, Seed: 7}
	if testing.Short() {
		cfg.Queries = 20
	}
	routertest.Run(t, cfg)
}

// TestChangeFeedOfRecreatedCollection: a change-feed token of a collection
// deleted and created again under the same link is refused as a bad
// request (the emulator's store knows the incarnation), and a missing
// collection is store.ErrCollectionNotFound.
func TestChangeFeedOfRecreatedCollection(t *testing.T) {
	st := emulatorStore(t)
	cf := st.(store.ChangeFeeder)
	ctx := emulatortest.Context(t)
	const l = "dbs/cfrecreated/colls/c"
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	t.Cleanup(func() { _ = st.DeleteCollection(context.Background(), l) })
	_, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	page, err := cf.ReadChanges(ctx, l, nil)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.NoError(t, st.DeleteCollection(ctx, l))
	_, err = cf.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: page.Continuation})
	require.ErrorIs(t, err, store.ErrCollectionNotFound)
	require.NoError(t, st.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	_, err = cf.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: page.Continuation})
	require.ErrorIs(t, err, store.ErrBadRequest)
	assert.Contains(t, err.Error(), "deleted since")
}
