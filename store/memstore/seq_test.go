package memstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// TestDocumentSeq: a document's Seq is set at creation, in creation order,
// kept by replaces and upserts and across a durable store's restart, new
// for a document deleted and created again; Seqs says the same for the
// documents a query returned, 0 for one gone.
func TestDocumentSeq(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "durable"}[durable], func(t *testing.T) {
			const l = "dbs/app/colls/c"
			ctx := context.Background()
			open := opener(t, durable, &fakeClock{})
			s := open()
			require.NoError(t, s.CreateCollection(ctx, l, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
			seq := map[string]uint64{}
			var prev uint64
			for _, id := range []string{"a", "b", "c"} {
				d, err := s.Create(ctx, l, []byte(`{"id":"`+id+`","pk":"k"}`), nil)
				require.NoError(t, err)
				assert.Greater(t, d.Seq, prev, id)
				prev, seq[id] = d.Seq, d.Seq
			}
			d, err := s.Replace(ctx, l, "a", []byte(`{"id":"a","pk":"k","v":1}`), &store.WriteOptions{PartitionKey: "k"})
			require.NoError(t, err)
			assert.Equal(t, seq["a"], d.Seq, "a replace keeps it")
			d, err = s.Upsert(ctx, l, []byte(`{"id":"c","pk":"k","v":1}`), nil)
			require.NoError(t, err)
			assert.Equal(t, seq["c"], d.Seq, "an upsert that replaces keeps it")
			require.NoError(t, s.Delete(ctx, l, "b", &store.WriteOptions{PartitionKey: "k"}))
			d, err = s.Create(ctx, l, []byte(`{"id":"b","pk":"k"}`), nil)
			require.NoError(t, err)
			assert.Greater(t, d.Seq, seq["c"], "created again: a new place")
			seq["b"] = d.Seq

			if durable {
				require.NoError(t, s.Close())
				s = open()
			}
			defer s.Close()
			for id, want := range seq {
				d, err := s.Read(ctx, l, id, &store.ReadOptions{PartitionKey: "k"})
				require.NoError(t, err)
				assert.Equal(t, want, d.Seq, "read %s", id)
			}
			got, err := s.Seqs(ctx, l, []string{`"k"`, `"k"`, `"k"`, `"k"`, `"other"`}, []string{"a", "b", "c", "gone", "a"})
			require.NoError(t, err)
			assert.Equal(t, []uint64{seq["a"], seq["b"], seq["c"], 0, 0}, got)
			_, err = s.Seqs(ctx, l, []string{`"k"`}, nil)
			assert.ErrorIs(t, err, store.ErrBadRequest)
			_, err = s.Seqs(ctx, "dbs/app/colls/none", nil, nil)
			assert.ErrorIs(t, err, store.ErrCollectionNotFound)
		})
	}
}
