package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// Case keys of fencing (store.Fencer). A backend that is not a Fencer
// skips them by itself, saying so.
const (
	SkipFence           = "Fence"           // stale stamped writes of every kind refused, epoch 0 not fenced, raises monotonic
	SkipFenceConcurrent = "FenceConcurrent" // a raise under stamped writers: none below it succeeds after it returns, none acknowledged is lost
)

func fencer(t *testing.T, st store.Store) store.Fencer {
	t.Helper()
	return capability[store.Fencer](t, st, "store.Fencer")
}

// fencedColl creates a collection keyed by /pk in a database of its own
// (fences are per database, and outlive the case) and returns the
// database's link and the collection's.
func (s *suite) fencedColl(t *testing.T, st store.Store) (db, l string) {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	db = "dbs/" + s.opts.Database + "-fence-" + hex.EncodeToString(b[:])
	l = db + "/colls/c"
	require.NoError(t, st.CreateCollection(ctx, l, byKey("/pk")))
	t.Cleanup(func() { _ = st.DeleteCollection(context.Background(), l) })
	return db, l
}

func epoch(e int64) *store.WriteOptions { return &store.WriteOptions{Epoch: e} }

func (s *suite) fence(t *testing.T, st store.Store) {
	f := fencer(t, st)
	db, l := s.fencedColl(t, st)
	other, _ := s.fencedColl(t, st)
	got, err := f.Fence(ctx, db)
	require.NoError(t, err)
	assert.Zero(t, got, "no fence before a raise")
	got, err = f.RaiseFence(ctx, db, 5)
	require.NoError(t, err)
	assert.EqualValues(t, 5, got)
	got, err = f.RaiseFence(ctx, db, 3)
	require.NoError(t, err)
	assert.EqualValues(t, 5, got, "a fence never goes down")
	got, err = f.Fence(ctx, db)
	require.NoError(t, err)
	assert.EqualValues(t, 5, got)
	got, err = f.Fence(ctx, other)
	require.NoError(t, err)
	assert.Zero(t, got, "a fence is per database")
	_, err = f.RaiseFence(ctx, db, -1)
	requireKind(t, err, store.ErrBadRequest, "a negative epoch")
	_, err = f.RaiseFence(ctx, "not-a-link", 1)
	requireKind(t, err, store.ErrBadRequest, "a malformed database link")

	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "x", "pk": "p", "v": 0.0}), nil)
	require.NoError(t, err)
	type write func(id string, opts *store.WriteOptions) error
	w := func(f func(id string, opts *store.WriteOptions) (*store.Document, error)) write {
		return func(id string, opts *store.WriteOptions) error { _, err := f(id, opts); return err }
	}
	writes := []struct {
		name string
		do   write
	}{
		{"create", w(func(id string, o *store.WriteOptions) (*store.Document, error) {
			return st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": "p"}), o)
		})},
		{"replace", w(func(id string, o *store.WriteOptions) (*store.Document, error) {
			return st.Replace(ctx, l, "x", doc(t, map[string]any{"id": "x", "pk": "p", "v": id}), o)
		})},
		{"upsert", w(func(id string, o *store.WriteOptions) (*store.Document, error) {
			return st.Upsert(ctx, l, doc(t, map[string]any{"id": "x", "pk": "p", "v": id}), o)
		})},
		{"delete", func(id string, o *store.WriteOptions) error {
			if _, err := st.Create(ctx, l, doc(t, map[string]any{"id": "del-" + id, "pk": "p"}), nil); err != nil {
				return err
			}
			return st.Delete(ctx, l, "del-"+id, &store.WriteOptions{PartitionKey: "p", Epoch: o.Epoch})
		}},
	}
	if b, ok := st.(store.Batcher); ok {
		writes = append(writes, struct {
			name string
			do   write
		}{"batch", func(id string, o *store.WriteOptions) error {
			_, err := b.ExecuteBatch(ctx, l, "p", []store.BatchOp{
				bCreate(doc(t, map[string]any{"id": "batch-" + id, "pk": "p"})),
				bUpsert(doc(t, map[string]any{"id": "x", "pk": "p", "v": id})),
			}, &store.BatchOptions{Epoch: o.Epoch})
			return err
		}})
	}
	for _, wr := range writes {
		before := snapshot(t, st, l)
		err := wr.do("stale", epoch(4))
		requireKind(t, err, store.ErrFenced, "%s stamped 4 under the fence 5", wr.name)
		assert.False(t, errors.Is(err, store.ErrPreconditionFailed), "%s: fenced is not a failed precondition", wr.name)
		if wr.name == "delete" {
			require.NoError(t, st.Delete(ctx, l, "del-stale", wpk("p")))
		}
		require.Equal(t, before, snapshot(t, st, l), "a fenced %s writes nothing", wr.name)
		for _, e := range []int64{5, 6, 0} {
			require.NoError(t, wr.do(fmt.Sprint("e", e), epoch(e)), "%s stamped %d under the fence 5", wr.name, e)
		}
	}
	// Another database's fence does not apply.
	ol := other + "/colls/c"
	_, err = st.Create(ctx, ol, doc(t, map[string]any{"id": "y", "pk": "p"}), epoch(1))
	require.NoError(t, err)
}

