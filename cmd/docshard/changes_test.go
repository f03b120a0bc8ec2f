package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChangesCommand: `changes` prints every loaded document once as a
// JSON line and exits; with --token-file a second run prints only what
// was loaded since; --from-now prints nothing; usage mistakes exit 2.
func TestChangesCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", `
store: {kind: embedded, path: `+filepath.Join(dir, "data")+`}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1, dbs/app/colls/u2]}
`)
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, `{"id":"%d","userId":"user-%d","n":%d}`+"\n", i, i%7, i)
		}
		return b.String()
	}
	code, _, errOut := runCLI(t, lines(0, 30), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)

	code, out, errOut := runCLI(t, "", "changes", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 30)
	assert.Contains(t, out, `"_etag"`, "documents as stored")

	tok := filepath.Join(dir, "token")
	code, out, errOut = runCLI(t, "", "changes", "-c", cfg, "--token-file", tok)
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 30)
	_, err := os.Stat(tok)
	require.NoError(t, err, "the token is kept")
	code, _, errOut = runCLI(t, lines(30, 35), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = runCLI(t, "", "changes", "-c", cfg, "--token-file", tok)
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 5, "only what was loaded since")

	code, out, errOut = runCLI(t, "", "changes", "-c", cfg, "--from-now")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out)

	code, _, errOut = runCLI(t, "", "changes", "-c", cfg, "--from-now", "--token-file", tok)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--from-now")
	code, _, errOut = runCLI(t, "", "changes", "-c", cfg, "extra")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "changes")
	code, _, _ = runCLI(t, "", "changes", "-c", cfg, "--bogus")
	assert.Equal(t, 2, code)
}
