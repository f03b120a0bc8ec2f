package emulator_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// TestNodeSDK runs testdata/nodesdk/check.js, a client on the official
// Node.js SDK (@azure/cosmos), against the emulator. It needs node and the
// SDK in the node_modules directory DOCSHARD_NODE_MODULES names, which
// scripts/check installs (scripts/nodesdk: the version testdata/nodesdk's
// package-lock.json pins, with npm ci) when node and npm exist:
//
//	DOCSHARD_NODE_MODULES=$(scripts/nodesdk) go test -run TestNodeSDK -v ./emulator
//
// Without node, or without the variable, it skips and says which.
func TestNodeSDK(t *testing.T) {
	node, modules := nodeSDK(t)
	manifest, err := os.ReadFile(filepath.Join(modules, "@azure", "cosmos", "package.json"))
	require.NoError(t, err, "DOCSHARD_NODE_MODULES holds no @azure/cosmos")
	var pkg struct{ Version string }
	require.NoError(t, json.Unmarshal(manifest, &pkg))
	version, err := exec.Command(node, "--version").Output()
	require.NoError(t, err)
	t.Logf("@azure/cosmos %s on node %s", pkg.Version, version)

	srv := emulatortest.Start(t, nil)
	runCheckScript(t, []string{"NODE_PATH=" + modules}, node, "nodesdk", "check.js", srv.Endpoint, srv.Key)
}
