package storetest

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

// Case keys of the change feed (store.ChangeFeeder). A backend that does
// not implement the capability skips them, saying so; one that implements
// it over a server without a change feed lists them in Options.Skip
// (ChangeFeedKeys has them all).
const (
	SkipChangeFeed                  = "ChangeFeed"                  // from the beginning: every document once, at its last write, in last-write order; no deletions
	SkipChangeFeedPaging            = "ChangeFeedPaging"            // small page sizes read the same feed
	SkipChangeFeedResume            = "ChangeFeedResume"            // writes after a token appear, each once at its last write; a caught-up page is empty
	SkipChangeFeedFromNow           = "ChangeFeedFromNow"           // FromNow starts at the present
	SkipChangeFeedPartitionKey      = "ChangeFeedPartitionKey"      // a feed scoped to a partition-key value
	SkipChangeFeedTokens            = "ChangeFeedTokens"            // malformed and foreign tokens refused
	SkipChangeFeedConcurrentWriters = "ChangeFeedConcurrentWriters" // a reader polling under writers sees every acknowledged write's final content
	SkipChangeFeedBatch             = "ChangeFeedBatch"             // a transactional batch's documents, each once in the order of its last write in the batch, together; a failed batch's not at all
)

// ChangeFeedKeys are the case keys of the change feed, for a backend to
// skip them all with one reason.
var ChangeFeedKeys = []string{
	SkipChangeFeed, SkipChangeFeedPaging, SkipChangeFeedResume, SkipChangeFeedFromNow,
	SkipChangeFeedPartitionKey, SkipChangeFeedTokens, SkipChangeFeedConcurrentWriters, SkipChangeFeedBatch,
}

// changeFeeder returns the store's change feed, skipping the case when
// the backend has none.
func changeFeeder(t *testing.T, st store.Store) store.ChangeFeeder {
	t.Helper()
	return capability[store.ChangeFeeder](t, st, "store.ChangeFeeder")
}

// changes reads a change feed from opts until a page is empty and returns
// every item and the last continuation. It fails on an empty continuation
// or a page above the page size.
func changes(t *testing.T, cf store.ChangeFeeder, l string, opts store.ChangeFeedOptions) ([]map[string]any, string) {
	t.Helper()
	var out []map[string]any
	for i := 0; ; i++ {
		require.Less(t, i, 10000, "the change feed does not end")
		page, err := cf.ReadChanges(ctx, l, &opts)
		require.NoError(t, err)
		require.NotEmpty(t, page.Continuation, "a change-feed page always has a continuation")
		if opts.PageSize > 0 {
			require.LessOrEqual(t, len(page.Items), opts.PageSize, "a change-feed page holds at most the page size")
		}
		opts.Continuation, opts.FromNow = page.Continuation, false
		if len(page.Items) == 0 {
			return out, page.Continuation
		}
		for _, it := range page.Items {
			out = append(out, object(t, it))
		}
	}
}

// idsAndVersions lists the feed's items as "id=v".
func idsAndVersions(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, m := range items {
		out[i] = fmt.Sprintf("%v=%v", m["id"], m["v"])
	}
	return out
}

// put upserts {"id": id, "pk": key, "v": v}.
func put(t *testing.T, st store.Store, l, id, key string, v int) *store.Document {
	t.Helper()
	d, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": id, "pk": key, "v": v}), nil)
	require.NoError(t, err, "upsert %s=%d", id, v)
	return d
}

func (s *suite) changeFeed(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	l := s.coll(t, st, byKey("/pk"))
	empty, cont := changes(t, cf, l, store.ChangeFeedOptions{})
	assert.Empty(t, empty, "an empty collection has no changes")
	assert.NotEmpty(t, cont)

	put(t, st, l, "a", "p0", 1)
	put(t, st, l, "b", "p1", 1)
	put(t, st, l, "c", "p0", 1)
	put(t, st, l, "d", "p2", 1)
	put(t, st, l, "e", "p2", 1)
	put(t, st, l, "a", "p0", 2)
	_, err := st.Replace(ctx, l, "b", doc(t, map[string]any{"id": "b", "pk": "p1", "v": 2}), nil)
	require.NoError(t, err)
	put(t, st, l, "a", "p0", 3)
	require.NoError(t, st.Delete(ctx, l, "d", wpk("p2")))

	items, _ := changes(t, cf, l, store.ChangeFeedOptions{})
	assert.Equal(t, []string{"c=1", "e=1", "b=2", "a=3"}, idsAndVersions(items),
		"every document once, at its last write, in the order of last writes; the deleted one not at all")
	for _, m := range items {
		d := mustRead(t, st, l, m["id"].(string), m["pk"])
		assert.Equal(t, d.ETag, m["_etag"], "%v: the item is the document as stored", m["id"])
		assert.EqualValues(t, d.Timestamp, m["_ts"], "%v", m["id"])
	}
}

