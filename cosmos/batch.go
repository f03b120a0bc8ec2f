package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/internal/storecheck"
	"github.com/docshard/docshard/store"
)

var _ store.Batcher = (*Store)(nil)

// ExecuteBatch runs a transactional batch with azcosmos's
// ExecuteTransactionalBatch, one round trip; see store.Batcher. The
// service applies it atomically (Cosmos DB, docshard serve; not cosmium,
// whose batches are not atomic).
//
// The batch is checked here before it is sent, as the embedded store
// checks it: 1 to store.MaxBatchOperations operations; a partition key
// (not store.None, which the backend does not map yet); each document a
// JSON object with a valid id, at most store.MaxDocumentSize bytes, whose
// partition-key value is the batch's; a replace's document with the
// operation's ID; at most store.MaxDocumentSize bytes of documents in all
// (Cosmos DB's 2 MB limit on a batch). azcosmos v1.5.0 writes the ID of a
// read, replace or delete into the request without escaping it, so an ID
// holding '"' or a control character is refused here too. A refused
// operation is a *store.BatchError with its index.
//
// When the service answers that an operation failed (207 Multi-Status),
// the error is a *store.BatchError at the first operation whose status is
// not 424 (Failed Dependency), wrapping the sentinel of that status. A
// request refused as a whole maps as every request does (404: the
// collection is missing; 412 from docshard serve with its fencing header:
// store.ErrFenced). A server that answers 200 with a failed operation
// (cosmium) is reported the same way, the message saying that the
// operations before it may have been applied.
func (s *Store) ExecuteBatch(ctx context.Context, l string, key any, ops []store.BatchOp, opts *store.BatchOptions) ([]store.BatchResult, error) {
	const op = "batch"
	cc, c, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	if err := storecheck.Batch(l, key, ops); err != nil {
		return nil, err
	}
	cs, err := s.spec(ctx, op, cc, c, l)
	if err != nil {
		return nil, err
	}
	if key, err = cs.pointKey(op, l, "", key); err != nil {
		return nil, err
	}
	keyText, err := keyIdentity(op, l, key)
	if err != nil {
		return nil, err
	}
	pk, err := partitionKey(key)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	b := cc.NewTransactionalBatch(pk)
	ids := make([]string, len(ops))
	total := 0
	var patches batchPatches
	for i, o := range ops {
		if ids[i], err = addBatchOp(&b, cs, l, keyText, o); err != nil {
			return nil, &store.BatchError{Index: i, Err: err}
		}
		if o.Kind == store.BatchPatch {
			body, err := docpatch.Encode(o.Patch, o.Condition)
			if err != nil {
				return nil, &store.BatchError{Index: i, Err: &store.Error{Kind: store.ErrBadRequest, Op: "patch", Link: l, ID: o.ID, Err: err}}
			}
			if patches == nil {
				patches = batchPatches{}
			}
			patches[i] = body
		}
		total += len(o.Doc)
	}
	if patches != nil {
		ctx = context.WithValue(ctx, patchBodyMark{}, patches)
	}
	if total > store.MaxDocumentSize {
		return nil, store.Errorf(store.ErrTooLarge, op, l, "", "the batch's documents are %d bytes, more than %d", total, store.MaxDocumentSize)
	}
	resp, err := cc.ExecuteTransactionalBatch(s.stamp(ctx, opt.Of(opts).Epoch), b,
		&azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		return nil, mapErr(op, l, "", err)
	}
	if len(resp.OperationResults) != len(ops) {
		return nil, store.Errorf(store.ErrUnavailable, op, l, "", "the service answered %d results to %d operations", len(resp.OperationResults), len(ops))
	}
	for i, r := range resp.OperationResults {
		if st := int(r.StatusCode); st >= 300 && st != http.StatusFailedDependency {
			return nil, batchFailure(resp, l, i, ops[i].Kind, ids[i])
		}
	}
	if !resp.Success {
		return nil, store.Errorf(store.ErrUnavailable, op, l, "", "the service answered %d with no failed operation", resp.RawResponse.StatusCode)
	}
	out := make([]store.BatchResult, len(ops))
	for i, r := range resp.OperationResults {
		out[i].Created = r.StatusCode == http.StatusCreated
		switch {
		case ops[i].Kind == store.BatchDelete:
		case len(r.ResourceBody) > 0 && string(r.ResourceBody) != "null":
			out[i].Document = document(r.ResourceBody, r.ETag)
		default:
			out[i].Document = &store.Document{ID: ids[i], ETag: string(r.ETag)}
		}
	}
	return out, nil
}

