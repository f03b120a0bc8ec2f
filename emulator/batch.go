package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/internal/docpatch"
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
// case name; a patch runs as a replace (batchPatch).
var batchOpKinds = map[string]store.BatchOpKind{
	"create": store.BatchCreate, "read": store.BatchRead, "replace": store.BatchReplace,
	"upsert": store.BatchUpsert, "delete": store.BatchDelete, "patch": store.BatchReplace,
}

// batchStatus is the status of each operation kind that succeeded, as
// Cosmos DB answers it; an upsert that created its document is 201
// (store.BatchResult.Created), a patch 200 as the replace it runs as.
var batchStatus = map[store.BatchOpKind]int{
	store.BatchCreate: http.StatusCreated, store.BatchRead: http.StatusOK, store.BatchReplace: http.StatusOK,
	store.BatchUpsert: http.StatusOK, store.BatchDelete: http.StatusNoContent,
}

// batchResult is one operation's result in a batch's answer.
type batchResult struct {
	StatusCode    int             `json:"statusCode"`
	RequestCharge float64         `json:"requestCharge"`
	ETag          string          `json:"eTag,omitempty"`
	ResourceBody  json.RawMessage `json:"resourceBody,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// batchPatch is a patch operation of a batch, which runs as a replace of
// the patched document: its index, its patch, and whether the replace's
// If-Match is the version the patch read (a concurrent write then fails it,
// and the batch starts again), not the caller's.
type batchPatch struct {
	index     int
	spec      *docpatch.Spec
	readEtag  bool
	callerTag string
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
// as the operations before it leave it (prepareBatchPatches); non-atomic
// (bulk) batches are answered 501.
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
	var patches []batchPatch
	for i, w := range wire {
		kind, ok := batchOpKinds[strings.ToLower(w.OperationType)]
		if !ok {
			return errorf(http.StatusBadRequest, "batch operation %d: unknown operationType %q", i, w.OperationType)
		}
		ops[i] = store.BatchOp{Kind: kind, ID: w.ID, Doc: w.ResourceBody, IfMatch: w.IfMatch}
		if strings.EqualFold(w.OperationType, "Patch") {
			spec, e := parsePatch(w.ResourceBody)
			if e != nil {
				e.msg = fmt.Sprintf("batch operation %d: %s", i, e.msg)
				return e
			}
			patches = append(patches, batchPatch{index: i, spec: spec, callerTag: w.IfMatch})
		}
	}
	ctx := c.r.Context()
	path, e := s.pathOf(ctx, ref)
	if e != nil {
		return e
	}
	if e := checkKeyArity(key, path); e != nil {
		return e
	}
	// With patches, an optimistic read-modify-write as a single patch's
	// (Server.patch): a concurrent write to a document a patch read fails
	// the batch's replace of it, and the batch starts again on the new
	// version.
	for range maxPatchRounds {
		if failed, e := s.prepareBatchPatches(ctx, ref, key, path, ops, patches); e != nil {
			return c.batchFailed(len(ops), failed, e)
		}
		res, err := bt.ExecuteBatch(ctx, ref.link, key, ops, &store.BatchOptions{Epoch: epoch})
		var be *store.BatchError
		switch {
		case errors.As(err, &be) && be.Index >= 0 && be.Index < len(ops):
			if errors.Is(be.Err, store.ErrPreconditionFailed) && readPatchLost(patches, be.Index) {
				continue
			}
			return c.batchFailed(len(ops), be.Index, fromStore(be.Err))
		case err != nil:
			return fromStore(err)
		}
		c.batchDone(ref, path, ops, res)
		return nil
	}
	return patchContended()
}

// readPatchLost says whether operation i is a patch whose replace was
// conditional on the version it read: failing, it lost to a concurrent
// write.
func readPatchLost(patches []batchPatch, i int) bool {
	for _, p := range patches {
		if p.index == i {
			return p.readEtag
		}
	}
	return false
}

// prepareBatchPatches makes each patch of a batch the replace of its
// document as patched: the document as the operations before it leave it
// (the body a create, replace, upsert or earlier patch gave it), or as the
// store holds it when none touched it, in which case the replace is
// conditional on the version read unless the caller gave an If-Match. A
// patch that cannot apply (its document missing or deleted before it, its
// condition false, an operation that does not apply) returns its index and
// the failure.
func (s *Server) prepareBatchPatches(ctx context.Context, ref collRef, key any, path partitionkey.Paths, ops []store.BatchOp, patches []batchPatch) (int, *apiError) {
	if len(patches) == 0 {
		return 0, nil
	}
	local := map[string][]byte{} // id -> its body as the batch leaves it so far; nil when deleted
	next := 0
	for i := range ops {
		op := &ops[i]
		if next < len(patches) && patches[next].index == i {
			p := &patches[next]
			next++
			base, touched := local[op.ID]
			p.readEtag = false
			op.IfMatch = p.callerTag
			if !touched {
				d, err := s.st.Read(ctx, ref.link, op.ID, &store.ReadOptions{PartitionKey: key})
				if err != nil {
					return i, fromStore(err)
				}
				base = d.Body
				if p.callerTag == "" {
					op.IfMatch, p.readEtag = d.ETag, true
				}
			}
			if base == nil {
				return i, errorf(http.StatusNotFound, "%s the batch deleted %q before patching it", msgNotFound, op.ID)
			}
			body, err := p.spec.Apply(ctx, ref.link, op.ID, base, path)
			if err != nil {
				return i, fromStore(err)
			}
			op.Doc = body
			local[op.ID] = body
			continue
		}
		switch op.Kind {
		case store.BatchCreate, store.BatchUpsert:
			local[gjson.GetBytes(op.Doc, "id").String()] = op.Doc
		case store.BatchReplace:
			local[op.ID] = op.Doc
		case store.BatchDelete:
			local[op.ID] = nil
		}
	}
	return 0, nil
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
