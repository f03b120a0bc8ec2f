package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/internal/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m, cosmostest.StopShared) }

// TestLoadAndQueryOnCosmos drives load and query with store.kind cosmos
// against the local cosmium server.
func TestLoadAndQueryOnCosmos(t *testing.T) {
	srv := cosmostest.Shared(t)
	dir := t.TempDir()
	ca := writeFile(t, dir, "ca.pem", string(srv.CertPEM))
	t.Setenv("DOCSHARD_STORE_KEY", cosmostest.Key)
	t.Setenv(CAEnv, ca)
	db := "dbs/cli" + time.Now().Format("150405")
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`
store: {kind: cosmos, endpoint: %q}
databases:
  - link: %s
    resolver: {kind: hash, partitionKey: /userId, collections: [%s/colls/u0, %s/colls/u1]}
`, srv.Endpoint, db, db, db))
	requireLoad(t, userLines(0, 30, 4), 30, db, "-c", cfg)
	code, out, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c WHERE c.n > 9")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "20\n", out)
	code, out, _ = runCLI(t, "", "query", "-c", cfg, "SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n DESC")
	require.Equal(t, 0, code)
	assert.Equal(t, "29\n28\n", out)

	// On a loopback endpoint no key means the well-known emulator key,
	// which cosmium answers.
	t.Setenv("DOCSHARD_STORE_KEY", "")
	requireCount(t, cfg, 30)
	// Elsewhere the key must come from the environment, and is never printed.
	remote := writeFile(t, dir, "remote.yaml", fmt.Sprintf(`
store: {kind: cosmos, endpoint: "https://acct.documents.azure.com:443/"}
databases:
  - link: %s
    resolver: {kind: hash, partitionKey: /userId, collections: [%s/colls/u0]}
`, db, db))
	code, _, errOut = runCLI(t, "", "query", "-c", remote, "SELECT 1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "DOCSHARD_STORE_KEY is not set")
	t.Setenv("DOCSHARD_STORE_KEY", "d3Jvbmcta2V5LWZvci10ZXN0")
	code, _, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT 1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "rejected the credentials (status 401 Unauthorized")
	assert.Contains(t, errOut, "DOCSHARD_STORE_KEY", "says where the key comes from")
	assert.NotContains(t, errOut, "d3Jvbmcta2V5LWZvci10ZXN0")
}

// TestReshardIntoAnotherAccount is docs/migrating.md on the command line:
// documents loaded through docshard serve, the configuration given
// store.accounts, a reshard into collections of the other account, then
// verify and query over both accounts, and the documents where the
// bindings put them.
func TestReshardIntoAnotherAccount(t *testing.T) {
	serve, other := emulatortest.Start(t, nil), emulatortest.Start(t, nil)
	ctx := emulatortest.Context(t)
	dir := t.TempDir()
	const database = `databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1]}
`
	before := writeFile(t, dir, "before.yaml", fmt.Sprintf("store: {kind: cosmos, endpoint: %q}\n", serve.Endpoint)+database)
	after := writeFile(t, dir, "after.yaml", fmt.Sprintf(`store:
  kind: cosmos
  endpoint: %q
  accounts:
    - {bind: dbs/app/colls/v0, endpoint: %q}
    - {bind: dbs/app/colls/v1, endpoint: %q}
`, serve.Endpoint, other.Endpoint, other.Endpoint)+database)
	next := writeFile(t, dir, "next.json", `{"kind": "hash", "partitionKey": "/userId", "collections": ["dbs/app/colls/v0", "dbs/app/colls/v1"]}`)

	var lines strings.Builder
	for i := range 200 {
		fmt.Fprintf(&lines, `{"id":"%d","userId":"user-%d"}`+"\n", i, i%37)
	}
	code, _, errOut := runCLI(t, lines.String(), "load", "-c", before)
	require.Equal(t, 0, code, errOut)

	code, _, errOut = runCLI(t, "", "reshard", "-c", after, "--next", next)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCLI(t, "", "verify", "-c", after)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	code, out, errOut = runCLI(t, "", "query", "-c", after, "SELECT VALUE COUNT(1) FROM c")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "200\n", out)

	total := int64(0)
	for _, l := range []string{"dbs/app/colls/v0", "dbs/app/colls/v1"} {
		info, err := other.Store.CollectionInfo(ctx, l)
		require.NoError(t, err, "%s is in the other account", l)
		total += info.Documents
	}
	assert.EqualValues(t, 200, total)
	for _, l := range []string{"dbs/app/colls/u0", "dbs/app/colls/u1"} {
		info, err := serve.Store.CollectionInfo(ctx, l)
		require.NoError(t, err)
		assert.Zero(t, info.Documents, "%s emptied by the clean-up", l)
	}
}

// TestAccountErrorOnePrefix: an error of the library, which names its
// package ("docshard: ..."), is printed with one "docshard: ", not two.
func TestAccountErrorOnePrefix(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", "store:\n  kind: cosmos\n  endpoint: https://a.documents.azure.com:443/\n  accounts:\n    - {bind: dbs/app, endpoint: https://b.documents.azure.com:443/}\ndatabases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0]}\n")
	t.Setenv("DOCSHARD_STORE_KEY", "a2V5")
	code, _, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT * FROM c")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "has no keyEnv")
	assert.NotContains(t, errOut, "docshard: docshard:")
}
