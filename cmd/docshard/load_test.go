package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

const oneRing = `store: {kind: embedded, path: data}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1]}
`

// TestLoadTooLargeLine: a line over 2 MB stops the load with its number and
// size; the lines before it are written, and the message says how many.
func TestLoadTooLargeLine(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", oneRing)
	big := `{"id":"big","userId":"u","pad":"` + strings.Repeat("x", 3<<20) + `"}`
	input := `{"id":"1","userId":"a"}` + "\n" + big + "\n" + `{"id":"3","userId":"c"}` + "\n"
	code, out, errOut := runCLI(t, input, "load", "-c", cfg, "--workers", "1", "-")
	require.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, fmt.Sprintf("standard input line 2: document too large (%d bytes, the limit is 2 MB)", len(big)))
	assert.Contains(t, errOut, "1 documents were written before the load stopped (2 lines read)")
}

// TestLoadJSON: --json prints the summary as one object.
func TestLoadJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", oneRing)
	code, out, errOut := runCLI(t, oneUserEach(40), "load", "-c", cfg, "--json", "-")
	require.Equal(t, 0, code, errOut)
	var s loadStats
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	assert.Equal(t, "dbs/app", s.Database)
	assert.EqualValues(t, 40, s.Documents)
	assert.Equal(t, 40, s.Lines)
	assert.Equal(t, []string{"dbs/app/colls/u0", "dbs/app/colls/u1"}, s.Created)
	assert.Empty(t, s.Error)
}

// TestLoadUnderTerminal runs the built binary under a pseudo-terminal, as
// a user does: loading a file shows a progress bar with the percentage of
// its bytes; load with no PATH on a terminal says it reads standard input.
func TestLoadUnderTerminal(t *testing.T) {
	bin := docshardBinary(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", oneRing)
	var lines strings.Builder
	for i := range 8000 {
		fmt.Fprintf(&lines, `{"id":"%d","userId":"user%d","pad":"%0100d"}`+"\n", i, i%300, i)
	}
	docs := writeFile(t, dir, "docs.jsonl", lines.String())

	cmd := exec.Command(bin, "load", "-c", cfg, docs)
	tty, err := pty.Start(cmd)
	require.NoError(t, err)
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, tty) // until the process ends (EIO)
	require.NoError(t, cmd.Wait())
	_ = tty.Close()
	out := screen.String()
	assert.Contains(t, out, "8000 documents loaded into dbs/app")
	// The bar writes the bytes done with their unit ("139 B/1.1 MB"), or
	// without it when both share one ("1.0/1.1 MB"); a fast load may draw
	// only its first and last frames, so the time and the count are looked
	// for on any frame.
	bar := `\d+% \|[█ ]*\| \([0-9.]+( [kM]?B)?/[0-9.]+ MB, [0-9.]+ [kM]?B/s\)`
	assert.Regexp(t, bar+` \[\d+s:\d+s\] loading`, out, "percentage, bytes of the file, rate, time taken and left")
	assert.Regexp(t, bar+`( \[\d+s:\d+s\])? loading: \d+ documents`, out, "documents written")

	cmd = exec.Command(bin, "load", "-c", cfg)
	tty, err = pty.Start(cmd)
	require.NoError(t, err)
	var hint bytes.Buffer
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 4096)
	for !strings.Contains(hint.String(), "end with Ctrl-D") && time.Now().Before(deadline) {
		_ = tty.SetReadDeadline(time.Now().Add(time.Second))
		n, _ := tty.Read(buf)
		hint.Write(buf[:n])
	}
	assert.Contains(t, hint.String(), "reading JSON lines from standard input (the terminal); end with Ctrl-D")
	_, _ = tty.Write([]byte(`{"id":"t1","userId":"x"}` + "\n\x04"))
	_ = cmd.Wait()
	_ = tty.Close()
}

// TestLoadInterrupted: Ctrl-C (SIGINT) stops a load reading a pipe that
// never ends; it exits 1 and says how many documents it wrote.
func TestLoadInterrupted(t *testing.T) {
	bin := docshardBinary(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", oneRing)
	cmd := exec.Command(bin, "load", "-c", cfg, "-")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	for i := range 100 {
		fmt.Fprintf(stdin, `{"id":"%d","userId":"user%d"}`+"\n", i, i)
	}
	time.Sleep(500 * time.Millisecond) // most likely written (not asserted); the pipe stays open
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "interrupted")
	// The count it gives is what the store holds, however far a busy
	// machine let it get.
	m := regexp.MustCompile(`(\d+) documents were written before the load stopped`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, stderr.String())
	_ = stdin.Close()
	_, err = os.Stat(filepath.Join(dir, "data"))
	require.NoError(t, err)
	code, out, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, m[1], strings.TrimSpace(out), "the documents it says it wrote are stored")
}

