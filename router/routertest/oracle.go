// Package routertest holds the router's oracle test, exported so every
// backend runs it (the embedded store in package router, the Cosmos DB
// backend over its emulator): the same generated documents in one
// collection and spread over several collections must answer a corpus of
// queries alike — hand-written cases for every construct the router merges
// and many generated ones combining them, over random data with mixed
// types and missing fields — read whole, page by page in one pager, and
// page by page from pagers resumed from every continuation token in a
// fresh client.
//
// The reference answer is the store's own, over the one collection: no
// router code is involved in it. Where one collection's order is not fully
// determined (no ORDER BY, or ties in the sort keys) the comparison is
// exact about everything that is determined: the multiset of rows, the
// sequence of sort keys (through a twin query selecting the keys), and
// under TOP or LIMIT that every row belongs to the unlimited answer.
package routertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/internal/querygen"
	"github.com/docshard/docshard/internal/queryhook"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

// Config sizes an oracle run. The zero value (with Store set) is the full
// run the embedded store does; remote backends shrink it.
type Config struct {
	// Store returns the store to run on (fresh or shared: the run uses
	// database names of its own and deletes its collections at the end).
	Store func(t testing.TB) store.Store
	// Docs is the number of documents; 0 means 400.
	Docs int
	// Queries is the number of generated queries, run after the
	// hand-written Corpus; 0 means 300.
	Queries int
	// Splits are the collection counts to spread the documents over; nil
	// means 2, 7 and 32.
	Splits []int
	// PageSizes are the page sizes of the paged reads; nil means one
	// chosen per query so that a read has about 1 to 12 pages.
	PageSizes []int
	// Parallelism are the MaxDegreeOfParallelism values tried (one per
	// read, at random); nil means 0 (the client's default), 1 (serial), 3
	// and -1.
	Parallelism []int
	// Seed makes the run reproducible; 0 means 1.
	Seed uint64
}

