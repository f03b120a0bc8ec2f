package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

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
		s, err := memstore.Open(cfg.Store.Path, &memstore.Options{ReadOnly: readOnly})
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
