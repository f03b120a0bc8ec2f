package managed

import (
	"context"
	"errors"
	"fmt"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/retry"
	"github.com/docshard/docshard/transition"
)

// ErrNotManaged: the database's shared state routes by another kind of
// resolver than a managed one.
var ErrNotManaged = errors.New("managed: the database's resolver is not a managed one")

// ErrPartitionKeyPath: a collection the resolver names exists partitioned
// by another path than the template's (a *store.KeyPathError wraps it). It
// is store.ErrKeyPathMismatch, the one sentinel of that rule.
var ErrPartitionKeyPath = store.ErrKeyPathMismatch

// Ensure creates every collection r names that does not exist, from r's
// template, and returns those it created, through store.EnsureCollections
// (the one conflict rule): an existing collection partitioned by another
// path is a *store.KeyPathError, wrapping ErrPartitionKeyPath. Calling it
// again after an error finishes the job. Cost: a create per collection,
// and a collection-info read per existing one, up to 8 at once.
func Ensure(ctx context.Context, st store.Store, r *Resolver) ([]string, error) {
	w, err := router.WantedCollections(r.db, r, nil)
	if err != nil {
		return nil, fmt.Errorf("managed: %w", err)
	}
	// Through the one retry layer (never a second); a create whose outcome
	// was unknown is sent again, and EnsureCollections takes its conflict
	// for the collection it made.
	created, err := store.EnsureCollections(retry.Repeatable(ctx), retry.Ensure(st), w)
	if err != nil {
		return created, fmt.Errorf("managed: %w", err)
	}
	return created, nil
}

// Current returns the managed resolver a database routes by: its shared
// state's, or, while a reshard between two managed resolvers is under way,
// the one it moves to. Other kinds are an error wrapping ErrNotManaged.
// Cost: a state read.
func Current(ctx context.Context, st store.Store, dbLink string) (*Resolver, error) {
	s, err := shardstate.Load(ctx, st, dbLink)
	if err != nil {
		return nil, fmt.Errorf("managed: %w", err)
	}
	rv, err := s.Decode()
	if err != nil {
		return nil, fmt.Errorf("managed: %s version %d: %w", s.Database, s.Version, err)
	}
	if t, ok := rv.(*transition.Resolver); ok && t.Next().Resolver != nil {
		rv = t.Next().Resolver
	}
	r, ok := rv.(*Resolver)
	if !ok {
		return nil, fmt.Errorf("%w: %s (version %d)", ErrNotManaged, s.Database, s.Version)
	}
	return r, nil
}

// Resize moves a database routed by a managed resolver to count
// collections: it creates the new ones from the template and reshards
// through transition.Reshard (opts as it takes them; Spec is the
// template), under live traffic, resumably: call it again after a crash
// and it finishes. A count equal to the current one finishes a reshard
// under way, or does nothing. Cost: a reshard's.
func Resize(ctx context.Context, st store.Store, dbLink string, count int, opts *transition.ReshardOptions) (*transition.Progress, error) {
	cur, err := Current(ctx, st, dbLink)
	if err != nil {
		return nil, err
	}
	next := cur
	if count != cur.Count() {
		if next, err = cur.WithCount(count); err != nil {
			return nil, err
		}
	}
	if _, err := Ensure(ctx, st, next); err != nil {
		return nil, err
	}
	o := opt.Of(opts)
	spec := next.Template()
	o.Spec = &spec
	return transition.Reshard(ctx, st, dbLink, next, &o)
}
