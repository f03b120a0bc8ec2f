package proctest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/proctest"
)

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
