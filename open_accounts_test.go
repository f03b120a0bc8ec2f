package docshard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
)

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
