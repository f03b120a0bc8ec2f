package shardstate_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// countingStore counts the queries of lease partitions ("lease",
// "lease-NN") and the documents they return.
type countingStore struct {
	store.Store
	queries, returned atomic.Int64
}

func newCounting(t *testing.T) *countingStore {
	st := memstore.New(nil)
	t.Cleanup(func() { _ = st.Close() })
	return &countingStore{Store: st}
}

func (s *countingStore) reset() { s.queries.Store(0); s.returned.Store(0) }

func (s *countingStore) Query(ctx context.Context, l string, q store.Query, o *store.QueryOptions) (*store.Page, error) {
	p, err := s.Store.Query(ctx, l, q, o)
	if k, ok := o.PartitionKey.(string); ok && strings.HasPrefix(k, "lease") {
		s.queries.Add(1)
		if err == nil {
			s.returned.Add(int64(len(p.Items)))
		}
	}
	return p, err
}
