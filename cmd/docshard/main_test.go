package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store/memstore"
)

// runCLI runs the command line in-process and returns its exit code and
// output.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// requireLoad runs docshard load with args, stdin its input, and requires
// it to report n documents loaded into db; it returns load's stderr.
func requireLoad(t *testing.T, stdin string, n int, db string, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, stdin, append([]string{"load"}, args...)...)
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, fmt.Sprintf("%d documents loaded into %s (", n, db)), out)
	return errOut
}

// requireCount requires docshard query to count n documents in cfg's
// database.
func requireCount(t *testing.T, cfg string, n int) {
	t.Helper()
	code, out, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, fmt.Sprintf("%d\n", n), out)
}

func writeFile(t testing.TB, dir, name, content string) string {
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

// threeU is a database of three collections u0 to u2 hashed by /userId.
const threeU = `
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1, dbs/app/colls/u2]}
`

// embedded writes dir/c.yaml, an embedded store in dir/data with
// databases (the YAML of threeU, ...), and returns its path.
func embedded(t testing.TB, dir, databases string) string {
	return writeFile(t, dir, "c.yaml", "store: {kind: embedded, path: "+filepath.Join(dir, "data")+"}\n"+databases)
}

// oneUserEach returns n documents as JSON lines, each of its own user:
// {"id":"i","userId":"useri"}.
func oneUserEach(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"%d","userId":"user%d"}`+"\n", i, i)
	}
	return b.String()
}

// userLines returns documents from to to-1 as JSON lines:
// {"id":"i","userId":"user-(i mod users)","n":i}.
func userLines(from, to, users int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, `{"id":"%d","userId":"user-%d","n":%d}`+"\n", i, i%users, i)
	}
	return b.String()
}

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
	assert.Regexp(t, `exact, from the rings' points: largest 1\.\d\d× the mean now, 1\.\d\d× next; 2\d\.\d\d% of the hash space moves`, out)
	assert.Contains(t, out, `"strategy": "balanced" in its JSON keeps every one within 8% of the mean`, "the default ring's spread points to the fix")

	// The balanced strategy: exact figures within its 8% band.
	balanced := writeFile(t, dir, "balanced.json", `{"kind":"hash","strategy":"balanced","partitionKey":"/userId","collections":["dbs/app/colls/users0","dbs/app/colls/users1","dbs/app/colls/users2","dbs/app/colls/users3"]}`)
	code, out, errOut = runCLI(t, "", "plan", "-c", cfg, "--next", balanced, "--keys", "20000")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `exact, from the rings' points: largest 1\.\d\d× the mean now, 1\.0\d× next; \d\d\.\d\d% of the hash space moves; smallest 0\.\d\d× the mean now, (0\.9[2-9]|1\.00)× next`, out)
	assert.NotContains(t, out, "hint:", "balanced already")

	// Rings of different flavours compare only by the sample.
	murmur := writeFile(t, dir, "murmur.json", `{"kind":"hash","hash":"murmur3","partitionKey":"/userId","collections":["dbs/app/colls/users0","dbs/app/colls/users1"]}`)
	code, out, errOut = runCLI(t, "", "plan", "-c", cfg, "--next", murmur, "--keys", "1000")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "exact")

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
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/other/colls/a]}
`)
	bad := writeFile(t, dir, "bad.yaml", `databases: [{link: dbs/app, resolver: {kind: hash, collections: [dbs/app/colls/a, dbs/app/colls/a]}}]`)
	cases := []struct {
		name string
		args []string
		want string
		code int // 2: a usage error; 1: a runtime one
	}{
		{"no config", []string{"locate", "x"}, "pass -c FILE", 2},
		{"missing file", []string{"locate", "-c", filepath.Join(dir, "nope.yaml"), "x"}, "no such file", 1},
		{"no keys", []string{"locate", "-c", cfg}, "locate: missing KEY... (usage: docshard locate -c FILE", 2},
		{"query without SQL", []string{"query", "-c", cfg}, "query: missing SQL (usage: docshard query", 2},
		{"unknown flag", []string{"query", "-c", cfg, "--bogus", "SELECT 1"}, "query: unknown flag: --bogus", 2},
		{"extra argument", []string{"verify", "-c", cfg, "extra"}, `verify: takes no arguments, got "extra"`, 2},
		{"ambiguous db", []string{"locate", "-c", two, "x"}, "name one with --db", 1},
		{"unknown db", []string{"locate", "-c", cfg, "--db", "dbs/zz", "x"}, `no database "dbs/zz"`, 1},
		{"bad resolver", []string{"locate", "-c", bad, "x"}, "collections[1]", 1},
		{"bad json key", []string{"locate", "-c", cfg, "--json", "{"}, "not a JSON value", 2},
		{"wrong key type", []string{"locate", "-c", cfg, "--json", "true"}, "unsupported type", 1},
		{"plan without next", []string{"plan", "-c", cfg}, "--next FILE2 is required", 2},
		{"plan bad keys", []string{"plan", "-c", cfg, "--next", cfg, "--keys", "0"}, "--keys: want 1 to 1000000, got 0", 2},
		// The reproducers of issue 17: both died with "out of memory".
		{"plan too many keys", []string{"plan", "-c", cfg, "--next", cfg, "--keys", "2000000000"}, "--keys: want 1 to 1000000, got 2000000000", 2},
		{"load too many workers", []string{"load", "-c", cfg, "--workers", "100000000", "-"}, "--workers: want 1 to 1024, got 100000000", 2},
		{"load no workers", []string{"load", "-c", cfg, "--workers", "0", "-"}, "--workers: want 1 to 1024", 2},
		{"demo too many docs", []string{"demo", "--docs", "2000000000"}, "--docs: want 1 to 1000000", 2},
		{"reshard NaN rate", []string{"reshard", "-c", cfg, "--next", cfg, "--rate", "NaN"}, "--rate: want a finite number", 2},
		{"reshard negative rate", []string{"reshard", "-c", cfg, "--next", cfg, "--rate", "-1"}, "--rate: want a finite number", 2},
		{"state set negative version", []string{"state", "set", "-c", cfg, "--if-version", "-3", cfg}, "--if-version: want 0 to", 2},
		{"serve negative shutdown", []string{"serve", "--dir", dir, "--shutdown-timeout", "-1s"}, "--shutdown-timeout: want 0 to 1h0m0s", 2},
		{"unknown command", []string{"frobnicate"}, "unknown command", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			assert.NotEqual(t, 0, code)
			if tc.code != 0 {
				assert.Equal(t, tc.code, code)
			}
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
			assert.True(t, strings.HasPrefix(errOut, "docshard: "), errOut)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.NotContains(t, errOut, "goroutine", "never a stack trace")
		})
	}
}

func TestDemo(t *testing.T) {
	code, out, errOut := runCLI(t, "", "demo", "--docs", "600")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Wrote 600 documents")
	assert.Equal(t, 7, strings.Count(out, "✓"), "five queries, two again after the reshard")
	assert.Contains(t, out, "Every answer matches")
	assert.Contains(t, out, "Reshard from 2 to 3 collections")
	assert.Contains(t, out, "none refused")
	assert.Contains(t, out, "each once where the new ring puts it")
}

func TestLoadAndQuery(t *testing.T) {
	dir := t.TempDir()
	cfg := embedded(t, dir, threeU)
	lines := userLines(0, 50, 7) + "\n"
	errOut := requireLoad(t, lines, 50, "dbs/app", "-c", cfg, "-")
	assert.Contains(t, errOut, "created collection dbs/app/colls/u0")

	// The durable store keeps them for the next command.
	requireCount(t, cfg, 50)
	code, out, _ := runCLI(t, "", "query", "-c", cfg, "SELECT TOP 3 VALUE c.n FROM c WHERE c.n >= @min ORDER BY c.n", "--param", "@min=10")
	require.Equal(t, 0, code)
	assert.Equal(t, "10\n11\n12\n", out)
	code, out, _ = runCLI(t, "", "query", "-c", cfg, "--key", "user-3", "SELECT VALUE c.id FROM c ORDER BY c.n")
	require.Equal(t, 0, code)
	assert.Equal(t, "3\n10\n17\n24\n31\n38\n45\n", strings.ReplaceAll(out, `"`, ""))

	// Loading again upserts; --create refuses existing ids.
	code, _, errOut = runCLI(t, lines, "load", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = runCLI(t, `{"id":"0","userId":"user-0"}`, "load", "-c", cfg, "--create")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "line 1")
	assert.Contains(t, errOut, "conflict")

	// A bad line stops the load, naming it.
	code, out, errOut = runCLI(t, `{"id":"x1","userId":"a"}
{"id":"x2"}
`, "load", "-c", cfg, "--workers", "1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "standard input line 2")
	assert.Contains(t, errOut, "/userId")

	for _, tc := range []struct {
		args []string
		want string
		code int // 0: 1
	}{
		{args: []string{"query", "-c", cfg, "SELEC * FROM c"}, want: "syntax error at line 1, column 1"},
		{args: []string{"query", "-c", cfg, "SELECT DISTINCT VALUE c.a FROM c ORDER BY c.b"}, want: "cannot be merged"},
		{args: []string{"query", "-c", cfg, "SELECT 1", "--param", "x=1"}, want: "want @name=JSON", code: 2},
		{args: []string{"query", "-c", cfg, "SELECT 1", "--param", "@city=Oslo"}, want: `--param @city='"Oslo"'`, code: 2},
		{args: []string{"query", "-c", cfg, "SELECT 1", "--key-json", "--key", "{oops"}, want: "--key: key \"{oops\" is not a JSON value", code: 2},
		{args: []string{"locate", "-c", cfg, "--json", "{oops"}, want: "is not a JSON value", code: 2},
		{args: []string{"load", "-c", cfg, filepath.Join(dir, "missing.jsonl")}, want: "no such file"},
	} {
		code, _, errOut := runCLI(t, "", tc.args...)
		want := tc.code
		if want == 0 {
			want = 1
		}
		assert.Equal(t, want, code, tc.args)
		assert.Contains(t, errOut, tc.want, tc.args)
	}
}

