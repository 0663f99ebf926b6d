// Command hook is the Claude Code hook of DES and its command line for git
// and people.
//
// With no arguments it is a Claude Code command hook: it reads one hook event
// (JSON, at most 8 MiB) on stdin and writes at most one JSON object on
// stdout, always exiting 0. With a subcommand it is a CLI:
//
//	hook settings [--command PATH]   print the .claude/settings.json hooks block
//	hook policies [--json]           list the codes the loaded policies can yield
//	hook precommit [FILE...]         Gate 3 on step files, or on the staged ones
//	hook precommit --install         write the git pre-commit hook that runs it
//	hook version                     print the versions of des, Go and OPA
//
// It is one consumer of package des and stays thin: it speaks Claude Code's
// protocol, and the library decides.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A signal cancels ctx rather than killing the process, so an audit
	// append under way completes instead of being cut mid-line.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// run is the whole program with its environment passed in, so tests run it
// in-process. No arguments is hook mode, whose status is always 0.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if len(args) == 0 {
		return runHook(ctx, stdin, stdout, stderr, lookupEnv, defaultRoutes())
	}
	return runCommand(ctx, args, stdout, stderr, lookupEnv)
}
