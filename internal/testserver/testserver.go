// Package testserver holds what the packages that run servers for tests
// (emulator/emulatortest, cosmos/cosmostest) share: one server per test
// binary, started on first use and stopped from TestMain, and a context
// per test.
package testserver

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Shared is a server a test binary starts once, on first use, for all its
// tests. The zero value is ready: Get starts it.
type Shared[S any] struct {
	once    sync.Once
	s       S
	err     error
	started bool
}

// Get returns the server, started by start on the first call; a start
// that failed fails this test and every later one, with its error under
// name.
func (sh *Shared[S]) Get(t testing.TB, name string, start func() (S, error)) S {
	t.Helper()
	sh.once.Do(func() { sh.s, sh.err = start(); sh.started = sh.err == nil })
	if sh.err != nil {
		t.Fatalf("%s: %v", name, sh.err)
	}
	return sh.s
}

// Stop calls stop on the server if it was started (from TestMain, after
// the tests ran).
func (sh *Shared[S]) Stop(stop func(S)) {
	if sh.started {
		stop(sh.s)
	}
}

// Context returns a context for one test's calls to a server, cancelled
// when the test ends or after two minutes.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
