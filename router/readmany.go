package router

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// ReadItem names a document for ReadMany: its id and partition key, as
// Read takes them.
type ReadItem struct {
	ID  string
	Key any
}

// ReadManyResult is ReadMany's answer for one item: the document, or
// Found false (and Document nil) when it does not exist.
type ReadManyResult struct {
	Document *store.Document
	Found    bool
}

// ReadMany reads several documents by id and partition key, as Cosmos DB's
// ReadManyItems does, and answers one result per item in the caller's
// order; a missing document is a result with Found false, not an error.
// Each item is answered as Read answers it (the first collection
// ResolveForRead names that has it). Items are grouped by the collection
// their key lives in, and the groups are read in parallel (at most
// Options.MaxDegreeOfParallelism store calls at once): each with one store
// call where the store is a store.ManyReader (the embedded store: every
// item under one lock), otherwise with a point read per item. An item whose
// key is read from several collections (a transition in read mode "both",
// a spillover) is read as Read reads it, collection after collection.
//
// A nil key is an error wrapping resolver.ErrNoPartitionKey; any store
// error other than "not found" fails the call, naming the item. Reads of
// a followed database are exact as Read's are, and refused as Read's are
// while the router's lease has lapsed.
//
// Cost: placing each key (nothing for a string key placed before), one
// store call per collection (ManyReader) or per item, and a goroutine per
// collection (per item for point reads) when there are several.
func (c *Client) ReadMany(ctx context.Context, dbLink string, items []ReadItem) ([]ReadManyResult, error) {
	e, err := c.entry(dbLink)
	if err != nil {
		return nil, err
	}
	if e.follow != nil {
		if ctx, e, err = c.beginRead(ctx, e); err != nil {
			return nil, err
		}
		defer e.inflight.Add(-1)
	}
	out := make([]ReadManyResult, len(items))
	groups := map[string][]int{} // collection -> indexes of its items
	var order []string           // the collections, in the order first named
	placed := make([]place, len(items))
	var apart []int // items read collection after collection
	for i, it := range items {
		rt, links, err := e.pl.forRead(it.Key)
		if err != nil {
			return nil, fmt.Errorf("router: ReadMany item %d (id %q): %w", i, it.ID, err)
		}
		if rt != nil {
			links = rt.links
		}
		placed[i] = place{rt: rt, links: links}
		if len(links) != 1 {
			apart = append(apart, i)
			continue
		}
		l := links[0]
		if _, ok := groups[l]; !ok {
			order = append(order, l)
		}
		groups[l] = append(groups[l], i)
	}
	mr, many := c.caps.(store.ManyReader)
	tasks := len(apart)
	if many {
		tasks += len(order)
	} else {
		tasks += len(items) - len(apart)
	}
	if tasks == 1 && len(order) == 1 && many {
		// One collection: no goroutine.
		return out, c.readGroup(ctx, mr, order[0], groups[order[0]], items, placed, out)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelism(c.opts.MaxDegreeOfParallelism, tasks))
	for _, l := range order {
		idx := groups[l]
		if many {
			g.Go(func() error { return c.readGroup(gctx, mr, l, idx, items, placed, out) })
			continue
		}
		for _, i := range idx {
			g.Go(func() error { return c.readOne(gctx, items, placed, out, i) })
		}
	}
	for _, i := range apart {
		g.Go(func() error { return c.readOne(gctx, items, placed, out, i) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// readGroup reads the items idx of collection l with one ManyReader call.
func (c *Client) readGroup(ctx context.Context, mr store.ManyReader, l string, idx []int, items []ReadItem, placed []place, out []ReadManyResult) error {
	refs := make([]store.ItemRef, len(idx))
	for j, i := range idx {
		sk, err := c.storeKey(ctx, placed[i], items[i].Key, l)
		if err != nil {
			return fmt.Errorf("router: ReadMany item %d (id %q): %w", i, items[i].ID, err)
		}
		refs[j] = store.ItemRef{ID: items[i].ID, PartitionKey: sk}
	}
	docs, err := mr.ReadMany(ctx, l, refs)
	if err != nil {
		return fmt.Errorf("router: ReadMany: %w", err)
	}
	for j, i := range idx {
		if d := docs[j]; d != nil {
			out[i] = ReadManyResult{Document: d, Found: true}
		}
	}
	return nil
}

// readOne reads item i as Read does.
func (c *Client) readOne(ctx context.Context, items []ReadItem, placed []place, out []ReadManyResult, i int) error {
	var d *store.Document
	var err error
	if p := placed[i]; p.rt != nil {
		_, d, err = c.find(ctx, p.rt, items[i].ID)
	} else {
		_, d, err = c.findIn(ctx, p.links, items[i].ID, &store.ReadOptions{PartitionKey: partitionkey.CollectionKey(items[i].Key)}, nil)
	}
	switch {
	case err == nil:
		out[i] = ReadManyResult{Document: d, Found: true}
	case !errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCollectionNotFound):
		return fmt.Errorf("router: ReadMany item %d (id %q, key %v): %w", i, items[i].ID, partitionkey.CollectionKey(items[i].Key), err)
	}
	return nil
}
