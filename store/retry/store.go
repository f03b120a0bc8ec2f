package retry

import (
	"context"
	"fmt"
	"time"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/store"
)

// Hooks observe the calls a Store makes. Any of them may be nil (nil costs
// nothing: the clock is not even read). They are called from the
// goroutines making the calls, so they must be safe for concurrent use and
// quick.
type Hooks struct {
	// Span is called as each attempt starts, with the caller's context,
	// the link ("dbs/{db}/colls/{coll}", or "dbs/{db}" for database calls)
	// and the operation ("create", "read", "query", ...). The attempt runs
	// with the context it returns (a tracer returns one holding its span,
	// so the backend's own spans nest under it), and the function it
	// returns is called with the attempt's outcome.
	Span func(ctx context.Context, link, op string) (context.Context, func(err error))
	// Call reports one attempt: its context (Span's, when set), link,
	// operation, latency and error.
	Call func(ctx context.Context, link, op string, latency time.Duration, err error)
	// Retry reports a failed attempt about to be retried after wait:
	// attempt is the number of attempts made, err the last one's error.
	Retry func(ctx context.Context, link, op string, attempt int, wait time.Duration, err error)
}

// Options configure a Store. A nil *Options means the default Policy and
// no hooks.
type Options struct {
	// Policy bounds the retries of each call (zero fields: the defaults).
	Policy Policy
	// Hooks observe every attempt.
	Hooks Hooks
	// Repeatable treats every call as if its context were marked with
	// Repeatable: plain creates and deletes are retried after an unknown
	// outcome too, and a refusal after an unknown outcome (not found, a
	// failed precondition, a conflict) is returned as it is, for a caller
	// that recognises its own earlier write in it (a reshard does).
	Repeatable bool
}

// Store runs each call of the store it wraps under a Policy: a call that
// fails and that the classifier (Retryable) says may be sent again is
// retried after the store's retry-after or the backoff, and every attempt
// is reported to the Hooks.
//
// A *Store has the methods of store.Store only; Wrap returns it as a
// store.Store that also offers every optional capability (store.ChangeFeeder,
// store.Fencer, store.Batcher, store.Replacer) that the wrapped store
// offers, and no other, each retried alike. Hand Wrap's value to code that
// looks for capabilities; the *Store itself is for callers that want its
// methods called directly (the router's hot path).
//
// Cost: nothing over the wrapped call unless a Span or Call hook is set
// (then a clock read per attempt) or the call fails.
type Store struct {
	inner  store.Store
	policy Policy
	hooks  Hooks
	// untimed: no Call or Span hook, so a first attempt that succeeds
	// needs nothing from the wrapper (see Read).
	untimed bool
	// repeatable: Options.Repeatable.
	repeatable bool
}

// New returns a Store that runs st's calls under opts. Use Wrap for a
// store.Store that keeps st's capabilities.
func New(st store.Store, opts *Options) *Store {
	o := opt.Of(opts)
	return &Store{inner: st, policy: o.Policy.WithDefaults(), hooks: o.Hooks, untimed: o.Hooks.Call == nil && o.Hooks.Span == nil,
		repeatable: o.Repeatable}
}

// Wrap returns st with its calls run under opts, offering exactly the
// optional capabilities st offers. Wrapping a store that Wrap returned
// wraps it again (two layers of retries): wrap the raw store once.
func Wrap(st store.Store, opts *Options) store.Store { return New(st, opts).Capable() }

// Ensure returns st when it already runs under a retry layer (a Store, or
// what Wrap returned), and otherwise Wrap(st, nil): for functions handed a
// store by their caller (package shardstate's, the spillover coordinator)
// that must retry, without a second layer under a caller's own.
func Ensure(st store.Store) store.Store {
	if s, ok := st.(*Store); ok {
		return s.Capable() // a bare *Store has no capabilities: never hide the wrapped store's
	}
	if _, ok := st.(layer); ok {
		return st
	}
	return Wrap(st, nil)
}

// layer is what every Store, and every value Wrap returns, is.
type layer interface{ retryLayer() }

func (s *Store) retryLayer() {}

