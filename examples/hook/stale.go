package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des"
)

const staleDoc = "Lists the phases left IN_PROGRESS for longer than the stale threshold\n" +
	"(DES_STALE_THRESHOLD_MINUTES) in every steps directory of the project.\n\n" +
	"With --resolve FILE, resets those phases of FILE (or, when its task is FAILED, every\n" +
	"unfinished phase) to NOT_EXECUTED, makes the task PARTIAL so that it can start again,\n" +
	"and records the resolution in the audit trail. FILE is relative to the project root\n" +
	"(CLAUDE_PROJECT_DIR, else the git top level, else the current directory)."

func runStale(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "stale", "[--resolve FILE]", staleDoc)
	file := fs.String("resolve", "", "reset the stale or unfinished phases of this step file")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	// Built as the hook builds it, so that a resolution is announced to the
	// effect check (an agent's command may be running meanwhile).
	root := commandRoot(ctx, e.lookupEnv)
	eng, err := newHookEnv(root, "", e.lookupEnv, newLogger(e.stderr, e.lookupEnv), e.stderr).engine(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook stale: %v\n", err)
		return exitUsage
	}
	if *file != "" {
		res, err := eng.ResolveStale(ctx, *file)
		switch {
		case errors.Is(err, des.ErrNothingToResolve):
			fmt.Fprintf(e.stdout, "%s: nothing to resolve (%v)\n", res.StepFile, err)
			return exitOK
		case err != nil:
			fmt.Fprintf(e.stderr, "des-hook stale: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(e.stdout, "%s: task %s -> %s; phases reset to NOT_EXECUTED: %v\n", res.StepFile, orDash(res.From), res.To, res.Phases)
		return exitOK
	}
	work, err := eng.StaleWork(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook stale: %v\n", err)
		return exitUsage
	}
	if len(work) == 0 {
		fmt.Fprintf(e.stdout, "no stale work (threshold %d minutes)\n", eng.Config().StaleThresholdMinutes)
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tPHASE\tIN PROGRESS FOR\tSINCE")
	for _, w := range work {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.File, w.Phase, w.Age.Round(time.Minute), w.StartedAt.UTC().Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(e.stderr, "des-hook stale: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(e.stdout, "\nResolve each file with: hook stale --resolve FILE")
	return exitOK
}

func orDash(s string) string {
	if s == "" {
		return "(no status)"
	}
	return s
}
