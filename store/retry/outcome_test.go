package retry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/store/retry"
)

// lostReply applies the first write it is handed and then answers
// ErrUnavailable, as a store whose connection drops after the service
// wrote does; later calls go through.
type lostReply struct {
	store.Store
	armed atomic.Bool
}

func (l *lostReply) lose(err error) error {
	if err == nil && l.armed.CompareAndSwap(true, false) {
		return &store.Error{Kind: store.ErrUnavailable, Message: "the connection was reset after the request was sent"}
	}
	return err
}

func (l *lostReply) Replace(ctx context.Context, link, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	d, err := l.Store.Replace(ctx, link, id, doc, o)
	if err = l.lose(err); err != nil {
		return nil, err
	}
	return d, nil
}

func (l *lostReply) Delete(ctx context.Context, link, id string, o *store.WriteOptions) error {
	return l.lose(l.Store.Delete(ctx, link, id, o))
}

// TestRefusalAfterUnknownOutcome: a conditional replace or delete whose
// first attempt was applied and whose answer was lost is refused when sent
// again; the layer must report the unknown outcome, not the refusal (a
// router that moves a document took "not found" for "another writer won"
// and deleted the only copy). A context marked Repeatable gets the refusal.
func TestRefusalAfterUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(nil)
	const l = "dbs/d/colls/c"
	require.NoError(t, mem.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	pol := &retry.Options{Policy: retry.Policy{DefaultWait: 1, MaxBackoff: 1}}
	for _, tc := range []struct {
		name    string
		marked  bool
		call    func(ctx context.Context, st store.Store, etag string) error
		refusal error
	}{
		{"replace If-Match", false, func(ctx context.Context, st store.Store, etag string) error {
			_, err := st.Replace(ctx, l, "a", []byte(`{"id":"a","pk":"p","n":2}`), &store.WriteOptions{PartitionKey: "p", IfMatch: etag})
			return err
		}, store.ErrPreconditionFailed},
		{"delete If-Match", false, func(ctx context.Context, st store.Store, etag string) error {
			return st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "p", IfMatch: etag})
		}, store.ErrNotFound},
		{"delete If-Match, marked", true, func(ctx context.Context, st store.Store, etag string) error {
			return st.Delete(ctx, l, "a", &store.WriteOptions{PartitionKey: "p", IfMatch: etag})
		}, store.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := mem.Upsert(ctx, l, []byte(`{"id":"a","pk":"p","n":1}`), &store.WriteOptions{PartitionKey: "p"})
			require.NoError(t, err)
			lr := &lostReply{Store: mem}
			lr.armed.Store(true)
			st := retry.Wrap(lr, pol)
			cctx := ctx
			if tc.marked {
				cctx = retry.Repeatable(ctx)
			}
			err = tc.call(cctx, st, d.ETag)
			require.Error(t, err)
			if tc.marked {
				assert.ErrorIs(t, err, tc.refusal, "a marked caller gets the refusal")
				return
			}
			assert.ErrorIs(t, err, store.ErrUnavailable, "the outcome is unknown")
			assert.False(t, errors.Is(err, tc.refusal), "never reported as refused: %v", err)
		})
	}
}

// TestEnsureKeepsCapabilities: Ensure of a bare *Store (New) gives the
// wrapped store's capabilities back instead of hiding them.
func TestEnsureKeepsCapabilities(t *testing.T) {
	mem := memstore.New(nil)
	_, fencer := retry.Ensure(retry.New(mem, nil)).(store.Fencer)
	assert.True(t, fencer, "Ensure(New(memstore)) must still be a store.Fencer")
}

// TestSpanWithoutContext: a Span hook that returns a nil context does not
// hand the store a nil context.
func TestSpanWithoutContext(t *testing.T) {
	mem := memstore.New(nil)
	st := retry.Wrap(mem, &retry.Options{Hooks: retry.Hooks{Span: func(ctx context.Context, link, op string) (context.Context, func(error)) {
		return nil, nil
	}}})
	_, err := st.ListCollections(context.Background(), "dbs/d")
	require.NoError(t, err)
}
