package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/store"
)

// CAEnv names a PEM file of extra certificates to trust, for the official
// emulator or a local test server; real accounts need none.
const CAEnv = "DOCSHARD_COSMOS_CA"

// openCosmos connects to Azure Cosmos DB with the key from
// DOCSHARD_STORE_KEY, checking within 30 seconds that the account answers.
// A loopback endpoint (docshard serve, an emulator) needs no key: it gets
// the well-known emulator key. Against docshard serve the store is also a
// store.Fencer (cosmos.Open).
func openCosmos(cfg *config.Config) (store.Store, error) {
	if cfg.Store.Key == "" && !cosmos.LoopbackEndpoint(cfg.Store.Endpoint) {
		return nil, fmt.Errorf("store.kind is cosmos but %s_STORE_KEY is not set: export the account key in the environment (only a loopback endpoint may go without)", config.EnvPrefix)
	}
	opts := &cosmos.Options{Account: cosmos.Account{Endpoint: cfg.Store.Endpoint, Key: cfg.Store.Key}}
	if ca := os.Getenv(CAEnv); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CAEnv, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", CAEnv, ca)
		}
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cosmos.Open(ctx, opts)
}
