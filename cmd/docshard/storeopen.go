package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/store"
)

// CAEnv names a PEM file of extra certificates to trust, for the official
// emulator or a local test server; real accounts need none.
const CAEnv = docshard.CAEnv

// storeLockWait is how long a command waits for another process that holds
// the durable store (for writing, or for a writer: for reading) before
// saying which file and that another process holds it.
const storeLockWait = time.Second

// openStore opens the backend the configuration names (docshard.OpenStore),
// noting on stderr when the embedded store is only in memory. readOnly
// opens a durable embedded store read-only (query, locate, plan, verify,
// state show and history): such commands share the directory with each
// other, though not with a process that holds it for writing.
func openStore(cfg *config.Config, stderr io.Writer, readOnly bool) (store.Store, error) {
	if (cfg.Store.Kind == config.StoreEmbedded || cfg.Store.Kind == "") && cfg.Store.Path == "" {
		fmt.Fprintln(stderr, "docshard: note: store.path is empty, so the embedded store is in memory and its documents are gone when this command exits")
	}
	opts := &docshard.StoreOptions{ReadOnly: readOnly, LockTimeout: storeLockWait}
	return docshard.OpenStore(context.Background(), cfg.Store, opts)
}
