package main

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// usageErrors makes every mistake in how a command is called exit with
// code 2 and a message that says what is missing and how the command is
// called: wrong arguments, unknown flags, unknown commands. Runtime
// failures keep code 1.
func usageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usage(c, err.Error())
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					var ec exitCode
					if errors.As(err, &ec) {
						return err
					}
					return usage(c, argsMessage(c, a, err))
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// usage is a usage error of c: exit code 2, the problem, and c's usage
// line.
func usage(c *cobra.Command, problem string) error {
	name := strings.TrimPrefix(c.CommandPath(), "docshard ")
	return exitCode{code: 2, msg: fmt.Sprintf("%s: %s (usage: %s; see docshard %s --help)", name, problem, c.UseLine(), name)}
}

// argsMessage says in the command's terms what is wrong with its
// arguments: the placeholders of its Use line name what is missing.
func argsMessage(c *cobra.Command, args []string, err error) string {
	want := placeholders(c.Use)
	switch {
	case len(args) == 0 && len(want) > 0:
		return "missing " + strings.Join(want, " ")
	case len(want) == 0:
		return fmt.Sprintf("takes no arguments, got %q", strings.Join(args, " "))
	}
	return err.Error()
}

// placeholders returns the positional placeholders of a Use line: the
// words after the command name that are neither flags, nor a flag's
// value, nor optional.
func placeholders(use string) []string {
	var out []string
	flagValue := false
	for _, w := range strings.Fields(use)[1:] {
		switch {
		case strings.HasPrefix(w, "-"):
			flagValue = true
		case flagValue || strings.HasPrefix(w, "[") || strings.HasSuffix(w, "]"):
			flagValue = false
		default:
			out = append(out, w)
		}
	}
	return out
}

// version is docshard's version: the module version it was built at, or
// the VCS revision of a build from a checkout (with "+dirty" for local
// changes), or "devel".
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return "devel " + rev
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print docshard's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(g.stdout, "docshard %s\n", version())
			return nil
		},
	}
}
