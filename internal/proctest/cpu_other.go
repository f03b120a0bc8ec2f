//go:build !unix

package proctest

import "time"

// CPU cannot read the process's CPU time here; see cpu_unix.go.
func CPU() (time.Duration, bool) { return 0, false }
