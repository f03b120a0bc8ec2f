package main

import (
	"fmt"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/store"
)

// openCosmos connects to Azure Cosmos DB.
func openCosmos(cfg *config.Config) (store.Store, error) {
	return nil, fmt.Errorf("store.kind cosmos: the Azure Cosmos DB backend is not built into this docshard yet (endpoint %s)", cfg.Store.Endpoint)
}