// Corpus is the hand-written part of the oracle: at least one query for
// every construct the router merges, and their combinations. Parameters
// used: @lo (number), @s (string), @n, @off, @lim (counts), @tags (array).
var Corpus = []string{
	// Streams, filters, projections, JOIN, subqueries.
	"SELECT * FROM c",
	"SELECT c.id, c.n FROM c WHERE c.n > @lo",
	"SELECT VALUE c.s FROM c WHERE c.s = @s OR NOT IS_DEFINED(c.n)",
	"SELECT c.id, t FROM c JOIN t IN c.tags WHERE t != 't3'",
	"SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 't2')",
	"SELECT VALUE {\"id\": c.id, \"twice\": c.n * 2} FROM c WHERE IS_NUMBER(c.n)",
	"SELECT VALUE 1",
	// TOP, OFFSET/LIMIT without ORDER BY.
	"SELECT TOP 7 c.id FROM c",
	"SELECT TOP @n * FROM c WHERE c.b = true",
	"SELECT c.id FROM c OFFSET 5 LIMIT 9",
	"SELECT c.id FROM c OFFSET @off LIMIT @lim",
	"SELECT TOP 0 c.id FROM c",
	"SELECT c.id FROM c OFFSET 10000 LIMIT 5",
	// ORDER BY: one and several keys, ASC/DESC, mixed types, missing
	// values, ties, TOP, OFFSET/LIMIT, JOIN.
	"SELECT c.id, c.n FROM c ORDER BY c.n, c.id",
	"SELECT c.id, c.n FROM c ORDER BY c.n DESC, c.id DESC",
	"SELECT * FROM c ORDER BY c.g, c.id DESC",
	"SELECT VALUE c.id FROM c ORDER BY c.s DESC, c.n, c.id",
	"SELECT c.id, c.g FROM c ORDER BY c.g",
	"SELECT TOP 10 c.id, c.n FROM c ORDER BY c.n DESC, c.id",
	"SELECT TOP @n c.id, c.o FROM c WHERE c.o.x >= @lo ORDER BY c.o.x, c.id",
	"SELECT c.id FROM c ORDER BY c.pk, c.id OFFSET 13 LIMIT 21",
	"SELECT c.id, c.b FROM c ORDER BY c.b DESC, c.id OFFSET @off LIMIT @lim",
	"SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY c.id DESC",
	"SELECT VALUE c.n FROM c ORDER BY c.n",
	"SELECT c.id FROM c ORDER BY c.n OFFSET 2 LIMIT 3",
	// Aggregates, VALUE and object, over mixed types and none.
	"SELECT VALUE COUNT(1) FROM c",
	"SELECT VALUE COUNT(c.n) FROM c WHERE c.pk > @s",
	"SELECT VALUE SUM(c.o.x) FROM c",
	"SELECT VALUE AVG(c.o.x) FROM c WHERE c.b = false",
	"SELECT VALUE MIN(c.n) FROM c",
	"SELECT VALUE MAX(c.g) FROM c",
	"SELECT VALUE SUM(c.n) FROM c",
	"SELECT VALUE AVG(c.n) FROM c WHERE IS_NUMBER(c.n)",
	"SELECT COUNT(1) AS n, SUM(c.o.x) AS s, AVG(c.o.x) AS a, MIN(c.s) AS lo, MAX(c.s) AS hi FROM c",
	"SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000",
	"SELECT VALUE AVG(c.n) FROM c WHERE c.n > 1000",
	"SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags",
	// GROUP BY with aggregates, TOP, OFFSET/LIMIT, mixed-type groups.
	"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g",
	"SELECT c.b AS b, c.s AS s, COUNT(1) AS n, AVG(c.o.x) AS a FROM c GROUP BY c.b, c.s",
	"SELECT VALUE COUNT(1) FROM c GROUP BY c.s",
	"SELECT TOP 3 c.s, MIN(c.n) AS lo, MAX(c.n) AS hi FROM c GROUP BY c.s",
	"SELECT c.g, SUM(c.n) AS s FROM c WHERE IS_NUMBER(c.n) GROUP BY c.g OFFSET 1 LIMIT 2",
	"SELECT t AS tag, COUNT(1) AS n FROM c JOIN t IN c.tags GROUP BY t",
	// DISTINCT, with and without ORDER BY, TOP, LIMIT.
	"SELECT DISTINCT VALUE c.s FROM c",
	"SELECT DISTINCT c.g FROM c",
	"SELECT DISTINCT c.s, c.b FROM c WHERE c.n > @lo",
	"SELECT DISTINCT TOP 3 VALUE c.g FROM c",
	"SELECT DISTINCT VALUE c.g FROM c OFFSET 1 LIMIT 3",
	"SELECT DISTINCT VALUE c.s FROM c ORDER BY c.s",
	"SELECT DISTINCT c.g AS g FROM c ORDER BY c.g DESC",
	"SELECT DISTINCT c.s, c.b FROM c ORDER BY c.s",
	"SELECT DISTINCT VALUE c.b FROM c ORDER BY c.b OFFSET 1 LIMIT 1",
	"SELECT DISTINCT TOP 4 c.n AS n FROM c ORDER BY c.n DESC",
	"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags ORDER BY t",
	"SELECT DISTINCT c.pk FROM c WHERE ARRAY_CONTAINS(@tags, c.g)",
	// Subqueries and paths as FROM and JOIN sources, inferred aliases.
	"SELECT * FROM (SELECT c.id, c.n FROM c WHERE c.n > @lo) AS x",
	"SELECT VALUE x.id FROM (SELECT * FROM c) AS x ORDER BY x.n, x.id",
	"SELECT TOP @n VALUE x FROM (SELECT VALUE c.s FROM c WHERE IS_STRING(c.s)) AS x ORDER BY x DESC",
	"SELECT g, COUNT(1) AS n FROM (SELECT VALUE c.g FROM c) AS g GROUP BY g",
	"SELECT VALUE pk FROM c.pk",
	"SELECT DISTINCT VALUE x FROM c.o.x",
	"SELECT c.id, t FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE t != 't3') AS t",
	"SELECT VALUE COUNT(1) FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE t = 't1')",
	"SELECT c.id, x FROM c JOIN c.o.x AS x ORDER BY x DESC, c.id",
	"SELECT c.id, n FROM c JOIN (SELECT VALUE COUNT(1) FROM t IN c.tags) n ORDER BY n DESC, c.id",
	"SELECT t AS tag, COUNT(1) AS n FROM c JOIN t IN (SELECT VALUE c.tags) GROUP BY t",
	// FROM subqueries that look across collections: merged by their own
	// plan, then the query runs over their results (query.Nested).
	"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.g FROM c)",
	"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags)",
	"SELECT x.g, x.n FROM (SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g) AS x WHERE x.n > 10",
	"SELECT VALUE MAX(x.n) FROM (SELECT c.s, COUNT(1) AS n FROM c GROUP BY c.s) AS x",
	"SELECT c.id, c.n FROM (SELECT TOP @n * FROM c ORDER BY c.n DESC, c.id) AS c ORDER BY c.id",
	"SELECT VALUE x.id FROM (SELECT c.id FROM c ORDER BY c.pk, c.id OFFSET @off LIMIT @lim) AS x",
	"SELECT TOP 5 VALUE x FROM (SELECT DISTINCT VALUE c.s FROM c) AS x ORDER BY x DESC",
	"SELECT VALUE n FROM (SELECT VALUE AVG(c.o.x) FROM c WHERE c.b = true) AS n",
}

