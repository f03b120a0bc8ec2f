// Package testserver holds what the packages that run servers for tests
// (emulator/emulatortest, cosmos/cosmostest) share: one server per test
// binary, started on first use and stopped from TestMain, and a context
// per test.
package testserver

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// Shared is a server a test binary starts once, on first use, for all its
// tests. The zero value is ready: Get starts it. Stop makes it new again,
// so a test that stops it in its cleanup (rather than TestMain) leaves the
// next one (go test -count 2) a server that a later Get starts afresh.
type Shared[S any] struct {
	mu      sync.Mutex
	tried   bool // start was called (since the last Stop)
	s       S
	err     error
	started bool
}

// Get returns the server, started by start on the first call (since the
// last Stop); a start that failed fails this test and every later one,
// with its error under name.
func (sh *Shared[S]) Get(t testing.TB, name string, start func() (S, error)) S {
	t.Helper()
	sh.mu.Lock()
	if !sh.tried {
		sh.tried = true
		sh.s, sh.err = start()
		sh.started = sh.err == nil
	}
	s, err := sh.s, sh.err
	sh.mu.Unlock()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// Stop calls stop on the server if it was started (from TestMain after
// the tests ran, or from a test's cleanup), and forgets it: the next Get
// starts another.
func (sh *Shared[S]) Stop(stop func(S)) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.started {
		stop(sh.s)
	}
	var zero S
	sh.tried, sh.s, sh.err, sh.started = false, zero, nil, false
}

// Context returns a context for one test's calls to a server, cancelled
// when the test ends or after two minutes.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Main is a TestMain that stops shared servers: it runs m's tests, then
// each stop (a server package's StopShared), and exits with the tests'
// code.
func Main(m *testing.M, stops ...func()) {
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	os.Exit(code)
}
