package cosmos_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/storetest"
)

// emulatorStore connects the backend to the test binary's docshard
// emulator, with no key: a loopback endpoint defaults to the emulator key.
func emulatorStore(t testing.TB) store.Store {
	srv := emulatortest.Shared(t)
	s, err := cosmos.New(emulatortest.Context(t), &cosmos.Options{Account: cosmos.Account{Endpoint: srv.Endpoint}})
	require.NoError(t, err)
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
