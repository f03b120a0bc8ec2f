package fleetsim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/storecap/storecaptest"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestCapabilities: the meter offers each optional capability of package
// store exactly when the wrapped store does, as the retry layer does.
func TestCapabilities(t *testing.T) {
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	c := NewCounter(nil)
	storecaptest.Check(t, storecaptest.Wrapper{Package: "fleetsim", Type: "Store", Capabilities: filepath.Join("..", "..", "store", "capabilities.go"),
		Generated: "capabilities_gen.go", Names: capabilityNames, Wrap: c.Wrap}, mem)
}

func TestCharges(t *testing.T) {
	c := DefaultCharges
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"a point read of 1 KB", c.ReadRU(1024), 1},
		{"a point read of less costs the same", c.ReadRU(10), 1},
		{"a point read of 100 KB", c.ReadRU(100 * 1024), 10},
		{"a write of 1 KB", c.WriteRU(1024), 5},
		{"a write of 100 KB", c.WriteRU(100 * 1024), 50},
		{"a write of 50.5 KB, halfway", c.WriteRU(50*1024 + 512), 27.5},
		{"an empty query page", c.PageRU(Query, nil), 2.3},
		{"a query page of two small documents", c.PageRU(Query, []int{300, 2048}), 2.3 + 1 + (1 + 9.0/99)},
		{"an empty change-feed page", c.PageRU(ChangeFeed, nil), 1},
	} {
		assert.InDelta(t, tc.want, tc.got, 1e-9, tc.name)
	}
	strong := DefaultCharges
	strong.ReadMultiplier = 2
	assert.InDelta(t, 2, strong.ReadRU(1024), 1e-9, "strong consistency doubles reads")
	assert.InDelta(t, 5, strong.WriteRU(1024), 1e-9, "not writes")
}

// TestMeter: a known sequence of calls is counted by kind and logical
// partition and charged by the table, capabilities included, and the
// calls under a tag are tallied apart.
func TestMeter(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(nil)
	t.Cleanup(func() { _ = mem.Close() })
	c := NewCounter(nil)
	st := c.Wrap(mem)
	const coll = "dbs/app/colls/c"
	require.NoError(t, st.CreateCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: "/k"}))
	a := &store.WriteOptions{PartitionKey: "a"}
	_, err := st.Create(ctx, coll, []byte(`{"id":"1","k":"a"}`), a)
	require.NoError(t, err)
	_, err = st.Create(ctx, coll, []byte(`{"id":"1","k":"a"}`), a)
	require.ErrorIs(t, err, store.ErrConflict, "a refused write is charged too")
	big := `{"id":"2","k":"b","pad":"` + strings.Repeat("x", 100*1024) + `"}`
	_, err = st.Upsert(ctx, coll, []byte(big), &store.WriteOptions{PartitionKey: "b"})
	require.NoError(t, err)
	_, err = st.Read(WithTag(ctx, "mine"), coll, "1", &store.ReadOptions{PartitionKey: "a"})
	require.NoError(t, err)
	_, err = st.Replace(ctx, coll, "1", []byte(`{"id":"1","k":"a","v":2}`), a)
	require.NoError(t, err)
	p, err := st.Query(WithTag(ctx, "mine"), coll, store.Query{Text: "SELECT * FROM c"}, nil)
	require.NoError(t, err)
	require.Len(t, p.Items, 2)
	_, err = st.(store.ChangeFeeder).ReadChanges(ctx, coll, &store.ChangeFeedOptions{PartitionKey: "a"})
	require.NoError(t, err)
	_, err = st.(store.Batcher).ExecuteBatch(ctx, coll, "a", []store.BatchOp{
		{Kind: store.BatchRead, ID: "1"},
		{Kind: store.BatchCreate, Doc: []byte(`{"id":"3","k":"a"}`)},
	}, nil)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, coll, "3", a))
	_, err = st.(store.Fencer).RaiseFence(ctx, "dbs/app", 2)
	require.NoError(t, err)
	ttl := 60
	require.NoError(t, st.(store.Replacer).ReplaceCollection(ctx, coll, &store.CollectionSpec{PartitionKeyPath: "/k", DefaultTTL: &ttl}))

	s := c.Snapshot()
	pa, pb, all, dbp := Partition{coll, "a"}, Partition{coll, "b"}, Partition{coll, AllKeys}, Partition{Link: "dbs/app"}
	// Kinds and counts by partition.
	ua := s.ByPartition[pa]
	assert.Equal(t, int64(2), ua.Calls[Create])
	assert.Equal(t, int64(1), ua.Errors)
	assert.Equal(t, int64(1), ua.Calls[PointRead])
	assert.Equal(t, int64(1), ua.Calls[Replace])
	assert.Equal(t, int64(1), ua.Calls[ChangeFeed])
	assert.Equal(t, int64(1), ua.Calls[Batch])
	assert.Equal(t, int64(1), ua.Calls[Delete])
	assert.Equal(t, int64(1), s.ByPartition[pb].Calls[Upsert])
	assert.Equal(t, int64(1), s.ByPartition[all].Calls[Query])
	assert.Equal(t, int64(2), s.ByPartition[all].Docs)
	assert.Equal(t, int64(1), s.ByPartition[dbp].Calls[Fence])
	assert.Equal(t, int64(2), s.ByPartition[Partition{Link: coll}].Calls[Metadata], "a create and a replace of the collection")
	assert.Zero(t, s.ByPartition[Partition{Link: coll}].RU)

	// Charges: every document of partition a is under 1 KB.
	assert.InDelta(t, 5+5+1+5+(1+1)+(1+5)+5, ua.RU, 1e-9, "two creates, a read, a replace, a change-feed page of one, a batch of a read and a create, a delete")
	ub := s.ByPartition[pb]
	assert.Greater(t, ub.RU, 50.0, "a write of over 100 KB")
	assert.Less(t, ub.RU, 51.0)
	bigRU := DefaultCharges.ReadRU(len(big) + 60) // about the stored size
	assert.InDelta(t, 2.3+1+bigRU, s.ByPartition[all].RU, 0.1, "a query page of a small and a big document")
	assert.InDelta(t, 5, s.ByPartition[dbp].RU, 1e-9)
	busy, _ := s.Busiest()
	assert.Equal(t, pb, busy)

	// The tag, and Sub.
	mine := s.ByTag["mine"]
	assert.Equal(t, int64(1), mine.Calls[PointRead])
	assert.Equal(t, int64(1), mine.Calls[Query])
	assert.InDelta(t, 1+s.ByPartition[all].RU, mine.RU, 1e-9)
	_, err = st.Read(ctx, coll, "1", &store.ReadOptions{PartitionKey: "a"})
	require.NoError(t, err)
	d := c.Snapshot().Sub(s)
	assert.Equal(t, []Partition{pa}, d.Partitions())
	assert.Equal(t, int64(1), d.Total().CallsTotal())
	assert.InDelta(t, 1, d.Total().RU, 1e-9)
	assert.Empty(t, d.ByTag)
}
