package testserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/docshard/docshard/internal/testserver"
)

// TestStopMakesItNew: a server stopped in one test's cleanup is started
// afresh by the next Get (go test -count 3 ran TestReshardOnCosmium's
// second round against the stopped cosmium: connection refused).
func TestStopMakesItNew(t *testing.T) {
	var sh testserver.Shared[int]
	starts, stops := 0, 0
	start := func() (int, error) { starts++; return starts, nil }
	assert.Equal(t, 1, sh.Get(t, "n", start))
	assert.Equal(t, 1, sh.Get(t, "n", start), "started once")
	sh.Stop(func(int) { stops++ })
	assert.Equal(t, 2, sh.Get(t, "n", start), "started again after Stop")
	sh.Stop(func(int) { stops++ })
	sh.Stop(func(int) { stops++ })
	assert.Equal(t, 2, stops, "a stopped server is not stopped twice")
}
