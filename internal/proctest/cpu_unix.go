//go:build unix

package proctest

import (
	"syscall"
	"time"
)

// CPU returns the CPU time (user and system) this process has used so
// far, every goroutine included; false where it cannot be read. Benchmarks
// report it beside wall time: on a shared host, time slices lost to other
// processes inflate wall time but not CPU time.
func CPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
