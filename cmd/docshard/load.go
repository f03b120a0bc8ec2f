package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/docshard/docshard/managed"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/spillover"
)

func newLoadCmd(g *globals) *cobra.Command {
	var workers int
	var create bool
	var checkEvery time.Duration
	cmd := &cobra.Command{
		Use:   "load -c FILE [--db LINK] [PATH|-]",
		Short: "Write JSON-lines documents through the router",
		Long: `load writes one document per line of PATH (standard input for "-" or no PATH) to the
collection the database's resolver puts it in, creating the resolver's collections first when they
do not exist. A spillover database's collections are created from its template, and the next one
is opened whenever the newest fills (checked every --check-every); a managed one's from its
template. Documents are upserted (--create refuses existing ids). It prints the count; on a
terminal it shows a progress bar. The first bad line stops the load with its line number; every
line before it is written.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := intFlag("workers", int64(workers), 1, maxWorkers); err != nil {
				return err
			}
			cfg, db, err := g.loadDatabase()
			if err != nil {
				return err
			}
			in := g.stdin
			name := "standard input"
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in, name = f, args[0]
			}
			st, err := openStore(cfg, g.stderr, false)
			if err != nil {
				return err
			}
			defer st.Close()
			ctx := cmd.Context()
			var coord atomic.Pointer[spillover.Coordinator]
			client := router.New(st, &router.Options{Hooks: router.Hooks{Call: func(l, op string, d time.Duration, err error) {
				if c := coord.Load(); c != nil {
					c.Observe(l, op, d, err)
				}
			}}})
			follower, err := followState(ctx, client, st, db, g.stderr)
			if err != nil {
				return err
			}
			defer follower.Close()
			var created []string
			switch r := follower.State(); kindOf(r) {
			case spillover.Kind:
				// The coordinator creates the collections from the
				// template and opens the next one whenever the newest fills.
				c, err := spillover.Start(ctx, st, db.Link, &spillover.CoordinatorOptions{CheckInterval: checkEvery,
					OnOpen:  func(l string, v int64) { fmt.Fprintf(g.stderr, "opened collection %s (version %d)\n", l, v) },
					OnError: func(err error) { fmt.Fprintf(g.stderr, "docshard: spillover: %s\n", oneLine(err.Error())) }})
				if err != nil {
					return err
				}
				defer c.Close()
				coord.Store(c)
			case managed.Kind:
				m, err := managed.Current(ctx, st, db.Link)
				if err != nil {
					return err
				}
				if created, err = managed.Ensure(ctx, st, m); err != nil {
					return err
				}
			default:
				if created, err = client.EnsureCollections(ctx, db.Link, nil); err != nil {
					return err
				}
			}
			for _, l := range created {
				fmt.Fprintf(g.stderr, "created collection %s\n", l)
			}
			n, err := loadLines(ctx, client, db.Link, in, name, workers, create, g.stderr)
			if err != nil {
				return err
			}
			if c := coord.Load(); c != nil {
				// A last look, so a collection the load filled is sealed now.
				if _, err := c.Check(ctx); err != nil {
					return err
				}
			}
			fmt.Fprintf(g.stdout, "%d documents loaded into %s\n", n, db.Link)
			return nil
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 8, "concurrent writers")
	cmd.Flags().DurationVar(&checkEvery, "check-every", time.Second, "spillover: how often the newest collection's usage is read")
	cmd.Flags().BoolVar(&create, "create", false, "create documents, failing on an existing id, instead of upserting")
	return cmd
}

type loadLine struct {
	no  int
	doc []byte
}

// loadLines writes every non-empty line with workers concurrent writers.
func loadLines(ctx context.Context, c *router.Client, dbLink string, in io.Reader, name string, workers int, create bool, stderr io.Writer) (int64, error) {
	if err := intFlag("workers", int64(workers), 1, maxWorkers); err != nil {
		return 0, err
	}
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("loading"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionClearOnFinish())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan loadLine, workers*4)
	var done atomic.Int64
	var firstErr error
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		errMu.Unlock()
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range lines {
				var err error
				if create {
					_, err = c.Create(ctx, dbLink, l.doc, nil)
				} else {
					_, err = c.Upsert(ctx, dbLink, l.doc, nil)
				}
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						fail(fmt.Errorf("%s line %d: %w", name, l.no, err))
					}
					continue
				}
				done.Add(1)
				if bar != nil {
					_ = bar.Add(1)
				}
			}
		}()
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	no := 0
read:
	for sc.Scan() {
		no++
		doc := bytes.TrimSpace(sc.Bytes())
		if len(doc) == 0 {
			continue
		}
		select {
		case lines <- loadLine{no: no, doc: append([]byte(nil), doc...)}:
		case <-ctx.Done():
			break read
		}
	}
	close(lines)
	wg.Wait()
	if bar != nil {
		_ = bar.Finish()
	}
	if err := sc.Err(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("%s line %d: %w", name, no+1, err)
	}
	return done.Load(), firstErr
}

// kindOf returns the resolver kind of a state ("" when it does not say).
func kindOf(s *shardstate.State) string {
	r, err := s.Decode()
	if err != nil {
		return ""
	}
	if k, ok := r.(resolver.Kinded); ok {
		return k.Kind()
	}
	return ""
}
