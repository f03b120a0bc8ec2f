package router_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// appliedThenLost applies the first conditional delete and then answers
// ErrUnavailable, as a connection that drops after the service deleted.
type appliedThenLost struct {
	store.Store
	lost atomic.Bool
}

func (s *appliedThenLost) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	err := s.Store.Delete(ctx, l, id, o)
	if err == nil && o != nil && o.IfMatch != "" && s.lost.CompareAndSwap(false, true) {
		return &store.Error{Kind: store.ErrUnavailable, Op: "delete", Message: "the connection was reset after the request was sent"}
	}
	return err
}

// TestMoveLostReply: a replace that moves a document to another
// collection deletes the old copy If-Match; when that delete lands and its
// answer is lost, the retried delete is refused (not found). The router
// took that for "another writer won" and deleted the new copy too: the
// document was gone. Now the unknown outcome is reported and the document
// survives (found by its new key), once.
func TestMoveLostReply(t *testing.T) {
	fs := &appliedThenLost{Store: newMem(t)}
	c := setup(t, 8, fs, nil)
	from, to := keysIn(t, ring(t, 8))
	_, err := c.Create(ctx, db, user{ID: "x", UserID: from, Name: "before"}, nil)
	require.NoError(t, err)
	_, err = c.Replace(ctx, db, "x", user{ID: "x", UserID: to, Name: "after"}, &router.ReplaceOptions{OldKey: from})
	require.True(t, fs.lost.Load(), "the delete's answer was lost")
	if err != nil {
		assert.ErrorIs(t, err, store.ErrUnavailable, "the outcome is reported as unknown")
	}
	require.Equal(t, 1, countDocs(t, fs, "x"), "the document is kept, once")
	_, err = c.Read(ctx, db, "x", to)
	require.NoError(t, err, "found by its new key")
}
