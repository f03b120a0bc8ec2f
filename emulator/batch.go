package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// batchOperation is one operation of a transactional batch as the SDKs
// send it: {"operationType": "Create", "id": ..., "resourceBody": {...},
// "ifMatch": "\"etag\""}.
type batchOperation struct {
	OperationType string          `json:"operationType"`
	ID            string          `json:"id"`
	ResourceBody  json.RawMessage `json:"resourceBody"`
	IfMatch       string          `json:"ifMatch"`
}

// batchOpKinds are the operation types the emulator runs, by their lower
// case name.
var batchOpKinds = map[string]store.BatchOpKind{
	"create": store.BatchCreate, "read": store.BatchRead, "replace": store.BatchReplace,
	"upsert": store.BatchUpsert, "delete": store.BatchDelete, "patch": store.BatchPatch,
}

// batchStatus is the status of each operation kind that succeeded, as
// Cosmos DB answers it; an upsert that created its document is 201
// (store.BatchResult.Created).
var batchStatus = map[store.BatchOpKind]int{
	store.BatchCreate: http.StatusCreated, store.BatchRead: http.StatusOK, store.BatchReplace: http.StatusOK,
	store.BatchUpsert: http.StatusOK, store.BatchDelete: http.StatusNoContent, store.BatchPatch: http.StatusOK,
}

// batchResult is one operation's result in a batch's answer.
type batchResult struct {
	StatusCode    int             `json:"statusCode"`
	RequestCharge float64         `json:"requestCharge"`
	ETag          string          `json:"eTag,omitempty"`
	ResourceBody  json.RawMessage `json:"resourceBody,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// batch answers a transactional batch (POST .../docs with
// x-ms-cosmos-is-batch-request and x-ms-cosmos-batch-atomic): the body is
// the array of operations, all under the partition key of
// x-ms-documentdb-partitionkey, run by the store's Batcher all together or
// not at all. Success is 200 with one result per operation (status, ETag,
// the document; none for a delete, nor for writes asked for
// "Prefer: return=minimal"). When an operation fails, nothing is written
// and the answer is 207 Multi-Status: that operation carries its status
// and a message, every other one 424 Failed Dependency. A batch refused as
// a whole (empty, over 100 operations, over 2 MB, a missing collection, a
// stale x-docshard-epoch, a malformed operation) is answered with that
// error's status. A patch applies, as a single patch does, to the document
// as the operations before it leave it (store.BatchPatch: the store applies
// it within the batch, atomically); non-atomic (bulk) batches are answered
// 501.
func (s *Server) batch(c *call, ref collRef) *apiError {
	bt, ok := s.st.(store.Batcher)
	switch {
	case !ok:
		return unsupported("transactional batch (the store has no atomic multi-document write)")
	case !isTrue(c.r.Header.Get("x-ms-cosmos-batch-atomic")):
		return unsupported("bulk (a batch request without x-ms-cosmos-batch-atomic: true)")
	}
	key, given, e := c.partitionKey()
	if e != nil {
		return e
	}
	if !given {
		return errorf(http.StatusBadRequest, "a transactional batch needs its partition key: set x-ms-documentdb-partitionkey")
	}
	epoch, e := c.epoch()
	if e != nil {
		return e
	}
	var wire []batchOperation
	if e := c.decode("batch", &wire); e != nil {
		return e
	}
	ops := make([]store.BatchOp, len(wire))
	for i, w := range wire {
		kind, ok := batchOpKinds[strings.ToLower(w.OperationType)]
		if !ok {
			return errorf(http.StatusBadRequest, "batch operation %d: unknown operationType %q", i, w.OperationType)
		}
		ops[i] = store.BatchOp{Kind: kind, ID: w.ID, Doc: w.ResourceBody, IfMatch: w.IfMatch}
		if kind == store.BatchPatch {
			if e := parsePatch(&ops[i]); e != nil {
				e.msg = fmt.Sprintf("batch operation %d: %s", i, e.msg)
				return e
			}
		}
	}
	path, res, e, err := s.runBatch(c.r.Context(), bt, ref, key, ops, epoch)
	if err != nil || e != nil {
		// A malformed patch is refused as a whole, before anything else
		// the batch did wrong; the store compiled the patches already, so
		// only a failed batch compiles them again to tell.
		if i, pe := malformedPatch(ops); pe != nil {
			pe.msg = fmt.Sprintf("batch operation %d: %s", i, pe.msg)
			return pe
		}
	}
	var be *store.BatchError
	switch {
	case e != nil:
		return e
	case errors.As(err, &be) && be.Index >= 0 && be.Index < len(ops):
		return c.batchFailed(len(ops), be.Index, fromStore(be.Err))
	case err != nil:
		return fromStore(err)
	}
	c.batchDone(ref, path, ops, res)
	return nil
}

// runBatch checks the batch's key against the collection and runs it:
// the collection's key paths and the store's answer (res, err), or e for
// a request refused before the store is asked.
func (s *Server) runBatch(ctx context.Context, bt store.Batcher, ref collRef, key any, ops []store.BatchOp, epoch int64) (path partitionkey.Paths, res []store.BatchResult, e *apiError, err error) {
	if path, e = s.pathOf(ctx, ref); e != nil {
		return nil, nil, e, nil
	}
	if e = checkKeyArity(key, path); e != nil {
		return nil, nil, e, nil
	}
	res, err = bt.ExecuteBatch(ctx, ref.link, key, ops, &store.BatchOptions{Epoch: epoch})
	return path, res, nil, err
}

// batchDone answers a batch that succeeded: 200 with every operation's
// result.
func (c *call) batchDone(ref collRef, path partitionkey.Paths, ops []store.BatchOp, res []store.BatchResult) {
	minimal := c.r.Header.Get("Prefer") == "return=minimal"
	out := make([]batchResult, len(ops))
	write, charge := false, 0.0
	for i, r := range res {
		kind := ops[i].Kind
		o := batchResult{StatusCode: batchStatus[kind], RequestCharge: chargeWrite}
		if r.Created {
			o.StatusCode = http.StatusCreated
		}
		if kind == store.BatchRead {
			o.RequestCharge = chargeRead
		} else {
			write = true
		}
		if d := r.Document; d != nil {
			o.ETag = d.ETag
			if kind == store.BatchRead || !minimal {
				o.ResourceBody = ref.withSystem(d.Body, keyTextOf(d.Body, path), d.ID, d.Seq)
			}
		}
		charge += o.RequestCharge
		out[i] = o
	}
	body, _ := json.Marshal(out)
	c.session(write)
	c.json(http.StatusOK, body, charge)
}

// batchFailed answers a batch of n operations whose operation at index
// failed failed with e: 207 with e there and 424 for the others.
func (c *call) batchFailed(n, failed int, e *apiError) *apiError {
	out := make([]batchResult, n)
	for i := range out {
		out[i].StatusCode = http.StatusFailedDependency
	}
	out[failed] = batchResult{StatusCode: e.status, Message: e.msg}
	body, _ := json.Marshal(out)
	c.session(false)
	c.json(http.StatusMultiStatus, body, 0)
	return nil
}
