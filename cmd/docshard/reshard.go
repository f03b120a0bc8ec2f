package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

func newReshardCmd(g *globals) *cobra.Command {
	var nextFile string
	var dryRun, abort bool
	var rateLimit float64
	cmd := &cobra.Command{
		Use:   "reshard -c FILE --next FILE2 [--db LINK] [--dry-run] [--abort]",
		Short: "Move the database to the next resolver under live traffic",
		Long: `reshard moves the database from the resolver of its shared state (seeded from FILE the first
time) to FILE2's (a resolver JSON, or a configuration naming the database), while routers that follow
the state keep reading and writing: it publishes the transition, copies the documents whose placement
changes and catches up the writes made meanwhile, freezes writes to the moving keys for a moment,
switches, and removes the moved sources. Every step is recorded in the state document: run it again
after a crash and it finishes. --dry-run prints what would move; --abort, before the switch, returns to
the current resolver with nothing lost. Progress goes to stderr, a summary to stdout.`,
		Args: cobra.NoArgs,
		// Flags are checked before the store is opened.
		PreRunE: func(*cobra.Command, []string) error { return rateFlag("rate", rateLimit) },
		RunE: g.withStore(false, func(ctx context.Context, _ *config.Config, db *config.Database, st store.Store) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			if abort {
				show, done := reshardProgress(g.stderr, isTerminal(g.stderr))
				p, err := transition.Abort(ctx, st, db.Link, &transition.ReshardOptions{Progress: show, Logger: log})
				done()
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "%s: reshard aborted; %d copies removed\n", db.Link, p.Deleted)
				return nil
			}
			if nextFile == "" {
				return exitCode{code: 2, msg: "reshard: --next FILE2 is required"}
			}
			next, err := loadNextResolver(nextFile, db.Link)
			if err != nil {
				return err
			}
			// The file's resolver seeds the state the first time.
			cur, err := docshard.RouteDatabase(ctx, nil, st, *db, docshard.StateFollow, nil)
			if err != nil {
				return err
			}
			if dryRun {
				keys, err := storedKeys(ctx, st, cur.Resolver)
				if err != nil {
					return err
				}
				unit := "documents"
				if len(keys) == 0 {
					keys, unit = randomKeys(100000, 1), "sample keys (the database holds no documents)"
				}
				report, err := comparePlacement(cur.Resolver, next, keys)
				if err != nil {
					return err
				}
				report.unit = unit
				report.print(g.stdout, db.Link)
				return nil
			}
			start := time.Now()
			show, done := reshardProgress(g.stderr, isTerminal(g.stderr))
			p, err := transition.Reshard(ctx, st, db.Link, next, &transition.ReshardOptions{Rate: rateLimit, Progress: show, Logger: log})
			done()
			if err != nil && ctx.Err() != nil {
				return fmt.Errorf("reshard of %s stopped (%w) with nothing lost: run the same command again to resume where it stopped, or `docshard reshard -c FILE --abort` to return to the current resolver (possible until the switch)", db.Link, context.Cause(ctx))
			}
			if err != nil {
				return err
			}
			s, err := shardstate.Load(ctx, st, db.Link)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s: at version %d; %d documents scanned, %d copied, %d caught up, %d sources removed in %s\n",
				db.Link, s.Version, p.Scanned, p.Copied, p.CaughtUp, p.Deleted, time.Since(start).Round(time.Millisecond))
			return nil
		}),
	}
	cmd.Flags().StringVar(&nextFile, "next", "", "the next resolver: a resolver JSON file, or a configuration naming the database")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would move, and move nothing")
	cmd.Flags().BoolVar(&abort, "abort", false, "end a reshard before its switch and return to the current resolver")
	cmd.Flags().Float64Var(&rateLimit, "rate", 0, "documents copied per second at most (0: no limit)")
	return cmd
}

// stepLabel names the step a reshard is in: the copy runs after the step
// recorded as "published" (and before any is recorded), so both read as
// the copy.
func stepLabel(step string) string {
	if step == "" || step == "published" {
		return transition.StepCopy
	}
	return step
}