func (s *suite) changeFeedPaging(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	l := s.coll(t, st, byKey("/pk"))
	for i := range 12 {
		put(t, st, l, fmt.Sprintf("d%02d", i), fmt.Sprintf("p%d", i%3), 1)
	}
	for _, i := range []int{4, 0, 9} {
		put(t, st, l, fmt.Sprintf("d%02d", i), fmt.Sprintf("p%d", i%3), 2)
	}
	whole, _ := changes(t, cf, l, store.ChangeFeedOptions{})
	want := idsAndVersions(whole)
	require.Len(t, want, 12)
	assert.Equal(t, []string{"d04=2", "d00=2", "d09=2"}, want[9:], "the documents written again come last")
	for _, size := range []int{1, 2, 3, 5, 7} {
		got, _ := changes(t, cf, l, store.ChangeFeedOptions{PageSize: size})
		assert.Equal(t, want, idsAndVersions(got), "page size %d", size)
	}
}

func (s *suite) changeFeedResume(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	l := s.coll(t, st, byKey("/pk"))
	for i := range 5 {
		put(t, st, l, fmt.Sprintf("d%d", i), "p", 1)
	}
	first, end := changes(t, cf, l, store.ChangeFeedOptions{PageSize: 2})
	require.Len(t, first, 5)

	// Caught up: an empty page whose continuation is the same position.
	page, err := cf.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: end})
	require.NoError(t, err)
	assert.Empty(t, page.Items)
	require.NotEmpty(t, page.Continuation)

	put(t, st, l, "d1", "p", 2)
	put(t, st, l, "d5", "p", 1)
	put(t, st, l, "d3", "p", 2)
	put(t, st, l, "d1", "p", 3)
	require.NoError(t, st.Delete(ctx, l, "d0", wpk("p")))
	want := []string{"d5=1", "d3=2", "d1=3"}
	for name, from := range map[string]string{"the token of the caught-up read": end, "the empty page's token": page.Continuation} {
		got, _ := changes(t, cf, l, store.ChangeFeedOptions{Continuation: from})
		assert.Equal(t, want, idsAndVersions(got), "from %s: each document written since, once, at its last write", name)
	}
	got, next := changes(t, cf, l, store.ChangeFeedOptions{Continuation: end, PageSize: 1})
	assert.Equal(t, want, idsAndVersions(got), "the same, a page at a time")
	rest, _ := changes(t, cf, l, store.ChangeFeedOptions{Continuation: next})
	assert.Empty(t, rest, "nothing after the end")
}

func (s *suite) changeFeedFromNow(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	l := s.coll(t, st, byKey("/pk"))
	put(t, st, l, "old", "p", 1)
	put(t, st, l, "kept", "p", 1)
	page, err := cf.ReadChanges(ctx, l, &store.ChangeFeedOptions{FromNow: true})
	require.NoError(t, err)
	assert.Empty(t, page.Items, "FromNow starts at the present")
	require.NotEmpty(t, page.Continuation)
	now := page.Continuation
	got, _ := changes(t, cf, l, store.ChangeFeedOptions{Continuation: now})
	assert.Empty(t, got, "nothing was written since")

	put(t, st, l, "new", "p", 1)
	put(t, st, l, "old", "p", 2)
	got, _ = changes(t, cf, l, store.ChangeFeedOptions{Continuation: now})
	assert.Equal(t, []string{"new=1", "old=2"}, idsAndVersions(got), "only what was written after FromNow")
	got, _ = changes(t, cf, l, store.ChangeFeedOptions{Continuation: now, FromNow: true})
	assert.Equal(t, []string{"new=1", "old=2"}, idsAndVersions(got), "FromNow is ignored with a continuation")
}

