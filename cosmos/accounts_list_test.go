package cosmos_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store"
)

// TestListCollectionsAcrossAccounts: a database whose collections live in
// several accounts lists every one of them, each from the account it is
// bound to, and none that an account holds but the store does not reach
// there (a container of the same name left in another account).
func TestListCollectionsAcrossAccounts(t *testing.T) {
	first, second, third := emulatortest.Start(t, nil), emulatortest.Start(t, nil), emulatortest.Start(t, nil)
	ctx := emulatortest.Context(t)
	const db = "dbs/spread"
	tests := []struct {
		name     string
		accounts map[string]cosmos.Account
		want     []string
	}{
		{"collections bound to two other accounts", map[string]cosmos.Account{
			db + "/colls/b": {Endpoint: second.Endpoint},
			db + "/colls/c": {Endpoint: third.Endpoint},
		}, []string{db + "/colls/a", db + "/colls/b", db + "/colls/c", db + "/colls/stray"}},
		{"the database bound, one collection back on the default", map[string]cosmos.Account{
			db:              {Endpoint: second.Endpoint},
			db + "/colls/a": {Endpoint: first.Endpoint},
		}, []string{db + "/colls/a", db + "/colls/b"}},
	}
	// Each account holds containers of the database: the first a, stray
	// and a b that the bindings shadow; the second b; the third c.
	for srv, colls := range map[*emulatortest.Server][]string{first: {"a", "b", "stray"}, second: {"b"}, third: {"c"}} {
		plain, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}})
		require.NoError(t, err)
		for _, c := range colls {
			require.NoError(t, plain.CreateCollection(ctx, db+"/colls/"+c, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
		}
		require.NoError(t, plain.Close())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := cosmos.Open(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: first.Endpoint}, Accounts: tt.accounts})
			require.NoError(t, err)
			defer st.Close()
			got, err := st.ListCollections(ctx, db)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
