package router

import (
	"time"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
)

// RetryPolicy bounds the retries of the router's store calls: it is the
// policy of the project's one retry layer, package store/retry (the
// classifier, the backoff and the defaults are in store/retry/policy.go).
// Its zero value means 9 attempts per call, at most 30 seconds of waiting
// in all, the store's retry-after where it gives one and otherwise waits
// doubling from 100 ms to 1 s (jittered). Throttled calls and calls that
// never reached the store are retried whatever they are; a failure whose
// outcome is unknown (store.ErrUnavailable) only for calls that are safe
// to repeat (reads, queries, upserts, replaces, conditional deletes), so a
// create is never sent twice after an outcome the router cannot know.
type RetryPolicy = retry.Policy

// The router's store calls go through a *retry.Store (Client.st): each
// call is retried under the RetryPolicy and reported to the Hooks. Putting
// both in that one layer keeps them out of the routing code, and whatever
// else the router grows (fan-out, moves, collection management) gets them
// without writing the loop again. Its point read, the router's hottest
// call, costs nothing over the store's own when no Call or Span hook is set
// and the first attempt succeeds (retry.Store.Read): measured at 1.09x the
// store's read for hot keys, router included.

// retryOptions are the retry layer's options for a client's policy and
// hooks: the layer's hooks are the client's, which have the same shape.
func retryOptions(p RetryPolicy, h *Hooks) *retry.Options {
	return &retry.Options{Policy: p, Hooks: retry.Hooks{Span: h.Span, Call: h.Call, Retry: h.Retry}}
}

// pollStore is the store a Follower reads the shared state and renews its
// lease through: the client's policy and hooks, every capability of the
// store, and at most one poll interval of waiting per call in all, since a
// failed poll is itself tried again at the next interval (a renewal retried
// for longer would only delay the error that says why writes wait).
func (c *Client) pollStore(interval time.Duration) store.Store {
	p := c.opts.Retry
	p.MaxWait = min(p.MaxWait, interval)
	return retry.Wrap(c.raw, retryOptions(p, &c.opts.Hooks))
}

// none is the result of calls that return only an error.
type none struct{}