// A damaged store: every command refuses it naming the file, and salvage
// copies what is intact into a new directory the commands then read.
func TestDamagedStoreAndSalvage(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := embedded(t, dir, threeUsers)
	var lines strings.Builder
	for i := range 30 {
		fmt.Fprintf(&lines, `{"id":"d%d","userId":"u%d","mark":"MARK%04d"}`+"\n", i, i, i)
	}
	code, _, errOut := runCLI(t, lines.String(), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)
	db := filepath.Join(data, "docshard.db")
	raw, err := os.ReadFile(db)
	require.NoError(t, err)
	// Every copy: bbolt's free pages may hold older ones.
	require.Positive(t, bytes.Count(raw, []byte("MARK0007")))
	raw = bytes.ReplaceAll(raw, []byte("MARK0007"), []byte("MARK1007"))
	require.NoError(t, os.WriteFile(db, raw, 0o600))

	code, _, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c")
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, db+" is corrupt")
	assert.Contains(t, errOut, `document id "d7"`)

	saved := filepath.Join(dir, "saved")
	code, out, errOut := runCLI(t, "", "salvage", "--dir", data, "--to", saved)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, fmt.Sprintf("salvaged %d documents", 31+shardstate.StateCopies), "29, the state document, its copies and the lease format's marker")
	assert.Contains(t, errOut, `"d7"`)
	cfg2 := writeFile(t, dir, "c2.yaml", "store: {kind: embedded, path: "+saved+"}\n"+threeUsers)
	requireCount(t, cfg2, 29)

	require.NoError(t, os.WriteFile(db, nil, 0o600))
	code, _, errOut = runCLI(t, "", "state", "show", "-c", cfg)
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, "the file is empty")
}

