package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// remoteFeed is a memstore whose change-feed reads take a round trip (so
// Changes reads the collections at once), and fail for one collection
// when fail is set.
type remoteFeed struct {
	*memstore.Store
	fail string
}

var errFeedDown = errors.New("feed down")

func (s *remoteFeed) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	time.Sleep(time.Millisecond) // a round trip: selects the concurrent reads, not a wait for anything
	if l == s.fail {
		return nil, fmt.Errorf("%s: %w", l, errFeedDown)
	}
	return s.Store.ReadChanges(ctx, l, o)
}

// TestChangesRemoteStore: over a store that answers in round trips the
// collections are read at once; the page holds every document once, in
// each collection's order, and one collection's failure fails the call
// with its error (and no token).
func TestChangesRemoteStore(t *testing.T) {
	tests := []struct {
		name string
		fail string
	}{
		{name: "every collection answers"},
		{name: "one fails", fail: links(5)[3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &remoteFeed{Store: memstore.New(nil)}
			t.Cleanup(func() { _ = st.Close() })
			c := router.New(st, nil)
			require.NoError(t, c.Register(db, ring(t, 5)))
			_, err := c.EnsureCollections(ctx, db, nil)
			require.NoError(t, err)
			want := map[string]bool{}
			for i := range 40 {
				id := fmt.Sprintf("d%d", i)
				_, err := c.Create(ctx, db, []byte(fmt.Sprintf(`{"id":%q,"userId":"u%d"}`, id, i)), nil)
				require.NoError(t, err)
				want[id] = true
			}
			st.fail = tt.fail
			p, err := c.Changes(ctx, db, &router.ChangeOptions{PageSize: 100})
			if tt.fail != "" {
				require.ErrorIs(t, err, errFeedDown)
				require.ErrorContains(t, err, tt.fail)
				require.Nil(t, p)
				return
			}
			require.NoError(t, err)
			got := map[string]bool{}
			for _, it := range p.Items {
				var d struct{ ID string }
				require.NoError(t, json.Unmarshal(it, &d))
				require.False(t, got[d.ID], "document %s twice", d.ID)
				got[d.ID] = true
			}
			require.Equal(t, want, got)
			p, err = c.Changes(ctx, db, &router.ChangeOptions{Continuation: p.Continuation})
			require.NoError(t, err)
			require.Empty(t, p.Items)
			require.True(t, p.CaughtUp)
		})
	}
}
