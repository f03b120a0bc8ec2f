package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/store"
)

func (s *suite) queryBasic(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 20)
	got := sortedStrings(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE c.id FROM c WHERE c.s = @s`, Parameters: []store.Param{{Name: "@s", Value: "green"}}}, nil))
	var want []string
	for i := 1; i < 20; i += 3 {
		want = append(want, fmt.Sprintf("d%03d", i))
	}
	assert.Equal(t, want, got)
	rows := values(t, QueryAll(t, st, l, store.Query{Text: `SELECT c.id, c.n FROM c WHERE c.id = "d004"`}, nil))
	assert.Equal(t, []any{map[string]any{"id": "d004", "n": 4.0}}, rows)
	got = sortedStrings(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE c.id FROM c WHERE c.n >= @lo AND c.n < @hi`,
		Parameters: []store.Param{{Name: "@lo", Value: 17}, {Name: "@hi", Value: 100.0}}}, nil))
	assert.Equal(t, []string{"d017", "d018", "d019"}, got, "number parameters")
	all := QueryAll(t, st, l, store.Query{Text: `SELECT * FROM c`}, nil)
	require.Len(t, all, 20)
	for _, it := range all {
		m := object(t, it)
		assert.Contains(t, m, "_etag", "SELECT * returns stored documents, system properties included")
		assert.Contains(t, m, "_ts")
	}
	none := QueryAll(t, st, l, store.Query{Text: `SELECT * FROM c WHERE c.s = "purple"`}, nil)
	assert.Empty(t, none)
}

func (s *suite) querySemantics(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 20)
	cases := []struct {
		q    string
		want []any
	}{
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n > 15`, []any{4.0}},
		{`SELECT VALUE c.id FROM c WHERE c.n = 7`, []any{"d007"}},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000`, []any{0.0}},
		{`SELECT VALUE COUNT(1) FROM c WHERE ARRAY_CONTAINS(c.tags, "red")`, []any{4.0}},
		{`SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC`, []any{19.0, 18.0, 17.0}},
		{`SELECT VALUE SUM(c.n) FROM c`, []any{190.0}},
		{`SELECT VALUE c.n FROM c WHERE c.n < 5 ORDER BY c.n OFFSET 1 LIMIT 2`, []any{1.0, 2.0}},
		{`SELECT DISTINCT VALUE c.s FROM c ORDER BY c.s`, []any{"blue", "green", "red"}},
		{`SELECT VALUE c.id FROM c WHERE c.n = "7"`, []any{}},
		{`SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.tags) AND c.n > 10`, []any{"d015"}},
	}
	for _, tc := range cases {
		got := values(t, QueryAll(t, st, l, store.Query{Text: tc.q}, nil))
		assert.Equal(t, tc.want, got, tc.q)
	}
}

func (s *suite) singleQuoted(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 6)
	got := sortedStrings(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE c.id FROM c WHERE c.s = 'red'`}, nil))
	assert.Equal(t, []string{"d000", "d003"}, got)
}

func (s *suite) queryErrors(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 3)
	for _, q := range []store.Query{
		{Text: "SELEC * FROM c"},
		{Text: "SELECT * FROM c WHERE"},
		{Text: "SELECT * FROM c WHERE c.a = )"},
		{Text: ""},
		{Text: "SELECT VALUE c.x FROM c WHERE c.a = @missing"},
		{Text: "SELECT VALUE c.x FROM c WHERE c.a = @p", Parameters: []store.Param{{Name: "p", Value: 1}}},
	} {
		_, err := st.Query(ctx, l, q, nil)
		requireKind(t, err, store.ErrBadRequest, "%q", q.Text)
		assert.NotEmpty(t, strings.TrimPrefix(err.Error(), "store: "), "the error says what is wrong")
	}
	for _, tok := range []string{"not a token!", "eyJ2IjoxfQ", "%%%", strings.Repeat("A", 500)} {
		_, err := st.Query(ctx, l, store.Query{Text: "SELECT * FROM c"}, &store.QueryOptions{Continuation: tok})
		requireKind(t, err, store.ErrBadRequest, "query token %q", tok)
		_, err = st.ReadFeed(ctx, l, &store.FeedOptions{Continuation: tok})
		requireKind(t, err, store.ErrBadRequest, "feed token %q", tok)
	}
}

func (s *suite) partitionKeyScopedQuery(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 12)
	got := values(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE c.pk FROM c`}, &store.QueryOptions{PartitionKey: "p1"}))
	require.Len(t, got, 4)
	for _, v := range got {
		assert.Equal(t, "p1", v)
	}
	count := values(t, QueryAll(t, st, l, store.Query{Text: `SELECT VALUE COUNT(1) FROM c WHERE c.n > 3`}, &store.QueryOptions{PartitionKey: "p0"}))
	assert.Equal(t, []any{2.0}, count, "aggregates see the key's documents only (6 and 9)")
	none := QueryAll(t, st, l, store.Query{Text: `SELECT * FROM c`}, &store.QueryOptions{PartitionKey: "nope"})
	assert.Empty(t, none)
	n := s.coll(t, st, byKey("/n"))
	seed(t, st, n, 5)
	ids := sortedStrings(t, QueryAll(t, st, n, store.Query{Text: `SELECT VALUE c.id FROM c`}, &store.QueryOptions{PartitionKey: 3}))
	assert.Equal(t, []string{"d003"}, ids, "a number key")
}

