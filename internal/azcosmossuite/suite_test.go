package azcosmossuite_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/proctest"
)

// The suite: azcosmos's emulator tests, of the version the lists in
// testdata were established on.
const (
	suiteModule  = "github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	suiteVersion = "v1.5.0"
)

// The suite hard-codes https://localhost:8081/ (and the region endpoint
// https://127.0.0.1:8081/ it expects from the account): the copy reads the
// port from portEnv instead, so one test binary serves every port.
const (
	portEnv  = "DOCSHARD_AZCOSMOS_PORT"
	portVar  = "docshardEmulatorPort"
	portFile = "zz_docshard_port_test.go"
)

// endpointLiterals are the suite's endpoints, each with how many times
// suiteVersion's emulator tests spell it.
var endpointLiterals = map[string]int{
	`"https://localhost:8081/"`: 2,
	`"https://127.0.0.1:8081/"`: 1,
}

// strictEnv, set to 1, makes a pending test that passes an error (it is
// reported either way): for the run that moves tests between the lists.
const strictEnv = "DOCSHARD_AZCOSMOS_STRICT"

// perTestTimeout bounds one test of the suite (its -test.timeout).
const perTestTimeout = 2 * time.Minute

// TestAzcosmosEmulatorSuite runs azcosmos's own emulator tests
// (emulator*_test.go of suiteVersion) against docshard serve: it copies
// the module from the module cache (go mod download fetches it if missing),
// rewrites the copy's endpoints to read their port from portEnv, builds its
// test binary once (go test -c) and runs each listed test in a process of
// its own (a panic in one kills a combined run), with EMULATOR=1, against a
// docshard serve --self-signed of its own (the built binary, as a user runs
// it; its certificate trusted through SSL_CERT_FILE), a few at a time.
//
// Every test of testdata/passing.txt must pass, and serve must not report
// a handler panic. The tests of testdata/pending.txt run too; one that
// passes is reported (an error with DOCSHARD_AZCOSMOS_STRICT=1), so it
// moves to passing.txt. testdata/notapplicable.txt's do not run. Every
// emulator test of the suite is in exactly one list. One test alone:
//
//	go test -v -run 'TestAzcosmosEmulatorSuite/^TestItemCRUD$' ./internal/azcosmossuite
func TestAzcosmosEmulatorSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the azcosmos emulator suite builds azcosmos's test binary (go test -c) and runs 42 tests, each a process against a docshard serve of its own (about a minute); run without -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: the suite is built with go test -c")
	}
	passing := readList(t, "passing.txt", false)
	pending := readList(t, "pending.txt", true)
	notApplicable := readList(t, "notapplicable.txt", true)

	began := time.Now()
	s := prepareSuite(t)
	t.Logf("azcosmos %s copied and its test binary built in %s", suiteVersion, time.Since(began).Round(time.Millisecond))
	began = time.Now()
	checkLists(t, s.tests, map[string]map[string]string{"passing.txt": passing, "pending.txt": pending, "notapplicable.txt": notApplicable})
	serveBin := proctest.Build(t, "github.com/docshard/docshard/cmd/docshard")

	type job struct {
		name    string
		pending bool
	}
	var jobs []job
	for _, name := range sortedKeys(passing) {
		jobs = append(jobs, job{name, false})
	}
	for _, name := range sortedKeys(pending) {
		jobs = append(jobs, job{name, true})
	}
	var (
		mu         sync.Mutex
		nowPassing []string
		ran        = map[bool]int{} // pending -> how many ran
		stillFail  int
	)
	queue := make(chan job)
	var wg sync.WaitGroup
	for range min(4, runtime.NumCPU()+1) {
		wg.Go(func() {
			for j := range queue {
				t.Run(j.name, func(t *testing.T) {
					o := runTest(t, s, serveBin, j.name)
					mu.Lock()
					ran[j.pending]++
					mu.Unlock()
					switch {
					case !j.pending && !o.passed:
						t.Errorf("%s (testdata/passing.txt) failed: %s\n--- its output:\n%s\n--- serve's log:\n%s", j.name, o.why, tail(o.output), tail(o.serveLog))
					case !j.pending && o.panicked:
						t.Errorf("%s passed, but serve reported a handler panic:\n%s", j.name, tail(o.serveLog))
					case j.pending && o.passed && o.panicked:
						t.Logf("%s, pending, passes, but serve reported a handler panic:\n%s", j.name, tail(o.serveLog))
					case j.pending && o.passed:
						mu.Lock()
						nowPassing = append(nowPassing, j.name)
						mu.Unlock()
						msg := fmt.Sprintf("%s now passes: move it from testdata/pending.txt to testdata/passing.txt", j.name)
						if os.Getenv(strictEnv) == "1" {
							t.Error(msg)
						} else {
							t.Log(msg)
						}
					case j.pending:
						mu.Lock()
						stillFail++
						mu.Unlock()
						t.Logf("%s, pending (%s), still fails: %s", j.name, pending[j.name], o.why)
					}
				})
			}
		})
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	wg.Wait()
	sort.Strings(nowPassing)
	t.Logf("azcosmos %s emulator suite against docshard serve, in %s: ran %d of the %d expected to pass, and %d of the %d pending, of which %d now pass %v and %d still fail; %d do not apply",
		suiteVersion, time.Since(began).Round(time.Millisecond), ran[false], len(passing), ran[true], len(pending), len(nowPassing), nowPassing, stillFail, len(notApplicable))
}

