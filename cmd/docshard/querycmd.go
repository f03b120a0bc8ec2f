package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/docshard/docshard"
	"github.com/docshard/docshard/config"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
)

func newQueryCmd(g *globals) *cobra.Command {
	var key string
	var keyJSON bool
	var params []string
	cmd := &cobra.Command{
		Use:   "query -c FILE [--db LINK] [--key K] SQL",
		Short: "Run a query across the database's collections and print JSON lines",
		Long: `query runs Cosmos DB SQL across the collections the key resolves to (every collection
without --key), merges the results as one collection would answer (ORDER BY, TOP, OFFSET/LIMIT,
aggregates, DISTINCT, GROUP BY) and prints each result as one JSON line.
Parameters: --param @name=JSON (repeatable), e.g. --param @city='"Oslo"' --param @n=3.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, db, err := g.loadDatabase()
			if err != nil {
				return err
			}
			q := store.Query{Text: args[0]}
			for _, p := range params {
				name, value, ok := strings.Cut(p, "=")
				if !ok || !strings.HasPrefix(name, "@") {
					return usage(cmd, fmt.Sprintf("--param %q: want @name=JSON", p))
				}
				var v any
				if err := json.Unmarshal([]byte(value), &v); err != nil {
					return usage(cmd, fmt.Sprintf("--param %s: the value %s is not JSON (quote strings: --param %s='\"%s\"'): %v", name, value, name, value, err))
				}
				q.Parameters = append(q.Parameters, store.Param{Name: name, Value: v})
			}
			opts := &router.QueryOptions{MaxDegreeOfParallelism: -1, PageSize: 1000}
			if cmd.Flags().Changed("key") {
				var k any = key
				if keyJSON {
					if k, err = parseJSONKey(key); err != nil {
						return usage(cmd, "--key: "+err.Error())
					}
				}
				opts.PartitionKey = k
			}
			st, err := openStore(cfg, g.stderr, true)
			if err != nil {
				return err
			}
			defer st.Close()
			client := router.New(st, nil)
			if _, err := route(cmd.Context(), client, st, db, docshard.StateRead, g.stderr); err != nil {
				return err
			}
			pager := client.NewQueryPager(db.Link, q, opts)
			for pager.More() {
				page, err := pager.NextPage(cmd.Context())
				if err != nil {
					return missingHint(err, cfg)
				}
				for _, item := range page.Items {
					fmt.Fprintf(g.stdout, "%s\n", item)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "partition key: query only the collections (and documents) of this key")
	cmd.Flags().BoolVar(&keyJSON, "key-json", false, "parse --key as a JSON value (42, [\"eu\",7])")
	cmd.Flags().StringArrayVar(&params, "param", nil, "query parameter @name=JSON (repeatable)")
	return cmd
}

// missingHint adds to a "collection not found" from the embedded store
// where the store is, since a wrong store.path is the usual cause.
func missingHint(err error, cfg *config.Config) error {
	if !errors.Is(err, store.ErrCollectionNotFound) || cfg.Store.Kind == config.StoreCosmos {
		return err
	}
	where := "the in-memory embedded store (store.path is empty)"
	if cfg.Store.Path != "" {
		path := cfg.Store.Path
		if abs, aerr := filepath.Abs(path); aerr == nil {
			path = abs
		}
		where = "the embedded store at " + path
		if _, serr := os.Stat(cfg.Store.Path); serr != nil {
			where += ", which does not exist"
		}
	}
	return fmt.Errorf("%w (in %s: is store.path right? docshard load creates the collections)", err, where)
}
