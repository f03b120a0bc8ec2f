package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator"
	"github.com/docshard/docshard/emulator/emulatortest"
	"github.com/docshard/docshard/store/memstore"
)

// TestTransactionalBatch: azcosmos's ExecuteTransactionalBatch, as any Go
// program sends it. A batch that succeeds answers 200 with each
// operation's status, ETag and document; one that fails answers 207, the
// failing operation with its status and the others 424, and writes
// nothing.
func TestTransactionalBatch(t *testing.T) {
	srv := emulatortest.Shared(t)
	cc := newContainer(t, newClient(t, srv), "/pk")
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	kept, err := cc.CreateItem(ctx, pk, []byte(`{"id":"kept","pk":"p","v":1}`), nil)
	require.NoError(t, err)

	b := cc.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"a","pk":"p","v":1}`), nil)
	b.ReadItem("a", nil)
	b.ReplaceItem("kept", []byte(`{"id":"kept","pk":"p","v":2}`), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &kept.ETag})
	b.UpsertItem([]byte(`{"id":"u","pk":"p"}`), nil)
	b.DeleteItem("a", nil)
	resp, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	assert.Equal(t, http.StatusOK, resp.RawResponse.StatusCode)
	assert.NotEmpty(t, resp.SessionToken)
	assert.NotEmpty(t, resp.ActivityID)
	require.Len(t, resp.OperationResults, 5)
	for i, want := range []int32{http.StatusCreated, http.StatusOK, http.StatusOK, http.StatusCreated, http.StatusNoContent} { // the upsert created
		assert.Equal(t, want, resp.OperationResults[i].StatusCode, "operation %d", i)
	}
	read := object(t, resp.OperationResults[1].ResourceBody)
	assert.Equal(t, 1.0, read["v"], "a read sees the create before it")
	assert.Equal(t, string(resp.OperationResults[0].ETag), read["_etag"])
	assert.Regexp(t, `^dbs/[^/]+/colls/[^/]+/docs/[^/]+/$`, read["_self"], "documents carry the system properties")
	assert.Empty(t, resp.OperationResults[4].ResourceBody, "a delete has no document")
	got, err := cc.ReadItem(ctx, pk, "kept", nil)
	require.NoError(t, err)
	assert.Equal(t, resp.OperationResults[2].ETag, got.ETag)
	_, err = cc.ReadItem(ctx, pk, "a", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "created and deleted in one batch")

	// A failing batch: 207, nothing written.
	b = cc.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"new","pk":"p"}`), nil)
	b.DeleteItem("u", nil)
	b.CreateItem([]byte(`{"id":"kept","pk":"p"}`), nil)
	b.ReadItem("new", nil)
	resp, err = cc.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	assert.False(t, resp.Success)
	assert.Equal(t, http.StatusMultiStatus, resp.RawResponse.StatusCode)
	for i, want := range []int32{http.StatusFailedDependency, http.StatusFailedDependency, http.StatusConflict, http.StatusFailedDependency} {
		assert.Equal(t, want, resp.OperationResults[i].StatusCode, "operation %d", i)
	}
	_, err = cc.ReadItem(ctx, pk, "new", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "nothing of the failed batch was written")
	_, err = cc.ReadItem(ctx, pk, "u", nil)
	require.NoError(t, err)

	// Refused as a whole.
	b = cc.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"other","pk":"q"}`), nil)
	resp, err = cc.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	assert.Equal(t, []int32{http.StatusBadRequest}, []int32{resp.OperationResults[0].StatusCode}, "a document under another key")
	b = cc.NewTransactionalBatch(pk)
	b.PatchItem("kept", azcosmos.PatchOperations{}, nil)
	_, err = cc.ExecuteTransactionalBatch(ctx, b, nil)
	assert.Equal(t, http.StatusBadRequest, status(err), "a patch of no operations")
	assert.Contains(t, err.Error(), "batch operation 0: a patch holds 1 to 10 operations")
	b = cc.NewTransactionalBatch(pk)
	for range 101 {
		b.ReadItem("kept", nil)
	}
	_, err = cc.ExecuteTransactionalBatch(ctx, b, nil)
	assert.Equal(t, http.StatusBadRequest, status(err), "101 operations")

	// Stamped with a stale epoch.
	raiseFence(t, srv, "dbs/"+strings.NewReplacer("/", "-").Replace(t.Name()), 3)
	b = cc.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"stale","pk":"p"}`), nil)
	stamped := policy.WithHTTPHeader(ctx, http.Header{emulator.HeaderEpoch: {"2"}})
	_, err = cc.ExecuteTransactionalBatch(stamped, b, nil)
	assert.Equal(t, http.StatusPreconditionFailed, status(err))
	assert.Contains(t, err.Error(), emulator.CodeFenced)
	_, err = cc.ExecuteTransactionalBatch(policy.WithHTTPHeader(ctx, http.Header{emulator.HeaderEpoch: {"3"}}), b, nil)
	require.NoError(t, err)
}

