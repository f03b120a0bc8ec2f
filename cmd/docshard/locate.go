package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard/resolver"
)

func newLocateCmd(g *globals) *cobra.Command {
	var read, asJSON bool
	cmd := &cobra.Command{
		Use:   "locate -c FILE [--db LINK] [--read] KEY...",
		Short: "Resolve partition keys under the database's resolver",
		Long: `locate prints, for every KEY, the collection a new document with that key goes to
(KEY<TAB>LINK), or with --read every collection that may hold it (links joined by ",").
Keys are strings; with --json each KEY is a JSON value (42, "abc", ["eu",7]).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, db, err := g.loadDatabase()
			if err != nil {
				return err
			}
			r, err := g.currentResolver(cmd.Context(), cfg, db)
			if err != nil {
				return err
			}
			for _, arg := range args {
				var key any = arg
				if asJSON {
					if key, err = parseJSONKey(arg); err != nil {
						return usage(cmd, err.Error())
					}
				}
				if read {
					links, err := r.ResolveForRead(key)
					if err != nil {
						return fmt.Errorf("key %q: %w", arg, err)
					}
					fmt.Fprintf(g.stdout, "%s\t%s\n", arg, strings.Join(links, ","))
					continue
				}
				l, err := r.ResolveForCreate(key)
				if err != nil {
					return fmt.Errorf("key %q: %w", arg, err)
				}
				fmt.Fprintf(g.stdout, "%s\t%s\n", arg, l)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&read, "read", false, "print every collection that may hold the key")
	cmd.Flags().BoolVar(&asJSON, "json", false, "parse each KEY as a JSON value (number, string, array for a composite key)")
	return cmd
}

// parseJSONKey turns a JSON value into a key: numbers as float64, arrays as
// a composite key.
func parseJSONKey(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("key %q is not a JSON value: %w", s, err)
	}
	if arr, ok := v.([]any); ok {
		return resolver.CompositeKey(arr), nil
	}
	return v, nil
}
