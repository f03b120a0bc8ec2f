package shardstate_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/store/retry"
)

// lostReply applies the first conditional replace and then answers
// ErrUnavailable, as a connection that drops after the service wrote.
type lostReply struct {
	*memstore.Store
	lost atomic.Bool
}

func (s *lostReply) Replace(ctx context.Context, l, id string, doc []byte, o *store.WriteOptions) (*store.Document, error) {
	d, err := s.Store.Replace(ctx, l, id, doc, o)
	if err == nil && o != nil && o.IfMatch != "" && s.lost.CompareAndSwap(false, true) {
		return nil, &store.Error{Kind: store.ErrUnavailable, Op: "replace", Message: "the connection was reset after the request was sent"}
	}
	return d, err
}

// TestPublishLostReply: a publish whose swap landed but whose answer was
// lost is the publish that happened: it succeeds, and the fence of its new
// epoch is raised. Before, the retried swap was refused and Publish
// reported a conflict with its own write, leaving the store's fence behind
// the state's epoch (a spillover then never fenced the sealed collection),
// whether the caller's context is marked Repeatable (the refusal) or not
// (the unknown outcome).
func TestPublishLostReply(t *testing.T) {
	for _, marked := range []bool{false, true} {
		ctx := context.Background()
		if marked {
			ctx = retry.Repeatable(ctx)
		}
		st := &lostReply{Store: memstore.New(nil)}
		r, err := hashring.New([]string{"dbs/x/colls/a", "dbs/x/colls/b"}, nil)
		require.NoError(t, err)
		cur, err := shardstate.Init(ctx, st, "dbs/x", r, nil)
		require.NoError(t, err)
		next, err := shardstate.Publish(ctx, st, cur, shardstate.Change{NewEpoch: true, By: "me"})
		require.NoError(t, err, "marked=%v", marked)
		require.True(t, st.lost.Load(), "the reply was lost")
		now, err := shardstate.Load(ctx, st, "dbs/x")
		require.NoError(t, err)
		require.Equal(t, now.Version, next.Version)
		require.Equal(t, now.ETag, next.ETag)
		fence, err := st.Fence(ctx, "dbs/x")
		require.NoError(t, err)
		require.Equal(t, now.Epoch, fence, "the fence is raised to the published epoch")
	}
}
