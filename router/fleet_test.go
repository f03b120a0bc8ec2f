package router_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

// hookStore calls afterDelete after each delete that succeeded.
type hookStore struct {
	*fenceStore
	afterDelete func(l, id string)
}

func (s *hookStore) Delete(ctx context.Context, l, id string, o *store.WriteOptions) error {
	err := s.fenceStore.Delete(ctx, l, id, o)
	if err == nil && s.afterDelete != nil {
		s.afterDelete(l, id)
	}
	return err
}

// movingKey returns a key that cur and next place in different collections.
func movingKey(t *testing.T, cur, next resolver.Resolver) string {
	for i := 0; ; i++ {
		k := fmt.Sprint("k", i)
		a, err := cur.ResolveForCreate(k)
		require.NoError(t, err)
		b, err := next.ResolveForCreate(k)
		require.NoError(t, err)
		if a != b {
			return k
		}
	}
}

// TestDeleteAcrossFencedRetry: during a transition the router deletes a
// moving key from both placements; when a new epoch lands between its two
// calls, the second is fenced and the router deletes again by the new
// state, where the first call already removed the document. The delete
// succeeded, and says so (it answered NotFound).
func TestDeleteAcrossFencedRetry(t *testing.T) {
	fs := newFenceStore(t)
	st := &hookStore{fenceStore: fs}
	c := router.New(st, nil)
	cur, next := ring(t, 2), ring(t, 3)
	tr, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadBoth, WriteTo: transition.WriteNext})
	require.NoError(t, err)
	f := follow(t, c, &router.FollowOptions{Seed: tr, PollInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	for _, l := range links(3) {
		require.NoError(t, fs.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/userId"}))
	}
	key := movingKey(t, cur, next)
	from, _ := cur.ResolveForCreate(key)
	to, _ := next.ResolveForCreate(key)
	// Written under the transition: it sits where the next placement
	// puts it, and nowhere else.
	_, err = c.Create(ctx, db, user{ID: "x", UserID: key}, nil)
	require.NoError(t, err)

	switched, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadNext, WriteTo: transition.WriteNext})
	require.NoError(t, err)
	var once atomic.Bool
	st.afterDelete = func(l, id string) {
		if id == "x" && once.CompareAndSwap(false, true) {
			// The switch lands between the two calls.
			s, err := shardstate.Load(ctx, fs, db)
			require.NoError(t, err)
			_, err = shardstate.Publish(ctx, fs, s, shardstate.Change{Resolver: switched, NewEpoch: true})
			require.NoError(t, err)
		}
	}
	require.NoError(t, c.Delete(ctx, db, "x", key, nil), "the document was deleted")
	assert.Equal(t, int32(1), fs.fenced.Load(), "the second call was fenced")
	assert.Equal(t, int64(2), f.Version(), "and the router moved on")
	for _, l := range []string{from, to} {
		_, err := fs.Store.Read(ctx, l, "x", &store.ReadOptions{PartitionKey: key})
		assert.ErrorIs(t, err, store.ErrNotFound, l)
	}

	// A document that is not there is still NotFound.
	require.ErrorIs(t, c.Delete(ctx, db, "x", key, nil), store.ErrNotFound)
}