// storedKeys returns the partition key, under r, of every document in r's
// collections (a dry run reports on them); a document r cannot read a
// key from is left out. Cost: a read feed of every document.
func storedKeys(ctx context.Context, st store.Store, r resolver.Resolver) ([]any, error) {
	links, err := r.ResolveForRead(nil)
	if err != nil {
		return nil, err
	}
	var keys []any
	for _, l := range links {
		o := &store.FeedOptions{PageSize: 1000}
		for {
			page, err := st.ReadFeed(ctx, l, o)
			if errors.Is(err, store.ErrNotFound) {
				break // not created yet: holds nothing
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", l, err)
			}
			for _, raw := range page.Items {
				if key, err := r.PartitionKey(raw); err == nil {
					keys = append(keys, key)
				}
			}
			if o.Continuation = page.Continuation; o.Continuation == "" {
				break
			}
		}
	}
	return keys, nil
}

// isTerminal reports whether stream (stdin, stdout or stderr) is a
// terminal: where a progress bar can redraw itself, or where input waits
// on a person.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// barThrottle is how often a progress bar redraws at most.
var barThrottle = 100 * time.Millisecond

// reshardProgress shows a reshard's progress on w. On a terminal the copy,
// its longest part, is a bar (documents scanned of the sources' total, the
// rate, the time left, the copies written) and the steps after it are
// lines; off a terminal every step is a line, at most twice a second,
// which logs keep readable. Once the catch-up has run, a line shows its
// round and lag (the copies its last round wrote again). done ends the bar.
func reshardProgress(w io.Writer, bar bool) (show func(transition.Progress), done func()) {
	var mu sync.Mutex
	var last time.Time
	step := ""
	line := func(p transition.Progress) {
		if p.Step == step && time.Since(last) < 500*time.Millisecond {
			return
		}
		step, last = p.Step, time.Now()
		eta := ""
		if p.ETA > 0 {
			eta = fmt.Sprintf(", about %s left", p.ETA.Round(time.Second))
		}
		lag := ""
		if p.Rounds > 0 {
			lag = fmt.Sprintf(" (round %d, %d behind)", p.Rounds, p.Behind)
		}
		of := " (sources not counted yet)" // the first report comes before the count
		if p.Total > 0 {
			of = fmt.Sprintf(" of %d", max(p.Total, p.Scanned))
		}
		fmt.Fprintf(w, "reshard: %-9s scanned %d%s (%.0f/s%s), copied %d, caught up %d%s, verified %d, removed %d\n",
			stepLabel(p.Step), p.Scanned, of, p.Rate, eta, p.Copied, p.CaughtUp, lag, p.Verified, p.Deleted)
	}
	if !bar {
		return func(p transition.Progress) {
			mu.Lock()
			defer mu.Unlock()
			line(p)
		}, func() {}
	}
	b := progressbar.NewOptions64(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("docs"),
		progressbar.OptionSetPredictTime(true), progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionThrottle(barThrottle), progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
	limit := int64(-1)
	copying := true // the bar is up
	return func(p transition.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if copying && stepLabel(p.Step) == transition.StepCopy {
				// The total is the stores' estimate: it grows when the
				// scan passes it.
				if total := max(p.Total, p.Scanned); total > 0 && total != limit {
					limit = total
					b.ChangeMax64(total)
				}
				// Set64 draws the bar (at most every 100 ms); the new
				// description shows at the next drawing.
				_ = b.Set64(p.Scanned)
				b.Describe(fmt.Sprintf("reshard: copying, %d copied", p.Copied))
				return
			}
			if copying {
				copying = false
				if limit > 0 {
					b.Describe(fmt.Sprintf("reshard: copied %d", p.Copied))
					if p.Scanned > 0 {
						b.ChangeMax64(p.Scanned)
					}
					_ = b.Finish()
				} else {
					_ = b.Exit()
				}
			}
			line(p)
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			if copying {
				copying = false
				_ = b.Exit()
			}
		}
}

func newVerifyCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify -c FILE [--db LINK] [--json]",
		Short: "Check that every document sits where the resolver puts it, exactly once",
		Long: `verify reads every collection of the database and checks each document against the resolver
the database routes by (its shared state's, else the file's): a document is in place in any collection
the resolver reads its key from (a ring's one collection for the key; any of a spillover's collections).
It exits 1 naming the first misplaced or duplicated documents. During a reshard it refuses: finish the
reshard first.`,
		Args: cobra.NoArgs,
		RunE: g.withStore(true, func(ctx context.Context, _ *config.Config, db *config.Database, st store.Store) error {
			rt, err := docshard.RouteDatabase(ctx, nil, st, *db, docshard.StateRead, nil)
			if err != nil {
				return err
			}
			if s := rt.State; s != nil && len(s.Phase) > 0 {
				return fmt.Errorf("%s is %s (version %d): finish it first (docshard reshard -c FILE resumes a reshard, --abort undoes one before its switch), then verify", db.Link, phaseSummary(s.Phase, s.UpdatedBy), s.Version)
			}
			rep, err := transition.Verify(ctx, st, db.Link, rt.Resolver)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(g.stdout, verifyJSON{Database: db.Link, Documents: rep.Documents, OK: rep.OK(), Collections: orEmpty(rep.Collections),
					Misplaced: orEmpty(rep.Misplaced), Duplicates: orEmpty(rep.Duplicates)}); err != nil {
					return err
				}
				if !rep.OK() {
					return exitCode{code: 1}
				}
				return nil
			}
			for _, c := range rep.Collections {
				fmt.Fprintf(g.stdout, "  %-32s %d documents\n", c.Collection, c.Documents)
			}
			if rep.OK() {
				fmt.Fprintf(g.stdout, "%s: %d documents, each once where the resolver puts it\n", db.Link, rep.Documents)
				return nil
			}
			fmt.Fprintf(g.stdout, "%s: %d documents; %d misplaced, %d duplicated\n", db.Link, rep.Documents, len(rep.Misplaced), len(rep.Duplicates))
			for i, f := range rep.Misplaced {
				if i == 10 {
					fmt.Fprintf(g.stdout, "  ... and %d more misplaced\n", len(rep.Misplaced)-10)
					break
				}
				fmt.Fprintf(g.stdout, "  misplaced: %q (key %s) in %s, belongs in %s\n", f.ID, f.Key, f.Collection, f.Want)
			}
			for i, f := range rep.Duplicates {
				if i == 10 {
					fmt.Fprintf(g.stdout, "  ... and %d more duplicated\n", len(rep.Duplicates)-10)
					break
				}
				fmt.Fprintf(g.stdout, "  duplicated: %q (key %s) in %s and %s\n", f.ID, f.Key, f.Other, f.Collection)
			}
			return exitCode{code: 1}
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object (exit 1 still marks a failure)")
	return cmd
}

// verifyJSON is verify's --json output.
type verifyJSON struct {
	Database    string                       `json:"database"`
	Documents   int64                        `json:"documents"`
	Collections []transition.CollectionCount `json:"collections"`
	OK          bool                         `json:"ok"`
	Misplaced   []transition.Finding         `json:"misplaced"`
	Duplicates  []transition.Finding         `json:"duplicates"`
}

// phaseSummary says in a few words what a state's phase is doing ("being
// resharded (step copy, started ..., by ...)"), never its whole JSON (a
// reshard's holds feed positions).
func phaseSummary(phase json.RawMessage, by string) string {
	var p struct {
		Reshard *struct {
			Step    string    `json:"step"`
			Started time.Time `json:"started"`
			Owner   string    `json:"owner"`
		} `json:"reshard"`
		Spillover *struct {
			Opening string `json:"opening"`
		} `json:"spillover"`
	}
	_ = json.Unmarshal(phase, &p)
	switch {
	case p.Reshard != nil:
		s := "being resharded (step " + p.Reshard.Step + ", started " + p.Reshard.Started.UTC().Format(time.RFC3339)
		owner := p.Reshard.Owner // phases of earlier releases name it; later ones keep it in the progress document
		if owner == "" {
			owner = by // the author of the version: the reshard that published it
		}
		if owner != "" {
			s += ", by " + owner
		}
		return s + ")"
	case p.Spillover != nil:
		return "opening its next collection " + p.Spillover.Opening
	}
	return "in the middle of a change"
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
