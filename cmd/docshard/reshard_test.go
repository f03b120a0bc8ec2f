package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/transition"
)

// TestReshardAndVerify: load into two collections, reshard to three,
// verify; the count is unchanged; a resolver published without moving
// anything fails verify, naming documents.
func TestReshardAndVerify(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", fmt.Sprintf(`store: {kind: embedded, path: %s}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1]}
`, filepath.Join(dir, "data")))
	next := writeFile(t, dir, "next.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1","dbs/app/colls/u2"]}`)
	var lines strings.Builder
	for i := range 300 {
		fmt.Fprintf(&lines, `{"id":"%d","userId":"user%d","n":%d}`+"\n", i, i%70, i)
	}
	code, _, errOut := runCLI(t, lines.String(), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)

	code, out, errOut := runCLI(t, "", "reshard", "-c", cfg, "--next", next, "--dry-run")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "dbs/app: 300 documents", "the dry run reports on the stored documents, not sample keys")
	assert.Regexp(t, `moved: \d+ of 300 keys`, out)

	code, _, errOut = runCLI(t, "", "reshard", "-c", cfg)
	require.Equal(t, 2, code, "a usage error")
	assert.Contains(t, errOut, "--next")

	code, _, errOut = runCLI(t, "", "reshard", "-c", cfg, "--next", next, "--log-level", "loud")
	require.Equal(t, 2, code, "a usage error")
	assert.Contains(t, errOut, `--log-level "loud": want debug, info, warn or error`)

	code, out, errOut = runCLI(t, "", "reshard", "-c", cfg, "--next", next, "--log-level", "info")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "dbs/app: at version")
	assert.Contains(t, errOut, "reshard: copy ", "the copy is labelled as the copy, not as the step before it")
	assert.Contains(t, errOut, `level=INFO msg="reshard step" db=dbs/app step=done`, "the manager logs through slog")

	code, out, errOut = runCLI(t, "", "verify", "-c", cfg)
	require.Equal(t, 0, code, errOut+out)
	assert.Contains(t, out, "300 documents, each once where the resolver puts it")
	assert.Regexp(t, `dbs/app/colls/u2 +\d+ documents`, out, "per-collection counts")
	requireCount(t, cfg, 300)
	code, out, errOut = runCLI(t, "", "state", "history", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "\treshard 2 → 3 collections: started; copying the moving documents\n", "what each version changed, and why")
	assert.Contains(t, out, "\treshard 2 → 3 collections done: the moved documents removed from their sources; routes by hash over 3 collection(s): dbs/app/colls/u0,dbs/app/colls/u1,dbs/app/colls/u2\n")
	assert.Equal(t, 6, strings.Count(out, "\n"), "the first version and the reshard's five: %s", out)

	code, out, errOut = runCLI(t, "", "reshard", "-c", cfg, "--next", next)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "0 documents scanned", "already there: nothing to do")

	// Publishing a resolver by hand moves nothing: verify says so.
	four := writeFile(t, dir, "four.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1","dbs/app/colls/u2","dbs/app/colls/u3"]}`)
	code, _, errOut = runCLI(t, "", "state", "set", "-c", cfg, four)
	require.Equal(t, 0, code, errOut)
	code, out, _ = runCLI(t, "", "verify", "-c", cfg)
	require.Equal(t, 1, code)
	assert.Contains(t, out, "misplaced")
	assert.Contains(t, out, "belongs in dbs/app/colls/u3")
}

// TestVerifyWrongStore: verify of a store that holds none of the
// resolver's collections (a mistyped store.path) fails, naming the
// collections and what to check. Before, it printed "0 documents, each
// once where the resolver puts it" and exited 0.
func TestVerifyWrongStore(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", "store: {kind: embedded, path: "+filepath.Join(dir, "typo")+"}\ndatabases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1]}\n")
	code, out, errOut := runCLI(t, "", "verify", "-c", cfg)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, errOut, "holds none of the resolver's collections (2: dbs/app/colls/u0, dbs/app/colls/u1)")
	assert.Contains(t, errOut, "store.path")
	assert.NotContains(t, out, "each once")
}

// TestReshardProgressBar: on a terminal the copy is a bar with the
// percentage of the sources scanned, the count and the copies, and the
// steps after it are lines; off one, every step is a line.
func TestReshardProgressBar(t *testing.T) {
	defer func(d time.Duration) { barThrottle = d }(barThrottle)
	barThrottle = 0 // every update draws
	var buf strings.Builder
	show, done := reshardProgress(&buf, true)
	show(transition.Progress{Step: "published", Total: 1000})
	show(transition.Progress{Step: "published", Total: 1000, Scanned: 500, Copied: 170})
	show(transition.Progress{Step: "published", Total: 1000, Scanned: 600, Copied: 200})
	show(transition.Progress{Step: "copied", Total: 1000, Scanned: 1000, Copied: 340})
	done()
	out := buf.String()
	assert.Contains(t, out, " 50% |")
	assert.Contains(t, out, "(500/1000, ")
	assert.Contains(t, out, "reshard: copying, 170 copied")
	assert.Contains(t, out, "100% |")
	assert.Contains(t, out, "reshard: copied    scanned 1000 of 1000 (0/s), copied 340")

	buf.Reset()
	show, done = reshardProgress(&buf, false)
	show(transition.Progress{Step: "started"}) // before the sources are counted
	show(transition.Progress{Step: "published", Total: 1000})
	show(transition.Progress{Step: "copied", Total: 1000, Scanned: 500, Copied: 170})
	show(transition.Progress{Step: "caught-up", Total: 1000, Scanned: 500, Copied: 170, CaughtUp: 40, Rounds: 2, Behind: 15})
	done()
	assert.Equal(t, "reshard: started   scanned 0 (sources not counted yet) (0/s), copied 0, caught up 0, verified 0, removed 0\n"+
		"reshard: copy      scanned 0 of 1000 (0/s), copied 0, caught up 0, verified 0, removed 0\n"+
		"reshard: copied    scanned 500 of 1000 (0/s), copied 170, caught up 0, verified 0, removed 0\n"+
		"reshard: caught-up scanned 500 of 1000 (0/s), copied 170, caught up 40 (round 2, 15 behind), verified 0, removed 0\n", buf.String())
}

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
	code, _, errOut := runCLI(t, oneUserEach(400), "load", "-c", cfg, "-")
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

// TestPhaseSummaryOwner: a reshard's phase names its owner in the summary
// verify prints: an earlier release's phase held it; a later one keeps it
// in the progress document, so the version's author stands for it.
func TestPhaseSummaryOwner(t *testing.T) {
	for _, tc := range []struct {
		name, phase, by, want string
	}{
		{"earlier release", `{"reshard":{"step":"copy","started":"2026-11-27T10:00:00Z","owner":"h/1"}}`, "h/2", "being resharded (step copy, started 2026-11-27T10:00:00Z, by h/1)"},
		{"owner in the progress document", `{"reshard":{"step":"copy","started":"2026-11-27T10:00:00Z"}}`, "h/2", "being resharded (step copy, started 2026-11-27T10:00:00Z, by h/2)"},
		{"no author known", `{"reshard":{"step":"copy","started":"2026-11-27T10:00:00Z"}}`, "", "being resharded (step copy, started 2026-11-27T10:00:00Z)"},
		{"spillover", `{"spillover":{"opening":"dbs/a/colls/e2"}}`, "h/2", "opening its next collection dbs/a/colls/e2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, phaseSummary(json.RawMessage(tc.phase), tc.by))
		})
	}
}
