//go:build unix

package hashring

import "syscall"

// cpuNanos returns the user and system CPU time of the process so far, in
// nanoseconds; false where getrusage fails. Unlike wall time it leaves out
// the time other processes hold the cores, which on a shared host is most
// of the noise.
func cpuNanos() (int64, bool) {
	var ru syscall.Rusage
	err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano(), err == nil
}
