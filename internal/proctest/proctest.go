// Package proctest runs the test binary again as a child process, for tests
// that need several processes (routers, writers, a reshard killed with
// SIGKILL). The parent and the child talk by lines: the parent writes to
// the child's stdin (Proc.Send) and reads its stdout (Proc.Lines); the
// child reads os.Stdin and writes with Say.
//
// The parent side:
//
//	p := proctest.Start(t, "TestWriterChild", emulatortest.EndpointEnv+"="+srv.Endpoint, "DOCS=100")
//	for line := range p.Lines { ... }
//
// The child side is a test function of the same binary that starts with
// Child, which skips it unless Start ran this process for it (so a plain
// go test runs it as a no-op):
//
//	func TestWriterChild(t *testing.T) {
//		proctest.Child(t)
//		st, err := emulatortest.ChildBackend(ctx)
//		if err != nil {
//			proctest.Say("fatal %v", err) // the parent fails on "fatal" lines
//			return
//		}
//		proctest.Say("started")
//		...
//	}
package proctest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// childEnv names, in a child's environment, the test Start ran it for.
const childEnv = "DOCSHARD_PROCTEST_CHILD"

// Proc is a running child.
type Proc struct {
	Cmd   *exec.Cmd
	Stdin io.WriteCloser
	// Lines are the child's stdout lines; closed when it ends. Up to 65,536
	// are buffered, so a child never blocks on a parent that reads late.
	Lines <-chan string

	eof chan struct{} // closed when stdout has been read to its end
}

// Start runs the test binary's test named test (an exact name, a top-level
// test that calls Child or IsChild) as a child, with env ("NAME=value")
// added to this process's environment; its stderr is this process's. When the test ends, the child's stdin is closed and it is
// given 10 seconds to exit before it is killed.
func Start(t testing.TB, test string, env ...string) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.v=false")
	cmd.Env = append(append(os.Environ(), childEnv+"="+test), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1<<16)
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	p := &Proc{Cmd: cmd, Stdin: stdin, Lines: lines, eof: eof}
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-eof:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			select {
			case <-eof:
			case <-time.After(5 * time.Second): // a reader blocked on a full Lines nobody reads
			}
		}
		_ = cmd.Wait()
	})
	return p
}

// Send writes one line to the child's stdin.
func (p *Proc) Send(t testing.TB, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(p.Stdin, line); err != nil {
		t.Fatal(err)
	}
}

// Kill kills the child at once (SIGKILL on Unix) and waits for it to end.
// Every line it wrote before it died is read first: Wait closes the pipe,
// and must not run before the reader is done with it (os/exec).
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.eof
	_ = p.Cmd.Wait()
}

// IsChild reports whether this process is a child that Start ran for t's
// test. A test that is its own parent (it starts itself again) branches on
// it; others call Child.
func IsChild(t testing.TB) bool { return os.Getenv(childEnv) == t.Name() }

// Child skips t unless this process is a child that Start ran for t's
// test: the first call of a child's test function.
func Child(t testing.TB) {
	t.Helper()
	if !IsChild(t) {
		t.Skip("a child process of another test (internal/proctest): skipped unless that test starts it")
	}
}

var sayMu sync.Mutex

// Say writes one line to stdout, formatted as by fmt.Printf, at once (one
// write, unbuffered): the parent reads it from Proc.Lines. It is safe for
// concurrent use; lines never interleave. A child reports a failure by a
// line the parent looks for ("fatal ..." by convention) rather than by
// failing its test, whose output the parent would read as lines.
func Say(format string, args ...any) {
	line := fmt.Appendf(nil, format+"\n", args...)
	sayMu.Lock()
	defer sayMu.Unlock()
	_, _ = os.Stdout.Write(line)
}

var (
	buildMu sync.Mutex
	built   = map[string]string{} // package -> binary
)

// Build builds the main package pkg (an import path, as go build takes
// it) once per test binary, into a temporary directory, and returns the
// binary's path: for tests that run a command (docshard serve) as a
// process of its own. The first call costs a go build; the test fails if
// it fails.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := built[pkg]; ok {
		return bin
	}
	dir, err := os.MkdirTemp("", "proctest-bin-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, path.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("proctest: go build %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = bin
	return bin
}
