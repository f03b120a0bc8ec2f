// Package routertest holds the router's oracle test, exported so every
// backend runs it: the same generated documents in one collection and
// spread over several collections must give identical answers to a
// generated corpus of queries, read whole and page by page with resumed
// continuation tokens.
package routertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// Config sizes an oracle run.
type Config struct {
	// Store returns the store to run on (fresh or shared; the run uses
	// unique database names).
	Store func(t *testing.T) store.Store
	// Docs is the number of documents; 0 means 400.
	Docs int
	// Queries is the number of generated queries; 0 means 300.
	Queries int
	// Splits are the collection counts to spread documents over; nil means
	// 2, 7 and 32.
	Splits []int
	// PageSizes are the page sizes of the paged, resumed reads; nil means
	// 1, 3 and 17.
	PageSizes []int
	// Seed makes the run reproducible; 0 means 1.
	Seed uint64
}

// Run runs the oracle test.
func Run(t *testing.T, cfg Config) {
	if cfg.Docs == 0 {
		cfg.Docs = 400
	}
	if cfg.Queries == 0 {
		cfg.Queries = 300
	}
	if cfg.Splits == nil {
		cfg.Splits = []int{2, 7, 32}
	}
	if cfg.PageSizes == nil {
		cfg.PageSizes = []int{1, 3, 17}
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(cfg.Seed, 42))
	st := cfg.Store(t)
	docs := GenerateDocs(rng, cfg.Docs)
	run := fmt.Sprintf("oracle%d", rng.IntN(1_000_000))

	// The single collection: the answer to match.
	oneDB := "dbs/" + run + "one"
	one := router.New(st, nil)
	ring1, err := hashring.New([]string{oneDB + "/colls/all"}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
	require.NoError(t, err)
	require.NoError(t, one.Register(oneDB, ring1))
	_, err = one.EnsureCollections(ctx, oneDB, nil)
	require.NoError(t, err)
	for _, d := range docs {
		_, err := one.Create(ctx, oneDB, d, nil)
		require.NoError(t, err)
	}

	type target struct {
		db string
		c  *router.Client
	}
	var targets []target
	for _, n := range cfg.Splits {
		db := fmt.Sprintf("dbs/%ssplit%d", run, n)
		links := make([]string, n)
		for i := range links {
			links[i] = fmt.Sprintf("%s/colls/c%02d", db, i)
		}
		ring, err := hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
		require.NoError(t, err)
		c := router.New(st, &router.Options{MaxDegreeOfParallelism: -1, MaxBufferedItemCount: 64})
		require.NoError(t, c.Register(db, ring))
		_, err = c.EnsureCollections(ctx, db, nil)
		require.NoError(t, err)
		for _, d := range docs {
			_, err := c.Create(ctx, db, d, nil)
			require.NoError(t, err)
		}
		targets = append(targets, target{db, c})
	}

	for qi := 0; qi < cfg.Queries; qi++ {
		text := GenerateQuery(rng)
		q := store.Query{Text: text}
		var key any
		if rng.IntN(6) == 0 {
			key = fmt.Sprintf("k%02d", rng.IntN(40))
		}
		opts := &router.QueryOptions{PartitionKey: key, MaxDegreeOfParallelism: -1}
		want, err := one.Query(ctx, oneDB, q, opts)
		require.NoError(t, err, "one collection: %s", text)
		parsed, err := query.Parse(text)
		require.NoError(t, err)
		mode := compareMode(parsed)
		for _, tg := range targets {
			got, err := tg.c.Query(ctx, tg.db, q, opts)
			require.NoError(t, err, "%s over %s", text, tg.db)
			compare(t, mode, text, tg.db+" whole", want, got)
			size := cfg.PageSizes[rng.IntN(len(cfg.PageSizes))]
			paged := readResumed(t, ctx, tg.c, tg.db, q, key, size)
			compare(t, mode, text, fmt.Sprintf("%s paged by %d, resumed from every token", tg.db, size), want, paged)
		}
	}
}

// readResumed reads a query page by page, each page from a new pager
// resumed from the previous page's token.
func readResumed(t *testing.T, ctx context.Context, c *router.Client, db string, q store.Query, key any, size int) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	token := ""
	for i := 0; ; i++ {
		require.Less(t, i, 100000)
		p := c.NewQueryPager(db, q, &router.QueryOptions{PartitionKey: key, MaxDegreeOfParallelism: 3, PageSize: size, Continuation: token, MaxBufferedItemCount: 40})
		page, err := p.NextPage(ctx)
		require.NoError(t, err, "%s page %d", q.Text, i)
		require.LessOrEqual(t, len(page.Items), size)
		out = append(out, page.Items...)
		if page.Continuation == "" {
			return out
		}
		token = page.Continuation
	}
}

