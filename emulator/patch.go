package emulator

import (
	"errors"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/store"
)

// parsePatch reads a batch's patch operation in its REST form
// (docpatch.Decode) into op.Patch and op.Condition. The store checks it
// (docpatch.Compile, before any document is read), once; a batch the
// store refuses is then asked malformedPatch, so that a malformed patch is
// still answered as a malformed request.
func parsePatch(op *store.BatchOp) *apiError {
	ops, cond, err := docpatch.Decode(op.Doc)
	if err != nil {
		return patchRefusal(err)
	}
	op.Patch, op.Condition, op.Doc = ops, cond, nil
	return nil
}

// malformedPatch returns the refusal of the first patch operation of ops
// that does not compile (index i), or nil. It runs only for a batch that
// failed, so a batch that succeeds compiles its patches once, in the
// store.
func malformedPatch(ops []store.BatchOp) (int, *apiError) {
	for i, op := range ops {
		if op.Kind != store.BatchPatch {
			continue
		}
		if _, err := docpatch.Compile("", op.ID, op.Patch, op.Condition); err != nil {
			return i, patchRefusal(err)
		}
	}
	return 0, nil
}

// patchRefusal is the answer to a malformed patch operation of a batch:
// its message names the operation itself.
func patchRefusal(err error) *apiError {
	e := fromStore(err)
	var se *store.Error
	if errors.As(err, &se) && se.Message != "" {
		e.msg = se.Message
	}
	return e
}

// patch answers PATCH on a document: the store's Patcher applies the
// partial update (docpatch: Cosmos DB's operations, its limit of 10, its
// condition) to the current version atomically, on condition of If-Match.
// A patch that would change the id or the partition key, or touch a system
// property, is refused with 400; a false condition or a stale If-Match
// with 412.
func (s *Server) patch(c *call, ref collRef, id string, key any, ifMatch string, epoch int64) (*store.Document, *apiError) {
	p, ok := s.st.(store.Patcher)
	if !ok {
		return nil, unsupported("patch (the store has no atomic partial update)")
	}
	raw, e := c.body()
	if e != nil {
		return nil, e
	}
	ops, cond, err := docpatch.Decode(raw)
	if err != nil {
		return nil, fromStore(err)
	}
	d, err := p.Patch(c.r.Context(), ref.link, id, ops, &store.PatchOptions{PartitionKey: key, IfMatch: ifMatch, Condition: cond, Epoch: epoch})
	if err != nil {
		return nil, fromStore(err)
	}
	return d, nil
}
