package cosmos_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
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

// TestPoliciesOnEmulator: the backend creates a container with unique
// keys and the vector embedding and full-text policies, which serve keeps
// and enforces (a unique key taken is ErrUniqueKeyConflict), and replaces its
// default TTL and indexing policy (store.Replacer); computed properties,
// which azcosmos cannot send, are refused rather than dropped.
func TestPoliciesOnEmulator(t *testing.T) {
	st := emulatorStore(t)
	ctx := emulatortest.Context(t)
	const l = "dbs/policies/colls/c"
	spec := &store.CollectionSpec{PartitionKeyPath: "/pk", UniqueKeys: [][]string{{"/email"}},
		VectorEmbeddingPolicy: []byte(`{"vectorEmbeddings":[{"path":"/v","dataType":"float32","distanceFunction":"cosine","dimensions":3}]}`),
		FullTextPolicy:        []byte(`{"defaultLanguage":"en-US","fullTextPaths":[{"path":"/title","language":"en-US"}]}`)}
	require.NoError(t, st.CreateCollection(ctx, l, spec))
	t.Cleanup(func() { _ = st.DeleteCollection(context.Background(), l) })
	_, err := st.Create(ctx, l, []byte(`{"id":"a","pk":"p","email":"x"}`), nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, l, []byte(`{"id":"b","pk":"p","email":"x"}`), nil)
	require.ErrorIs(t, err, store.ErrUniqueKeyConflict)
	_, err = st.Create(ctx, l, []byte(`{"id":"a","pk":"p","email":"y"}`), nil)
	require.ErrorIs(t, err, store.ErrConflict)
	assert.NotErrorIs(t, err, store.ErrUniqueKeyConflict, "an id taken is not a unique key")

	ttl := 60
	next := *spec
	next.DefaultTTL = &ttl
	next.Indexing = []byte(`{"indexingMode":"none","automatic":false}`)
	require.NoError(t, st.(store.Replacer).ReplaceCollection(ctx, l, &next))
	fresh, err := cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: emulatortest.Shared(t).Endpoint}})
	require.NoError(t, err)
	defer fresh.Close()
	info, err := fresh.CollectionInfo(ctx, l)
	require.NoError(t, err)
	require.NotNil(t, info.Spec.DefaultTTL)
	assert.Equal(t, 60, *info.Spec.DefaultTTL)
	assert.Equal(t, [][]string{{"/email"}}, info.Spec.UniqueKeys)
	assert.JSONEq(t, string(spec.FullTextPolicy), string(info.Spec.FullTextPolicy))
	assert.JSONEq(t, string(spec.VectorEmbeddingPolicy), string(info.Spec.VectorEmbeddingPolicy))
	assert.Contains(t, string(info.Spec.Indexing), `"indexingMode":"none"`)

	next.UniqueKeys = nil
	require.ErrorIs(t, st.(store.Replacer).ReplaceCollection(ctx, l, &next), store.ErrBadRequest, "unique keys cannot change")
	err = st.CreateCollection(ctx, "dbs/policies/colls/computed", &store.CollectionSpec{PartitionKeyPath: "/pk", ComputedProperties: []byte(`[{"name":"lower","query":"SELECT VALUE LOWER(c.name) FROM c"}]`)})
	require.ErrorIs(t, err, store.ErrBadRequest)
}
