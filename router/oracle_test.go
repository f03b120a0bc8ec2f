package router_test

import (
	"testing"

	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
)

// TestOracleMemstore: the same documents in one collection and in 2, 7
// and 32 collections answer the corpus alike (see routertest).
func TestOracleMemstore(t *testing.T) {
	cfg := routertest.Config{Store: func(t *testing.T) store.Store { return newMem(t) }}
	if testing.Short() {
		cfg.Queries = 60
	}
	routertest.Run(t, cfg)
}
