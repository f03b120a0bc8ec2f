package emulator_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// TestNodeSDK runs testdata/nodesdk/check.js, a client on the official
// Node.js SDK (@azure/cosmos), against the emulator. It needs node and the
// SDK, which CI does not install, so it runs only when
// DOCSHARD_NODE_MODULES names a node_modules directory holding
// @azure/cosmos:
//
//	npm install --prefix /tmp/nodesdk @azure/cosmos@4
//	DOCSHARD_NODE_MODULES=/tmp/nodesdk/node_modules go test -run TestNodeSDK ./emulator
func TestNodeSDK(t *testing.T) {
	modules := os.Getenv("DOCSHARD_NODE_MODULES")
	if modules == "" {
		t.Skip("set DOCSHARD_NODE_MODULES to a node_modules directory with @azure/cosmos to run the Node.js SDK against the emulator")
	}
	_, err := os.Stat(filepath.Join(modules, "@azure", "cosmos"))
	require.NoError(t, err, "DOCSHARD_NODE_MODULES holds no @azure/cosmos")
	srv := emulatortest.Start(t, nil)
	script, err := filepath.Abs(filepath.Join("testdata", "nodesdk", "check.js"))
	require.NoError(t, err)
	cmd := exec.Command("node", script, srv.Endpoint, srv.Key)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
