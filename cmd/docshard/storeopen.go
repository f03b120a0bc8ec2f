package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// readOnlyLockWait is how long a read-only command waits for a process
// that holds the store for writing before saying so.
const readOnlyLockWait = time.Second

// openStore opens the backend the configuration names. readOnly opens a
// durable embedded store read-only (query, locate, plan, verify, state show
// and history): such commands share the directory with each other, though
// not with a process that holds it for writing.
func openStore(cfg *config.Config, stderr io.Writer, readOnly bool) (store.Store, error) {
	switch cfg.Store.Kind {
	case config.StoreEmbedded:
		if cfg.Store.Path == "" {
			fmt.Fprintln(stderr, "docshard: note: store.path is empty, so the embedded store is in memory and its documents are gone when this command exits")
			return memstore.New(nil), nil
		}
		opts := &memstore.Options{ReadOnly: readOnly}
		if readOnly {
			opts.LockTimeout = readOnlyLockWait
		}
		s, err := memstore.Open(cfg.Store.Path, opts)
		if readOnly && errors.Is(err, os.ErrNotExist) {
			// Nothing there yet: read as an empty store, and create nothing.
			return memstore.New(nil), nil
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	case config.StoreCosmos:
		return openCosmos(cfg)
	}
	return nil, fmt.Errorf("store.kind %q is not supported", cfg.Store.Kind)
}