// Capable returns s as a store.Store that offers exactly the optional
// capabilities of the store s wraps, each run under s's policy and hooks.
func (s *Store) Capable() store.Store { return withCapabilities(s) }

// Unwrap returns the store s wraps.
func (s *Store) Unwrap() store.Store { return s.inner }

// Policy returns s's policy, defaults filled in.
func (s *Store) Policy() Policy { return s.policy }

// do runs one call under the policy. Without a Call or Span hook the first
// attempt is made here: a call that succeeds costs the wrapper's method,
// do and the closure (three calls, a few nanoseconds), nothing else. fn
// does not escape, so the closures are not allocated. The point read
// skips even that (Read).
//
// repeatable is nil for a call without side effects (a read: any later
// answer is true), and otherwise says whether the write may be sent again
// after an unknown outcome (Retryable).
func do[T any](ctx context.Context, s *Store, l, op string, repeatable func() bool, fn func(context.Context) (T, error)) (T, error) {
	if s.repeatable && !marked(ctx) {
		ctx = Repeatable(ctx)
	}
	if s.untimed {
		v, err := fn(ctx)
		if err == nil {
			return v, nil
		}
		return loop(ctx, s, l, op, repeatable, fn, v, err)
	}
	return loop(ctx, s, l, op, repeatable, fn, *new(T), nil)
}

// loop is do's loop: it decides on the outcome of the attempt already
// made (err, when not nil) and makes the next ones, each opened in the
// Span hook and timed for the Call hook. repeatable is asked only after
// an attempt failed.
func loop[T any](ctx context.Context, s *Store, l, op string, repeatable func() bool, fn func(context.Context) (T, error), v T, err error) (T, error) {
	attempt := 0
	if err != nil {
		attempt = 1
	}
	var waited time.Duration
	var unknown error // the first failure of a write whose outcome is unknown
	for {
		if err != nil {
			if repeatable != nil {
				if unknown != nil && Refusal(err) && !marked(ctx) {
					// The refusal may be the earlier attempt's own effect
					// (a replace If-Match that landed before its answer was
					// lost is refused the second time): report the outcome
					// as unknown, never as "not applied".
					return v, fmt.Errorf("store: %s %s: the outcome of an attempt is unknown: %w (a later attempt was refused, perhaps because the first was applied: %v)", op, l, unknown, err)
				}
				if unknown == nil && OutcomeUnknown(err) {
					unknown = err
				}
			}
			wait, again := s.policy.Next(attempt, waited, err, repeatable == nil || repeatable())
			if !again {
				if attempt > 1 {
					return v, fmt.Errorf("store: %s %s failed %d times, the last: %w", op, l, attempt, err)
				}
				return v, err
			}
			if h := s.hooks.Retry; h != nil {
				h(ctx, l, op, attempt, wait, err)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return v, fmt.Errorf("store: %s %s: %w (while waiting to retry after: %w)", op, l, ctx.Err(), err)
			case <-t.C:
			}
			waited += wait
			if g := guardOf(ctx); g != nil {
				if gerr := g(); gerr != nil {
					return v, fmt.Errorf("store: %s %s: not sent again: %w (after: %w)", op, l, gerr, err)
				}
			}
		}
		attempt++
		actx := ctx
		var end func(error)
		if h := s.hooks.Span; h != nil {
			if actx, end = h(ctx, l, op); actx == nil {
				actx = ctx // a hook that returns no context keeps the caller's
			}
		}
		var start time.Time
		if s.hooks.Call != nil {
			start = time.Now()
		}
		v, err = fn(actx)
		if end != nil {
			end(err)
		}
		if h := s.hooks.Call; h != nil {
			h(actx, l, op, time.Since(start), err)
		}
		if err == nil {
			return v, nil
		}
	}
}

// none is the result of calls that return only an error.
type none struct{}

// CreateCollection implements store.Collections; it is not repeatable
// (Retryable) unless ctx is marked with Repeatable.
func (s *Store) CreateCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	_, err := do(ctx, s, l, "create collection", func() bool { return collectionRepeatable(ctx) }, func(ctx context.Context) (none, error) {
		return none{}, s.inner.CreateCollection(ctx, l, spec)
	})
	return err
}

