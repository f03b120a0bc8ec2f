package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/docshard/docshard/config"
)

// globals holds the flags every command shares.
type globals struct {
	configFile string
	db         string
	logLevel   string
	stdin      io.Reader
	stdout     io.Writer
	stderr     io.Writer
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "docshard",
		Short: "Client-side sharding of document databases",
		Long: `docshard routes documents to many collections by a partition resolver
(hash ring, range, lookup, ...), loads and queries them across collections, and
shows which keys would move when collections change (plan).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVarP(&g.configFile, "config", "c", "", "configuration file (YAML, JSON or TOML)")
	root.PersistentFlags().StringVar(&g.db, "db", "", "database link (dbs/NAME); may be omitted when the file has one database")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log on stderr from this level: debug, info, warn or error")
	root.AddCommand(newDemoCmd(g), newLocateCmd(g), newPlanCmd(g), newLoadCmd(g), newQueryCmd(g), newChangesCmd(g), newServeCmd(g), newStateCmd(g), newReshardCmd(g), newVerifyCmd(g), newVersionCmd(g), newSalvageCmd(g))
	root.Version = version()
	root.SetVersionTemplate("docshard {{.Version}}\n")
	usageErrors(root)
	return root
}

// loadDatabase reads the configuration file and picks the database.
func (g *globals) loadDatabase() (*config.Config, *config.Database, error) {
	if g.configFile == "" {
		return nil, nil, exitCode{code: 2, msg: "no configuration file: pass -c FILE (a YAML, JSON or TOML file naming the store and the databases)"}
	}
	cfg, err := config.Load(g.configFile)
	if err != nil {
		return nil, nil, err
	}
	db, err := cfg.Database(g.db)
	if err != nil {
		return nil, nil, err
	}
	return cfg, db, nil
}

// exitCode is an error that asks for a given exit code; msg may be empty
// when the command already printed what went wrong.
type exitCode struct {
	code int
	msg  string
}

func (e exitCode) Error() string { return e.msg }

func asExit(err error, target *exitCode) bool { return errors.As(err, target) }

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// logger returns the command's log/slog logger: text on stderr, from the
// --log-level level.
func (g *globals) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, exitCode{code: 2, msg: fmt.Sprintf("--log-level %q: want debug, info, warn or error", g.logLevel)}
	}
	return slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level})), nil
}