func (s *suite) changeFeedPartitionKey(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	l := s.coll(t, st, byKey("/pk"))
	for i := range 9 {
		put(t, st, l, fmt.Sprintf("d%d", i), fmt.Sprintf("p%d", i%3), 1)
	}
	put(t, st, l, "d1", "p1", 2)
	got, end := changes(t, cf, l, store.ChangeFeedOptions{PartitionKey: "p1", PageSize: 2})
	assert.Equal(t, []string{"d4=1", "d7=1", "d1=2"}, idsAndVersions(got), "only the key's documents, in last-write order")

	put(t, st, l, "d0", "p0", 2)
	put(t, st, l, "d4", "p1", 2)
	put(t, st, l, "x", "p2", 1)
	put(t, st, l, "y", "p1", 1)
	got, _ = changes(t, cf, l, store.ChangeFeedOptions{PartitionKey: "p1", Continuation: end})
	assert.Equal(t, []string{"d4=2", "y=1"}, idsAndVersions(got), "resumed: only the key's writes since")

	// The same id under two keys is two documents.
	put(t, st, l, "d4", "p2", 9)
	got, _ = changes(t, cf, l, store.ChangeFeedOptions{PartitionKey: "p2"})
	assert.Equal(t, []string{"d2=1", "d5=1", "d8=1", "x=1", "d4=9"}, idsAndVersions(got))

	// A token is bound to its scope.
	for _, key := range []any{"p2", nil} {
		_, err := cf.ReadChanges(ctx, l, &store.ChangeFeedOptions{PartitionKey: key, Continuation: end})
		requireKind(t, err, store.ErrBadRequest, "a p1 token read with key %v", key)
	}
}

func (s *suite) changeFeedTokens(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	l := s.coll(t, st, byKey("/pk"))
	other := s.coll(t, st, byKey("/pk"))
	put(t, st, l, "a", "p", 1)
	put(t, st, l, "b", "p", 1)
	put(t, st, other, "a", "p", 1)
	_, foreign := changes(t, cf, other, store.ChangeFeedOptions{})
	feedPage, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 1})
	require.NoError(t, err)
	require.NotEmpty(t, feedPage.Continuation)
	for name, tok := range map[string]string{
		"garbage":                       "not a token",
		"base64 of nothing useful":      base64.RawURLEncoding.EncodeToString([]byte(`{"x":1}`)),
		"a token of another collection": foreign,
		"a read-feed token":             feedPage.Continuation,
	} {
		_, err := cf.ReadChanges(ctx, l, &store.ChangeFeedOptions{Continuation: tok})
		requireKind(t, err, store.ErrBadRequest, "%s", name)
		assert.Contains(t, strings.ToLower(err.Error()), "token", "%s: the error names the token", name)
	}
	_, err = cf.ReadChanges(ctx, s.collLink(t), nil)
	requireKind(t, err, store.ErrNotFound, "a missing collection")
	page, err := cf.ReadChanges(ctx, l, nil)
	require.NoError(t, err, "nil options: from the beginning")
	assert.Len(t, page.Items, 2)
}

