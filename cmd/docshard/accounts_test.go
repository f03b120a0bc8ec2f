package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

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
