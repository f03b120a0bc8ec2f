package main

import (
	"context"
	"fmt"
	"io"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/store"
)

// CAEnv names a PEM file of extra certificates to trust, for the official
// emulator or a local test server; real accounts need none.
const CAEnv = docshard.CAEnv

// openStore opens the backend the configuration names (docshard.OpenStore),
// noting on stderr when the embedded store is only in memory.
func openStore(cfg *config.Config, stderr io.Writer) (store.Store, error) {
	if (cfg.Store.Kind == config.StoreEmbedded || cfg.Store.Kind == "") && cfg.Store.Path == "" {
		fmt.Fprintln(stderr, "docshard: note: store.path is empty, so the embedded store is in memory and its documents are gone when this command exits")
	}
	return docshard.OpenStore(context.Background(), cfg.Store, nil)
}
