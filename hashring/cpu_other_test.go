//go:build !unix

package hashring

// cpuNanos is not measured here.
func cpuNanos() (int64, bool) { return 0, false }