// The reproducer of issue 17: a second process on one store waited 5 s
// and said "timeout". A read-only command says which file another process
// holds, and how to reach the store; read-only commands share the store
// with each other.
func TestStoreHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := embedded(t, dir, threeUsers)
	code, _, errOut := runCLI(t, `{"id":"a","userId":"u1"}`+"\n", "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)

	reader, err := memstore.Open(data, &memstore.Options{ReadOnly: true})
	require.NoError(t, err)
	code, out, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT VALUE c.id FROM c")
	require.Equal(t, 0, code, "read-only commands share the store: %s", errOut)
	assert.Equal(t, "\"a\"\n", out)
	require.NoError(t, reader.Close())

	writer, err := memstore.Open(data, nil)
	require.NoError(t, err)
	defer writer.Close()
	for _, args := range [][]string{
		{"query", "-c", cfg, "SELECT * FROM c"},
		{"state", "show", "-c", cfg},
		{"verify", "-c", cfg},
		{"locate", "-c", cfg, "u1"},
	} {
		code, _, errOut = runCLI(t, "", args...)
		require.Equal(t, 1, code, args)
		assert.Contains(t, errOut, filepath.Join(data, "docshard.db")+" is held by another process: another process has it open for writing", args)
		assert.Contains(t, errOut, "docshard serve", "how to reach it")
	}
}

// TestBinaryUsage runs the built binary as a user does: the version on
// stdout, a usage error on stderr with exit code 2, a runtime error with 1.
func TestBinaryUsage(t *testing.T) {
	bin := docshardBinary(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		require.NoError(t, err, args)
		assert.True(t, strings.HasPrefix(string(out), "docshard "), "%q", out)
	}
	var stdout, stderr strings.Builder
	cmd := exec.Command(bin, "query")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Empty(t, stdout.String())
	assert.Contains(t, stderr.String(), "docshard: query: missing SQL")

	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command(bin, "query", "-c", filepath.Join(t.TempDir(), "missing.yaml"), "SELECT 1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.ErrorAs(t, cmd.Run(), &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "missing.yaml")
}

// TestChangesCommand: `changes` prints every loaded document once as a
// JSON line and exits; with --token-file a second run prints only what
// was loaded since; --from-now prints nothing; usage mistakes exit 2.
func TestChangesCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := embedded(t, dir, threeU)
	lines := func(from, to int) string { return userLines(from, to, 7) }
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