// TestBatchPatchAndUpsert: a patch in a batch applies as a single patch
// does, to the document as the operations before it leave it, all or
// nothing with the rest; an upsert answers 201 when it created the
// document and 200 when it replaced it, as the service answers.
func TestBatchPatchAndUpsert(t *testing.T) {
	cc := sharedContainer(t, "/pk")
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	stored, err := cc.CreateItem(ctx, pk, []byte(`{"id":"s","pk":"p","n":1}`), nil)
	require.NoError(t, err)
	incr := func(by int64) azcosmos.PatchOperations {
		var p azcosmos.PatchOperations
		p.AppendIncrement("/n", by)
		return p
	}
	withContent := &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true}

	b := cc.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"a","pk":"p","n":10}`), nil)
	b.PatchItem("a", incr(5), nil)                                                                // on the create before it
	b.PatchItem("s", incr(2), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stored.ETag}) // on the stored one
	b.PatchItem("s", incr(3), nil)                                                                // on the patch before it
	b.UpsertItem([]byte(`{"id":"s2","pk":"p"}`), nil)                                             // creates
	b.UpsertItem([]byte(`{"id":"a","pk":"p","n":0}`), nil)                                        // replaces
	resp, err := cc.ExecuteTransactionalBatch(ctx, b, withContent)
	require.NoError(t, err)
	require.True(t, resp.Success)
	for i, want := range []int32{http.StatusCreated, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusCreated, http.StatusOK} {
		assert.Equal(t, want, resp.OperationResults[i].StatusCode, "operation %d", i)
	}
	assert.Equal(t, 15.0, object(t, resp.OperationResults[1].ResourceBody)["n"])
	assert.Equal(t, 6.0, object(t, resp.OperationResults[3].ResourceBody)["n"])
	got, err := cc.ReadItem(ctx, pk, "s", nil)
	require.NoError(t, err)
	assert.Equal(t, 6.0, object(t, got.Value)["n"])
	assert.Equal(t, resp.OperationResults[3].ETag, got.ETag)

	// Failures: 207, the patch's own status, nothing written.
	cond := incr(1)
	cond.SetCondition("FROM c WHERE c.n > 100")
	for _, tc := range []struct {
		name  string
		build func(b *azcosmos.TransactionalBatch)
		want  []int32
	}{
		{"a false condition", func(b *azcosmos.TransactionalBatch) {
			b.UpsertItem([]byte(`{"id":"x","pk":"p"}`), nil)
			b.PatchItem("s", cond, nil)
		}, []int32{http.StatusFailedDependency, http.StatusPreconditionFailed}},
		{"a stale If-Match", func(b *azcosmos.TransactionalBatch) {
			b.UpsertItem([]byte(`{"id":"x","pk":"p"}`), nil)
			b.PatchItem("s", incr(1), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stored.ETag})
		}, []int32{http.StatusFailedDependency, http.StatusPreconditionFailed}},
		{"a missing document", func(b *azcosmos.TransactionalBatch) {
			b.UpsertItem([]byte(`{"id":"x","pk":"p"}`), nil)
			b.PatchItem("missing", incr(1), nil)
		}, []int32{http.StatusFailedDependency, http.StatusNotFound}},
		{"a document the batch deleted", func(b *azcosmos.TransactionalBatch) {
			b.UpsertItem([]byte(`{"id":"x","pk":"p"}`), nil)
			b.DeleteItem("s", nil)
			b.PatchItem("s", incr(1), nil)
		}, []int32{http.StatusFailedDependency, http.StatusFailedDependency, http.StatusNotFound}},
		{"an operation that does not apply", func(b *azcosmos.TransactionalBatch) {
			var p azcosmos.PatchOperations
			p.AppendReplace("/nothing/here", 1)
			b.UpsertItem([]byte(`{"id":"x","pk":"p"}`), nil)
			b.PatchItem("s", p, nil)
		}, []int32{http.StatusFailedDependency, http.StatusBadRequest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := cc.NewTransactionalBatch(pk)
			tc.build(&b)
			resp, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
			require.NoError(t, err)
			assert.False(t, resp.Success)
			var codes []int32
			for _, r := range resp.OperationResults {
				codes = append(codes, r.StatusCode)
			}
			assert.Equal(t, tc.want, codes)
			_, err = cc.ReadItem(ctx, pk, "x", nil)
			assert.Equal(t, http.StatusNotFound, status(err), "nothing of the batch was written")
			got, err := cc.ReadItem(ctx, pk, "s", nil)
			require.NoError(t, err)
			assert.Equal(t, 6.0, object(t, got.Value)["n"])
		})
	}
}

// TestBatchOverOtherStores: over a store that is not a store.Batcher,
// a batch is answered 501 and nothing is written.
func TestBatchOverOtherStores(t *testing.T) {
	st := &plainStore{Store: memstore.New(nil)}
	t.Cleanup(func() { st.Store.Close() })
	srv := emulatortest.Start(t, &emulatortest.Options{Store: st})
	cc := newContainer(t, newClient(t, srv), "/pk")
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	b := cc.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"a","pk":"p"}`), nil)
	_, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
	assert.Equal(t, http.StatusNotImplemented, status(err))
	assert.Contains(t, err.Error(), "transactional batch")
	_, err = cc.ReadItem(ctx, pk, "a", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "nothing of the batch was written")
}

