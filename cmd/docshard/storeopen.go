package main

import (
	"fmt"
	"io"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// openStore opens the backend the configuration names.
func openStore(cfg *config.Config, stderr io.Writer) (store.Store, error) {
	switch cfg.Store.Kind {
	case config.StoreEmbedded:
		if cfg.Store.Path == "" {
			fmt.Fprintln(stderr, "docshard: note: store.path is empty, so the embedded store is in memory and its documents are gone when this command exits")
			return memstore.New(nil), nil
		}
		s, err := memstore.Open(cfg.Store.Path, nil)
		if err != nil {
			return nil, err
		}
		return s, nil
	case config.StoreCosmos:
		return openCosmos(cfg)
	}
	return nil, fmt.Errorf("store.kind %q is not supported", cfg.Store.Kind)
}
