package emulator_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// debianPython is the interpreter of Debian's python3-azure-cosmos (the
// pyenv or venv python3 first on a PATH has other packages).
const debianPython = "/usr/bin/python3"

// TestPythonSDK runs testdata/pysdk/check.py, a client on the Python SDK
// that Debian packages (python3-azure-cosmos, the v3 SDK), against the
// emulator over HTTPS, with the SDK's default settings: point operations
// under partition keys with 404, 409 and 412, queries within a key and
// across keys (filters, ORDER BY, aggregates, DISTINCT, TOP, each merged
// by the SDK from the gateway's plan where the gateway asks it to), and
// hundreds of items read in pages, each once. Each part runs as a subtest
// against a server of its own. It needs /usr/bin/python3 with
// python3-azure-cosmos, which scripts/check installs (apt-get, as root);
// without it, it skips and says so.
func TestPythonSDK(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is not installed, so the Python SDK check cannot run; scripts/check installs python3-azure-cosmos (and Debian's python3) with apt-get where it runs as root", debianPython)
	}
	version, err := exec.Command(debianPython, "-c", "import azure.cosmos.cosmos_client, importlib.metadata as m; print(m.version('azure-cosmos'))").CombinedOutput()
	if err != nil {
		t.Skipf("python3-azure-cosmos is not installed (%s cannot import azure.cosmos.cosmos_client), so the Python SDK check cannot run; scripts/check installs it with apt-get where it runs as root: apt-get install python3-azure-cosmos", debianPython)
	}
	require.True(t, strings.HasPrefix(string(version), "3."),
		"check.py speaks the v3 SDK's API (azure.cosmos.cosmos_client.CosmosClient), and %s has azure-cosmos %s: port check.py to it", debianPython, version)
	t.Logf("azure-cosmos %s on %s", strings.TrimSpace(string(version)), debianPython)

	for _, part := range pySDKParts {
		t.Run(part, func(t *testing.T) {
			srv := emulatortest.Start(t, &emulatortest.Options{TLS: true})
			args := []string{srv.Endpoint, srv.Key, "--skip", otherParts(part)}
			out := runCheckScript(t, nil, debianPython, "pysdk", "check.py", args...)
			require.Contains(t, out, "ok: "+part, "check.py ran the part")
		})
	}
}

// pySDKParts are check.py's parts (its PARTS), each a subtest of
// TestPythonSDK.
var pySDKParts = []string{"crud", "query-in-key", "query-across", "query-refused", "paging"}

// otherParts lists check.py's parts other than part, for its --skip.
func otherParts(part string) string {
	var others []string
	for _, p := range pySDKParts {
		if p != part {
			others = append(others, p)
		}
	}
	return strings.Join(others, ",")
}

// runCheckScript runs an SDK check script of testdata/DIR with an
// interpreter (env added to the test's), cancelled with the test's
// context, and requires it to succeed, reporting its output if it does
// not; it returns its output.
func runCheckScript(t *testing.T, env []string, interpreter, dir, script string, args ...string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", dir, script))
	require.NoError(t, err)
	cmd := exec.CommandContext(emulatortest.Context(t), interpreter, append([]string{path}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", filepath.Base(interpreter), filepath.Join(dir, script), out)
	return string(out)
}
