package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/transition"
)

func newStateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state show|history|set",
		Short: "Show, list or publish the database's shared state document",
		Long: `The shared state of a database is one document in its collection _docshard: the resolver
every router and command routes the database by, a version that grows by one per change, an epoch
that fences routers which have not seen a change, and a phase. Once the store holds it, it wins over
the configuration file's resolver; the file's resolver seeds it the first time documents are
loaded (or with state set).`,
	}
	cmd.AddCommand(newStateShowCmd(g), newStateHistoryCmd(g), newStateSetCmd(g))
	return cmd
}

// stateJSON is what state show prints.
type stateJSON struct {
	Database  string          `json:"database"`
	Version   int64           `json:"version"`
	Epoch     int64           `json:"epoch"`
	Phase     json.RawMessage `json:"phase,omitempty"`
	UpdatedBy string          `json:"updatedBy"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Reason    string          `json:"reason,omitempty"`
	Resolver  json.RawMessage `json:"resolver"`
}

// withStore loads the configuration, picks the database and opens the
// store for fn (read-only with readOnly; see openStore).
func (g *globals) withStore(readOnly bool, fn func(ctx context.Context, cfg *config.Config, db *config.Database, st store.Store) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		cfg, db, err := g.loadDatabase()
		if err != nil {
			return err
		}
		st, err := openStore(cfg, g.stderr, readOnly)
		if err != nil {
			return err
		}
		defer st.Close()
		return fn(cmd.Context(), cfg, db, st)
	}
}

// noState explains a missing state document: a new database's, or one
// deleted under a fleet (shardstate.InUse: then what shows the fleet, and
// the recovery).
func noState(ctx context.Context, st store.Store, err error, db *config.Database) error {
	if errors.Is(err, shardstate.ErrNoState) {
		if ierr := shardstate.InUse(ctx, st, db.Link); ierr != nil {
			return ierr
		}
		return fmt.Errorf("%s has no shared state document yet (the configuration file's resolver is used; docshard load or docshard state set creates it)", db.Link)
	}
	return err
}

func newStateShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show -c FILE [--db LINK] [--json]",
		Short: "Print the database's state document as JSON",
		Args:  cobra.NoArgs,
		RunE: g.withStore(true, func(ctx context.Context, _ *config.Config, db *config.Database, st store.Store) error {
			s, err := shardstate.Load(ctx, st, db.Link)
			if err != nil {
				return noState(ctx, st, err, db)
			}
			if asJSON {
				return writeJSON(g.stdout, stateOf(s))
			}
			out, err := json.MarshalIndent(stateOf(s), "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s\n", out)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the document on one line (it is JSON either way)")
	return cmd
}

// stateOf is the JSON form the state commands print.
func stateOf(s *shardstate.State) stateJSON {
	return stateJSON{Database: s.Database, Version: s.Version, Epoch: s.Epoch, Phase: s.Phase,
		UpdatedBy: s.UpdatedBy, UpdatedAt: s.UpdatedAt, Reason: s.Reason, Resolver: s.Resolver}
}

func newStateHistoryCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history -c FILE [--db LINK] [--json]",
		Short: "List every version of the database's state, oldest first",
		Long: `history prints one line per version: VERSION, EPOCH, when and by whom it was made, and what
it changed and why (its reason: "reshard 3 → 4 collections: switched reads and writes to the 4
collections") with what it routes by (the resolver's kind and collections), tab-separated. A reshard
is a few versions: its start, the cutover's freeze, the switch, the thaw and the end. Versions written
by releases before 2026-11-28 have no reason; those that only recorded a change's progress (same
resolver, same step) are one line.`,
		Args: cobra.NoArgs,
		RunE: g.withStore(true, func(ctx context.Context, _ *config.Config, db *config.Database, st store.Store) error {
			h, err := shardstate.History(ctx, st, db.Link)
			if err != nil {
				return noState(ctx, st, err, db)
			}
			if asJSON {
				for _, s := range h {
					if err := writeJSON(g.stdout, stateOf(s)); err != nil {
						return err
					}
				}
				return nil
			}
			// A version with a reason is one line. Versions written before
			// reasons were (up to 2026-11-27) that only record a change's
			// progress (a reshard's copy positions, say: same resolver,
			// same step) are one line too.
			for i := 0; i < len(h); {
				j := i + 1
				for h[i].Reason == "" && j < len(h) && h[j].Reason == "" && bytes.Equal(h[j].Resolver, h[i].Resolver) && stepOf(h[j].Phase) == stepOf(h[i].Phase) {
					j++
				}
				first, last := h[i], h[j-1]
				what := describe(first)
				switch {
				case first.Reason != "" && strings.HasPrefix(what, "transition "):
					what = first.Reason // which says what the transition does
				case first.Reason != "":
					what = first.Reason + "; routes by " + what
				case len(first.Phase) > 0:
					what += "; " + phaseSummary(first.Phase, "") // the author is its own column
				}
				if j-i == 1 {
					fmt.Fprintf(g.stdout, "%d\tepoch %d\t%s\t%s\t%s\n", first.Version, first.Epoch, first.UpdatedAt.Format(time.RFC3339), first.UpdatedBy, what)
				} else {
					fmt.Fprintf(g.stdout, "%d-%d\tepoch %d\t%s\t%s\t%s (%d versions recording its progress)\n", first.Version, last.Version, last.Epoch,
						first.UpdatedAt.Format(time.RFC3339), first.UpdatedBy, what, j-i)
				}
				i = j
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each version as one line of JSON (the document show prints)")
	return cmd
}

// describe summarises a state's resolver: its kind and collections; for a
// transition, the placements it moves between.
func describe(s *shardstate.State) string {
	r, err := s.Decode()
	if err != nil {
		return "undecodable resolver: " + err.Error()
	}
	if t, ok := r.(*transition.Resolver); ok {
		return "transition from " + describeTarget(t.Current()) + " to " + describeTarget(t.Next())
	}
	return describeResolver(r)
}

// describeTarget is describeResolver for a transition's side.
func describeTarget(t resolver.Target) string {
	if t.Resolver == nil {
		return t.Link
	}
	return describeResolver(t.Resolver)
}

// describeResolver is a resolver's kind and collections.
func describeResolver(r resolver.Resolver) string {
	kind := "?"
	if k, ok := r.(resolver.Kinded); ok {
		kind = k.Kind()
	}
	links, err := r.ResolveForRead(nil)
	if err != nil {
		return kind
	}
	return fmt.Sprintf("%s over %d collection(s): %s", kind, len(links), strings.Join(links, ","))
}

// stepOf is the step a phase records ("" for none): versions of one step
// differ only in progress.
func stepOf(phase json.RawMessage) string {
	if len(phase) == 0 {
		return ""
	}
	return phaseSummary(phase, "")
}

func newStateSetCmd(g *globals) *cobra.Command {
	var ifVersion int64
	var dotnet string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "set -c FILE [--db LINK] [--if-version N] [--dotnet x64|x86] [--json] RESOLVER.json",
		Short: "Publish a new resolver as the next version of the database's state",
		Long: `set publishes RESOLVER.json (a resolver definition, or a configuration file naming the
database) as the next version of the state, by compare-and-swap: with --if-version N it fails
unless the current version is N (0: no state yet). On a database whose state document was deleted
while routers used it, set restores it (nothing else recreates it): give the resolver the fleet
routes by; the version and epoch go above those the routers, the history and the fence saw. The change raises the epoch above the old one
and above the store's fence (so one set restores a state whose epoch fell below the fence), so
routers that have not seen it are refused by a fencing store until they do. It prints the new
version.
--dotnet x64|x86 reads the .NET DocumentDB SDK's serialised HashPartitionResolver instead, placing
keys exactly where a 64-bit or 32-bit .NET process put them.

set changes where keys are routed; it moves no document.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := intFlag("if-version", ifVersion, 0, math.MaxInt64); err != nil {
				return err
			}
			_, db, err := g.loadDatabase()
			if err != nil {
				return err
			}
			var r resolver.Resolver
			if dotnet != "" {
				data, err := os.ReadFile(args[0])
				if err != nil {
					return err
				}
				if r, err = hashring.FromDotNet(data, dotnet); err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
			} else if r, err = loadResolverFile("resolver", args[0], db.Link); err != nil {
				return err
			}
			return g.withStore(false, func(ctx context.Context, _ *config.Config, db *config.Database, st store.Store) error {
				s, err := publishResolver(ctx, st, db.Link, r, cmd.Flags().Changed("if-version"), ifVersion, g.stderr)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(g.stdout, stateOf(s))
				}
				fmt.Fprintf(g.stdout, "%d\n", s.Version)
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new state document as one line of JSON instead of its version")
	cmd.Flags().Int64Var(&ifVersion, "if-version", 0, "fail unless the current version is N (0: no state yet)")
	cmd.Flags().StringVar(&dotnet, "dotnet", "", "read a .NET SDK HashPartitionResolver serialised as JSON; x64 or x86, the process kind that wrote the data")
	return cmd
}

// publishResolver makes r the database's next state version (or its first),
// on condition of the version when check is set.
func publishResolver(ctx context.Context, st store.Store, dbLink string, r resolver.Resolver, check bool, ifVersion int64, stderr io.Writer) (*shardstate.State, error) {
	// Peek: the current resolver is decoded once, below, for the warning
	// (a decode costs up to resolver.MaxWork: seconds for the largest).
	cur, err := shardstate.Peek(ctx, st, dbLink)
	switch {
	case errors.Is(err, shardstate.ErrNoState):
		if check && ifVersion != 0 {
			return nil, fmt.Errorf("--if-version %d: %s has no state yet (version 0)", ifVersion, dbLink)
		}
		// Restore: on a new database, version 1; on one whose state
		// document was deleted under a fleet, above what the fleet saw.
		s, err := shardstate.Restore(ctx, st, dbLink, r, nil)
		var ce *shardstate.ConflictError
		if errors.As(err, &ce) && ce.Current != nil {
			return nil, fmt.Errorf("%w (another process created it first: try again with --if-version %d)", err, ce.Current.Version)
		}
		return s, err
	case err != nil:
		return nil, err
	case check && cur.Version != ifVersion:
		return nil, fmt.Errorf("--if-version %d: %s is at version %d (by %s at %s)", ifVersion, dbLink, cur.Version, cur.UpdatedBy, cur.UpdatedAt.Format(time.RFC3339))
	}
	if old, err := cur.Decode(); err == nil {
		warnIfKeysMove(old, r, stderr)
	}
	return shardstate.Publish(ctx, st, cur, shardstate.Change{Resolver: r, NewEpoch: true, Reason: "resolver set with docshard state set"})
}

// warnIfKeysMove tells the user when the new resolver places sample keys
// elsewhere than the old one: set moves no document.
func warnIfKeysMove(old, next resolver.Resolver, stderr io.Writer) {
	report, err := comparePlacement(old, next, randomKeys(10000, 1))
	if err != nil || report.moved == 0 {
		return
	}
	fmt.Fprintf(stderr, "docshard: warning: the new resolver places %.1f%% of sample keys in another collection; documents already written stay where they are, so keyed reads will miss them until they are moved\n", 100*float64(report.moved)/float64(report.keys))
}

// route routes the database by the library's one choice between its
// shared state and the file's resolver (docshard.RouteDatabase: mode
// docshard.StateRead for a command that only reads, docshard.StateFollow
// for one that writes), registering it on client when there is one, and
// says on stderr which it chose when there is a state.
func route(ctx context.Context, client *router.Client, st store.Store, db *config.Database, mode docshard.State, stderr io.Writer) (*docshard.Routing, error) {
	rt, err := docshard.RouteDatabase(ctx, client, st, *db, mode, nil)
	if err != nil {
		return nil, err
	}
	if n := rt.Notice(); n != "" {
		fmt.Fprintf(stderr, "docshard: %s\n", n)
	}
	return rt, nil
}

// currentResolver is the resolver a read-only command (locate, plan) routes
// the database by (route, docshard.StateRead). It opens the store only
// when there can be a state in it: an in-memory store, or a durable
// directory that does not exist, has none (and is not created).
func (g *globals) currentResolver(ctx context.Context, cfg *config.Config, db *config.Database) (resolver.Resolver, error) {
	if cfg.Store.Kind == config.StoreEmbedded {
		if cfg.Store.Path == "" {
			return db.Resolver, nil
		}
		if _, err := os.Stat(cfg.Store.Path); errors.Is(err, os.ErrNotExist) {
			return db.Resolver, nil
		}
	}
	st, err := openStore(cfg, g.stderr, true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rt, err := route(ctx, nil, st, db, docshard.StateRead, g.stderr)
	if err != nil {
		return nil, err
	}
	return rt.Resolver, nil
}