// CorpusParams are the parameters the Corpus uses.
var CorpusParams = []store.Param{
	{Name: "@lo", Value: 2},
	{Name: "@s", Value: "k17"},
	{Name: "@n", Value: 6},
	{Name: "@off", Value: 3},
	{Name: "@lim", Value: 8},
	{Name: "@tags", Value: []any{"red", 1.0, nil}},
}

// Run runs the oracle test.
func Run(t *testing.T, cfg Config) {
	h, targets := prepare(t, &cfg)
	for _, text := range Corpus {
		h.check(store.Query{Text: text, Parameters: CorpusParams}, nil, targets)
		h.check(store.Query{Text: text, Parameters: CorpusParams}, fmt.Sprintf("k%02d", h.rng.IntN(40)), targets)
	}
	for i := 0; i < cfg.Queries; i++ {
		q := GenerateQuery(h.rng)
		var key any
		if h.rng.IntN(6) == 0 {
			key = fmt.Sprintf("k%02d", h.rng.IntN(40))
		}
		h.check(q, key, targets)
	}
	t.Logf("oracle: %d queries × %d splits; comparisons: %v", len(Corpus)*2+cfg.Queries, len(targets), h.modes)
}

// Fuzz runs the oracle on queries the fuzzer writes, with CorpusParams and
// no partition key, seeded with the Corpus and those of cfg.Queries
// generated queries that take no parameters of their own. An input that
// does not parse, or that the one collection cannot answer, is skipped;
// one the planner refuses must be refused by the router too (with
// query.ErrUnmergeable where the planner says that). Every other input
// must answer alike everywhere, as in Run.
func Fuzz(f *testing.F, cfg Config) {
	h, targets := prepare(f, &cfg)
	for _, text := range Corpus {
		f.Add(text)
	}
	for i := 0; i < cfg.Queries; i++ {
		q := GenerateQuery(h.rng)
		if len(q.Parameters) == 0 {
			f.Add(q.Text)
		}
	}
	// A second reference, written in the reverse order: the documents'
	// system properties (ETags) differ from the first's, so a query whose
	// answer depends on them (ORDER BY c, MIN(c), c._etag) shows it.
	h.other = h.one + "2"
	reversed := slices.Clone(h.docs)
	slices.Reverse(reversed)
	writeReference(f, h.st, h.other, reversed)
	f.Fuzz(func(t *testing.T, text string) {
		q := store.Query{Text: text, Parameters: CorpusParams}
		parsed, err := query.Parse(text)
		if err != nil {
			return
		}
		if _, err := query.PlanFanOut(parsed, paramMap(q)); err != nil {
			_, rerr := targets[0].c.Query(h.ctx, targets[0].db, q, nil)
			require.Error(t, rerr, "the planner refuses %q (%v) but the router answers", text, err)
			if errors.Is(err, query.ErrUnmergeable) {
				require.ErrorIs(t, rerr, query.ErrUnmergeable, text)
			}
			return
		}
		if _, err := h.st.Query(h.ctx, h.one, q, &store.QueryOptions{PageSize: -1}); err != nil {
			return // not a query one collection answers
		}
		h.t = t
		if h.stateDependent(q) {
			return
		}
		h.check(q, nil, targets)
	})
}

// stateDependent reports whether the two references answer q differently
// where its shape says they must agree: then the answer depends on what
// each copy of a document got from its store, and no split can match it.
func (h *harness) stateDependent(q store.Query) bool {
	s := h.shapeOf(q)
	if s.unlimited != nil && !s.total {
		q, s = *s.unlimited, h.shapeOf(*s.unlimited)
	}
	run := func(q store.Query, link string) []string { return canon(h.t, h.direct(link, q, nil)) }
	a, b := run(q, h.one), run(q, h.other)
	if s.twin != nil && !slices.Equal(run(*s.twin, h.one), run(*s.twin, h.other)) {
		return true
	}
	if !s.grouped && !s.total { // as compare: a multiset
		slices.Sort(a)
		slices.Sort(b)
	}
	return !slices.Equal(a, b)
}