// suite is the prepared copy of azcosmos.
type suite struct {
	dir   string   // the copy, where its tests run
	bin   string   // its test binary
	tests []string // its emulator tests
}

// prepareSuite finds suiteVersion in the module cache (downloading it if
// missing), copies it to a temporary directory, rewrites its endpoints and
// builds its test binary.
func prepareSuite(t *testing.T) *suite {
	t.Helper()
	required, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", suiteModule).Output()
	require.NoError(t, err, "go list -m %s: %s", suiteModule, stderrOf(err))
	require.Equal(t, suiteVersion, strings.TrimSpace(string(required)),
		"go.mod requires another azcosmos than the suite whose lists testdata holds: set suiteVersion to it, and run with %s=1 to establish the lists again", strictEnv)
	out, err := exec.Command("go", "mod", "download", "-json", suiteModule+"@"+suiteVersion).Output()
	var mod struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	require.NoError(t, err, "go mod download %s@%s: %s", suiteModule, suiteVersion, stderrOf(err))
	require.Empty(t, mod.Error, "go mod download %s@%s", suiteModule, suiteVersion)

	dir := filepath.Join(t.TempDir(), "azcosmos")
	require.NoError(t, os.CopyFS(dir, os.DirFS(mod.Dir)), "copying %s", mod.Dir)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode) // the module cache's files are read-only; go test -c writes nothing there, TempDir's cleanup removes them
	}))

	emulatorFiles, err := filepath.Glob(filepath.Join(dir, "emulator*_test.go"))
	require.NoError(t, err)
	require.NotEmpty(t, emulatorFiles, "%s@%s has no emulator*_test.go", suiteModule, suiteVersion)
	found := map[string]int{}
	var tests []string
	fset := token.NewFileSet()
	for _, f := range emulatorFiles {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		var lits []*ast.BasicLit // the endpoints, as whole string literals (not the text of a raw string that spells one)
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && endpointLiterals[lit.Value] > 0 {
				lits = append(lits, lit)
			}
			return true
		})
		for i := len(lits) - 1; i >= 0; i-- { // from the end, so earlier offsets hold
			lit := lits[i]
			found[lit.Value]++
			at := fset.Position(lit.Pos()).Offset
			replaced := strings.Replace(lit.Value, `8081/"`, `" + `+portVar+` + "/"`, 1)
			src = append(src[:at:at], append([]byte(replaced), src[at+len(lit.Value):]...)...)
		}
		require.NoError(t, os.WriteFile(f, src, 0o644))
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests = append(tests, fn.Name.Name)
			}
		}
	}
	require.Equal(t, endpointLiterals, found,
		"the endpoints %s@%s's emulator tests hard-code, rewritten to read the port from %s: another version needs this list (and testdata's) revised", suiteModule, suiteVersion, portEnv)
	require.NoError(t, os.WriteFile(filepath.Join(dir, portFile), []byte(`package azcosmos

import "os"

// `+portVar+` replaces the port 8081 of the suite's endpoints: the port of the
// docshard serve that docshard's TestAzcosmosEmulatorSuite started for this process.
var `+portVar+` = func() string {
	if p := os.Getenv("`+portEnv+`"); p != "" {
		return p
	}
	return "8081"
}()
`), 0o644))

	bin := filepath.Join(t.TempDir(), "azcosmos.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "go test -c in the copy of %s@%s:\n%s", suiteModule, suiteVersion, out)
	sort.Strings(tests)
	return &suite{dir: dir, bin: bin, tests: tests}
}

// outcome is how one test of the suite ended.
type outcome struct {
	passed   bool
	why      string // when not passed: the first failure line, or what went wrong
	panicked bool   // serve logged a handler panic
	output   string // the test's output (-test.v)
	serveLog string // serve's stderr
}

