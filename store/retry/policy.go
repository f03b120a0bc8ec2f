package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/store"
)

// This file is the whole retry policy of docshard: which failed store
// calls are tried again (the classifier), how long to wait before each
// attempt (the backoff, or the store's retry-after), and when to stop. Every
// store call the project makes (the router, a reshard, the spillover
// coordinator, the shared state) goes through a Store of this package, so a
// change here changes them all.

// Policy bounds the retries of one store call. The zero value means the
// defaults given with each field.
//
// Which failures are retried is not a setting: it is the classifier
// (Retryable), the same for every caller.
type Policy struct {
	// MaxAttempts is the most attempts per call, the first included; 0
	// means 9. 1 disables retries.
	MaxAttempts int
	// MaxWait caps the total time spent waiting between the attempts of
	// one call; 0 means 30 seconds. A wait that would exceed it (the
	// store's retry-after, or the backoff) ends the retries with the last
	// error.
	MaxWait time.Duration
	// DefaultWait is the first wait when the store gives no retry-after;
	// each later one doubles, up to MaxBackoff, and is jittered down by up
	// to half (so that callers failed together do not retry together). 0
	// means 100 ms.
	DefaultWait time.Duration
	// MaxBackoff caps one wait of the backoff (not the store's
	// retry-after, which is honoured as given); 0 means 1 second.
	MaxBackoff time.Duration
}

// The defaults of Policy's zero fields.
const (
	DefaultMaxAttempts = 9
	DefaultMaxWait     = 30 * time.Second
	DefaultFirstWait   = 100 * time.Millisecond
	DefaultMaxBackoff  = time.Second
)

// WithDefaults returns p with its zero (or negative) fields set to the
// defaults.
func (p Policy) WithDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultMaxWait
	}
	if p.DefaultWait <= 0 {
		p.DefaultWait = DefaultFirstWait
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.DefaultWait)
	return p
}

// Backoff returns the wait before retry n (1 for the first retry) of a
// call whose store gave no retry-after: DefaultWait doubled n-1 times,
// capped at MaxBackoff, then jittered into its upper half. p must have
// its defaults (WithDefaults).
func (p Policy) Backoff(n int) time.Duration {
	w := p.DefaultWait
	for i := 1; i < n && w < p.MaxBackoff; i++ {
		w *= 2
	}
	w = min(w, p.MaxBackoff)
	if half := w / 2; half > 0 {
		w = half + rand.N(half+1)
	}
	return w
}

// Next decides on a failed attempt: whether to try the call again and
// after how long. attempt is the number of attempts made so far, waited
// the time already spent waiting between them, err the last attempt's
// error, repeatable whether the call may be sent again when its outcome is
// unknown (see Retryable). p must have its defaults (WithDefaults).
func (p Policy) Next(attempt int, waited time.Duration, err error, repeatable bool) (time.Duration, bool) {
	if attempt >= p.MaxAttempts || !Retryable(err, repeatable) {
		return 0, false
	}
	wait, ok := store.RetryAfter(err)
	if !ok || wait <= 0 {
		wait = p.Backoff(attempt)
	}
	if waited+wait > p.MaxWait {
		return 0, false
	}
	return wait, true
}

// Retryable is the classifier: whether a call that failed with err may be
// sent again. It follows etcd clientv3's retry interceptor: a call is
// repeatable or not, and
//
//   - a throttled call (store.ErrThrottled: the service refused it and did
//     not apply it) is retried whatever it is;
//   - a call that was never sent (the connection could not be opened: a
//     dial error, a refused connection) is retried whatever it is;
//   - a transient failure whose outcome is unknown (store.ErrUnavailable:
//     a timeout, a reset connection, a 5xx answer) is retried only when
//     the call is repeatable;
//   - nothing else is retried: a refusal (not found, conflict, a failed
//     precondition, a bad request, too large, fenced, over quota) would be
//     refused again, and the caller's context ending ends the call.
//
// A call is repeatable when sending it twice leaves the store as sending
// it once: reads, queries, feeds, change feeds, collection reads, upserts,
// replaces (the same body), conditional deletes (If-Match), fence raises
// (a maximum) and batches made only of those. A plain Create (a second
// attempt would report a conflict for a document the first one wrote), an
// unconditional Delete (a second attempt would report not found),
// CreateCollection and DeleteCollection are not, unless the caller marks
// its context with Repeatable (it handles that conflict or not-found as
// success). A store that was closed (store.ErrClosed) is not
// retried either.
//
// A write retried after an unknown outcome may be refused (not found, a
// failed precondition, a conflict) because the first attempt was applied:
// the layer then returns the unknown outcome (an error wrapping the first
// attempt's store.ErrUnavailable), never the refusal, so a caller never
// takes a write that landed for one that did not (see Refusal). A caller
// that recognises its own write in a refusal marks its context with
// Repeatable and gets the refusal itself.
func Retryable(err error, repeatable bool) bool {
	switch {
	case err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, store.ErrThrottled), notSent(err):
		return true
	case errors.Is(err, store.ErrUnavailable):
		return repeatable && !errors.Is(err, store.ErrClosed)
	}
	return false
}