// prepare fills in cfg's defaults and writes the documents: once into one
// collection (the reference) and once through a router per split.
func prepare(t testing.TB, cfg *Config) (*harness, []*target) {
	if cfg.Docs == 0 {
		cfg.Docs = 400
	}
	if cfg.Queries == 0 {
		cfg.Queries = 300
	}
	if cfg.Splits == nil {
		cfg.Splits = []int{2, 7, 32}
	}
	if cfg.Parallelism == nil {
		cfg.Parallelism = []int{0, 1, 3, -1}
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(cfg.Seed, 42))
	st := cfg.Store(t)
	docs := GenerateDocs(rng, cfg.Docs)
	run := fmt.Sprintf("oracle%06d", rng.IntN(1_000_000))

	// The reference: every document in one collection, written and
	// queried through the store alone.
	oneLink := "dbs/" + run + "one/colls/all"
	writeReference(t, st, oneLink, docs)

	var targets []*target
	for _, n := range cfg.Splits {
		tg := newTarget(t, st, fmt.Sprintf("dbs/%ssplit%d", run, n), n)
		for _, d := range docs {
			_, err := tg.c.Create(ctx, tg.db, d, nil)
			require.NoError(t, err)
		}
		targets = append(targets, tg)
	}
	return &harness{t: t, ctx: ctx, st: st, one: oneLink, docs: docs, rng: rng, cfg: *cfg}, targets
}

// writeReference creates a collection keyed by /pk and writes docs into
// it in order, through the store alone; the collection is deleted at the
// end of the test.
func writeReference(t testing.TB, st store.Store, link string, docs []map[string]any) {
	ctx := context.Background()
	require.NoError(t, st.CreateCollection(ctx, link, &store.CollectionSpec{PartitionKeyPath: "/pk"}))
	t.Cleanup(func() { _ = st.DeleteCollection(context.Background(), link) })
	for _, d := range docs {
		b, err := json.Marshal(d)
		require.NoError(t, err)
		_, err = st.Create(ctx, link, b, nil)
		require.NoError(t, err)
	}
}

func paramMap(q store.Query) map[string]any {
	params := map[string]any{}
	for _, p := range q.Parameters {
		params[p.Name] = p.Value
	}
	return params
}

// target is one database spreading the documents over n collections.
type target struct {
	db    string
	c     *router.Client
	fresh *router.Client // another client over the same store, for resumed reads
}

func newTarget(t testing.TB, st store.Store, db string, n int) *target {
	links := make([]string, n)
	for i := range links {
		links[i] = fmt.Sprintf("%s/colls/c%02d", db, i)
	}
	ring, err := hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/pk")})
	require.NoError(t, err)
	tg := &target{db: db}
	for _, c := range []**router.Client{&tg.c, &tg.fresh} {
		*c = router.New(st, &router.Options{MaxDegreeOfParallelism: -1, MaxBufferedItemCount: 64})
		require.NoError(t, (*c).Register(db, ring))
	}
	created, err := tg.c.EnsureCollections(context.Background(), db, nil)
	require.NoError(t, err)
	require.Len(t, created, n)
	t.Cleanup(func() {
		for _, l := range links {
			_ = st.DeleteCollection(context.Background(), l)
		}
	})
	return tg
}

type harness struct {
	t     testing.TB
	ctx   context.Context
	st    store.Store
	one   string // the reference collection
	other string // Fuzz: a second reference, written in another order
	docs  []map[string]any
	rng   *rand.Rand
	cfg   Config
	modes map[string]int
}

// direct runs q on one collection through the store alone.
func (h *harness) direct(link string, q store.Query, key any) []json.RawMessage {
	h.t.Helper()
	out := []json.RawMessage{}
	opts := &store.QueryOptions{PartitionKey: key, PageSize: -1}
	for i := 0; ; i++ {
		require.Less(h.t, i, 100000)
		page, err := h.st.Query(h.ctx, link, q, opts)
		require.NoError(h.t, err, "the store on one collection: %s", q.Text)
		out = append(out, page.Items...)
		if page.Continuation == "" {
			return out
		}
		opts.Continuation = page.Continuation
	}
}

func (h *harness) options(key any) *router.QueryOptions {
	return &router.QueryOptions{
		PartitionKey:           key,
		MaxDegreeOfParallelism: h.cfg.Parallelism[h.rng.IntN(len(h.cfg.Parallelism))],
		MaxBufferedItemCount:   1 + h.rng.IntN(200),
	}
}

