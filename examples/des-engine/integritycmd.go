package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/watchset"

	"github.com/deterministic-exec/des/internal/integrity"
)

// Exit status of `des-hook integrity check` when it found and restored changes.
const exitChanged = 1

// runIntegrity is `des-hook integrity accept|check`: a person's side of the
// effect check.
func runIntegrity(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "integrity", "accept|check|kept|restore ID",
		"accept  takes DES's files as they are now as the last good state: run it after changing\n"+
			"        them by hand while an agent's command was running (a change made between tool\n"+
			"        calls is taken by itself). It refuses while tool calls are running.\n"+
			"check   compares DES's files with the last good state and restores what changed, as\n"+
			"        DES does after each Bash, NotebookEdit or MCP call; exit 1 when it restored\n"+
			"        something, 0 when nothing changed, 2 when it could not run.\n"+
			"kept    lists the contents DES kept when it undid a change, or when git replaced a\n"+
			"        guarded document no commit holds (the last "+strconv.Itoa(integrity.KeptMax)+", oldest first).\n"+
			"restore ID  writes the kept content ID back at its path and takes it as the last good\n"+
			"        state. It refuses while tool calls are running.\n"+
			"The project root is CLAUDE_PROJECT_DIR, else the git top level, else the current directory.")
	if code, done := parseFlags(fs, args, 2); done {
		return code
	}
	verb := fs.Arg(0)
	switch {
	case fs.NArg() == 1 && (verb == "accept" || verb == "check" || verb == "kept"):
	case fs.NArg() == 2 && verb == "restore":
	default:
		fmt.Fprintln(e.stderr, "des-hook integrity: name accept, check, kept or restore ID")
		fs.Usage()
		return exitUsage
	}
	root := commandRoot(ctx, e.lookupEnv)
	c := projectChecker(e, root)
	if c == nil {
		fmt.Fprintf(e.stderr, "des-hook integrity: %s is not a directory\n", root)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, settleBudget)
	defer cancel()
	switch verb {
	case "kept":
		list, err := c.KeptList()
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook integrity kept: %v\n", err)
			return exitUsage
		}
		if len(list) == 0 {
			fmt.Fprintln(e.stdout, "DES has kept no content for this project.")
			return exitOK
		}
		for _, k := range list {
			why := "undone by DES"
			if k.Why == integrity.KeptByGit {
				why = "replaced by git"
			}
			fmt.Fprintf(e.stdout, "%s  %s  %s  %d bytes  %s", k.ID, k.Time.Local().Format(time.DateTime), k.Path, k.Size, why)
			if k.ToolUseID != "" {
				fmt.Fprintf(e.stdout, " (%s)", k.ToolUseID)
			}
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintf(e.stdout, "Kept in %s; `des-hook integrity restore ID` puts one back.\n", c.KeptDir())
		return exitOK
	case "restore":
		k, err := c.PutBack(ctx, fs.Arg(1))
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook integrity restore: %v\n", err)
			if errors.Is(err, integrity.ErrCallsRunning) {
				fmt.Fprintln(e.stderr, "Run it again once the agent's commands have ended.")
			}
			return exitUsage
		}
		// The document is the person's now: des's memory of the one it
		// replaced (a workflow state's high-water marks) no longer applies.
		if err := gate.ForgetStateMemory(ctx, statedir.For(root, e.lookupEnv), k.Path); err != nil {
			fmt.Fprintf(e.stderr, "des-hook integrity restore: %v\n", err)
		}
		fmt.Fprintf(e.stdout, "DES put the kept content %s back at %s and took it as the last good state.\n", k.ID, k.Path)
		return exitOK
	case "accept":
		if refuseAgentCall(e, "des-hook integrity accept", root, time.Now()) {
			return exitUsage
		}
		if err := c.Accept(ctx, watchedSet(ctx, e, root)); err != nil {
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

// watchedSet is what the effect check watches in the project, as the hook
// reads it; nil when the settings do not load (the checker then keeps the
// set its baseline recorded).
func watchedSet(ctx context.Context, e env, root string) *integrity.Watch {
	eng, err := hookEngine(ctx, e, root)
	if err != nil {
		return nil
	}
	return watchset.For(root, eng.Config())
}
