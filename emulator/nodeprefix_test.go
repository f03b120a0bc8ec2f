package emulator_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// TestNodeSDKPrefixChangeFeed runs testdata/nodesdk/prefixfeed.js: the
// official Node.js SDK reads the change feed under a prefix of a
// hierarchical key (x-ms-start-epk and x-ms-end-epk over the one range),
// from the beginning and resumed, and sees only the documents under it.
// It needs node and the SDK, as TestNodeSDK does (nodeSDK).
func TestNodeSDKPrefixChangeFeed(t *testing.T) {
	node, modules := nodeSDK(t)
	srv := emulatortest.Start(t, nil)
	runCheckScript(t, []string{"NODE_PATH=" + modules}, node, "nodesdk", "prefixfeed.js", srv.Endpoint, srv.Key)
}

// nodeSDK returns the node interpreter and the node_modules directory with
// @azure/cosmos that DOCSHARD_NODE_MODULES names (scripts/nodesdk
// installs the pinned SDK and prints it), or skips the test, saying which
// is missing.
func nodeSDK(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (not on PATH), so the Node.js SDK check cannot run; scripts/check runs it where node and npm exist")
	}
	modules = os.Getenv("DOCSHARD_NODE_MODULES")
	if modules == "" {
		t.Skip("set DOCSHARD_NODE_MODULES to a node_modules directory with @azure/cosmos (scripts/nodesdk installs the pinned one and prints it) to run the Node.js SDK against the emulator")
	}
	return node, modules
}