// shape is what one collection's answer determines about a query.
type shape struct {
	ordered     bool // ORDER BY
	total       bool // the order is total: nothing is left to ties
	limited     bool // TOP or OFFSET/LIMIT
	distinct    bool
	grouped     bool // aggregates or GROUP BY: one exact answer
	replayable  bool // a router run is deterministic: resumed reads equal whole ones
	unlimited   *store.Query
	twin        *store.Query // the sort keys, for ORDER BY with possible ties
	description string
}

func (h *harness) shapeOf(q store.Query) shape {
	h.t.Helper()
	parsed, err := query.Parse(q.Text)
	require.NoError(h.t, err, q.Text)
	plan, err := query.PlanFanOut(parsed, paramMap(q))
	require.NoError(h.t, err, "the oracle only generates mergeable queries: %s", q.Text)
	kind := plan.Kind
	if kind == query.Nested { // the query's own shape, over its FROM subquery's results
		switch {
		case query.Analyze(parsed).Aggregated:
			kind = query.Aggregate
		case len(parsed.OrderBy) > 0:
			kind = query.OrderBy
		default:
			kind = query.Stream
		}
	}
	s := shape{
		ordered:  kind == query.OrderBy,
		grouped:  kind == query.Aggregate,
		limited:  parsed.Top != nil || parsed.Limit != nil,
		distinct: parsed.Distinct,
	}
	s.replayable = s.ordered || s.grouped || s.distinct
	if s.ordered {
		last := query.Format(parsed.OrderBy[len(parsed.OrderBy)-1].X)
		s.total = last == "c.id" && len(parsed.Joins) == 0
	}
	if s.limited && !s.grouped {
		u := *parsed
		u.Top, u.Offset, u.Limit = nil, nil, nil
		s.unlimited = &store.Query{Text: query.FormatQuery(&u), Parameters: q.Parameters}
	}
	if s.ordered && !s.total && !s.distinct {
		tw := *parsed
		keys := &query.ArrayLit{}
		for _, o := range parsed.OrderBy {
			keys.Elems = append(keys.Elems, o.X)
		}
		tw.Star, tw.Value, tw.Items = false, true, []query.SelectItem{{X: keys}}
		s.twin = &store.Query{Text: query.FormatQuery(&tw), Parameters: q.Parameters}
	}
	switch {
	case s.grouped, s.total:
		s.description = "exact"
	case s.twin != nil:
		s.description = "ties: keys exact, rows as a multiset"
	default:
		s.description = "multiset"
	}
	if s.limited && !s.grouped && !s.total {
		s.description += ", limited: within the unlimited answer"
	}
	return s
}

// check runs one query everywhere and compares.
func (h *harness) check(q store.Query, key any, targets []*target) {
	t := h.t
	t.Helper()
	s := h.shapeOf(q)
	if h.modes == nil {
		h.modes = map[string]int{}
	}
	h.modes[s.description]++
	want := h.direct(h.one, q, key)
	var full, twinWant []json.RawMessage
	if s.unlimited != nil {
		full = h.direct(h.one, *s.unlimited, key)
	}
	if s.twin != nil {
		twinWant = h.direct(h.one, *s.twin, key)
	}
	label := fmt.Sprintf("%s (key %v)", q.Text, key)
	for _, tg := range targets {
		whole, err := tg.c.Query(h.ctx, tg.db, q, h.options(key))
		require.NoError(t, err, "%s over %s", label, tg.db)
		h.compare(s, label, tg.db+" whole", want, whole, full)
		if s.twin != nil {
			got, err := tg.c.Query(h.ctx, tg.db, *s.twin, h.options(key))
			require.NoError(t, err, "%s over %s", s.twin.Text, tg.db)
			requireExact(t, twinWant, got, "%s: the sort keys over %s, twin query %s", label, tg.db, s.twin.Text)
		}
		size := h.pageSize(len(want))
		paged := h.readPaged(tg, q, key, size)
		resumed := h.readResumed(tg, q, key, size)
		if s.replayable {
			// A router run is deterministic for these shapes: paging and
			// resuming must give exactly the whole read.
			requireExact(t, whole, paged, "%s over %s paged by %d (one pager)", label, tg.db, size)
			requireExact(t, whole, resumed, "%s over %s paged by %d, each page from a pager resumed in a fresh client", label, tg.db, size)
		} else {
			h.compare(s, label, fmt.Sprintf("%s paged by %d (one pager)", tg.db, size), want, paged, full)
			h.compare(s, label, fmt.Sprintf("%s paged by %d, resumed", tg.db, size), want, resumed, full)
		}
	}
}

