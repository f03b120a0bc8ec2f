package transition

import (
	"context"
	"log/slog"
	"time"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// RetryPolicy bounds a reshard's retries of failed store calls. A reshard
// runs every store call through the project's one retry layer (package
// store/retry; its policy, classifier and defaults are in
// store/retry/policy.go): throttled calls and calls that never reached the
// store are retried, and so are calls whose outcome is unknown
// (store.ErrUnavailable) when they are safe to repeat, which every call of
// a reshard is: copies are upserts, removals are conditional, reads and
// feeds are reads, and its shared-state writes recognise their own earlier
// attempt. The zero value means retry.Policy's defaults (9 attempts, waits
// doubling from 100 ms to 1 s, the store's retry-after where it gives one,
// at most 30 s of waiting per call).
type RetryPolicy struct {
	retry.Policy
	// Attempts is MaxAttempts under its older name; when set it wins.
	//
	// Deprecated: set Policy.MaxAttempts.
	Attempts int
	// FirstWait is DefaultWait under its older name; when set it wins.
	//
	// Deprecated: set Policy.DefaultWait.
	FirstWait time.Duration
}

// policy is p as a retry.Policy.
func (p RetryPolicy) policy() retry.Policy {
	out := p.Policy
	if p.Attempts > 0 {
		out.MaxAttempts = p.Attempts
	}
	if p.FirstWait > 0 {
		out.DefaultWait = p.FirstWait
	}
	return out
}

// newRetrying returns st as a reshard works through it: under the retry
// layer with p, every retry logged at Debug, every capability of st kept.
// Every call is Repeatable: the reshard takes a refusal after an unknown
// outcome for what it is (a removal's not-found is done, a copy's failed
// precondition is a newer write, a state change's conflict is checked
// against its own write), as it did before the one layer.
func newRetrying(st store.Store, p RetryPolicy, log *slog.Logger) store.Store {
	return retry.Wrap(st, &retry.Options{Policy: p.policy(), Repeatable: true, Hooks: retry.Hooks{
		Retry: func(ctx context.Context, l, op string, attempt int, wait time.Duration, err error) {
			log.DebugContext(ctx, "reshard retrying a store call", "op", op, "link", l, "attempt", attempt, "wait", wait, "error", err)
		},
	}})
}
