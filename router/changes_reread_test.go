package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// presentReads is a memstore recording, per collection, whether a
// change-feed read found its present (an empty page) since reset.
type presentReads struct {
	*memstore.Store
	mu      sync.Mutex
	present map[string]bool
	again   []string // collections read again after their present, since reset
}

func (s *presentReads) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.present, s.again = map[string]bool{}, nil
}

func (s *presentReads) ReadChanges(ctx context.Context, l string, o *store.ChangeFeedOptions) (*store.ChangePage, error) {
	p, err := s.Store.ReadChanges(ctx, l, o)
	if err != nil {
		return p, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.present[l] {
		s.again = append(s.again, l)
	}
	if len(p.Items) == 0 {
		s.present[l] = true
	}
	return p, nil
}

// TestChangesCatchUpReadsOnce: the call of a database's change feed that
// ends a catch-up (the collections read one after another to their
// present after a change of placement) does not read those collections
// again in the same call; the feed still returns every document once and
// says it caught up.
func TestChangesCatchUpReadsOnce(t *testing.T) {
	tests := []struct {
		name     string
		pageSize int
	}{
		{name: "one call catches every collection up", pageSize: 1000},
		{name: "the catch-up spans calls", pageSize: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &presentReads{Store: memstore.New(nil)}
			t.Cleanup(func() { _ = st.Close() })
			c := router.New(st, nil)
			f, err := c.Follow(ctx, db, &router.FollowOptions{Seed: ring(t, 4)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = f.Close() })
			_, err = c.EnsureCollections(ctx, db, nil)
			require.NoError(t, err)
			const docs = 200
			for i := range docs {
				_, err := c.Create(ctx, db, []byte(fmt.Sprintf(`{"id":"d%d","userId":"u%d"}`, i, i)), nil)
				require.NoError(t, err)
			}
			seen, cont, calls := map[string]bool{}, "", 0
			for {
				st.reset()
				p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont, PageSize: tt.pageSize})
				require.NoError(t, err)
				calls++
				assert.Empty(t, st.again, "call %d read these collections again after their present", calls)
				for _, it := range p.Items {
					var d struct{ ID string }
					require.NoError(t, json.Unmarshal(it, &d))
					assert.False(t, seen[d.ID], "document %s twice", d.ID)
					seen[d.ID] = true
				}
				cont = p.Continuation
				if p.CaughtUp {
					break
				}
			}
			assert.Len(t, seen, docs)
			// A poll at the present reads each collection once.
			st.reset()
			p, err := c.Changes(ctx, db, &router.ChangeOptions{Continuation: cont})
			require.NoError(t, err)
			assert.Empty(t, p.Items)
			assert.True(t, p.CaughtUp)
			assert.Empty(t, st.again)
			assert.Len(t, st.present, 4)
		})
	}
}
