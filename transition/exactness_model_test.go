package transition_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// heldQuery is a store whose queries of one collection wait for release
// (or the query's context), and which reports when a query of another
// collection has been answered: it orders a fan-out's collections in time.
type heldQuery struct {
	store.Store
	held     string
	release  chan struct{}
	answered chan struct{}
	once     sync.Once
}

func (h *heldQuery) Query(ctx context.Context, l string, q store.Query, opts *store.QueryOptions) (*store.Page, error) {
	if l == h.held {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return h.Store.Query(ctx, l, q, opts)
	}
	page, err := h.Store.Query(ctx, l, q, opts)
	h.once.Do(func() { close(h.answered) })
	return page, err
}

// TestFanOutCountIsNotOneInstant: a COUNT over two collections sums each
// one's count at the moment it was read. A writer that deletes a document
// of one collection and then creates one in the other, while the COUNT
// reads the first before the delete and the second after the create,
// gets an answer (2) that no instant of the writer's had (1, 0, 1): what
// any fan-out over collections without one snapshot answers, reshard or
// not. The exactness test's model must allow it (model.bounds).
func TestFanOutCountIsNotOneInstant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memstore.New(nil)
	defer mem.Close()
	r := ring(t, 2)
	keyIn := map[string]string{}
	for i := 0; len(keyIn) < 2; i++ {
		k := "u" + string(rune('a'+i))
		l, err := r.ResolveForCreate(k)
		require.NoError(t, err)
		if _, ok := keyIn[l]; !ok {
			keyIn[l] = k
		}
	}
	first, second := "dbs/app/colls/c0", "dbs/app/colls/c1"
	h := &heldQuery{Store: mem, held: second, release: make(chan struct{}), answered: make(chan struct{})}
	c := router.New(h, nil)
	require.NoError(t, c.Register(db, r))
	_, err := c.EnsureCollections(ctx, db, nil)
	require.NoError(t, err)

	m := newModel()
	_, err = c.Create(ctx, db, doc{ID: "x", UserID: keyIn[first], V: 1}, nil)
	require.NoError(t, err)
	m.ack("x", keyIn[first], 1)

	from := m.ops()
	got := make(chan int, 1)
	go func() {
		rows, err := c.Query(ctx, db, store.Query{Text: countWriters}, nil)
		assert.NoError(t, err)
		n := -1
		if len(rows) == 1 {
			_ = json.Unmarshal(rows[0], &n)
		}
		got <- n
	}()
	select {
	case <-h.answered: // the first collection counted x
	case <-ctx.Done():
		t.Fatal("the COUNT never read the first collection")
	}
	require.NoError(t, c.Delete(ctx, db, "x", keyIn[first], nil))
	m.ack("x", keyIn[first], -1)
	_, err = c.Create(ctx, db, doc{ID: "y", UserID: keyIn[second], V: 1}, nil)
	require.NoError(t, err)
	m.ack("y", keyIn[second], 1)
	close(h.release)
	n := <-got
	m.done()

	assert.Equal(t, []int{0, 1, 0, 1}, m.counts, "the writer's live documents never numbered 2")
	assert.Equal(t, 2, n, "x counted before its delete, y after its create")
	lo, hi := m.bounds(from, m.ops())
	assert.True(t, n >= lo && n <= hi, "the model allows the answer: %d in %d..%d", n, lo, hi)
}

// TestModelBounds: the range the exactness test's model allows a COUNT of
// the writer's documents, begun after from operations and answered before
// to+1 finished.
func TestModelBounds(t *testing.T) {
	m := newModel()
	m.ack("a", "k", 1)  // 1
	m.ack("b", "k", 1)  // 2
	m.ack("a", "k", -1) // 3: 1
	m.ack("c", "k", 1)  // 4: 2
	m.ack("b", "k", 2)  // 5: 2
	m.unknown("d", assert.AnError)
	for _, tc := range []struct {
		name     string
		from, to int
		lo, hi   int
	}{
		{"nothing in the window but the one in flight", 0, 0, 0, 1},
		{"a delete then a create: each may or may not be seen", 2, 3, 1, 3},
		{"a replace changes no count", 4, 4, 2, 2},
		{"a create of unknown outcome may have happened", 5, 5, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := m.bounds(tc.from, tc.to)
			assert.Equal(t, [2]int{tc.lo, tc.hi}, [2]int{lo, hi})
		})
	}
}
