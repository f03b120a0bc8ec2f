package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
	"github.com/docshard/docshard/transition"
)

func newDemoCmd(g *globals) *cobra.Command {
	var docs, collections int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The quickstart end to end on the embedded in-memory store",
		Long: `demo creates the collections of a hash resolver on the embedded in-memory store, writes
generated documents through the router, shows how they spread, and runs a keyed query, a
cross-collection ORDER BY with TOP, and aggregates, checking every answer against the same query
over one collection that holds every document. It exits 1 if any answer differs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), g.stdout, docs, collections)
		},
	}
	cmd.Flags().IntVar(&docs, "docs", 3000, "documents to write")
	cmd.Flags().IntVar(&collections, "collections", 2, "collections of the hash ring (the demo reshards to one more)")
	return cmd
}

type demoCheck struct {
	title   string
	sql     string
	key     any
	ordered bool
}

func runDemo(ctx context.Context, out io.Writer, n, collections int) error {
	if err := intFlag("docs", int64(n), 1, maxDemoDocs); err != nil {
		return err
	}
	if err := intFlag("collections", int64(collections), 1, 256); err != nil {
		return err
	}
	st := memstore.New(nil)
	defer st.Close()
	const db, oneDB = "dbs/demo", "dbs/reference"
	links := make([]string, collections)
	for i := range links {
		links[i] = fmt.Sprintf("%s/colls/users%d", db, i)
	}
	key := resolver.MustKeyDef("/userId")
	ring, err := hashring.New(links, &hashring.Options{PartitionKey: key})
	if err != nil {
		return err
	}
	one, err := hashring.New([]string{oneDB + "/colls/all"}, &hashring.Options{PartitionKey: key})
	if err != nil {
		return err
	}
	client := router.New(st, nil)
	if err := client.Register(db, ring); err != nil {
		return err
	}
	if err := client.Register(oneDB, one); err != nil {
		return err
	}
	fmt.Fprintf(out, "docshard demo: client-side sharding on the embedded in-memory store\n\n")
	def, _ := resolver.Marshal(ring)
	fmt.Fprintf(out, "1. Resolver for %s:\n   %s\n", db, def)
	for _, d := range []string{db, oneDB} {
		if _, err := client.EnsureCollections(ctx, d, nil); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "   created %d collections, and %s/colls/all as the reference holding every document\n\n", collections, oneDB)

	rng := rand.New(rand.NewPCG(2026, 11))
	cities := []string{"Oslo", "Lisbon", "Kyoto", "Lima", "Accra", "Quebec"}
	start := time.Now()
	for i := 0; i < n; i++ {
		doc := map[string]any{
			"id":     fmt.Sprintf("order-%05d", i),
			"userId": fmt.Sprintf("user-%04d", rng.IntN(n/3+1)),
			"city":   cities[rng.IntN(len(cities))],
			"age":    18 + rng.IntN(60),
			"score":  float64(rng.IntN(100000)) / 100,
		}
		if rng.IntN(10) == 0 {
			delete(doc, "age") // some documents lack a field, as real data does
		}
		if _, err := client.Create(ctx, db, doc, nil); err != nil {
			return err
		}
		if _, err := client.Create(ctx, oneDB, doc, nil); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "2. Wrote %d documents through the router in %s; the ring spread them:\n", n, time.Since(start).Round(time.Millisecond))
	counts := make([]int64, collections)
	var most int64 = 1
	for i, l := range links {
		info, err := st.CollectionInfo(ctx, l)
		if err != nil {
			return err
		}
		counts[i] = info.Documents
		most = max(most, info.Documents)
	}
	for i, l := range links {
		fmt.Fprintf(out, "   %-24s %6d  %s\n", l, counts[i], strings.Repeat("█", int(counts[i]*30/most)))
	}

	probe := fmt.Sprintf("user-%04d", 42%(n/3+1))
	checks := []demoCheck{
		{"keyed query, one collection", `SELECT c.id, c.city, c.score FROM c WHERE c.userId = "` + probe + `" ORDER BY c.id`, probe, true},
		{"ORDER BY + TOP across collections", "SELECT TOP 5 c.userId, c.score FROM c ORDER BY c.score DESC, c.id", nil, true},
		{"aggregate across collections", "SELECT VALUE {\"orders\": COUNT(1), \"avgAge\": ROUND(AVG(c.age)), \"maxScore\": MAX(c.score)} FROM c", nil, true},
		{"GROUP BY across collections", "SELECT c.city, COUNT(1) AS orders, AVG(c.score) AS avgScore FROM c GROUP BY c.city", nil, false},
		{"DISTINCT + OFFSET/LIMIT", "SELECT DISTINCT VALUE c.city FROM c ORDER BY c.city OFFSET 1 LIMIT 3", nil, true},
	}
	fmt.Fprintf(out, "\n3. Queries, each checked against the same query over the reference collection:\n")
	failed := 0
	for _, ch := range checks {
		q := store.Query{Text: ch.sql}
		opts := &router.QueryOptions{PartitionKey: ch.key, MaxDegreeOfParallelism: -1}
		var width int
		wc := router.New(st, &router.Options{MaxDegreeOfParallelism: -1, Hooks: router.Hooks{FanOut: func(_ context.Context, _ string, w int) { width = w }}})
		_ = wc.Register(db, ring)
		got, err := wc.Query(ctx, db, q, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", ch.title, err)
		}
		want, err := client.Query(ctx, oneDB, q, opts)
		if err != nil {
			return fmt.Errorf("%s (reference): %w", ch.title, err)
		}
		ok := sameResults(got, want, ch.ordered)
		mark := "✓"
		if !ok {
			mark = "✗"
			failed++
		}
		fmt.Fprintf(out, "   %s %s (%d collection(s), %d results)\n     %s\n", mark, ch.title, width, len(got), ch.sql)
		for i, item := range got {
			if i == 3 {
				fmt.Fprintf(out, "       ... %d more\n", len(got)-3)
				break
			}
			fmt.Fprintf(out, "       %s\n", item)
		}
	}
	if failed > 0 {
		return exitCode{code: 1, msg: fmt.Sprintf("%d of %d answers differ from the single collection's", failed, len(checks))}
	}
	fmt.Fprintf(out, "\nEvery answer matches the single collection's.\n")
	return demoReshard(ctx, out, st, client, ring, key, checks[1:3])
}

// demoReshard moves the demo's database to one more collection while a
// writer keeps adding orders through a router that follows the shared
// state, then verifies placement and checks two queries again.
func demoReshard(ctx context.Context, out io.Writer, st store.Store, client *router.Client, ring *hashring.Resolver, key resolver.KeyDef, checks []demoCheck) error {
	const db, oneDB = "dbs/demo", "dbs/reference"
	links := append(ring.Collections(), fmt.Sprintf("%s/colls/users%d", db, len(ring.Collections())))
	next, err := hashring.New(links, &hashring.Options{PartitionKey: key})
	if err != nil {
		return err
	}
	if _, err := shardstate.Init(ctx, st, db, ring, nil); err != nil {
		return err
	}
	live := router.New(st, nil)
	// Polls every 50 ms, so the reshard's steps are acknowledged at once;
	// the lease stays the default 5 s, so a busy machine that starves a
	// renewal for a moment does not make the writer's lease lapse (a
	// lapsed lease refuses writes until it renews).
	f, err := live.Follow(ctx, db, &router.FollowOptions{PollInterval: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(out, "\n4. Reshard from %d to %d collections while a writer keeps adding orders:\n", len(ring.Collections()), len(links))
	stop := make(chan struct{})
	var written atomic.Int64
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			doc := map[string]any{"id": fmt.Sprintf("live-%05d", i), "userId": fmt.Sprintf("live-user-%03d", i%300), "city": "Oslo", "score": 1.0}
			if _, err := live.Create(ctx, db, doc, nil); err != nil {
				werr = err
				return
			}
			if _, err := client.Create(ctx, oneDB, doc, nil); err != nil {
				werr = err
				return
			}
			written.Add(1)
		}
	})
	start := time.Now()
	// The demo's report says what the reshard did; its log stays quiet.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	prog, err := transition.Reshard(ctx, st, db, next, &transition.ReshardOptions{Logger: quiet})
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("a write during the reshard failed: %w", werr)
	}
	fmt.Fprintf(out, "   %d documents scanned, %d moved, %d caught up from writes made meanwhile, in %s; %d orders written meanwhile, none refused\n",
		prog.Scanned, prog.Copied, prog.CaughtUp, time.Since(start).Round(time.Millisecond), written.Load())
	rep, err := transition.Verify(ctx, st, db, next)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return exitCode{code: 1, msg: fmt.Sprintf("verify: %d misplaced and %d duplicated documents after the reshard", len(rep.Misplaced), len(rep.Duplicates))}
	}
	fmt.Fprintf(out, "   verify: %d documents, each once where the new ring puts it\n", rep.Documents)
	for _, ch := range checks {
		q := store.Query{Text: ch.sql}
		got, err := live.Query(ctx, db, q, nil)
		if err != nil {
			return err
		}
		want, err := client.Query(ctx, oneDB, q, nil)
		if err != nil {
			return err
		}
		if !sameResults(got, want, ch.ordered) {
			return exitCode{code: 1, msg: fmt.Sprintf("after the reshard, %s differs from the single collection's", ch.title)}
		}
		fmt.Fprintf(out, "   ✓ %s still matches the single collection's\n", ch.title)
	}
	return nil
}

// sameResults compares two answers, in order or as multisets. Numbers match
// within a relative 1e-12: sums of fractions depend on the order they are
// added in, so a sum merged from several collections can differ from one
// collection's in the last bits, as in Cosmos DB's own cross-partition
// aggregates.
func sameResults(a, b []json.RawMessage, ordered bool) bool {
	if len(a) != len(b) {
		return false
	}
	decode := func(items []json.RawMessage) []any {
		out := make([]any, len(items))
		for i, it := range items {
			var v any
			_ = json.Unmarshal(it, &v)
			if m, ok := v.(map[string]any); ok {
				delete(m, "_etag")
				delete(m, "_ts")
			}
			out[i] = v
		}
		return out
	}
	x, y := decode(a), decode(b)
	if !ordered {
		key := func(v any) string { b, _ := json.Marshal(roundNumbers(v)); return string(b) }
		sort.Slice(x, func(i, j int) bool { return key(x[i]) < key(x[j]) })
		sort.Slice(y, func(i, j int) bool { return key(y[i]) < key(y[j]) })
	}
	for i := range x {
		if !query.EqualValues(x[i], y[i], 1e-12) {
			return false
		}
	}
	return true
}

// roundNumbers rounds every number to 9 significant digits, for sorting.
func roundNumbers(v any) any {
	switch x := v.(type) {
	case float64:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 9, 64), 64)
		return f
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = roundNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = roundNumbers(e)
		}
		return out
	}
	return v
}
