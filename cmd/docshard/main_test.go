package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs the command line in-process and returns its exit code and
// output.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

const threeUsers = `
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/users0, dbs/app/colls/users1, dbs/app/colls/users2]}
`

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", threeUsers)
	code, out, errOut := runCLI(t, "", "locate", "-c", cfg, "J1", "U4", "alice")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "J1\tdbs/app/colls/users0\nU4\tdbs/app/colls/users2\nalice\tdbs/app/colls/users1\n", out)

	code, out, _ = runCLI(t, "", "locate", "-c", cfg, "--db", "dbs/app", "--read", "J1")
	require.Equal(t, 0, code)
	assert.Equal(t, "J1\tdbs/app/colls/users0\n", out)

	tenants := writeFile(t, dir, "t.json", `{"databases":[{"link":"dbs/app","resolver":{"kind":"lookup","partitionKey":"/tenant",
	  "entries":{"BigCorp":"dbs/app/colls/big"},"default":{"kind":"hash","collections":["dbs/app/colls/s0","dbs/app/colls/s1"]}}}]}`)
	code, out, _ = runCLI(t, "", "locate", "-c", tenants, "--read", "BigCorp")
	require.Equal(t, 0, code)
	assert.Equal(t, "BigCorp\tdbs/app/colls/big\n", out, "lookup values keep their case through the config file")
	code, out, _ = runCLI(t, "", "locate", "-c", tenants, "--read", "bigcorp")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "big\n")

	code, out, _ = runCLI(t, "", "locate", "-c", cfg, "--json", "42", `["eu",7]`)
	require.Equal(t, 0, code)
	assert.Equal(t, 2, strings.Count(out, "\n"))
}

func TestPlan(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", threeUsers)
	next := writeFile(t, dir, "next.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/users0","dbs/app/colls/users1","dbs/app/colls/users2","dbs/app/colls/users3"]}`)
	code, out, errOut := runCLI(t, "", "plan", "-c", cfg, "--next", next, "--keys", "20000")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "20000 sample keys")
	assert.Contains(t, out, "current: 3 collections")
	assert.Contains(t, out, "next: 4 collections")
	assert.Contains(t, out, "dbs/app/colls/users3")
	assert.Contains(t, out, "█")
	assert.Regexp(t, `moved: \d+ of 20000 keys \(2\d\.\d\d%\)`, out, "about a quarter of the keys move to the fourth collection")

	// Keys taken from documents.
	code, out, errOut = runCLI(t, `{"id":"1","userId":"a"}
{"id":"2","userId":"b"}
`, "plan", "-c", cfg, "--next", next, "--sample", "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "2 sample keys")
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", threeUsers)
	two := writeFile(t, dir, "two.yaml", threeUsers+`  - link: dbs/other
    resolver: {kind: hash, collections: [dbs/other/colls/a]}
`)
	bad := writeFile(t, dir, "bad.yaml", `databases: [{link: dbs/app, resolver: {kind: hash, collections: [dbs/app/colls/a, dbs/app/colls/a]}}]`)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no config", []string{"locate", "x"}, "pass -c FILE"},
		{"missing file", []string{"locate", "-c", filepath.Join(dir, "nope.yaml"), "x"}, "no such file"},
		{"no keys", []string{"locate", "-c", cfg}, "requires at least 1 arg"},
		{"ambiguous db", []string{"locate", "-c", two, "x"}, "name one with --db"},
		{"unknown db", []string{"locate", "-c", cfg, "--db", "dbs/zz", "x"}, `no database "dbs/zz"`},
		{"bad resolver", []string{"locate", "-c", bad, "x"}, "collections[1]"},
		{"bad json key", []string{"locate", "-c", cfg, "--json", "{"}, "not a JSON value"},
		{"wrong key type", []string{"locate", "-c", cfg, "--json", "true"}, "unsupported type"},
		{"plan without next", []string{"plan", "-c", cfg}, "--next FILE2 is required"},
		{"plan bad keys", []string{"plan", "-c", cfg, "--next", cfg, "--keys", "0"}, "--keys must be positive"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			assert.NotEqual(t, 0, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
			assert.True(t, strings.HasPrefix(errOut, "docshard: "), errOut)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.NotContains(t, errOut, "goroutine", "never a stack trace")
		})
	}
}
