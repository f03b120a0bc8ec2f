package proctest_test

import (
	"bufio"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/proctest"
)

// TestEchoChild is the child of TestStartAndChild: it says its
// environment's WORD, then echoes each line of stdin until it closes.
func TestEchoChild(t *testing.T) {
	proctest.Child(t)
	proctest.Say("word %s", os.Getenv("WORD"))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		proctest.Say("echo %s", in.Text())
	}
}

// TestStartAndChild: a child started by Start runs its test (Child lets it
// through), sees the environment Start passed, and talks by lines both
// ways; this process is no child, so IsChild says so; Kill ends the child
// with every line it said read.
func TestStartAndChild(t *testing.T) {
	require.False(t, proctest.IsChild(t))
	p := proctest.Start(t, "TestEchoChild", "WORD=hello")
	assert.Equal(t, "word hello", <-p.Lines)
	p.Send(t, "one")
	assert.Equal(t, "echo one", <-p.Lines)
	p.Send(t, "two")
	assert.Equal(t, "echo two", <-p.Lines)
	p.Kill()
	for line := range p.Lines {
		t.Errorf("a line after Kill returned: %q", line)
	}
}

// TestBuild builds a command once: the second call returns the same
// binary.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	bin := proctest.Build(t, "github.com/docshard/docshard/cmd/docshard")
	info, err := os.Stat(bin)
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&0o111, "executable")
	assert.Equal(t, bin, proctest.Build(t, "github.com/docshard/docshard/cmd/docshard"))
}

// TestStartServe: docshard serve runs as a process of its own, prints a
// loopback endpoint that answers (an unsigned request is refused, as
// Cosmos DB refuses it), and Kill ends it.
func TestStartServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build and docshard serve")
	}
	s := proctest.StartServe(t, t.TempDir())
	require.True(t, strings.HasPrefix(s.Endpoint, "http://127.0.0.1:"), s.Endpoint)
	resp, err := http.Get(s.Endpoint + "dbs")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	s.Kill()
	_, err = http.Get(s.Endpoint + "dbs")
	assert.Error(t, err, "serve is gone")
	s.Kill() // again: a no-op
}