// TestBatchRequests: batch requests written by hand, what azcosmos does
// not send.
func TestBatchRequests(t *testing.T) {
	srv := rawServer(t)
	batch := func(extra map[string]string) map[string]string {
		h := map[string]string{"x-ms-cosmos-is-batch-request": "True", "x-ms-cosmos-batch-atomic": "True", "x-ms-documentdb-partitionkey": `["p"]`}
		for k, v := range extra {
			if v == "" {
				delete(h, k)
			} else {
				h[k] = v
			}
		}
		return h
	}
	create := []byte(`[{"operationType":"Create","resourceBody":{"id":"a","pk":"p"}}]`)
	cases := []struct {
		name string
		body []byte
		hdr  map[string]string
		want int
	}{
		{"not an array", []byte(`{"operationType":"Create"}`), batch(nil), http.StatusBadRequest},
		{"malformed", []byte(`[{"operationType":`), batch(nil), http.StatusBadRequest},
		{"empty", []byte(`[]`), batch(nil), http.StatusBadRequest},
		{"unknown operation", []byte(`[{"operationType":"Merge","id":"a"}]`), batch(nil), http.StatusBadRequest},
		{"no partition key", create, batch(map[string]string{"x-ms-documentdb-partitionkey": ""}), http.StatusBadRequest},
		{"bulk", create, batch(map[string]string{"x-ms-cosmos-batch-atomic": ""}), http.StatusNotImplemented},
		{"bad epoch", create, batch(map[string]string{emulator.HeaderEpoch: "soon"}), http.StatusBadRequest},
		{"negative epoch", create, batch(map[string]string{emulator.HeaderEpoch: "-1"}), http.StatusBadRequest},
		{"missing collection", create, batch(nil), http.StatusNotFound},
	}
	for _, tc := range cases {
		path := "/dbs/raw/colls/c/docs"
		if tc.name == "missing collection" {
			path = "/dbs/raw/colls/none/docs"
		}
		code, h, body := send(t, srv, rawRequest{method: "POST", path: path, body: tc.body, header: tc.hdr})
		require.Equal(t, tc.want, code, "%s: %s", tc.name, body)
		cosmosError(t, h, body)
	}
	// Lower-case operation types, as other SDKs may send them, and a
	// minimal answer.
	code, _, body := send(t, srv, rawRequest{method: "POST", path: "/dbs/raw/colls/c/docs", header: batch(map[string]string{"Prefer": "return=minimal"}),
		body: []byte(`[{"operationType":"upsert","resourceBody":{"id":"a","pk":"p"}},{"operationType":"read","id":"a"}]`)})
	require.Equal(t, http.StatusOK, code, "%s", body)
	var res []map[string]any
	require.NoError(t, json.Unmarshal(body, &res))
	assert.NotContains(t, res[0], "resourceBody", "a write asked for a minimal answer has no document")
	assert.NotEmpty(t, res[0]["eTag"])
	assert.Contains(t, res[1], "resourceBody", "a read always has its document")
}