// OutcomeUnknown reports whether a write that failed with err may have
// been applied all the same: a transient failure (store.ErrUnavailable: a
// timeout, a reset connection, a 5xx answer) of a request that was sent. A
// throttled call was not applied; a call that was never sent was not
// either.
func OutcomeUnknown(err error) bool {
	return errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrThrottled) && !notSent(err)
}

// Refusal reports whether err is an answer that a write's second attempt
// gets when its first was applied: not found (a delete, or a replace of a
// document the first attempt deleted), a failed precondition (If-Match on
// the ETag the first attempt changed) or a conflict (a create). After an
// unknown outcome such a refusal does not mean "not applied", so the layer
// reports the unknown outcome instead, unless the caller marked its context
// with Repeatable (it recognises its own write).
func Refusal(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrPreconditionFailed) || errors.Is(err, store.ErrConflict)
}

// always is the repeatability of writes that are always repeatable
// (replace, upsert, a fence raise).
func always() bool { return true }

// notSent reports whether err says the request never left: the connection
// was not opened (any dial error: refused, no route, a name that does not
// resolve), so the service cannot have applied it.
func notSent(err error) bool {
	var oe *net.OpError
	return (errors.As(err, &oe) && oe.Op == "dial") || errors.Is(err, syscall.ECONNREFUSED)
}

type repeatableKey struct{}

// Repeatable marks calls made with the returned context as repeatable
// whatever they are: the caller handles the conflict (or not-found) that a
// second attempt of a create (or unconditional delete) reports when the
// first one was applied, as etcd's WithRepeatablePolicy does. Cost: looked
// up only when a call fails with an unknown outcome.
func Repeatable(ctx context.Context) context.Context {
	return context.WithValue(ctx, repeatableKey{}, true)
}

type guardKey struct{}

// Guard makes every later attempt of a call made with the returned
// context ask check first: a non-nil error stops the retries, and the call
// returns it (wrapping the last attempt's failure too). The router guards
// a followed database's writes with its lease, so a write throttled past
// the moment its router's lease lapsed is not sent again (docs/design.md,
// "The residual window on Cosmos DB"). The first attempt is not checked:
// the caller checked before it. Cost: one call of check per retry.
func Guard(ctx context.Context, check func() error) context.Context {
	return context.WithValue(ctx, guardKey{}, check)
}

// guardOf returns the check Guard set on ctx, or nil.
func guardOf(ctx context.Context) func() error {
	g, _ := ctx.Value(guardKey{}).(func() error)
	return g
}

// marked reports whether ctx was marked with Repeatable.
func marked(ctx context.Context) bool {
	v, _ := ctx.Value(repeatableKey{}).(bool)
	return v
}

// The repeatability of each call of store.Store and its capabilities.
// Calls not listed here are repeatable.

// createRepeatable: a plain create is not (its second attempt reports a
// conflict for the document its first wrote).
func createRepeatable(ctx context.Context) bool { return marked(ctx) }

// deleteRepeatable: a delete is when conditional (If-Match): its second
// attempt is refused (not found, precondition) without a side effect.
func deleteRepeatable(ctx context.Context, o *store.WriteOptions) bool {
	return (o != nil && o.IfMatch != "") || marked(ctx)
}

// collectionRepeatable: creating or deleting a collection is not.
func collectionRepeatable(ctx context.Context) bool { return marked(ctx) }

// batchRepeatable: a batch is when every operation is.
func batchRepeatable(ctx context.Context, ops []store.BatchOp) bool {
	if marked(ctx) {
		return true
	}
	for _, op := range ops {
		switch {
		case op.Kind == store.BatchCreate, op.Kind == store.BatchDelete && op.IfMatch == "",
			op.Kind == store.BatchPatch && op.IfMatch == "" && !docpatch.Repeatable(op.Patch):
			return false
		}
	}
	return true
}

// patchRepeatable: a patch is when conditional on an ETag, or when it
// only sets values.
func patchRepeatable(ctx context.Context, ops []store.PatchOp, o *store.PatchOptions) bool {
	return (o != nil && o.IfMatch != "") || docpatch.Repeatable(ops) || marked(ctx)
}
