package emulator

import (
	"errors"
	"net/http"
	"time"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/store"
)

// maxPatchRounds is how many times a batch holding patches reads their
// documents and runs before it gives up with 429: each round lost to a
// concurrent writer starts again on the new versions (see batch).
const maxPatchRounds = 64

// parsePatch reads and checks a patch in its REST form (docpatch.Decode,
// docpatch.Compile) before any document is read.
func parsePatch(raw []byte) (*docpatch.Spec, *apiError) {
	ops, cond, err := docpatch.Decode(raw)
	if err == nil {
		var spec *docpatch.Spec
		if spec, err = docpatch.Compile("", "", ops, cond); err == nil {
			return spec, nil
		}
	}
	e := fromStore(err)
	var se *store.Error
	if errors.As(err, &se) && se.Message != "" {
		e.msg = se.Message // the batch's answer names the operation itself
	}
	return nil, e
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

// patchContended is the answer to a batch whose patched documents changed
// under every one of its rounds.
func patchContended() *apiError {
	e := errorf(http.StatusTooManyRequests, "the document changed under every attempt to patch it; retry")
	e.retryAfter = 10 * time.Millisecond
	return e
}
