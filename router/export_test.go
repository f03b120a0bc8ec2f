package router

import (
	"context"
	"time"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/shardstate"
)

// Pause moves the follower's clock d ahead, as if its process had been
// paused for d: its lease lapses without a test waiting for it.
func (f *Follower) Pause(d time.Duration) { f.skew.Add(int64(d)) }

// DecodeWith replaces how the follower decodes a new version's resolver
// (State.Decode), for a test that makes decoding block.
func (f *Follower) DecodeWith(decode func(*shardstate.State) (resolver.Resolver, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decode = decode
}

// PollOnce polls as the follower's own goroutine does (not waiting for a
// decode, reading the state's copy where a poll does), for a test that
// steps polls one at a time.
func (f *Follower) PollOnce(ctx context.Context) error { return f.poll(ctx, false) }