// TestQueryMissingStore: a query on a store that does not exist says where
// it looked, and creates nothing.
func TestQueryMissingStore(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", oneRing)
	code, _, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c")
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, "collection not found (in the embedded store at "+filepath.Join(dir, "data")+", which does not exist: is store.path right?")
	_, err := os.Stat(filepath.Join(dir, "data"))
	assert.True(t, os.IsNotExist(err), "a read-only command creates no store")
}

// TestLoadCollections: load makes the collections exist the one way, for
// every kind: a managed resolver's from its template (it says so as a
// resolver.Provisioner, no kind switch), and a collection partitioned by
// another path than the resolver's key stops the load with the one
// conflict error, naming the collection and both paths.
func TestLoadCollections(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	managedCfg := writeFile(t, dir, "managed.yaml", `
store: {kind: embedded, path: `+data+`}
databases:
  - link: dbs/app
    resolver: {kind: managed, partitionKey: /userId, database: dbs/app, collectionPrefix: m, count: 2, template: {defaultTtl: 3600}}
`)
	code, _, errOut := runCLI(t, `{"id":"1","userId":"a"}`+"\n", "load", "-c", managedCfg, "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "created collection dbs/app/colls/m0")
	assert.Contains(t, errOut, "created collection dbs/app/colls/m1")
	st, err := memstore.Open(data, nil)
	require.NoError(t, err)
	info, err := st.CollectionInfo(context.Background(), "dbs/app/colls/m1")
	require.NoError(t, err)
	require.NotNil(t, info.Spec.DefaultTTL, "created from the managed template")
	assert.Equal(t, 3600, *info.Spec.DefaultTTL)
	assert.Equal(t, "/userId", info.Spec.PartitionKeyPath)
	require.NoError(t, st.CreateCollection(context.Background(), "dbs/other/colls/u1", &store.CollectionSpec{PartitionKeyPath: "/tenant"}))
	require.NoError(t, st.Close())

	conflictCfg := writeFile(t, dir, "conflict.yaml", `
store: {kind: embedded, path: `+data+`}
databases:
  - link: dbs/other
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/other/colls/u0, dbs/other/colls/u1]}
`)
	code, _, errOut = runCLI(t, `{"id":"1","userId":"a"}`+"\n", "load", "-c", conflictCfg, "-")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "collection dbs/other/colls/u1 exists partitioned by /tenant, not by /userId")
}

// TestLoadFirstLineChecked: a first load whose first line the resolver
// cannot place (a wrong partitionKey, a JSON array) fails before the state
// and the collections are made, so fixing the configuration is enough.
// Before, the state was seeded with the wrong key and the collections
// created: the corrected file still failed naming /userid.
func TestLoadFirstLineChecked(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	conf := func(key string) string {
		return writeFile(t, dir, "c.yaml", "store: {kind: embedded, path: "+data+"}\ndatabases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: "+key+", collections: [dbs/app/colls/u0, dbs/app/colls/u1]}\n")
	}
	lines := "\n" + `{"id":"1","userId":"ann"}` + "\n" + `{"id":"2","userId":"bob"}` + "\n"

	code, _, errOut := runCLI(t, lines, "load", "-c", conf("/userid"), "-")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "standard input line 2")
	assert.Contains(t, errOut, "/userid")
	assert.Contains(t, errOut, "nothing was created")
	st, err := memstore.Open(data, nil)
	require.NoError(t, err)
	_, err = shardstate.Load(context.Background(), st, "dbs/app")
	require.ErrorIs(t, err, shardstate.ErrNoState, "no state seeded")
	colls, err := st.ListCollections(context.Background(), "dbs/app")
	require.NoError(t, err)
	assert.Empty(t, colls, "no collection created")
	require.NoError(t, st.Close())

	code, _, errOut = runCLI(t, `[{"id":"1","userId":"ann"}]`+"\n", "load", "-c", conf("/userId"), "-")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "JSON array")
	assert.Contains(t, errOut, "jq -c '.[]'")

	code, out, errOut := runCLI(t, lines, "load", "-c", conf("/userId"), "-")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "2 documents loaded"), out)
}