func (s *suite) changeFeedConcurrentWriters(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	l := s.coll(t, st, byKey("/pk"))
	const writers, docs, rounds = 6, 4, 12
	final := make([]map[string]int, writers) // per writer: id -> last acknowledged v
	write := func(w int, id, key string, v int) {
		if _, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": id, "pk": key, "v": v}), nil); err != nil {
			t.Errorf("upsert %s=%d: %v", id, v, err)
			return
		}
		final[w][id] = v
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		final[w] = map[string]int{}
		wg.Go(func() {
			for r := 1; r <= rounds; r++ {
				for d := range docs {
					write(w, fmt.Sprintf("w%d-d%d", w, d), fmt.Sprintf("p%d", d%2), r)
				}
				if r%4 == 0 { // a new document now and then
					write(w, fmt.Sprintf("w%d-new%d", w, r), "p0", r)
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	seen := map[string]int{}
	opts := store.ChangeFeedOptions{PageSize: 7}
	finished := false
	deadline := time.Now().Add(2 * time.Minute)
	for {
		require.True(t, time.Now().Before(deadline), "the reader did not catch up")
		if !finished {
			select {
			case <-done:
				finished = true // from here, an empty page means everything was seen
			default:
			}
		}
		page, err := cf.ReadChanges(ctx, l, &opts)
		require.NoError(t, err)
		require.NotEmpty(t, page.Continuation)
		require.LessOrEqual(t, len(page.Items), opts.PageSize)
		opts.Continuation = page.Continuation
		for _, it := range page.Items {
			m := object(t, it)
			id, v := m["id"].(string), int(m["v"].(float64))
			require.GreaterOrEqual(t, v, seen[id], "%s went back from %d to %d", id, seen[id], v)
			seen[id] = v
		}
		if len(page.Items) == 0 {
			if finished {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	want := map[string]int{}
	for _, f := range final {
		for id, v := range f {
			want[id] = v
		}
	}
	assert.Equal(t, want, seen, "every acknowledged write seen, with its final content")
}

// changeFeedBatch needs a store.Batcher too, and skips without one. It
// does not ask for an order among a batch's documents: Cosmos DB gives a
// batch one LSN (the embedded store orders them by their last write in the
// batch, which its own tests check).
func (s *suite) changeFeedBatch(t *testing.T, st store.Store) {
	cf := changeFeeder(t, st)
	b := batcher(t, st)
	l := s.coll(t, st, byKey("/pk"))
	put(t, st, l, "a", "p", 1)
	put(t, st, l, "b", "p", 1)
	put(t, st, l, "gone", "p", 1)
	put(t, st, l, "other", "q", 1)
	_, start := changes(t, cf, l, store.ChangeFeedOptions{})
	v := func(id string, n int) []byte { return doc(t, map[string]any{"id": id, "pk": "p", "v": n}) }
	_, err := b.ExecuteBatch(ctx, l, "p", []store.BatchOp{
		bCreate(v("c", 1)),
		bReplace("a", v("a", 2)),
		bRead("b"),
		bDelete("gone"),
		bUpsert(v("d", 1)),
		bReplace("c", v("c", 2)), // c's last write in the batch
	}, nil)
	require.NoError(t, err)
	put(t, st, l, "b", "p", 2)
	got, end := changes(t, cf, l, store.ChangeFeedOptions{Continuation: start})
	batched := []string{"a=2", "d=1", "c=2"} // in the order of their last write in the batch
	require.Len(t, got, 4, "the batch's three documents and the write after it; nothing for the read or the delete: %v", idsAndVersions(got))
	assert.ElementsMatch(t, batched, idsAndVersions(got)[:3], "the batch's documents together, each once at its last write in it")
	assert.Equal(t, "b=2", idsAndVersions(got)[3], "then the write after the batch")
	whole, _ := changes(t, cf, l, store.ChangeFeedOptions{PageSize: 2})
	assert.Equal(t, append([]string{"other=1"}, idsAndVersions(got)...), idsAndVersions(whole), "from the beginning, in the same order")
	for _, m := range whole {
		d := mustRead(t, st, l, m["id"].(string), m["pk"])
		assert.Equal(t, d.ETag, m["_etag"], "%v: the item is the document as stored", m["id"])
	}

	// A failed batch leaves nothing in the feed, and holds nothing up.
	_, err = b.ExecuteBatch(ctx, l, "p", []store.BatchOp{bUpsert(v("e", 1)), bReplace("a", v("a", 3)), bCreate(v("b", 9))}, nil)
	requireKind(t, err, store.ErrConflict, "a batch whose create conflicts")
	got, _ = changes(t, cf, l, store.ChangeFeedOptions{Continuation: end})
	assert.Empty(t, got, "nothing of the failed batch")
	put(t, st, l, "f", "p", 1)
	got, _ = changes(t, cf, l, store.ChangeFeedOptions{Continuation: end})
	assert.Equal(t, []string{"f=1"}, idsAndVersions(got), "the write after a failed batch")
}