func (s *suite) queryPaging(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 25)
	q := store.Query{Text: `SELECT VALUE c.n FROM c ORDER BY c.n`}
	var got []any
	var tokens []string
	opts := &store.QueryOptions{PageSize: 4}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100)
		page, err := st.Query(ctx, l, q, opts)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), 4, "pages honour the page size")
		got = append(got, values(t, page.Items)...)
		if page.Continuation == "" {
			break
		}
		tokens = append(tokens, page.Continuation)
		opts = &store.QueryOptions{PageSize: 4, Continuation: page.Continuation}
	}
	require.Len(t, got, 25)
	for i, v := range got {
		assert.Equal(t, float64(i), v)
	}
	require.GreaterOrEqual(t, len(tokens), 3)
	// Resuming from a token yields exactly the rest, again, at any page size.
	first := values(t, QueryAll(t, st, l, q, &store.QueryOptions{PageSize: 4}))[:4]
	rest := values(t, QueryAll(t, st, l, q, &store.QueryOptions{PageSize: 7, Continuation: tokens[0]}))
	assert.Equal(t, got, append(first, rest...), "resumed with another page size")

	// Without ORDER BY: pages of a filtered query add up to the whole.
	fq := store.Query{Text: `SELECT c.id FROM c WHERE c.n >= @min`, Parameters: []store.Param{{Name: "@min", Value: 5}}}
	whole, err := st.Query(ctx, l, fq, &store.QueryOptions{PageSize: -1})
	require.NoError(t, err)
	assert.Len(t, whole.Items, 20, "page size -1: everything in one page")
	assert.Empty(t, whole.Continuation)
	for _, size := range []int{1, 3, 20, 50} {
		paged := QueryAll(t, st, l, fq, &store.QueryOptions{PageSize: size})
		assert.Equal(t, values(t, whole.Items), values(t, paged), "page size %d", size)
	}
	// A result that fits its page has no continuation.
	page, err := st.Query(ctx, l, store.Query{Text: `SELECT VALUE COUNT(1) FROM c`}, &store.QueryOptions{PageSize: 1})
	require.NoError(t, err)
	assert.Equal(t, []any{25.0}, values(t, page.Items))
	assert.Empty(t, page.Continuation)
	// The default page size returns at least one item and ends.
	assert.Len(t, QueryAll(t, st, l, store.Query{Text: `SELECT * FROM c`}, nil), 25)
}

func (s *suite) continuationValidation(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	seed(t, st, l, 10)
	q := store.Query{Text: `SELECT * FROM c WHERE c.n >= @n`, Parameters: []store.Param{{Name: "@n", Value: 1}}}
	page, err := st.Query(ctx, l, q, &store.QueryOptions{PageSize: 2})
	require.NoError(t, err)
	require.NotEmpty(t, page.Continuation)
	tok := page.Continuation
	// The token still works for its own query.
	_, err = st.Query(ctx, l, q, &store.QueryOptions{PageSize: 2, Continuation: tok})
	require.NoError(t, err)
	other := s.coll(t, st, byKey("/pk"))
	seed(t, st, other, 10)
	misuse := map[string]func() error{
		"another text": func() error {
			_, err := st.Query(ctx, l, store.Query{Text: `SELECT c.id FROM c WHERE c.n >= @n`, Parameters: q.Parameters}, &store.QueryOptions{PageSize: 2, Continuation: tok})
			return err
		},
		"another parameter value": func() error {
			_, err := st.Query(ctx, l, store.Query{Text: q.Text, Parameters: []store.Param{{Name: "@n", Value: 2}}}, &store.QueryOptions{PageSize: 2, Continuation: tok})
			return err
		},
		"another partition key": func() error {
			_, err := st.Query(ctx, l, q, &store.QueryOptions{PageSize: 2, PartitionKey: "p1", Continuation: tok})
			return err
		},
		"another collection": func() error {
			_, err := st.Query(ctx, other, q, &store.QueryOptions{PageSize: 2, Continuation: tok})
			return err
		},
		"a corrupted token": func() error {
			b := []byte(tok)
			b[len(b)/2] ^= 0x01
			_, err := st.Query(ctx, l, q, &store.QueryOptions{PageSize: 2, Continuation: string(b)})
			return err
		},
		"a truncated token": func() error {
			_, err := st.Query(ctx, l, q, &store.QueryOptions{PageSize: 2, Continuation: tok[:len(tok)/2]})
			return err
		},
	}
	for name, f := range misuse {
		requireKind(t, f(), store.ErrBadRequest, "query token used with %s", name)
	}

	fp, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 2})
	require.NoError(t, err)
	require.NotEmpty(t, fp.Continuation)
	_, err = st.ReadFeed(ctx, other, &store.FeedOptions{Continuation: fp.Continuation})
	requireKind(t, err, store.ErrBadRequest, "a feed token from another collection")
	_, err = st.ReadFeed(ctx, l, &store.FeedOptions{Continuation: tok})
	requireKind(t, err, store.ErrBadRequest, "a query token given to the feed")
	_, err = st.Query(ctx, l, q, &store.QueryOptions{Continuation: fp.Continuation})
	requireKind(t, err, store.ErrBadRequest, "a feed token given to a query")
}

