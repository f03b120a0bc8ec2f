package router_test

import (
	"testing"

	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func TestOracleMemstore(t *testing.T) {
	cfg := routertest.Config{Store: func(t *testing.T) store.Store {
		s := memstore.New(nil)
		t.Cleanup(func() { s.Close() })
		return s
	}}
	if testing.Short() {
		cfg.Queries = 80
	}
	routertest.Run(t, cfg)
}
