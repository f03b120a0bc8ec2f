// Package proctest runs the test binary again as a child process, for tests
// that need several processes (routers, writers, a reshard killed with
// SIGKILL): the child is a test function that the parent selects with
// -test.run and that skips itself unless its environment says it is the
// child; the parent talks to it by lines on stdin and stdout.
package proctest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Proc is a running child.
type Proc struct {
	Cmd   *exec.Cmd
	Stdin io.WriteCloser
	// Lines are the child's stdout lines; closed when it ends. Up to 65,536
	// are buffered, so a child never blocks on a parent that reads late.
	Lines <-chan string

	eof chan struct{} // closed when stdout has been read to its end
}

// Start runs the test binary's test named test (an exact name) as a child,
// with env added to this process's environment; its stderr is this
// process's. When the test ends, the child's stdin is closed and it is
// given 10 seconds to exit before it is killed.
func Start(t testing.TB, test string, env ...string) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.v=false")
	cmd.Env = append(os.Environ(), env...)
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
