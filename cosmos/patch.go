package cosmos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/docshard/docshard/internal/docpatch"
	"github.com/docshard/docshard/internal/opt"
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
	o := opt.Of(opts)
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

// patchBodyMark is the context key of a patch's body (Patch: []byte) or
// of a batch's patch operations' bodies (ExecuteBatch: batchPatches).
type patchBodyMark struct{}

// batchPatches are the bodies of a batch's patch operations, by index.
type batchPatches map[int][]byte

// patchBodyPolicy sends the body a request's context carries in place of
// the one azcosmos wrote: a PATCH's whole body (Patch), or the
// "resourceBody" of each patch operation of a batch (ExecuteBatch). It
// runs before the retry and authorisation policies (the signature does
// not cover the body), so each attempt sends it. Requests without the mark
// pass untouched.
type patchBodyPolicy struct{}

func (patchBodyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	var body []byte
	switch v := raw.Context().Value(patchBodyMark{}).(type) {
	case []byte:
		if raw.Method == http.MethodPatch {
			body = v
		}
	case batchPatches:
		if raw.Method == http.MethodPost && raw.Body != nil {
			b, err := batchWithPatches(req, v)
			if err != nil {
				return nil, err
			}
			body = b
		}
	}
	if body != nil {
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

// batchWithPatches returns the batch request's body (a JSON array of
// operations) with the resourceBody of each operation in patches
// replaced.
func batchWithPatches(req *policy.Request, patches batchPatches) ([]byte, error) {
	raw, err := io.ReadAll(req.Body())
	if err != nil {
		return nil, err
	}
	if err := req.RewindBody(); err != nil {
		return nil, err
	}
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, fmt.Errorf("cosmos: the batch azcosmos wrote is not an array of operations: %w", err)
	}
	for i, body := range patches {
		if i >= len(ops) {
			return nil, fmt.Errorf("cosmos: the batch azcosmos wrote has %d operations, not %d", len(ops), i+1)
		}
		ops[i]["resourceBody"] = body
	}
	return json.Marshal(ops)
}