// DeleteCollection implements store.Collections; it is not repeatable
// unless ctx is marked with Repeatable.
func (s *Store) DeleteCollection(ctx context.Context, l string) error {
	_, err := do(ctx, s, l, "delete collection", func() bool { return collectionRepeatable(ctx) }, func(ctx context.Context) (none, error) {
		return none{}, s.inner.DeleteCollection(ctx, l)
	})
	return err
}

// ListCollections implements store.Collections.
func (s *Store) ListCollections(ctx context.Context, dbLink string) ([]string, error) {
	return do(ctx, s, dbLink, "list collections", nil, func(ctx context.Context) ([]string, error) {
		return s.inner.ListCollections(ctx, dbLink)
	})
}

// CollectionInfo implements store.Collections.
func (s *Store) CollectionInfo(ctx context.Context, l string) (*store.CollectionInfo, error) {
	return do(ctx, s, l, "read collection", nil, func(ctx context.Context) (*store.CollectionInfo, error) {
		return s.inner.CollectionInfo(ctx, l)
	})
}

// Create implements store.Documents; it is not repeatable unless ctx is
// marked with Repeatable.
func (s *Store) Create(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return do(ctx, s, l, "create", func() bool { return createRepeatable(ctx) }, func(ctx context.Context) (*store.Document, error) {
		return s.inner.Create(ctx, l, doc, opts)
	})
}

// Read implements store.Documents. It is the router's hottest call:
// without a Call or Span hook the first attempt is one call of the wrapped
// store's Read, with no generic dictionary, closure or wrapper call in
// between (the Go compiler inlines none of do's callers: each costs over
// its budget), and only a failed attempt goes through the retry loop.
func (s *Store) Read(ctx context.Context, l, id string, opts *store.ReadOptions) (*store.Document, error) {
	if s.untimed {
		d, err := s.inner.Read(ctx, l, id, opts)
		if err == nil {
			return d, nil
		}
		return loop(ctx, s, l, "read", nil, func(ctx context.Context) (*store.Document, error) {
			return s.inner.Read(ctx, l, id, opts)
		}, d, err)
	}
	return do(ctx, s, l, "read", nil, func(ctx context.Context) (*store.Document, error) {
		return s.inner.Read(ctx, l, id, opts)
	})
}

// Replace implements store.Documents; it is repeatable (sending the same
// body twice leaves what sending it once does), but a refusal after an
// unknown outcome is reported as the unknown outcome (see loop).
func (s *Store) Replace(ctx context.Context, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return do(ctx, s, l, "replace", always, func(ctx context.Context) (*store.Document, error) {
		return s.inner.Replace(ctx, l, id, doc, opts)
	})
}

// Upsert implements store.Documents; it is repeatable, as Replace is.
func (s *Store) Upsert(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return do(ctx, s, l, "upsert", always, func(ctx context.Context) (*store.Document, error) {
		return s.inner.Upsert(ctx, l, doc, opts)
	})
}

// Delete implements store.Documents; it is repeatable when conditional
// (opts.IfMatch) or when ctx is marked with Repeatable.
func (s *Store) Delete(ctx context.Context, l, id string, opts *store.WriteOptions) error {
	_, err := do(ctx, s, l, "delete", func() bool { return deleteRepeatable(ctx, opts) }, func(ctx context.Context) (none, error) {
		return none{}, s.inner.Delete(ctx, l, id, opts)
	})
	return err
}

// Query implements store.Querier.
func (s *Store) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	return do(ctx, s, l, "query", nil, func(ctx context.Context) (*store.Page, error) {
		return s.inner.Query(ctx, l, q, opts)
	})
}

// ReadFeed implements store.Feeder.
func (s *Store) ReadFeed(ctx context.Context, l string, opts *store.FeedOptions) (*store.Page, error) {
	return do(ctx, s, l, "read feed", nil, func(ctx context.Context) (*store.Page, error) {
		return s.inner.ReadFeed(ctx, l, opts)
	})
}

// Close closes the wrapped store (once: it is not retried).
func (s *Store) Close() error { return s.inner.Close() }
