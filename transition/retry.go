package transition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/docshard/docshard/store"
)

// retrying is the store a reshard works through: a call that fails with a
// throttle (store.ErrThrottled, after its retry-after) or a transient
// failure (store.ErrUnavailable) is tried again, up to attempts times with
// a doubling wait. Every call a reshard makes is safe to repeat: copies are
// upserts, removals are conditional, reads and feeds are reads, and a state
// change that landed before its answer was lost is recognised by the
// reshard's id. The store's change feed and fence are kept visible to type
// assertions through feed and fence.
type retrying struct {
	store.Store
	feed     store.ChangeFeeder // nil: the store has none
	fence    store.Fencer       // nil: the store has none
	attempts int
	wait     time.Duration
	log      *slog.Logger
}

// RetryPolicy bounds a reshard's retries of failed store calls. The zero
// value means 8 attempts with waits from 50 ms, doubling.
type RetryPolicy struct {
	Attempts  int
	FirstWait time.Duration
}

func newRetrying(st store.Store, p RetryPolicy, log *slog.Logger) store.Store {
	r := &retrying{Store: st, attempts: p.Attempts, wait: p.FirstWait, log: log}
	if r.attempts <= 0 {
		r.attempts = 8
	}
	if r.wait <= 0 {
		r.wait = 50 * time.Millisecond
	}
	r.feed, _ = st.(store.ChangeFeeder)
	r.fence, _ = st.(store.Fencer)
	switch {
	case r.feed != nil && r.fence != nil:
		return &struct {
			*retrying
			feedRetry
			fenceRetry
		}{r, feedRetry{r}, fenceRetry{r}}
	case r.feed != nil:
		return &struct {
			*retrying
			feedRetry
		}{r, feedRetry{r}}
	case r.fence != nil:
		return &struct {
			*retrying
			fenceRetry
		}{r, fenceRetry{r}}
	}
	return r
}

// transient reports whether err is worth another attempt.
func transient(err error) bool {
	return errors.Is(err, store.ErrThrottled) || errors.Is(err, store.ErrUnavailable)
}

// try runs fn until it succeeds, fails for good, or the attempts run out;
// the last error then says how many attempts were made.
func try[T any](ctx context.Context, r *retrying, op, link string, fn func() (T, error)) (T, error) {
	wait := r.wait
	for attempt := 1; ; attempt++ {
		v, err := fn()
		if err == nil || !transient(err) {
			return v, err
		}
		if attempt == r.attempts {
			return v, fmt.Errorf("transition: %s %s failed %d times, the last: %w", op, link, attempt, err)
		}
		d := wait
		if ra, ok := store.RetryAfter(err); ok && ra > 0 {
			d = ra
		}
		r.log.Debug("reshard retrying a store call", "op", op, "link", link, "attempt", attempt, "wait", d, "error", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, fmt.Errorf("transition: %s %s: %w (while waiting to retry: %w)", op, link, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

type none struct{}

func (r *retrying) CreateCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	_, err := try(ctx, r, "create collection", l, func() (none, error) { return none{}, r.Store.CreateCollection(ctx, l, spec) })
	return err
}

func (r *retrying) ListCollections(ctx context.Context, dbLink string) ([]string, error) {
	return try(ctx, r, "list collections", dbLink, func() ([]string, error) { return r.Store.ListCollections(ctx, dbLink) })
}

func (r *retrying) CollectionInfo(ctx context.Context, l string) (*store.CollectionInfo, error) {
	return try(ctx, r, "read collection", l, func() (*store.CollectionInfo, error) { return r.Store.CollectionInfo(ctx, l) })
}

func (r *retrying) Create(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	return try(ctx, r, "create in", l, func() (*store.Document, error) { return r.Store.Create(ctx, l, doc, o) })
}

func (r *retrying) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	return try(ctx, r, "read in", l, func() (*store.Document, error) { return r.Store.Read(ctx, l, id, o) })
}

func (r *retrying) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	return try(ctx, r, "replace in", l, func() (*store.Document, error) { return r.Store.Replace(ctx, l, id, doc, o) })
}

func (r *retrying) Upsert(ctx context.Context, l string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	return try(ctx, r, "upsert in", l, func() (*store.Document, error) { return r.Store.Upsert(ctx, l, doc, o) })
}

func (r *retrying) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	_, err := try(ctx, r, "delete in", l, func() (none, error) { return none{}, r.Store.Delete(ctx, l, id, o) })
	return err
}

func (r *retrying) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	return try(ctx, r, "query", l, func() (*store.Page, error) { return r.Store.Query(ctx, l, q, o) })
}

func (r *retrying) ReadFeed(ctx context.Context, l string, o *store.FeedOptions) (*store.Page, error) {
	return try(ctx, r, "read feed of", l, func() (*store.Page, error) { return r.Store.ReadFeed(ctx, l, o) })
}

type feedRetry struct{ r *retrying }

func (f feedRetry) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	return try(ctx, f.r, "read the change feed of", l, func() (*store.ChangePage, error) { return f.r.feed.ReadChanges(ctx, l, o) })
}

type fenceRetry struct{ r *retrying }

func (f fenceRetry) RaiseFence(ctx context.Context, dbLink string, epoch int64) (int64, error) {
	return try(ctx, f.r, "raise the fence of", dbLink, func() (int64, error) { return f.r.fence.RaiseFence(ctx, dbLink, epoch) })
}

func (f fenceRetry) Fence(ctx context.Context, dbLink string) (int64, error) {
	return try(ctx, f.r, "read the fence of", dbLink, func() (int64, error) { return f.r.fence.Fence(ctx, dbLink) })
}
