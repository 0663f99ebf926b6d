// Command des-engine is the whole of DES's Claude Code hook and its command
// line for git and people: in-process decisions, every subcommand, and the
// warm decision server. Claude Code runs the thin client des-hook
// (examples/hook), which finds des-engine beside its own executable and
// either sends it the event through the server or runs it. Install both in
// one directory, at a path that lasts and that the agent cannot write:
//
//	CGO_ENABLED=0 go build -o ~/bin/des-hook ./examples/hook
//	CGO_ENABLED=0 go build -o ~/bin/des-engine ./examples/des-engine
//	~/bin/des-hook settings --write   # install it in the project's .claude/settings*.json
//
// With no arguments it is a Claude Code command hook: it reads one hook event
// (JSON, at most 8 MiB) on stdin and writes at most one JSON object on
// stdout, always exiting 0. With a subcommand it is a CLI:
//
//	des-hook settings [--write]          install des in .claude/settings*.json, or print the block
//	des-hook policies [--json]           list the codes the loaded policies can yield
//	des-hook precommit [FILE...]         Gate 3 on step files, or on the staged ones
//	des-hook precommit --install         write the git pre-commit hook that runs it
//	des-hook stale [--resolve FILE]      list stale work, or reset it in FILE
//	des-hook audit verify                check the audit trail
//	des-hook serve [--idle DURATION]     run the warm decision server in the foreground
//	des-hook version                     print the versions of des, Go and OPA
//
// and more: des-hook help lists them all, and docs/reference.md describes
// each with its exit statuses. Run through des-hook, settings and
// precommit --install write des-hook's path (DES_CLIENT_PATH), not this one.
//
// It is one consumer of package des and stays thin: it speaks Claude Code's
// protocol, and the library decides.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/internal/integrity"
	"github.com/deterministic-exec/des/internal/program"
)

func main() {
	// A signal cancels ctx rather than killing the process, so an audit
	// append under way completes instead of being cut mid-line.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if len(os.Args) == 1 {
		hookGC(os.LookupEnv)
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// hookMemoryLimit is the heap at which a hook process collects garbage.
// Far above what a decision uses (under 40 MiB for Gate 1 on a large
// project), far below what would strain the machine: an 8 MiB event or a
// huge prompt still collects rather than grows without bound.
const hookMemoryLimit = 512 << 20

// hookGC turns the proportional collector off for a hook process, which
// lives for tens of milliseconds: collections during start-up and policy
// compilation cost more CPU than the memory they free, and no heap is left to
// reuse afterwards. The memory limit still collects if an event makes the heap
// grow large. GOGC or GOMEMLIMIT in the environment win, for measuring.
func hookGC(lookupEnv func(string) (string, bool)) {
	_, gogc := lookupEnv("GOGC")
	_, limit := lookupEnv("GOMEMLIMIT")
	if gogc || limit {
		return
	}
	debug.SetMemoryLimit(hookMemoryLimit)
	debug.SetGCPercent(-1)
}

// run is the whole program with its environment passed in, so tests run it
// in-process. No arguments is hook mode, whose status is always 0.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if len(args) == 0 {
		// Always 0: Claude Code reads exit status 2 as a block, and no
		// failure may look like one.
		claudecode.New(claudecode.WithEnv(lookupEnv), claudecode.WithLogger(hooklog.New(stderr, lookupEnv))).Run(ctx, stdin, stdout)
		return 0
	}
	return runCommand(ctx, args, stdout, stderr, lookupEnv)
}

// hookEngine is the engine des's hook builds for root: a subcommand that
// answers for the hook (escalations, stale work) sees what the hook sees.
func hookEngine(ctx context.Context, e env, root string) (*des.Engine, error) {
	return claudecode.New(claudecode.WithEnv(e.lookupEnv), claudecode.WithLogger(hooklog.New(e.stderr, e.lookupEnv))).Engine(ctx, root)
}

// projectChecker is the effect checker of the project at root, as the hook
// builds it (nil when root is not a directory): subcommands that write
// files the effect check watches announce them through it.
func projectChecker(e env, root string) *integrity.Checker {
	return integrity.ForProject(root, e.lookupEnv, integrity.Options{
		Logger:      hooklog.New(e.stderr, e.lookupEnv),
		Client:      os.Getpid(),
		OwnBinaries: program.Binaries(e.lookupEnv),
	})
}

// settleBudget bounds how long a subcommand waits for the effect check to
// take in a file it wrote.
const settleBudget = 10 * time.Second
