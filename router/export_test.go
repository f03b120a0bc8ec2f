package router

import "time"

// Pause moves the follower's clock d ahead, as if its process had been
// paused for d: its lease lapses without a test waiting for it.
func (f *Follower) Pause(d time.Duration) { f.skew.Add(int64(d)) }
