// Command docshard is the command line of docshard: run the demo, locate
// keys, compare resolvers, load and query documents.
// Run "docshard help" for the list of commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code. Errors are
// printed to stderr as one line; a panic is turned into an error line too,
// never a stack trace.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "docshard: internal error: %v\n", p)
			code = 2
		}
	}()
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	// Ctrl-C (or SIGTERM) cancels the command's context, so a command
	// stops cleanly and says what it did; a second one ends the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := root.ExecuteContext(ctx); err != nil {
		var ec exitCode
		if asExit(err, &ec) {
			if ec.msg != "" {
				fmt.Fprintf(stderr, "docshard: %s\n", ec.msg)
			}
			return ec.code
		}
		if strings.HasPrefix(err.Error(), "unknown command") {
			fmt.Fprintf(stderr, "docshard: %s (run docshard help for the commands)\n", oneLine(err.Error()))
			return 2
		}
		// The library's own errors name their package, "docshard: ...":
		// one prefix is enough.
		fmt.Fprintf(stderr, "docshard: %s\n", strings.TrimPrefix(oneLine(err.Error()), "docshard: "))
		return 1
	}
	return 0
}