// runTest runs one test of the suite in a process of its own against a
// docshard serve --self-signed of its own.
func runTest(t *testing.T, s *suite, serveBin, name string) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), perTestTimeout+time.Minute)
	defer cancel()
	srv, err := startServe(ctx, serveBin, t.TempDir())
	if err != nil {
		return outcome{why: err.Error()}
	}
	cmd := exec.CommandContext(ctx, s.bin, "-test.run", "^"+name+"$", "-test.count", "1", "-test.v", "-test.timeout", perTestTimeout.String())
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "EMULATOR=1", portEnv+"="+srv.port, "SSL_CERT_FILE="+srv.cert)
	out, runErr := cmd.CombinedOutput()
	serveLog := srv.stop()
	o := outcome{output: string(out), serveLog: serveLog, panicked: strings.Contains(serveLog, "internal error answering")}
	switch {
	case runErr == nil && regexp.MustCompile(`(?m)^--- PASS: `+name+` `).Match(out):
		o.passed = true
	case runErr == nil:
		o.why = "it did not pass (skipped?)"
	default:
		o.why = fmt.Sprintf("%v: %s", runErr, firstFailure(string(out)))
	}
	return o
}

// served is a docshard serve process.
type served struct {
	cmd    *exec.Cmd
	port   string
	cert   string // the certificate to trust
	stderr *bytes.Buffer
	done   chan error
}

// startServe starts docshard serve --self-signed on a free loopback port
// over a store in dir, and reads its endpoint from stdout's first line.
func startServe(ctx context.Context, bin, dir string) (*served, error) {
	s := &served{cmd: exec.Command(bin, "serve", "--dir", dir, "--self-signed", "--addr", "127.0.0.1:0"), cert: filepath.Join(dir, "serve-cert.pem"), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	s.cmd.Stderr = s.stderr // read once Wait returned
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting docshard serve: %w", err)
	}
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
		s.done <- s.cmd.Wait()
	}()
	select {
	case line := <-first:
		u, err := url.Parse(line)
		if err != nil || u.Scheme != "https" || u.Port() == "" {
			return nil, fmt.Errorf("docshard serve's first line %q is not its https endpoint; its log: %s", line, s.stop())
		}
		s.port = u.Port()
		return s, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("docshard serve printed no endpoint: %w; its log: %s", ctx.Err(), s.stop())
	}
}

// stop ends serve with SIGTERM (SIGKILL after a minute) and returns its
// log (stderr), complete once it has exited.
func (s *served) stop() string {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return s.stderr.String()
}

// failureLine finds the first line of a go test output that says why.
var failureLine = regexp.MustCompile(`^\s*(\S+_test\.go:\d+: .*|\S+_test\.go:\d+:$|panic: .*|--- FAIL: .*)$`)

// firstFailure returns the first failure of a go test output, in one
// line: the test's line, with testify's Error and Messages lines after it.
func firstFailure(out string) string {
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !failureLine.MatchString(line) {
			continue
		}
		why := []string{strings.TrimSpace(line)}
		for _, next := range lines[i+1 : min(i+20, len(lines))] {
			field, value, _ := strings.Cut(strings.TrimSpace(next), ":")
			if field == "Error" || field == "Messages" {
				why = append(why, field+": "+strings.TrimSpace(value))
			}
		}
		return strings.Join(why, " ")
	}
	return "no failure line in its output"
}

// tail keeps the end of a long output.
func tail(s string) string {
	const max = 16 << 10
	if len(s) > max {
		return "[...]\n" + s[len(s)-max:]
	}
	return s
}

// readList reads a list of testdata: one test a line, blank lines and
// #-comments skipped; with reasons, "TestName: reason", the reason
// required.
func readList(t *testing.T, file string, reasons bool) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	list := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, ":")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
		require.Regexp(t, `^Test\w+$`, name, "testdata/%s:%d", file, i+1)
		if reasons {
			require.NotEmpty(t, reason, "testdata/%s:%d: %s needs its reason: %q", file, i+1, name, name+": why it does not pass")
		}
		require.NotContains(t, list, name, "testdata/%s:%d: %s twice", file, i+1, name)
		list[name] = reason
	}
	return list
}

// checkLists requires every emulator test of the suite in exactly one
// list, and every listed test in the suite.
func checkLists(t *testing.T, tests []string, lists map[string]map[string]string) {
	t.Helper()
	inSuite := map[string]bool{}
	for _, name := range tests {
		inSuite[name] = true
		var in []string
		for file, list := range lists {
			if _, ok := list[name]; ok {
				in = append(in, file)
			}
		}
		sort.Strings(in)
		require.Len(t, in, 1, "%s, a test of %s@%s's emulator suite, must be in exactly one of testdata/passing.txt, pending.txt (with its reason) or notapplicable.txt; it is in %v", name, suiteModule, suiteVersion, in)
	}
	for file, list := range lists {
		for name := range list {
			require.True(t, inSuite[name], "testdata/%s names %s, which is not an emulator test of %s@%s", file, name, suiteModule, suiteVersion)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// stderrOf returns what a failed command wrote on stderr.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
