package router_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// feedCalls is a memstore counting the calls a change-feed read makes.
type feedCalls struct {
	*memstore.Store
	queries, feeds atomic.Int64
}

func (s *feedCalls) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	s.queries.Add(1)
	return s.Store.Query(ctx, l, q, o)
}

func (s *feedCalls) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	s.feeds.Add(1)
	return s.Store.ReadChanges(ctx, l, o)
}

// TestChangesFromNowCost: a consumer starting at the present costs one
// change-feed read per collection the database names now, and no read of
// the state's history, however long that history is (versions that named
// other collections: nothing is written there after now).
func TestChangesFromNowCost(t *testing.T) {
	st := &feedCalls{Store: memstore.New(nil)}
	t.Cleanup(func() { _ = st.Close() })
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	for _, n := range []int{5, 3, 4} { // versions that named other collections
		s, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: ring(t, n), NewEpoch: true})
		require.NoError(t, err)
	}
	c := router.New(st, nil)
	require.NoError(t, c.Register(db, ring(t, 4)))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)

	st.queries.Store(0)
	st.feeds.Store(0)
	p, err := c.Changes(ctx, db, &router.ChangeOptions{FromNow: true})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.True(t, p.CaughtUp)
	require.Equal(t, int64(0), st.queries.Load(), "queries (the state's history) for a feed from now")
	require.Equal(t, int64(4), st.feeds.Load(), "change-feed reads for a feed from now over 4 collections")

	// The position it returned reads what is written after it, once.
	_, err = c.Create(ctx, db, []byte(`{"id":"after","userId":"u"}`), nil)
	require.NoError(t, err)
	p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: p.Continuation})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
}

// stateReads counts the point reads of documents a client makes.
type stateReads struct {
	*feedCalls
	reads atomic.Int64
}

func (s *stateReads) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	s.reads.Add(1)
	return s.Store.Read(ctx, l, id, o)
}

// TestChangesKeptView: a consumer polling with the token it was given
// costs one read of the state a call, and a change of the state between
// two calls is still seen (a collection a new resolver names joins the
// feed from its beginning).
func TestChangesKeptView(t *testing.T) {
	st := &stateReads{feedCalls: &feedCalls{Store: memstore.New(nil)}}
	t.Cleanup(func() { _ = st.Close() })
	s, err := shardstate.Init(ctx, st, db, ring(t, 2), nil)
	require.NoError(t, err)
	c := router.New(st, nil)
	require.NoError(t, c.Register(db, ring(t, 2)))
	_, err = c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	for i := range 10 {
		_, err := c.Create(ctx, db, []byte(fmt.Sprintf(`{"id":"d%d","userId":"u%d"}`, i, i)), nil)
		require.NoError(t, err)
	}
	p, err := c.Changes(ctx, db, nil)
	require.NoError(t, err)
	require.Len(t, p.Items, 10)

	st.reads.Store(0)
	given := p.Continuation
	p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: given})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.Equal(t, int64(1), st.reads.Load(), "point reads (of the state) for a poll")
	require.Equal(t, given, p.Continuation, "a poll that moved nothing returns the token it was given")

	// A third collection, written before the state names it: the feed
	// must read it from its beginning once the state does.
	three := ring(t, 3)
	c3 := router.New(st, nil)
	require.NoError(t, c3.Register(db, three))
	_, err = c3.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)
	_, err = st.Create(ctx, links(3)[2], []byte(`{"id":"new","userId":"x"}`), nil)
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, st, s, shardstate.Change{Resolver: three, NewEpoch: true})
	require.NoError(t, err)
	var got []string
	cont := p.Continuation
	for {
		p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont})
		require.NoError(t, err)
		for _, it := range p.Items {
			got = append(got, string(it))
		}
		cont = p.Continuation
		if p.CaughtUp {
			break
		}
	}
	require.Len(t, got, 1)
	require.Contains(t, got[0], `"id":"new"`)
}
