package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/router"
)

// changesPoll is how often `changes --follow` asks again once it has
// caught up.
const changesPoll = 100 * time.Millisecond

func newChangesCmd(g *globals) *cobra.Command {
	var fromNow, follow bool
	var tokenFile string
	cmd := &cobra.Command{
		Use:   "changes -c FILE [--db LINK] [--from-now] [--follow] [--token-file PATH]",
		Short: "Print the database's change feed as JSON lines, resharding invisible",
		Long: `changes prints the database's one change feed: the changes of every collection its resolver
names, merged, one changed document per line (its latest version, as stored). A reshard is
invisible: its copies are not printed and its clean-up is no deletion. Deletions are not in the
feed (Cosmos DB's latest-version mode). Without --follow it prints what the feed holds from the
beginning (or, with --from-now, nothing: a position to resume from) and exits; with --follow it
keeps reading until SIGINT or SIGTERM. --token-file PATH resumes from the continuation token in
PATH when it exists and writes the token there after each page printed, so a consumer that is
stopped or killed goes on where it left off (a page may be printed again after a kill).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, db, err := g.loadDatabase()
			if err != nil {
				return err
			}
			cont := ""
			if tokenFile != "" {
				b, err := os.ReadFile(tokenFile)
				switch {
				case errors.Is(err, os.ErrNotExist):
				case err != nil:
					return fmt.Errorf("changes: --token-file: %w", err)
				default:
					cont = strings.TrimSpace(string(b))
				}
			}
			if cont != "" && fromNow {
				return usage(cmd, "--from-now with a token in --token-file "+tokenFile+": remove the file to start at the present")
			}
			st, err := openStore(cfg, g.stderr, true)
			if err != nil {
				return err
			}
			defer st.Close()
			client := router.New(st, nil)
			ctx := cmd.Context()
			if _, err := route(ctx, client, st, db, docshard.StateRead, g.stderr); err != nil {
				return err
			}
			out := bufio.NewWriterSize(g.stdout, 64<<10)
			opts := &router.ChangeOptions{Continuation: cont, FromNow: fromNow}
			for {
				page, err := client.Changes(ctx, db.Link, opts)
				if err != nil {
					if follow && ctx.Err() != nil {
						return nil // stopped by SIGINT or SIGTERM
					}
					return missingHint(err, cfg)
				}
				for _, it := range page.Items {
					out.Write(it)
					out.WriteByte('\n')
				}
				if err := out.Flush(); err != nil {
					return fmt.Errorf("changes: %w", err)
				}
				if tokenFile != "" && page.Continuation != opts.Continuation {
					if err := writeToken(tokenFile, page.Continuation); err != nil {
						return err
					}
				}
				opts = &router.ChangeOptions{Continuation: page.Continuation}
				if !page.CaughtUp {
					continue
				}
				if !follow {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(changesPoll):
				}
			}
		},
	}
	cmd.Flags().BoolVar(&fromNow, "from-now", false, "start at the present: only changes made from now on")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep reading new changes until SIGINT or SIGTERM")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "resume from the token in this file, and keep it there after each page")
	return cmd
}

// writeToken replaces the file at path with tok, atomically (a kill
// leaves the old token or the new one).
func writeToken(path, tok string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".changes-token-*")
	if err != nil {
		return fmt.Errorf("changes: --token-file: %w", err)
	}
	_, werr := tmp.WriteString(tok + "\n")
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("changes: --token-file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("changes: --token-file: %w", err)
	}
	return nil
}
