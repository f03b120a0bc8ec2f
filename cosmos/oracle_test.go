package cosmos_test

import (
	"testing"

	"github.com/docshard/docshard/router/routertest"
)

// TestRouterOracleOnCosmium runs the router's oracle test over the
// cosmium-backed store: the same documents in one container and spread over
// 2 and 7 containers answer a generated corpus of queries alike, whole and
// page by page from resumed tokens, through the real azcosmos client.
func TestRouterOracleOnCosmium(t *testing.T) {
	cfg := routertest.Config{Store: newCosmium, Docs: 150, Queries: 60, Splits: []int{2, 7}, PageSizes: []int{3, 17}, Seed: 7}
	if testing.Short() {
		cfg.Queries = 20
	}
	routertest.Run(t, cfg)
}