type mode int

const (
	exact    mode = iota // identical sequence
	multiset             // same rows, any order
	subset               // same count, every row from the unlimited answer (checked as a count here)
)

// compareMode: ORDER BY ending in the unique c.id, and aggregates without
// GROUP BY, are exact; without ORDER BY (or with ties) rows may come in
// another order; under TOP/LIMIT with possible ties, which rows is open.
func compareMode(q *query.Query) mode {
	limited := q.Top != nil || q.Limit != nil
	if len(q.OrderBy) > 0 {
		last := query.Format(q.OrderBy[len(q.OrderBy)-1].X)
		if last == "c.id" && !q.Distinct {
			return exact
		}
	} else if len(q.GroupBy) == 0 && hasAggregate(q) {
		return exact
	}
	if limited {
		return subset
	}
	return multiset
}

func hasAggregate(q *query.Query) bool {
	for _, it := range q.Items {
		text := strings.ToUpper(query.Format(it.X))
		for _, a := range []string{"COUNT(", "SUM(", "AVG(", "MIN(", "MAX("} {
			if strings.Contains(text, a) && !strings.Contains(text, "SELECT") {
				return true
			}
		}
	}
	return false
}

// canon returns comparable texts of results, without the system
// properties each copy of a document got from its own write and container.
func canon(t *testing.T, items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		var v any
		require.NoError(t, json.Unmarshal(it, &v))
		out[i] = query.DistinctKey(stripSystem(v))
	}
	return out
}

// systemProperty names what a store adds to a document.
var systemProperty = map[string]bool{"_etag": true, "_ts": true, "_rid": true, "_self": true, "_attachments": true, "_lsn": true}

func stripSystem(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !systemProperty[k] {
				out[k] = stripSystem(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripSystem(e)
		}
		return out
	}
	return v
}

func compare(t *testing.T, m mode, text, what string, want, got []json.RawMessage) {
	t.Helper()
	w, g := canon(t, want), canon(t, got)
	switch m {
	case exact:
		require.Equal(t, w, g, "%s: %s", what, text)
	case multiset:
		sort.Strings(w)
		sort.Strings(g)
		require.Equal(t, w, g, "%s: %s", what, text)
	case subset:
		require.Len(t, g, len(w), "%s: %s", what, text)
	}
}

var strs = []string{"apple", "Banana", "cherry", "apple pie", "", "zebra", "42"}

// GenerateDocs returns documents with mixed types and missing fields, keyed
// by /pk (40 values) with unique ids.
func GenerateDocs(rng *rand.Rand, n int) []map[string]any {
	val := func() any {
		switch rng.IntN(10) {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2:
			return strs[rng.IntN(len(strs))]
		case 3:
			return []any{1.0, "x"}
		default:
			return float64(rng.IntN(40) - 10)
		}
	}
	out := make([]map[string]any, n)
	for i := range out {
		m := map[string]any{"id": fmt.Sprintf("d%04d", i), "pk": fmt.Sprintf("k%02d", rng.IntN(40))}
		if rng.IntN(8) != 0 {
			m["n"] = val()
		}
		if rng.IntN(6) != 0 {
			m["s"] = strs[rng.IntN(len(strs))]
		}
		if rng.IntN(5) != 0 {
			m["g"] = []any{"red", "green", "blue", 1.0, nil}[rng.IntN(5)]
		}
		if rng.IntN(3) != 0 {
			m["b"] = rng.IntN(2) == 0
		}
		if rng.IntN(3) != 0 {
			tags := []any{}
			for k := rng.IntN(4); k > 0; k-- {
				tags = append(tags, []any{"t1", "t2", "t3"}[rng.IntN(3)])
			}
			m["tags"] = tags
		}
		if rng.IntN(2) == 0 {
			m["o"] = map[string]any{"x": float64(rng.IntN(10)) / 2}
		}
		out[i] = m
	}
	return out
}

func pick(rng *rand.Rand, xs ...string) string { return xs[rng.IntN(len(xs))] }

