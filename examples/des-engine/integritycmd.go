package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/deterministic-exec/des/internal/integrity"
)

// Exit status of `des-hook integrity check` when it found and restored changes.
const exitChanged = 1

// runIntegrity is `des-hook integrity accept|check`: a person's side of the
// effect check.
func runIntegrity(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "integrity", "accept|check",
		"accept  takes DES's files as they are now as the last good state: run it after changing\n"+
			"        them by hand while an agent's command was running (a change made between tool\n"+
			"        calls is taken by itself). It refuses while tool calls are running.\n"+
			"check   compares DES's files with the last good state and restores what changed, as\n"+
			"        DES does after each Bash, NotebookEdit or MCP call; exit 1 when it restored\n"+
			"        something, 0 when nothing changed, 2 when it could not run.\n"+
			"The project root is CLAUDE_PROJECT_DIR, else the git top level, else the current directory.")
	if code, done := parseFlags(fs, args, 1); done {
		return code
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "accept" && fs.Arg(0) != "check") {
		fmt.Fprintln(e.stderr, "des-hook integrity: name accept or check")
		fs.Usage()
		return exitUsage
	}
	root := commandRoot(ctx, e.lookupEnv)
	h := newHookEnv(root, "", e.lookupEnv, newLogger(e.stderr, e.lookupEnv), e.stderr)
	c := h.checker()
	if c == nil {
		fmt.Fprintf(e.stderr, "des-hook integrity: %s is not a directory\n", root)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, integrityBudget)
	defer cancel()
	switch fs.Arg(0) {
	case "accept":
		if refuseAgentCall(e, "des-hook integrity accept", root, time.Now()) {
			return exitUsage
		}
		if err := c.Accept(ctx, h.watched(ctx)); err != nil {
			fmt.Fprintf(e.stderr, "des-hook integrity accept: %v\n", err)
			if errors.Is(err, integrity.ErrCallsRunning) {
				fmt.Fprintln(e.stderr, "Run it again once the agent's commands have ended.")
			}
			return exitUsage
		}
		fmt.Fprintf(e.stdout, "DES took the files of %s as they are now as the last good state (kept in %s).\n", root, c.Dir())
		return exitOK
	default:
		rep, err := c.Check(ctx)
		if errors.Is(err, integrity.ErrNoBaseline) {
			fmt.Fprintln(e.stdout, "DES has no record of this project's files yet; run `des-hook integrity accept` to take them as they are.")
			return exitOK
		}
		for _, ch := range rep.Changes {
			state := "restored"
			if !ch.Restored {
				state = "NOT restored: " + ch.Error
			}
			fmt.Fprintf(e.stdout, "%s: %s (%s)\n", ch.Path, ch.What, state)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook integrity check: %v\n", err)
			return exitUsage
		}
		if len(rep.Changes) > 0 {
			return exitChanged
		}
		fmt.Fprintln(e.stdout, "DES's files are as last recorded.")
		return exitOK
	}
}