func (s *suite) readFeed(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	empty, err := st.ReadFeed(ctx, l, nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Items)
	assert.Empty(t, empty.Continuation, "an empty collection's feed ends at once")
	seed(t, st, l, 37)
	for _, size := range []int{0, 1, 5, 37, 100} {
		all := feedAll(t, st, l, size)
		assert.Len(t, all, 37, "page size %d", size)
	}
	// The order is stable: two walks agree, and resuming from a token
	// continues where the walk stopped.
	order := func(size int) []string {
		var ids []string
		cont := ""
		for {
			page, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: size, Continuation: cont})
			require.NoError(t, err)
			for _, it := range page.Items {
				ids = append(ids, docKey(object(t, it)))
			}
			if cont = page.Continuation; cont == "" {
				return ids
			}
		}
	}
	a, b := order(4), order(10)
	assert.Equal(t, a, b, "the feed order does not depend on the page size")
	first, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 10})
	require.NoError(t, err)
	require.NotEmpty(t, first.Continuation)
	again, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 10, Continuation: first.Continuation})
	require.NoError(t, err)
	twice, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 10, Continuation: first.Continuation})
	require.NoError(t, err)
	assert.Equal(t, again.Items, twice.Items, "a token can be used again")
	var ids []string
	for _, it := range again.Items {
		ids = append(ids, docKey(object(t, it)))
	}
	assert.Equal(t, a[10:20], ids)
	// Items are whole stored documents.
	m := object(t, first.Items[0])
	assert.Contains(t, m, "_etag")
	assert.Contains(t, m, "id")
}

// readFeedStable walks the feed in small pages while another goroutine
// creates, deletes and replaces documents (the seeded ones included):
// every seeded document comes exactly once, and nothing comes twice.
func (s *suite) readFeedStable(t *testing.T, st store.Store) {
	l := s.coll(t, st, byKey("/pk"))
	const n = 60
	seed(t, st, l, n)
	stop := make(chan struct{})
	done := make(chan struct{})
	var writerErr error
	go func() {
		defer close(done)
		untilClosed(stop, func(i int) bool {
			id := fmt.Sprintf("w%04d", i)
			if _, err := st.Create(ctx, l, doc(t, map[string]any{"id": id, "pk": "w"}), nil); err != nil {
				writerErr = fmt.Errorf("concurrent create: %w", err)
				return false
			}
			if i%2 == 0 {
				if err := st.Delete(ctx, l, id, wpk("w")); err != nil {
					writerErr = fmt.Errorf("concurrent delete: %w", err)
					return false
				}
			}
			k := i % n
			if _, err := st.Upsert(ctx, l, doc(t, map[string]any{"id": fmt.Sprintf("d%03d", k), "pk": fmt.Sprintf("p%d", k%3), "n": float64(k), "touched": float64(i)}), nil); err != nil {
				writerErr = fmt.Errorf("concurrent upsert: %w", err)
				return false
			}
			return true
		})
	}()
	stopWriter := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	defer stopWriter()
	// Walk slowly enough that the writer interleaves with every page.
	all := map[string]bool{}
	cont := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100000)
		page, err := st.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 3, Continuation: cont})
		require.NoError(t, err)
		for _, item := range page.Items {
			k := docKey(object(t, item))
			require.False(t, all[k], "the feed returned %s twice", k)
			all[k] = true
		}
		if cont = page.Continuation; cont == "" {
			break
		}
		// Let the writer run between pages.
		_, _ = st.Read(ctx, l, "d000", pk("p0"))
	}
	stopWriter()
	require.NoError(t, writerErr)
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("p%d|d%03d", i%3, i)
		assert.True(t, all[k], "%s existed throughout the walk and was returned", k)
	}
}
