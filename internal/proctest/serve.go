package proctest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Serve is a docshard serve process of the test's own: the command, built
// by Build, run as a user runs it.
type Serve struct {
	// Endpoint is what serve printed on its first stdout line:
	// http://127.0.0.1:PORT/.
	Endpoint string

	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{}
}

// StartServe builds cmd/docshard (once per test binary) and runs
// "docshard serve --dir DIR --addr 127.0.0.1:0" with args added, returning
// once serve printed its endpoint (the test fails if it printed none
// within a minute). The process is killed when the test ends; its stderr
// is kept for Stderr.
func StartServe(t testing.TB, dir string, args ...string) *Serve {
	t.Helper()
	bin := Build(t, "github.com/docshard/docshard/cmd/docshard")
	s := &Serve{cmd: exec.Command(bin, append([]string{"serve", "--dir", dir, "--addr", "127.0.0.1:0"}, args...)...),
		stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd.Env = os.Environ()
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() { // serve prints nothing more on stdout; drain it
		}
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.Kill)
	select {
	case line, ok := <-first:
		if !ok {
			t.Fatalf("proctest: docshard serve printed no endpoint; stderr: %s", s.Stderr())
		}
		s.Endpoint = line
	case <-time.After(time.Minute):
		t.Fatalf("proctest: docshard serve printed no endpoint within a minute; stderr: %s", s.Stderr())
	}
	return s
}

// Kill kills serve at once (SIGKILL on Unix) and waits for it to end.
// Killing it again is a no-op.
func (s *Serve) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Stderr is what serve wrote on stderr so far.
func (s *Serve) Stderr() string { return s.stderr.String() }

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
