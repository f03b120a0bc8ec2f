package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReshardInterrupted: Ctrl-C (SIGINT) in a reshard's copy stops it
// with exit 1 and a message that says what to do next: run the same
// command again to resume, or --abort. Running it again finishes the
// reshard, every document once where the next resolver puts it.
func TestReshardInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	bin := docshardBinary(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", oneRing)
	next := writeFile(t, dir, "next.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1","dbs/app/colls/u2"]}`)
	var lines strings.Builder
	for i := range 400 {
		fmt.Fprintf(&lines, `{"id":"%d","userId":"user%d"}`+"\n", i, i)
	}
	code, _, errOut := runCLI(t, lines.String(), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)

	// --rate 20: the copy of about 130 moving documents takes seconds, so
	// the signal lands in it.
	cmd := exec.Command(bin, "reshard", "-c", cfg, "--next", next, "--rate", "20")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "reshard: copy ") {
			break // the copy is under way
		}
	}
	require.Contains(t, seen.String(), "reshard: copy ", "the reshard reached its copy")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stdout: %s\nstderr: %s", stdout.String(), seen.String())
	assert.Equal(t, 1, exit.ExitCode())
	msg := seen.String()
	assert.Contains(t, msg, "docshard: reshard of dbs/app stopped (interrupt signal received) with nothing lost: run the same command again to resume where it stopped, or `docshard reshard -c FILE --abort` to return to the current resolver (possible until the switch)")
	assert.Equal(t, 1, strings.Count(msg, "docshard: "), "one error line: %s", msg)

	code, out, errOut := runCLI(t, "", "reshard", "-c", cfg, "--next", next)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "dbs/app: at version")
	code, out, errOut = runCLI(t, "", "verify", "-c", cfg)
	require.Equal(t, 0, code, errOut+out)
	assert.Contains(t, out, "400 documents, each once where the resolver puts it")
}
