package fleetsim

import (
	"context"

	"github.com/docshard/docshard/store"
)

// The optional capabilities of package store, each charged. Counter.Wrap
// (through capabilities_gen.go, which internal/storecap/capgen writes from
// store/capabilities.go, as for the retry layer) gives a wrapped store
// exactly the capabilities of the store it wraps: adding a capability to
// package store means running go generate here and writing its methods
// below, else this package does not compile and its capability test fails.

//go:generate go run ../storecap/capgen fleetsim Store ../../store/capabilities.go capabilities_gen.go

// ReadChanges implements store.ChangeFeeder, charged as a page plus a point
// read per document returned.
func (c changeFeederCap) ReadChanges(ctx context.Context, l string, opts *store.ChangeFeedOptions) (*store.ChangePage, error) {
	p, err := c.c.ReadChanges(ctx, l, opts)
	var pk any
	if opts != nil {
		pk = opts.PartitionKey
	}
	var items *store.Page
	if p != nil {
		items = &store.Page{Items: p.Items}
	}
	c.s.page(ctx, Partition{l, keyText(pk)}, ChangeFeed, items, err)
	return p, err
}

// RaiseFence implements store.Fencer: a raise is charged as a write, a read
// as a point read (see Charges).
func (c fencerCap) RaiseFence(ctx context.Context, dbLink string, epoch int64) (int64, error) {
	f, err := c.c.RaiseFence(ctx, dbLink, epoch)
	c.s.c.charge(ctx, Partition{Link: dbLink}, Fence, c.s.c.charges.WriteRU(0), 0, err)
	return f, err
}

// Fence implements store.Fencer.
func (c fencerCap) Fence(ctx context.Context, dbLink string) (int64, error) {
	f, err := c.c.Fence(ctx, dbLink)
	c.s.c.charge(ctx, Partition{Link: dbLink}, Fence, c.s.c.charges.ReadRU(0), 0, err)
	return f, err
}

// ExecuteBatch implements store.Batcher: a batch costs the sum of its
// operations.
func (c batcherCap) ExecuteBatch(ctx context.Context, l string, partitionKey any, ops []store.BatchOp, opts *store.BatchOptions) ([]store.BatchResult, error) {
	res, err := c.c.ExecuteBatch(ctx, l, partitionKey, ops, opts)
	ch := &c.s.c.charges
	var ru float64
	for i, op := range ops {
		var d *store.Document
		if i < len(res) {
			d = res[i].Document
		}
		switch op.Kind {
		case store.BatchRead:
			ru += ch.ReadRU(size(d, nil))
		case store.BatchDelete:
			ru += ch.WriteRU(0)
		default:
			ru += ch.WriteRU(size(d, op.Doc))
		}
	}
	c.s.c.charge(ctx, Partition{l, pointKey(partitionKey)}, Batch, ru, 0, err)
	return res, err
}

// ReplaceCollection implements store.Replacer, counted as Metadata.
func (c replacerCap) ReplaceCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	err := c.c.ReplaceCollection(ctx, l, spec)
	c.s.metadata(ctx, l, err)
	return err
}

// Patch implements store.Patcher: a patch is charged as the write of the
// document it leaves (Cosmos DB charges a patch about as a replace).
func (c patcherCap) Patch(ctx context.Context, l, id string, ops []store.PatchOp, opts *store.PatchOptions) (*store.Document, error) {
	d, err := c.c.Patch(ctx, l, id, ops, opts)
	var pk any
	if opts != nil {
		pk = opts.PartitionKey
	}
	c.s.c.charge(ctx, Partition{l, pointKey(pk)}, Replace, c.s.c.charges.WriteRU(size(d, nil)), 0, err)
	return d, err
}

// ReadMany implements store.ManyReader: each item is charged as a point read
// of what it found, in its own logical partition.
func (c manyReaderCap) ReadMany(ctx context.Context, l string, items []store.ItemRef) ([]*store.Document, error) {
	docs, err := c.c.ReadMany(ctx, l, items)
	for i, it := range items {
		var d *store.Document
		if i < len(docs) {
			d = docs[i]
		}
		c.s.c.charge(ctx, Partition{l, pointKey(it.PartitionKey)}, PointRead, c.s.c.charges.ReadRU(size(d, nil)), 0, err)
	}
	return docs, err
}
