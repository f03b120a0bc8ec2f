package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A configuration file that cannot be used (missing, malformed YAML, an
// unknown setting, an unknown store kind, a bad resolver) ends every
// command that reads it with exit code 1, one line on stderr naming the
// file, and nothing on stdout; exit code 2 is kept for a mistake in the
// call itself (docs/cli.md, "Exit codes").
func TestConfigErrorsExitOne(t *testing.T) {
	dir := t.TempDir()
	good := "databases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0]}\n"
	files := []struct{ name, content, want string }{
		{"missing.yaml", "", "no such file"},
		{"syntax.yaml", "databases: [\n", "malformed yaml"},
		{"unknown.yaml", "store: {kind: embedded, path: ./d}\nbogus: 1\n" + good, "unknown setting bogus"},
		{"kind.yaml", "store: {kind: nosuch}\n" + good, `store.kind = "nosuch"`},
		{"resolver.yaml", "databases: [{link: dbs/app, resolver: {kind: hash, collections: [dbs/app/colls/a, dbs/app/colls/a]}}]\n", "collections[1]"},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if f.content != "" {
			path = writeFile(t, dir, f.name, f.content)
		}
		for _, args := range [][]string{
			{"locate", "-c", path, "x"},
			{"query", "-c", path, "SELECT 1"},
			{"verify", "-c", path},
			{"state", "show", "-c", path},
			{"load", "-c", path, "-"},
			{"reshard", "-c", path, "--next", path},
		} {
			t.Run(f.name+"/"+args[0], func(t *testing.T) {
				code, out, errOut := runCLI(t, "", args...)
				assert.Equal(t, 1, code, "a configuration error exits 1: %s", errOut)
				assert.Empty(t, out)
				assert.Contains(t, errOut, f.want)
				assert.Contains(t, errOut, f.name, "the message names the file")
				assert.True(t, strings.HasPrefix(errOut, "docshard: "), errOut)
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			})
		}
	}
}
