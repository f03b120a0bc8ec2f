package router

import (
	"context"
	"fmt"
	"time"

	"github.com/docshard/docshard/store"
)

// RetryPolicy bounds retries of throttled store calls (errors wrapping
// store.ErrThrottled). Nothing else is retried, so a write is never sent
// twice after an outcome the router cannot know.
type RetryPolicy struct {
	// MaxAttempts is the most attempts per call, the first included; 0
	// means 9. 1 disables retries.
	MaxAttempts int
	// MaxWait caps the total time spent waiting between the attempts of
	// one call; 0 means 30 seconds. A retry-after that would exceed it
	// ends the retries with the throttled error.
	MaxWait time.Duration
	// DefaultWait is the wait when the store gives no retry-after; 0
	// means 100 ms.
	DefaultWait time.Duration
}

// withDefaults fills the zero fields.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 9
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 30 * time.Second
	}
	if p.DefaultWait <= 0 {
		p.DefaultWait = 100 * time.Millisecond
	}
	return p
}

// retryStore is the store every router call goes through: each call is
// retried when the store throttles it, within the RetryPolicy and after the
// store's retry-after, and every attempt is reported to the Hooks. Putting
// both in one wrapper keeps them out of the routing code, and whatever
// else the router grows (fan-out, moves, collection management) gets them
// without writing the loop again.
//
// Cost: nothing over the wrapped call unless a hook is set (then one clock
// read per attempt) or the call is throttled.
type retryStore struct {
	store.Store
	policy RetryPolicy
	hooks  *Hooks
	// untimed: no Call or Span hook, so a first attempt that succeeds
	// needs nothing from the wrapper (see read).
	untimed bool
}

func newRetryStore(st store.Store, policy RetryPolicy, hooks *Hooks) *retryStore {
	return &retryStore{Store: st, policy: policy, hooks: hooks, untimed: hooks.Call == nil && hooks.Span == nil}
}

// do runs one store call under the policy. Without a Call or Span hook the
// first attempt is made here: a call that succeeds costs the wrapper's
// method, do and the closure (three calls, a few nanoseconds: the compiler
// inlines neither do's generic body nor the methods below, each over its
// budget), nothing else. fn does not escape, so the closures are not
// allocated. The point read skips even that (read).
func do[T any](ctx context.Context, s *retryStore, l, op string, fn func() (T, error)) (T, error) {
	if s.untimed {
		v, err := fn()
		if err == nil {
			return v, nil
		}
		return retry(ctx, s, l, op, fn, v, err)
	}
	return retry(ctx, s, l, op, fn, *new(T), nil)
}

// retry is do's loop: it decides on the outcome of the attempt already
// made (err, when not nil) and makes the next ones, timing each for the
// Call hook and opening each in the Span hook.
func retry[T any](ctx context.Context, s *retryStore, l, op string, fn func() (T, error), v T, err error) (T, error) {
	attempt := 0
	if err != nil {
		attempt = 1
	}
	var waited time.Duration
	for {
		if attempt > 0 || err != nil {
			wait, throttled := store.RetryAfter(err)
			if !throttled || attempt >= s.policy.MaxAttempts {
				return v, err
			}
			if wait <= 0 {
				wait = s.policy.DefaultWait
			}
			if waited+wait > s.policy.MaxWait {
				return v, err
			}
			if h := s.hooks.Retry; h != nil {
				h(l, op, attempt, wait)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return v, fmt.Errorf("router: %s %s: %w (while waiting to retry after: %w)", op, l, ctx.Err(), err)
			case <-t.C:
			}
			waited += wait
		}
		attempt++
		var start time.Time
		if s.hooks.Call != nil {
			start = time.Now()
		}
		var end func(error)
		if h := s.hooks.Span; h != nil {
			end = h(ctx, l, op)
		}
		v, err = fn()
		if end != nil {
			end(err)
		}
		if h := s.hooks.Call; h != nil {
			h(l, op, time.Since(start), err)
		}
		if err == nil {
			return v, nil
		}
	}
}

// none is the result of calls that return only an error.
type none struct{}

func (s *retryStore) CreateCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	_, err := do(ctx, s, l, "create collection", func() (none, error) {
		return none{}, s.Store.CreateCollection(ctx, l, spec)
	})
	return err
}

func (s *retryStore) DeleteCollection(ctx context.Context, l string) error {
	_, err := do(ctx, s, l, "delete collection", func() (none, error) {
		return none{}, s.Store.DeleteCollection(ctx, l)
	})
	return err
}

func (s *retryStore) ListCollections(ctx context.Context, dbLink string) ([]string, error) {
	return do(ctx, s, dbLink, "list collections", func() ([]string, error) {
		return s.Store.ListCollections(ctx, dbLink)
	})
}

func (s *retryStore) CollectionInfo(ctx context.Context, l string) (*store.CollectionInfo, error) {
	return do(ctx, s, l, "read collection", func() (*store.CollectionInfo, error) {
		return s.Store.CollectionInfo(ctx, l)
	})
}

func (s *retryStore) Create(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return do(ctx, s, l, "create", func() (*store.Document, error) {
		return s.Store.Create(ctx, l, doc, opts)
	})
}

func (s *retryStore) Read(ctx context.Context, l, id string, opts *store.ReadOptions) (*store.Document, error) {
	return do(ctx, s, l, "read", func() (*store.Document, error) {
		return s.Store.Read(ctx, l, id, opts)
	})
}

// read is Read for the router's point reads, the hottest call: without a
// Call or Span hook the first attempt is one call of the wrapped store's
// Read, with no generic dictionary, closure or wrapper call in between (the
// Go compiler inlines none of do's callers: each costs over its budget), and
// only a failed attempt goes through the retry loop.
func (s *retryStore) read(ctx context.Context, l, id string, opts *store.ReadOptions) (*store.Document, error) {
	if s.untimed {
		d, err := s.Store.Read(ctx, l, id, opts)
		if err == nil {
			return d, nil
		}
		return retry(ctx, s, l, "read", func() (*store.Document, error) {
			return s.Store.Read(ctx, l, id, opts)
		}, d, err)
	}
	return s.Read(ctx, l, id, opts)
}

func (s *retryStore) Replace(ctx context.Context, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return do(ctx, s, l, "replace", func() (*store.Document, error) {
		return s.Store.Replace(ctx, l, id, doc, opts)
	})
}

func (s *retryStore) Upsert(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return do(ctx, s, l, "upsert", func() (*store.Document, error) {
		return s.Store.Upsert(ctx, l, doc, opts)
	})
}

func (s *retryStore) Delete(ctx context.Context, l, id string, opts *store.WriteOptions) error {
	_, err := do(ctx, s, l, "delete", func() (none, error) {
		return none{}, s.Store.Delete(ctx, l, id, opts)
	})
	return err
}

func (s *retryStore) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	return do(ctx, s, l, "query", func() (*store.Page, error) {
		return s.Store.Query(ctx, l, q, opts)
	})
}

func (s *retryStore) ReadFeed(ctx context.Context, l string, opts *store.FeedOptions) (*store.Page, error) {
	return do(ctx, s, l, "read feed", func() (*store.Page, error) {
		return s.Store.ReadFeed(ctx, l, opts)
	})
}
