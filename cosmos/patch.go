package cosmos

import (
	"bytes"
	"context"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/store"
)

var _ store.Patcher = (*Store)(nil)

// Patch applies a partial update with azcosmos's PatchItem; see
// store.Patcher. The service applies it (atomically, with its condition
// and If-Match); the patch is checked first as the embedded store checks
// it (docpatch.Compile), so a malformed one is refused without a round
// trip and with the same error.
//
// The request's body is the patch in Cosmos DB's REST form as docpatch
// writes it, not as azcosmos v1.5.0's PatchOperations would: that type
// has no move operation, increments by whole numbers only, and writes the
// condition into its JSON unescaped (a condition holding a double quote
// would be malformed). So the call is made with a placeholder operation
// under a context carrying the body, and patchBodyPolicy, one of the
// client's per-call policies (as undefinedKeyPolicy is), sends the body
// instead. Cost: one round trip (Cosmos DB charges a patch like a write).
func (s *Store) Patch(ctx context.Context, l, id string, ops []store.PatchOp, opts *store.PatchOptions) (*store.Document, error) {
	const op = "patch"
	cc, _, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	o := store.OptionsOf(opts)
	if _, err := docpatch.Compile(l, id, ops, o.Condition); err != nil {
		return nil, err
	}
	body, err := docpatch.Encode(ops, o.Condition)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id, Err: err}
	}
	ctx, pk, err := s.readKey(ctx, op, l, id, cc, o.PartitionKey)
	if err != nil {
		return nil, err
	}
	sendCtx := context.WithValue(s.stamp(ctx, o.Epoch), patchBodyMark{}, body)
	var placeholder azcosmos.PatchOperations
	placeholder.AppendRemove("/docshard-patch-body")
	resp, err := cc.PatchItem(sendCtx, pk, id, placeholder, itemOptions(o.IfMatch))
	if err != nil {
		return nil, s.itemErr(ctx, op, l, id, cc, err)
	}
	return document(resp.Value, resp.ETag), nil
}

// patchBodyMark is the context key of a patch's body (Patch).
type patchBodyMark struct{}

// patchBodyPolicy sends the body a PATCH request's context carries
// (Patch) in place of the one azcosmos wrote. It runs before the retry
// and authorisation policies (the signature does not cover the body), so
// each attempt sends it. Requests without the mark pass untouched.
type patchBodyPolicy struct{}

func (patchBodyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if body, ok := raw.Context().Value(patchBodyMark{}).([]byte); ok && raw.Method == http.MethodPatch {
		ct := raw.Header.Get("Content-Type")
		if ct == "" {
			ct = "application/json"
		}
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), ct); err != nil {
			return nil, err
		}
	}
	return req.Next()
}
