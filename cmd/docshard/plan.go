package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
)

func newPlanCmd(g *globals) *cobra.Command {
	var nextFile, sampleFile string
	var keys int
	var seed uint64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan -c FILE --next FILE2 [--db LINK] [--keys N] [--json]",
		Short: "Compare two resolvers on sample keys: load per collection and keys that move",
		Long: `plan places N sample keys under the database's current resolver (-c FILE) and under
the next one (--next FILE2: a configuration file with the same database, or a file holding one
resolver in JSON), prints the load of every collection under both with a bar each, and the
fraction of keys whose collection changes. When both are hash rings it also prints the exact
figures, computed from the rings' points rather than sampled: the largest collection's share of
the hash space against the mean, and the share of the hash space that moves.

Sample keys are random strings (deterministic for a --seed); with --sample PATH they are the
partition keys of the JSON-lines documents in PATH ("-" for standard input).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if nextFile == "" {
				return exitCode{code: 2, msg: "plan: --next FILE2 is required (the resolver to compare with: a resolver JSON file, or a configuration naming the database)"}
			}
			if err := intFlag("keys", int64(keys), 1, maxPlanKeys); err != nil {
				return err
			}
			cfg, db, err := g.loadDatabase()
			if err != nil {
				return err
			}
			cur, err := g.currentResolver(cmd.Context(), cfg, db)
			if err != nil {
				return err
			}
			next, err := loadNextResolver(nextFile, db.Link)
			if err != nil {
				return err
			}
			var sample []any
			if sampleFile != "" {
				sample, err = sampleFromDocuments(g.stdin, sampleFile, cur, keys)
			} else {
				sample = randomKeys(keys, seed)
			}
			if err != nil {
				return err
			}
			report, err := comparePlacement(cur, next, sample)
			if err != nil {
				return err
			}
			if asJSON {
				return report.printJSON(g.stdout, db.Link)
			}
			report.print(g.stdout, db.Link)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().StringVar(&nextFile, "next", "", "the next resolver: a configuration file, or a resolver JSON file")
	cmd.Flags().IntVar(&keys, "keys", 100000, "number of sample keys")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the random sample keys")
	cmd.Flags().StringVar(&sampleFile, "sample", "", "take sample keys from JSON-lines documents in PATH (- = stdin)")
	return cmd
}

// loadNextResolver reads --next: a configuration file (the same database,
// or its only one) or a bare resolver definition in JSON.
func loadNextResolver(path, dbLink string) (resolver.Resolver, error) {
	return loadResolverFile("--next", path, dbLink)
}

// loadResolverFile reads a resolver from a configuration file (the same
// database, or its only one) or a bare resolver definition in JSON; what
// names the argument in errors.
func loadResolverFile(what, path, dbLink string) (resolver.Resolver, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		var probe map[string]json.RawMessage
		if json.Unmarshal(data, &probe) == nil {
			if _, ok := probe["kind"]; ok {
				r, err := resolver.Unmarshal(data)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", what, path, err)
				}
				return r, nil
			}
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	db, err := cfg.Database(dbLink)
	if err != nil && len(cfg.Databases) == 1 {
		db, err = &cfg.Databases[0], nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return db.Resolver, nil
}

// randomKeys returns n random 12-character keys from a seeded generator.
func randomKeys(n int, seed uint64) []any {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]any, n)
	var b [12]byte
	for i := range out {
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		out[i] = string(b[:])
	}
	return out
}

// sampleFromDocuments reads up to n JSON-lines documents and returns their
// partition keys under r.
func sampleFromDocuments(stdin io.Reader, path string, r resolver.Resolver, n int) ([]any, error) {
	in := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--sample: %w", err)
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	var out []any
	line := 0
	for sc.Scan() && len(out) < n {
		line++
		doc := bytes.TrimSpace(sc.Bytes())
		if len(doc) == 0 {
			continue
		}
		key, err := r.PartitionKey(append([]byte(nil), doc...))
		if err != nil {
			return nil, fmt.Errorf("--sample %s line %d: %w", path, line, err)
		}
		out = append(out, key)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--sample %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--sample %s: no documents", path)
	}
	return out, nil
}

// placement is the load of one resolver over the sample.
type placement struct {
	links  []string // every link the resolver knows, in its order
	counts map[string]int
}

type planReport struct {
	unit    string // what keys counts: "sample keys" when empty
	keys    int
	current placement
	next    placement
	moved   int
	exact   *exactFigures // nil unless both resolvers are hash rings
}

// exactFigures are what two hash rings place, computed from their points
// (hashring.Ring.Shares and hashring.Moved) instead of sampled.
type exactFigures struct {
	currentMax, nextMax float64 // the largest share against the mean
	currentMin, nextMin float64 // the smallest share against the mean
	moved               float64 // the share of the hash space that moves
}

// ringOf returns r's ring when r is a hash resolver.
func ringOf(r resolver.Resolver) *hashring.Ring {
	if h, ok := r.(*hashring.Resolver); ok {
		return h.Ring()
	}
	return nil
}

// exactPlacement computes exactFigures for two rings whose key positions
// compare (the same key hash); nil otherwise.
func exactPlacement(cur, next resolver.Resolver) *exactFigures {
	a, b := ringOf(cur), ringOf(next)
	if a == nil || b == nil {
		return nil
	}
	moved, err := hashring.Moved(a, b)
	if err != nil {
		return nil // different flavours: only the sample compares them
	}
	extremes := func(g *hashring.Ring) (largest, smallest float64) {
		shares := g.Shares()
		return slices.Max(shares) * float64(len(shares)), slices.Min(shares) * float64(len(shares))
	}
	e := &exactFigures{moved: moved}
	e.currentMax, e.currentMin = extremes(a)
	e.nextMax, e.nextMin = extremes(b)
	return e
}

func comparePlacement(cur, next resolver.Resolver, sample []any) (*planReport, error) {
	rep := &planReport{keys: len(sample)}
	var err error
	if rep.current.links, err = cur.ResolveForRead(nil); err != nil {
		return nil, fmt.Errorf("current resolver: %w", err)
	}
	if rep.next.links, err = next.ResolveForRead(nil); err != nil {
		return nil, fmt.Errorf("next resolver: %w", err)
	}
	rep.current.counts = make(map[string]int, len(rep.current.links))
	rep.next.counts = make(map[string]int, len(rep.next.links))
	for _, key := range sample {
		a, err := cur.ResolveForCreate(key)
		if err != nil {
			return nil, fmt.Errorf("current resolver, key %v: %w (use --sample with real documents for non-string keys)", key, err)
		}
		b, err := next.ResolveForCreate(key)
		if err != nil {
			return nil, fmt.Errorf("next resolver, key %v: %w (use --sample with real documents for non-string keys)", key, err)
		}
		rep.current.counts[a]++
		rep.next.counts[b]++
		if a != b {
			rep.moved++
		}
	}
	rep.exact = exactPlacement(cur, next)
	return rep, nil
}

const barWidth = 40

func (r *planReport) print(w io.Writer, dbLink string) {
	maxCount := 1
	width := len("collection")
	for _, p := range []placement{r.current, r.next} {
		for _, l := range p.links {
			maxCount = max(maxCount, p.counts[l])
			width = max(width, len(l))
		}
	}
	unit := r.unit
	if unit == "" {
		unit = "sample keys"
	}
	fmt.Fprintf(w, "%s: %d %s\n", dbLink, r.keys, unit)
	for _, part := range []struct {
		name string
		p    placement
	}{{"current", r.current}, {"next", r.next}} {
		n := len(part.p.links)
		mean := float64(r.keys) / float64(n)
		largest := 0
		for _, l := range part.p.links {
			largest = max(largest, part.p.counts[l])
		}
		fmt.Fprintf(w, "\n%s: %d collections, largest %.2f× the mean\n", part.name, n, float64(largest)/mean)
		for _, l := range part.p.links {
			c := part.p.counts[l]
			bar := strings.Repeat("█", (c*barWidth+maxCount/2)/maxCount)
			fmt.Fprintf(w, "  %-*s %9d %6.2f%%  %s\n", width, l, c, 100*float64(c)/float64(r.keys), bar)
		}
	}
	fmt.Fprintf(w, "\nmoved: %d of %d keys (%.2f%%)\n", r.moved, r.keys, 100*float64(r.moved)/float64(r.keys))
	if e := r.exact; e != nil {
		fmt.Fprintf(w, "exact, from the rings' points: largest %.2f× the mean now, %.2f× next; %.2f%% of the hash space moves; smallest %.2f× the mean now, %.2f× next\n",
			e.currentMax, e.nextMax, 100*e.moved, e.currentMin, e.nextMin)
		if e.nextMax > 1+hashring.BalancedTolerance || e.nextMin < 1-hashring.BalancedTolerance {
			fmt.Fprintf(w, "hint: the next ring's collections range from %.2f× to %.2f× the mean; \"strategy\": \"balanced\" in its JSON keeps every one within %.0f%% of the mean (docs/resolvers.md)\n",
				e.nextMin, e.nextMax, 100*hashring.BalancedTolerance)
		}
	}
}

// planJSON is plan's --json output.
type planJSON struct {
	Database      string            `json:"database"`
	Keys          int               `json:"keys"`
	Current       placementJSON     `json:"current"`
	Next          placementJSON     `json:"next"`
	Moved         int               `json:"moved"`
	MovedFraction float64           `json:"movedFraction"`
	Exact         *exactFiguresJSON `json:"exact,omitempty"`
}

type placementJSON struct {
	Collections     []collectionLoad `json:"collections"`
	LargestOverMean float64          `json:"largestOverMean"`
}

type collectionLoad struct {
	Link  string  `json:"link"`
	Keys  int     `json:"keys"`
	Share float64 `json:"share"`
}

type exactFiguresJSON struct {
	CurrentLargestOverMean  float64 `json:"currentLargestOverMean"`
	NextLargestOverMean     float64 `json:"nextLargestOverMean"`
	CurrentSmallestOverMean float64 `json:"currentSmallestOverMean"`
	NextSmallestOverMean    float64 `json:"nextSmallestOverMean"`
	MovedShare              float64 `json:"movedShare"`
}

// printJSON writes the report as one JSON object.
func (r *planReport) printJSON(w io.Writer, dbLink string) error {
	out := planJSON{Database: dbLink, Keys: r.keys, Current: r.current.json(r.keys), Next: r.next.json(r.keys), Moved: r.moved,
		MovedFraction: float64(r.moved) / float64(r.keys)}
	if e := r.exact; e != nil {
		out.Exact = &exactFiguresJSON{CurrentLargestOverMean: e.currentMax, NextLargestOverMean: e.nextMax, MovedShare: e.moved,
			CurrentSmallestOverMean: e.currentMin, NextSmallestOverMean: e.nextMin}
	}
	return writeJSON(w, out)
}

func (p placement) json(keys int) placementJSON {
	out := placementJSON{Collections: make([]collectionLoad, 0, len(p.links))}
	largest := 0
	for _, l := range p.links {
		c := p.counts[l]
		largest = max(largest, c)
		out.Collections = append(out.Collections, collectionLoad{Link: l, Keys: c, Share: float64(c) / float64(keys)})
	}
	if n := len(p.links); n > 0 {
		out.LargestOverMean = float64(largest) / (float64(keys) / float64(n))
	}
	return out
}

// writeJSON writes v as one line of JSON: the --json output of a command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
