package memstore

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// referenceHash is the token hash as first written, with hash/fnv and
// encoding/json: tokens written by earlier versions must still match.
func referenceHash(uid string, q store.Query, pk string) string {
	params := append([]store.Param(nil), q.Parameters...)
	sort.SliceStable(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	pj, _ := json.Marshal(params)
	h := fnv.New128a()
	for _, part := range []string{uid, q.Text, string(pj), pk} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestQueryHashIsStable(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    store.Query
		pk   string
	}{
		{"no parameters", store.Query{Text: "SELECT * FROM c"}, ""},
		{"key", store.Query{Text: "SELECT * FROM c"}, `["a"]`},
		{"parameters", store.Query{Text: "SELECT * FROM c WHERE c.n = @n AND c.s = @s", Parameters: []store.Param{{Name: "@s", Value: "x"}, {Name: "@n", Value: 3}}}, ""},
		{"empty parameters", store.Query{Text: "SELECT 1", Parameters: []store.Param{}}, ""},
		{"long text", store.Query{Text: fmt.Sprintf("SELECT * FROM c WHERE c.id IN (%0500d)", 7)}, "é"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := queryHash("uid-1", tc.q, tc.pk)
			require.NoError(t, err)
			assert.Equal(t, referenceHash("uid-1", tc.q, tc.pk), got)
		})
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = queryHash("u", store.Query{Text: "SELECT * FROM c"}, "k") })
	assert.LessOrEqual(t, allocs, 1.0, "a parameterless hash allocates only its text")
}

// TestProgramCache: a cached query answers as a fresh one, parameters are
// bound per run (the same text with other values gives other results), a
// parameterless compile error is not cached as a success, and the cache
// stays bounded.
func TestProgramCache(t *testing.T) {
	s := New(nil)
	l := newColl(t, s, nil)
	for i := range 20 {
		_, err := s.Create(ctx, l, fmt.Appendf(nil, `{"id":"d%02d","n":%d}`, i, i), nil)
		require.NoError(t, err)
	}
	run := func(q store.Query) ([]string, error) {
		page, err := s.Query(ctx, l, q, &store.QueryOptions{PageSize: -1})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, it := range page.Items {
			out = append(out, string(it))
		}
		return out, nil
	}
	text := "SELECT VALUE c.n FROM c WHERE c.n < @max ORDER BY c.n DESC"
	for _, tc := range []struct {
		max  any
		want []string
	}{{3, []string{"2", "1", "0"}}, {1, []string{"0"}}, {2.5, []string{"2", "1", "0"}}} {
		got, err := run(store.Query{Text: text, Parameters: []store.Param{{Name: "@max", Value: tc.max}}})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "@max = %v", tc.max)
	}
	_, err := run(store.Query{Text: text})
	require.ErrorIs(t, err, store.ErrBadRequest, "the cached tree still needs its parameter")
	for range 2 {
		got, err := run(store.Query{Text: "SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n DESC"})
		require.NoError(t, err)
		assert.Equal(t, []string{`"d19"`, `"d18"`}, got)
	}

	c := newPrograms(4)
	for i := range 10 {
		_, err := c.prepare(fmt.Sprintf("SELECT VALUE %d", i), nil)
		require.NoError(t, err)
	}
	assert.Equal(t, 4, c.lru.Len())
	assert.Len(t, c.items, 4)
	assert.NotNil(t, c.get("SELECT VALUE 9"))
	assert.Nil(t, c.get("SELECT VALUE 0"), "least recently used out first")
	for range 2 {
		_, err = c.prepare("SELECT VALUE @p", nil)
		require.ErrorContains(t, err, "@p", "a failed compile is not cached")
	}
}

// TestProgramCacheConcurrent runs one text from many goroutines with and
// without parameters (under -race).
func TestProgramCacheConcurrent(t *testing.T) {
	c := newPrograms(2)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				text := fmt.Sprintf("SELECT VALUE @p + %d", i%3)
				prog, err := c.prepare(text, map[string]any{"@p": g})
				if !assert.NoError(t, err) {
					return
				}
				out, err := prog.Values(ctx, func(func(query.Doc) bool) {})
				if assert.NoError(t, err) && assert.Len(t, out, 1) {
					assert.Equal(t, float64(g+i%3), out[0])
				}
			}
		})
	}
	wg.Wait()
}