// addBatchOp checks one operation and adds it to b, returning the id of
// its document.
func addBatchOp(b *azcosmos.TransactionalBatch, cs *containerSpec, l, keyText string, o store.BatchOp) (string, error) {
	mode := o.Kind.String()
	id := o.ID
	switch o.Kind {
	case store.BatchRead, store.BatchDelete, store.BatchReplace, store.BatchPatch:
		if err := store.ValidateID(id); err != nil {
			se := err.(*store.Error)
			se.Op, se.Link = mode, l
			return id, se
		}
		if strings.ContainsFunc(id, func(r rune) bool { return r == '"' || r < 0x20 }) {
			return id, store.Errorf(store.ErrBadRequest, mode, l, id, "azcosmos v1.5.0 cannot send this id in a batch: it holds a quote or a control character, which it does not escape")
		}
	case store.BatchCreate, store.BatchUpsert:
	default:
		return id, store.Errorf(store.ErrBadRequest, "batch", l, id, "unknown operation kind %d", int(o.Kind))
	}
	if o.Kind == store.BatchPatch {
		if _, err := docpatch.Compile(l, id, o.Patch, o.Condition); err != nil {
			return id, err
		}
	}
	if o.Kind != store.BatchRead && o.Kind != store.BatchDelete && o.Kind != store.BatchPatch {
		bodyID, err := checkDoc(mode, l, o.Doc)
		if err != nil {
			if se, ok := err.(*store.Error); ok && se.ID == "" {
				se.ID = gjson.GetBytes(o.Doc, "id").String()
			}
			return id, err
		}
		if o.Kind == store.BatchReplace && bodyID != id {
			return id, store.Errorf(store.ErrBadRequest, mode, l, id, "the document's id is %q", bodyID)
		}
		id = bodyID
		v, err := bodyKey(cs.paths, o.Doc)
		if err != nil {
			return id, &store.Error{Kind: store.ErrBadRequest, Op: mode, Link: l, ID: id, Message: err.Error()}
		}
		bt, _ := keyIdentity(mode, l, v)
		if bt != keyText {
			return id, store.Errorf(store.ErrBadRequest, mode, l, id, "the document's partition key (%s at %s) differs from the batch's (%s)", bt, cs.paths, keyText)
		}
	}
	var ifMatch *azcosmos.TransactionalBatchItemOptions
	if o.IfMatch != "" {
		e := azcore.ETag(o.IfMatch)
		ifMatch = &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e}
	}
	switch o.Kind {
	case store.BatchCreate:
		b.CreateItem(o.Doc, nil)
	case store.BatchRead:
		b.ReadItem(id, nil)
	case store.BatchReplace:
		b.ReplaceItem(id, o.Doc, ifMatch)
	case store.BatchUpsert:
		b.UpsertItem(o.Doc, ifMatch)
	case store.BatchDelete:
		b.DeleteItem(id, ifMatch)
	case store.BatchPatch:
		var placeholder azcosmos.PatchOperations // patchBodyPolicy sends the patch itself
		placeholder.AppendRemove("/docshard-patch-body")
		b.PatchItem(id, placeholder, ifMatch)
	}
	return id, nil
}

// batchFailure is the error of a batch whose operation i failed, with the
// message docshard serve gives it (other services give none).
func batchFailure(resp azcosmos.TransactionalBatchResponse, l string, i int, kind store.BatchOpKind, id string) error {
	r := resp.OperationResults[i]
	st := int(r.StatusCode)
	se := &store.Error{Kind: statusKind(st, id), Op: kind.String(), Link: l, ID: id, Status: st, Message: fmt.Sprintf("status %d", st)}
	if body, err := runtime.Payload(resp.RawResponse); err == nil {
		var msgs []struct{ Message string }
		if json.Unmarshal(body, &msgs) == nil && i < len(msgs) && msgs[i].Message != "" {
			se.Message = msgs[i].Message
		}
	}
	if resp.Success {
		se.Message += " (the service answered 200 to a failed batch: it is not atomic, and may have applied the operations before this one)"
	}
	return &store.BatchError{Index: i, Err: se}
}
