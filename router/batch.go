package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// ExecuteBatch runs a transactional batch on the documents of one
// partition key: ops (see store.BatchOp: create, read, replace, upsert,
// delete, patch) are applied in order in the one
// collection the key lives in, all together or not at all, as Cosmos DB's
// transactional batch is. It needs a store that is a store.Batcher (the
// embedded store, docshard serve, Cosmos DB); another is an error wrapping
// errors.ErrUnsupported. Results and errors are the store's: one
// store.BatchResult per operation, or a *store.BatchError naming the
// operation that failed (nothing written).
//
// Every document a create, replace or upsert writes must carry key; one
// that carries another is refused with nothing written, with a
// *store.BatchError at its index wrapping store.ErrBadRequest. Every
// store.Batcher checks this at the path its collection is partitioned by,
// which under a resolver whose key is one path is the resolver's own
// (EnsureCollections refuses a collection partitioned by another, whose
// documents keyed reads would miss): there the router leaves the check to
// the store. Where the store's check is not the resolver's (a composite
// key, whose collections may be partitioned by its first path alone; a
// resolver without a resolver.KeyDef) the router reads each document's key
// as it reads a Create's and refuses a mismatch before anything is sent. A
// nil key is an error wrapping resolver.ErrNoPartitionKey.
//
// During a reshard the batch is exact: it goes to the collection the key
// is written to and read from, and a key frozen by the cutover waits for
// the switch, as any write to it does (resolver.ErrMoving;
// FollowOptions.MovingWait), so a batch never lands half in the old
// placement and half in the new. A key the resolver reads from several
// collections is refused rather than split: under a transition that reads
// both placements of a moving key, with an error wrapping
// resolver.ErrMoving (a router following the state waits for the next
// version, as for a frozen key); under a resolver that spreads a key over
// collections (a spillover), with an error wrapping store.ErrBadRequest.
//
// Cost over the store's own ExecuteBatch: finding the resolver and
// placing the key, where it is read and where it is written (for a string
// key placed before, two route-cache lookups under one hash; otherwise the
// resolver's two placements, allocating nothing the first time a key is
// seen lately); under a composite key or a resolver without a KeyDef,
// reading the key of each document written too (raw JSON scanned only as
// far as the key).
func (c *Client) ExecuteBatch(ctx context.Context, dbLink string, key any, ops []store.BatchOp) ([]store.BatchResult, error) {
	b, ok := c.caps.(store.Batcher)
	if !ok {
		return nil, fmt.Errorf("router: ExecuteBatch in %s: the store (%T) is not a store.Batcher: %w", dbLink, c.raw, errors.ErrUnsupported)
	}
	if key == nil {
		return nil, &resolver.KeyError{Err: resolver.ErrNoPartitionKey, Reason: "a transactional batch needs its partition key"}
	}
	return guarded(c, ctx, dbLink, func(ctx context.Context, e *dbEntry) ([]store.BatchResult, error) {
		if !e.pl.storeChecksKeys() {
			if err := batchKeys(e.pl, key, ops); err != nil {
				return nil, err
			}
		}
		w, err := e.pl.writePlace(key)
		if err != nil {
			return nil, err
		}
		if !w.one() {
			return nil, splitBatch(e.pl, key, w.target, w.links)
		}
		sk, err := c.storeKey(ctx, w, key, w.target)
		if err != nil {
			return nil, err
		}
		var bo *store.BatchOptions
		if e.pl.epoch != 0 {
			bo = &store.BatchOptions{Epoch: e.pl.epoch}
		}
		return b.ExecuteBatch(ctx, w.target, sk, ops, bo)
	})
}

// storeChecksKeys reports whether a store's own check that a document
// carries a write's key is the router's: the resolver's key is one path,
// the one its collections are partitioned by.
func (pl *placement) storeChecksKeys() bool { return !pl.kd.IsZero() && !pl.kd.Composite() }

// batchKeys checks that every document a batch writes carries key
// (placement.carriesKey: a string key is compared in place, allocating
// nothing).
func batchKeys(pl *placement, key any, ops []store.BatchOp) error {
	for i, op := range ops {
		if op.Kind != store.BatchCreate && op.Kind != store.BatchReplace && op.Kind != store.BatchUpsert {
			continue
		}
		same, got, err := pl.carriesKey(op.Doc, key)
		if err == nil && same {
			continue
		}
		id := op.ID
		if id == "" {
			var d struct{ ID string }
			_ = json.Unmarshal(op.Doc, &d)
			id = d.ID
		}
		msg := fmt.Sprintf("the document's partition key (%v) is not the batch's (%v): a transactional batch writes the documents of one key", got, key)
		if err != nil {
			msg = fmt.Sprintf("the document's partition key: %v", err)
		}
		return &store.BatchError{Index: i, Err: &store.Error{Kind: store.ErrBadRequest, Op: op.Kind.String(), ID: id, Message: msg}}
	}
	return nil
}

// splitBatch is the error of a batch whose key is read from several
// collections (links), or from another than the one it is written to.
func splitBatch(pl *placement, key any, target string, links []string) error {
	where := strings.Join(links, ", ")
	if pl.owner != nil {
		return &resolver.KeyError{Key: key, Err: resolver.ErrMoving,
			Reason: fmt.Sprintf("a transactional batch runs in one collection, and the transition reads this key from %s while writing it to %s: it waits for the switch", where, target)}
	}
	return &store.Error{Kind: store.ErrBadRequest, Op: "batch", Link: target,
		Message: fmt.Sprintf("a transactional batch runs in one collection, and the resolver reads this key from %s (its documents may be in any of them); write them one by one", where)}
}