func (h *harness) pageSize(results int) int {
	if len(h.cfg.PageSizes) > 0 {
		return h.cfg.PageSizes[h.rng.IntN(len(h.cfg.PageSizes))]
	}
	if results <= 12 {
		return 1 + h.rng.IntN(3)
	}
	return max(1, results/(1+h.rng.IntN(12)))
}

// readPaged reads a query page by page in one pager.
func (h *harness) readPaged(tg *target, q store.Query, key any, size int) []json.RawMessage {
	h.t.Helper()
	opts := h.options(key)
	opts.PageSize = size
	p := tg.c.NewQueryPager(tg.db, q, opts)
	out := []json.RawMessage{}
	for i := 0; p.More(); i++ {
		require.Less(h.t, i, 100000)
		page, err := p.NextPage(h.ctx)
		require.NoError(h.t, err, "%s page %d", q.Text, i)
		require.LessOrEqual(h.t, len(page.Items), size)
		out = append(out, page.Items...)
	}
	return out
}

// readResumed reads a query page by page, each page from a new pager in
// the target's second client, resumed from the previous page's token, with
// other parallelism and buffer settings each time.
func (h *harness) readResumed(tg *target, q store.Query, key any, size int) []json.RawMessage {
	h.t.Helper()
	out := []json.RawMessage{}
	token := ""
	for i := 0; ; i++ {
		require.Less(h.t, i, 100000)
		opts := h.options(key)
		opts.PageSize, opts.Continuation = size, token
		c := tg.fresh
		if i%2 == 0 {
			c = tg.c
		}
		page, err := c.NewQueryPager(tg.db, q, opts).NextPage(h.ctx)
		require.NoError(h.t, err, "%s page %d", q.Text, i)
		require.LessOrEqual(h.t, len(page.Items), size)
		out = append(out, page.Items...)
		if page.Continuation == "" {
			return out
		}
		token = page.Continuation
	}
}

// compare checks a router answer against the one-collection answer, as far
// as that determines it.
func (h *harness) compare(s shape, label, what string, want, got, full []json.RawMessage) {
	t := h.t
	t.Helper()
	if s.grouped || s.total {
		requireExact(t, want, got, "%s: %s", what, label)
		return
	}
	w, g := canon(t, want), canon(t, got)
	if !s.limited || full == nil {
		slices.Sort(w)
		slices.Sort(g)
		require.Equal(t, w, g, "%s: %s (as multisets)", what, label)
		return
	}
	require.Len(t, g, len(w), "%s: %s (the number of results under TOP/LIMIT)", what, label)
	pool := map[string]int{}
	for _, r := range canon(t, full) {
		pool[r]++
	}
	for _, r := range g {
		require.Positive(t, pool[r], "%s: %s: %s is not in the unlimited answer (or is there fewer times)", what, label, r)
		pool[r]--
	}
}

// requireExact compares two answers in order: byte for byte when they
// carry no system properties (which differ between copies of a document),
// else without those properties.
func requireExact(t testing.TB, want, got []json.RawMessage, format string, args ...any) {
	t.Helper()
	system := false
	for _, w := range want {
		if strings.Contains(string(w), `"_etag"`) {
			system = true
			break
		}
	}
	if !system {
		ws, gs := make([]string, len(want)), make([]string, len(got))
		for i := range want {
			ws[i] = string(want[i])
		}
		for i := range got {
			gs[i] = string(got[i])
		}
		require.Equal(t, ws, gs, fmt.Sprintf(format, args...))
		return
	}
	require.Equal(t, canon(t, want), canon(t, got), fmt.Sprintf(format, args...))
}

// canon returns comparable texts of results, without the system
// properties each copy of a document got from its own write and collection.
func canon(t testing.TB, items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		var v any
		require.NoError(t, json.Unmarshal(it, &v))
		out[i] = queryhook.DistinctKey(stripSystem(v))
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

// GenerateDocs returns n documents keyed by /pk: querygen.Docs.
func GenerateDocs(rng *rand.Rand, n int) []map[string]any { return querygen.Docs(rng, n) }

// GenerateQuery returns a random query over GenerateDocs documents, with
// its parameters: querygen.Query.
func GenerateQuery(rng *rand.Rand) store.Query { return querygen.Query(rng, nil) }
