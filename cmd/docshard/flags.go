package main

import (
	"fmt"
	"math"
	"time"
)

// Bounds of the numeric flags: each is far above any useful value and far
// below what would exhaust the process (a worker is a goroutine and a
// buffered line; a sample key about 50 bytes; a demo document about 200).
const (
	maxWorkers      = 1024
	maxPlanKeys     = 1_000_000
	maxDemoDocs     = 1_000_000
	maxShutdownWait = time.Hour
)

// flagUsage is a usage error (exit status 2) naming a flag.
func flagUsage(flag string, format string, args ...any) error {
	return exitCode{code: 2, msg: fmt.Sprintf("--%s: %s", flag, fmt.Sprintf(format, args...))}
}

// intFlag checks that an integer flag lies in [lo, hi].
func intFlag(flag string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return flagUsage(flag, "want %d to %d, got %d", lo, hi, v)
	}
	return nil
}

// rateFlag checks a rate: finite and not negative (0: no limit).
func rateFlag(flag string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return flagUsage(flag, "want a finite number of at least 0 (0: no limit), got %v", v)
	}
	return nil
}

// durationFlag checks that a duration flag lies in [0, hi].
func durationFlag(flag string, v, hi time.Duration) error {
	if v < 0 || v > hi {
		return flagUsage(flag, "want 0 to %s, got %s", hi, v)
	}
	return nil
}
