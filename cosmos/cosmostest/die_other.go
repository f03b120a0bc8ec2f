//go:build !linux

package cosmostest

import "os/exec"

// dieWithParent is a no-op where the system offers no parent-death signal;
// StopShared still stops the server at the end of a normal run.
func dieWithParent(*exec.Cmd) {}
