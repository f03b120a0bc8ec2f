// Package procid names the running process for records other processes
// read: who made a state version, which router holds a lease.
package procid

import (
	"os"
	"strconv"
)

// Identity returns "host/pid": how docshard names this process in the
// shared state (a version's UpdatedBy, a router lease's id) unless told
// otherwise. Cost: a hostname lookup.
func Identity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + "/" + strconv.Itoa(os.Getpid())
}
