package cosmos_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/storetest"
)

// TestConformanceAccount runs the whole conformance suite against a real
// Cosmos DB account or the official emulator:
//
//	DOCSHARD_COSMOS_ENDPOINT=https://ACCOUNT.documents.azure.com:443/ \
//	DOCSHARD_STORE_KEY=... go test -run TestConformanceAccount -v ./cosmos
//
// For the official emulator's self-signed certificate, also set
// DOCSHARD_COSMOS_CA to the path of its PEM certificate. The suite creates
// and deletes its own containers in the database "docshard-storetest".
func TestConformanceAccount(t *testing.T) {
	endpoint, key := os.Getenv("DOCSHARD_COSMOS_ENDPOINT"), os.Getenv("DOCSHARD_STORE_KEY")
	if endpoint == "" || key == "" {
		t.Skip("set DOCSHARD_COSMOS_ENDPOINT and DOCSHARD_STORE_KEY to run the conformance suite against a Cosmos DB account or the official emulator (see DEVELOPERS.md)")
	}
	var client *http.Client
	if ca := os.Getenv("DOCSHARD_COSMOS_CA"); ca != "" {
		pem, err := os.ReadFile(ca)
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(pem), "DOCSHARD_COSMOS_CA holds no PEM certificate")
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := cosmos.New(cosmostest.Context(t), &cosmos.Options{Account: cosmos.Account{Endpoint: endpoint, Key: key}, HTTPClient: client})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}, &storetest.Options{
		Database: "docshard-storetest",
		Skip: map[string]string{
			storetest.SkipTTL:   "the service's clock cannot be moved; TTL would need minutes of real waiting",
			storetest.SkipQuota: "a collection's quota is docshard serve's extension (x-docshard-quota); Cosmos DB has no such setting and enforces only its own limits",
		},
	})
}