func predicate(rng *rand.Rand, depth int) string {
	if depth < 2 && rng.IntN(3) == 0 {
		return fmt.Sprintf("(%s %s %s)", predicate(rng, depth+1), pick(rng, "AND", "OR"), predicate(rng, depth+1))
	}
	return pick(rng,
		fmt.Sprintf("c.n > %d", rng.IntN(30)-5), fmt.Sprintf("c.n <= %d", rng.IntN(30)-5), "c.s = 'apple'",
		`c.s != "zebra"`, "IS_DEFINED(c.n)", "NOT IS_DEFINED(c.s)", "c.n BETWEEN 0 AND 10",
		"c.s IN ('apple', 'cherry', 42)", "ARRAY_CONTAINS(c.tags, 't1')", "STARTSWITH(c.s, 'a')",
		"c.b = true", "(c.n ?? 0) > 3", "c.o.x >= 1.5", "c.s LIKE 'a%'", "c.pk < 'k20'",
		"EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 't2')")
}

// GenerateQuery returns a random query over GenerateDocs documents covering
// projections, WHERE, ORDER BY (one or two keys, ASC/DESC), TOP,
// OFFSET/LIMIT, DISTINCT, VALUE and object aggregates, GROUP BY and JOIN.
func GenerateQuery(rng *rand.Rand) string {
	where := ""
	if rng.IntN(3) != 0 {
		where = " WHERE " + predicate(rng, 0)
	}
	aggs := []string{"COUNT(1)", "COUNT(c.n)", "SUM(c.n)", "AVG(c.n)", "MIN(c.n)", "MAX(c.s)", "MIN(c.g)", "AVG(c.o.x)", "SUM(c.o.x)"}
	switch rng.IntN(10) {
	case 0:
		return fmt.Sprintf("SELECT VALUE %s FROM c%s", pick(rng, aggs...), where)
	case 1:
		return fmt.Sprintf("SELECT %s AS a, %s AS b FROM c%s", pick(rng, aggs...), pick(rng, aggs...), where)
	case 2:
		key := pick(rng, "c.g", "c.b", "c.s", "c.o.x")
		top := ""
		if rng.IntN(4) == 0 {
			top = fmt.Sprintf("TOP %d ", rng.IntN(4))
		}
		return fmt.Sprintf("SELECT %s%s AS k, COUNT(1) AS n, %s AS x FROM c%s GROUP BY %s", top, key, pick(rng, aggs...), where, key)
	case 3:
		return fmt.Sprintf("SELECT c.id, t FROM c JOIN t IN c.tags%s", where)
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	distinct := rng.IntN(8) == 0
	if distinct {
		b.WriteString("DISTINCT ")
	}
	limitKind := rng.IntN(4)
	if limitKind == 0 {
		fmt.Fprintf(&b, "TOP %d ", rng.IntN(30))
	}
	var order []string
	if rng.IntN(3) != 0 {
		for k := 1 + rng.IntN(2); k > 0; k-- {
			order = append(order, pick(rng, "c.n", "c.s", "c.g", "c.o.x", "c.b", "c.pk"))
		}
		if !distinct && rng.IntN(3) != 0 {
			order = append(order, "c.id")
		}
	}
	switch {
	case distinct && len(order) > 0:
		var items []string
		for i, o := range order {
			items = append(items, fmt.Sprintf("%s AS o%d", o, i))
		}
		b.WriteString(strings.Join(items, ", "))
	case rng.IntN(4) == 0:
		b.WriteString("*")
	case rng.IntN(3) == 0:
		b.WriteString("VALUE " + pick(rng, "c.id", "c.n", "c.s", "c.o", "c.n + 1", "UPPER(c.s)", "[c.n, c.g]"))
	default:
		b.WriteString(pick(rng, "c.id, c.n", "c.id, c.s, c.g", "c.n AS num, c.tags", "c.id, c.o.x AS x, c.b"))
	}
	b.WriteString(" FROM c")
	b.WriteString(where)
	if len(order) > 0 {
		b.WriteString(" ORDER BY ")
		for i, o := range order {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(o)
			if rng.IntN(2) == 0 {
				b.WriteString(" DESC")
			}
		}
	}
	if limitKind == 1 {
		fmt.Fprintf(&b, " OFFSET %d LIMIT %d", rng.IntN(20), rng.IntN(30))
	}
	return b.String()
}
