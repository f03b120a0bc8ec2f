package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/store"
)

// PatchOptions qualify a patch. A nil *PatchOptions means none.
type PatchOptions struct {
	// IfMatch makes the patch conditional on the stored document's ETag.
	IfMatch string
	// Condition makes the patch conditional on the document: a filter
	// "FROM c WHERE ..." (Cosmos DB's conditional patch); a document for
	// which it is false is not patched (store.ErrPreconditionFailed).
	Condition string
}

// Patch applies a partial update to the document with this id and key:
// up to store.MaxPatchOperations operations (add, set, replace, remove,
// incr, move; see store.PatchOp), in order, on the current version,
// atomically, on condition of opts. It needs a store that is a
// store.Patcher (the embedded store, docshard serve, Cosmos DB); another
// is an error wrapping errors.ErrUnsupported. A malformed patch (no
// operations or more than store.MaxPatchOperations, an unknown operation,
// a malformed path or value, a system property) is an error wrapping
// store.ErrBadRequest, with nothing written (every Patcher checks it
// before reading the document: package docshard's one implementation);
// so is a patch that would change the id or the partition key. A missing document is
// store.ErrNotFound; a stale IfMatch or a false Condition,
// store.ErrPreconditionFailed.
//
// Placement is Replace's: the patch is sent to the collection the key is
// written to, in one store call, when the key is read from there alone
// (always, outside a transition or spillover; and during a reshard, whose
// transitions read and write one placement). A key frozen by a reshard's
// cutover waits for the switch (resolver.ErrMoving, as every write to it:
// see FollowOptions.MovingWait), so a patch never lands on a copy that is
// being switched away. Where the key may be read from several collections
// and the document sits in another than the one its key is written to (a
// transition in read mode "both", a spillover's older collection), the
// patch is applied to the version read there (the one implementation of
// the operations the stores use), and the document moves as Replace moves
// it: created where it now belongs, then the old copy deleted on condition
// of the ETag read, so a concurrent write makes the patch fail with
// nothing changed (a *MoveError), never apply twice.
//
// Cost over the store's own Patch: finding the resolver and placing the
// key (nothing for a string key placed before); the store checks the
// operations (the router does too, where it applies them itself).
func (c *Client) Patch(ctx context.Context, dbLink, id string, key any, ops []store.PatchOp, opts *PatchOptions) (*store.Document, error) {
	p, ok := c.caps.(store.Patcher)
	if !ok {
		return nil, fmt.Errorf("router: Patch %q in %s: the store (%T) is not a store.Patcher: %w", id, dbLink, c.raw, errors.ErrUnsupported)
	}
	o := opt.Of(opts)
	return guarded(c, ctx, dbLink, func(ctx context.Context, e *dbEntry) (*store.Document, error) {
		return c.patch(ctx, e, p, id, key, ops, o)
	})
}

func (c *Client) patch(ctx context.Context, e *dbEntry, p store.Patcher, id string, key any, ops []store.PatchOp, o PatchOptions) (*store.Document, error) {
	w, err := e.pl.writePlace(key)
	if err != nil {
		return nil, err
	}
	at := func(l string) (*store.Document, error) {
		sk, err := c.storeKey(ctx, w, key, l)
		if err != nil {
			return nil, err
		}
		return p.Patch(ctx, l, id, ops, &store.PatchOptions{PartitionKey: sk, IfMatch: o.IfMatch, Condition: o.Condition, Epoch: e.pl.epoch})
	}
	if w.one() {
		return at(w.target) // the common case: one place, where the document stays
	}
	spec, err := docpatch.Compile("", id, ops, o.Condition)
	if err != nil {
		return nil, err // refused before the document is looked for, as the store refuses it
	}
	source, old, err := c.find(ctx, w.rt, id)
	if err != nil {
		return nil, err
	}
	if source == w.target {
		return at(w.target)
	}
	if o.IfMatch != "" && o.IfMatch != old.ETag {
		return nil, &store.Error{Kind: store.ErrPreconditionFailed, Op: "patch", Link: source, ID: id, Message: fmt.Sprintf("If-Match %s, stored ETag %s", o.IfMatch, old.ETag)}
	}
	body, err := spec.Apply(ctx, source, id, old.Body, nil)
	if err != nil {
		return nil, err
	}
	if same, _, err := e.pl.carriesKey(body, key); err != nil || !same {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: "patch", Link: source, ID: id, Message: "a patch cannot change the document's partition key"}
	}
	return c.move(ctx, id, body, source, w.target, w.rt, w.rt, old.ETag)
}
