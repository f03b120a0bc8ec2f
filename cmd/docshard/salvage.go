package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard/store/memstore"
)

func newSalvageCmd(g *globals) *cobra.Command {
	var dir, to string
	cmd := &cobra.Command{
		Use:   "salvage --dir DIR --to NEWDIR",
		Short: "Copy every intact document of a damaged embedded store into a new one",
		Long: `salvage reads the durable embedded store in DIR read-only, even when it is damaged (a document
whose checksum fails, a file cut short, a page that does not read), and writes every intact document,
with its system properties, change-feed position and collection settings, into a new store in NEWDIR.
It prints what it kept, and names on stderr every document or collection it left behind. Point the
configuration's store.path at NEWDIR once you have checked it (docshard verify).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || to == "" {
				return exitCode{code: 2, msg: "salvage: --dir DIR and --to NEWDIR are required"}
			}
			rep, err := memstore.Salvage(dir, to)
			if err != nil {
				return err
			}
			for _, d := range rep.Damaged {
				fmt.Fprintf(g.stderr, "docshard: salvage: left behind: %v\n", d)
			}
			links := make([]string, 0, len(rep.Stopped))
			for l := range rep.Stopped {
				links = append(links, l)
			}
			sort.Strings(links)
			for _, l := range links {
				fmt.Fprintf(g.stderr, "docshard: salvage: %s: the walk stopped early, later documents are lost: %s\n", l, rep.Stopped[l])
			}
			fmt.Fprintf(g.stdout, "salvaged %d documents of %d collections (and %d fence epochs) into %s; %d damaged records left behind, %d collections cut short\n",
				rep.Documents, rep.Collections, rep.Fences, to, len(rep.Damaged), len(rep.Stopped))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the damaged store's directory")
	cmd.Flags().StringVar(&to, "to", "", "a new directory for the salvaged store")
	return cmd
}
