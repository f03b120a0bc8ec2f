//go:build linux

package cosmostest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the server die with the test binary, even when the
// binary is killed, so no server is left behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
