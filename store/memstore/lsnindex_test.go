package memstore

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// TestLSNIndex runs random inserts (mostly new LSNs at the end, some out of
// order, as concurrent durable writers publish them), removals and reads
// from random positions against a sorted slice, checking the block
// invariants after every step.
func TestLSNIndex(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ops       int
		outOfLine float64 // share of inserts below the current end
		removes   float64 // share of steps that remove; -1: the oldest, once there are 1,000
	}{
		{"appends", 5000, 0, 0},
		{"appends and removes", 20000, 0, 0.45},
		{"out of line", 20000, 0.3, 0.3},
		{"drain", 20000, 0.05, 0.7},
		{"replaced in turn", 20000, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.ops)))
			var x lsnIndex
			var ref []*entry // sorted by lsn
			next := uint64(1000)
			for step := 0; step < tc.ops; step++ {
				switch {
				case tc.removes < 0 && len(ref) >= 1000: // the oldest goes, as documents replaced in turn
					e := ref[0]
					x.remove(e)
					ref = ref[1:]
				case len(ref) > 0 && rng.Float64() < tc.removes:
					e := ref[rng.IntN(len(ref))]
					x.remove(e)
					ref = slices.DeleteFunc(ref, func(r *entry) bool { return r == e })
				default:
					lsn := next
					next += 2
					if len(ref) > 0 && rng.Float64() < tc.outOfLine {
						lsn = ref[rng.IntN(len(ref))].lsn - 1 // free: LSNs are even apart
						if slices.ContainsFunc(ref, func(r *entry) bool { return r.lsn == lsn }) {
							continue
						}
					}
					e := &entry{lsn: lsn}
					x.insert(e)
					i, _ := slices.BinarySearchFunc(ref, lsn, func(r *entry, l uint64) int { return cmp.Compare(r.lsn, l) })
					ref = slices.Insert(ref, i, e)
				}
				if step%97 == 0 || step == tc.ops-1 {
					checkLSNIndex(t, &x, ref)
					from := uint64(0)
					if len(ref) > 0 {
						from = ref[rng.IntN(len(ref))].lsn - uint64(rng.IntN(2))
					}
					var got []*entry
					for e := range x.after(from) {
						if got = append(got, e); len(got) == 10 {
							break
						}
					}
					i, _ := slices.BinarySearchFunc(ref, from+1, func(r *entry, l uint64) int { return cmp.Compare(r.lsn, l) })
					want := ref[i:min(i+10, len(ref))]
					require.Equal(t, len(want), len(got), "step %d: entries after %d", step, from)
					for k := range want {
						require.Same(t, want[k], got[k], "step %d: entry %d after %d", step, k, from)
					}
				}
			}
			// Removing an entry that is not there changes nothing.
			n := x.len()
			x.remove(&entry{lsn: 3})
			require.Equal(t, n, x.len())
		})
	}
}

// checkLSNIndex checks the blocks: none empty or over full, in order, and
// together exactly ref.
func checkLSNIndex(t *testing.T, x *lsnIndex, ref []*entry) {
	t.Helper()
	var all []*entry
	for i, b := range x.blocks {
		require.Positive(t, b.len(), "block %d is empty", i)
		for j, e := range b.e {
			inside := b.lo <= j && j < b.hi
			require.Equal(t, inside, e != nil, "block %d slot %d (entries %d to %d)", i, j, b.lo, b.hi)
		}
		all = append(all, b.e[b.lo:b.hi]...)
	}
	if x.spare != nil {
		require.Equal(t, &lsnBlock{}, x.spare, "the spare block is empty")
	}
	require.Equal(t, len(ref), len(all))
	for i := range ref {
		require.Same(t, ref[i], all[i], "entry %d", i)
	}
}

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
