package router_test

import (
	"testing"

	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
)

// TestOracleMemstore: the same documents in one collection and in 2, 7
// and 32 collections answer the corpus alike (see routertest).
func TestOracleMemstore(t *testing.T) {
	cfg := routertest.Config{Store: func(t testing.TB) store.Store { return newMem(t) }}
	if testing.Short() {
		cfg.Queries = 60
	}
	routertest.Run(t, cfg)
}

// FuzzOracle: queries the fuzzer writes answer alike over one collection
// and over 3 and 8 (see routertest.Fuzz). Run it with
//
//	go test -run '^$' -fuzz FuzzOracle -fuzztime 5m ./router
func FuzzOracle(f *testing.F) {
	routertest.Fuzz(f, routertest.Config{
		Store:   func(t testing.TB) store.Store { return newMem(t) },
		Docs:    150,
		Queries: 200,
		Splits:  []int{3, 8},
	})
}
