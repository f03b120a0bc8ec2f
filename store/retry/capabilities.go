package retry

import (
	"context"

	"github.com/docshard/docshard/store"
)

// The optional capabilities of package store, each retried under the
// Store's policy. Wrap (through capabilities_gen.go, which
// internal/storecap/capgen writes from store/capabilities.go) gives a
// wrapped store exactly the capabilities of the store it wraps: adding a
// capability to package store means running go generate here and writing
// its methods below (on the type capgen declares, named after the
// interface, lower-cased, with "Cap"), else this package does not compile
// and its capability test fails.

//go:generate go run ../../internal/storecap/capgen retry Store ../capabilities.go capabilities_gen.go

// ReadChanges implements store.ChangeFeeder under the policy: a change-feed
// read is repeatable.
func (c changeFeederCap) ReadChanges(ctx context.Context, l string, opts *store.ChangeFeedOptions) (*store.ChangePage, error) {
	return do(ctx, c.s, l, "read changes", nil, func(ctx context.Context) (*store.ChangePage, error) {
		return c.c.ReadChanges(ctx, l, opts)
	})
}

// RaiseFence implements store.Fencer under the policy: raising a fence keeps
// the maximum, so it is repeatable, and so is reading one.
func (c fencerCap) RaiseFence(ctx context.Context, dbLink string, epoch int64) (int64, error) {
	return do(ctx, c.s, dbLink, "raise fence", always, func(ctx context.Context) (int64, error) {
		return c.c.RaiseFence(ctx, dbLink, epoch)
	})
}

// Fence implements store.Fencer.
func (c fencerCap) Fence(ctx context.Context, dbLink string) (int64, error) {
	return do(ctx, c.s, dbLink, "read fence", nil, func(ctx context.Context) (int64, error) {
		return c.c.Fence(ctx, dbLink)
	})
}

// ExecuteBatch implements store.Batcher under the policy: a batch is
// repeatable when every operation is (no create, no unconditional delete, no
// unconditional patch but one that only sets values).
func (c batcherCap) ExecuteBatch(ctx context.Context, l string, partitionKey any, ops []store.BatchOp, opts *store.BatchOptions) ([]store.BatchResult, error) {
	return do(ctx, c.s, l, "batch", func() bool { return batchRepeatable(ctx, ops) }, func(ctx context.Context) ([]store.BatchResult, error) {
		return c.c.ExecuteBatch(ctx, l, partitionKey, ops, opts)
	})
}

// ReplaceCollection implements store.Replacer under the policy: replacing a
// collection's settings with the same spec again leaves what doing it once
// does, so it is repeatable.
func (c replacerCap) ReplaceCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	_, err := do(ctx, c.s, l, "replace collection", always, func(ctx context.Context) (none, error) {
		return none{}, c.c.ReplaceCollection(ctx, l, spec)
	})
	return err
}

// Patch implements store.Patcher under the policy: a patch is repeatable
// when conditional on an ETag (its second attempt is refused, without a side
// effect) or when every operation sets a value (docpatch.Repeatable).
func (c patcherCap) Patch(ctx context.Context, l, id string, ops []store.PatchOp, opts *store.PatchOptions) (*store.Document, error) {
	return do(ctx, c.s, l, "patch", func() bool { return patchRepeatable(ctx, ops, opts) }, func(ctx context.Context) (*store.Document, error) {
		return c.c.Patch(ctx, l, id, ops, opts)
	})
}

// ReadMany implements store.ManyReader under the policy: a read is
// repeatable.
func (c manyReaderCap) ReadMany(ctx context.Context, l string, items []store.ItemRef) ([]*store.Document, error) {
	return do(ctx, c.s, l, "read many", nil, func(ctx context.Context) ([]*store.Document, error) {
		return c.c.ReadMany(ctx, l, items)
	})
}