// fenceConcurrent: writers create documents stamped with epoch 1 while
// the fence is raised to 2. Every create that started after RaiseFence
// returned is refused, and every create acknowledged was stored before it
// returned (none committed after the raise); every one refused is not
// stored; creates stamped 2 go on.
func (s *suite) fenceConcurrent(t *testing.T, st store.Store) {
	f := fencer(t, st)
	db, l := s.fencedColl(t, st)
	_, err := f.RaiseFence(ctx, db, 1)
	require.NoError(t, err)
	b, isBatcher := st.(store.Batcher)
	const writers, after = 8, 10
	var (
		raised  atomic.Bool
		started atomic.Int64 // stamped-1 writes begun
		mu      sync.Mutex
		acked   []string
		fenced  []string
		wg      sync.WaitGroup
		late    atomic.Int64 // stamped-1 writes begun after the raise returned
	)
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				afterRaise := raised.Load()
				if afterRaise && late.Add(1) > writers*after {
					return
				}
				started.Add(1)
				var err error
				if isBatcher && i%3 == 2 {
					_, err = b.ExecuteBatch(ctx, l, id, []store.BatchOp{bCreate(doc(t, map[string]any{"id": id, "pk": id}))}, &store.BatchOptions{Epoch: 1})
				} else {
					_, err = st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": id}), epoch(1))
				}
				mu.Lock()
				switch {
				case err == nil:
					if afterRaise {
						t.Errorf("%s stamped 1 began after the fence was raised to 2 and succeeded", id)
					}
					acked = append(acked, id)
				case errors.Is(err, store.ErrFenced):
					fenced = append(fenced, id)
				default:
					t.Errorf("%s: %v", id, err)
				}
				mu.Unlock()
				if err != nil && !errors.Is(err, store.ErrFenced) {
					return
				}
			}
		})
	}
	wait := time.Now().Add(time.Minute)
	for started.Load() < 20*writers && time.Now().Before(wait) {
		time.Sleep(time.Millisecond)
	}
	got, err := f.RaiseFence(ctx, db, 2)
	require.NoError(t, err)
	raised.Store(true)
	assert.EqualValues(t, 2, got)
	// What is stored once the raise has returned: no write stamped 1 may
	// be added after this.
	atRaise := feedAll(t, st, l, 0)
	wg.Wait()
	_, err = st.Create(ctx, l, doc(t, map[string]any{"id": "new", "pk": "new"}), epoch(2))
	require.NoError(t, err, "a write stamped with the new epoch")
	stored := feedAll(t, st, l, 0)
	var lost, afterRaise, leaked []string
	for _, id := range acked {
		if _, ok := stored[id+"|"+id]; !ok {
			lost = append(lost, id)
		}
		if _, ok := atRaise[id+"|"+id]; !ok {
			afterRaise = append(afterRaise, id)
		}
	}
	for _, id := range fenced {
		if _, ok := stored[id+"|"+id]; ok {
			leaked = append(leaked, id)
		}
	}
	assert.Empty(t, lost, "acknowledged writes missing from the store")
	assert.Empty(t, afterRaise, "acknowledged writes stamped 1 stored after the raise to 2 returned")
	assert.Empty(t, leaked, "fenced writes found in the store")
	assert.Len(t, stored, len(acked)+1)
	assert.NotEmpty(t, fenced, "writes after the raise were refused")
	t.Logf("%d stamped writes acknowledged, %d fenced", len(acked), len(fenced))
}
