package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des"
)

const staleDoc = "Lists the phases left IN_PROGRESS for longer than the stale threshold\n" +
	"(DES_STALE_THRESHOLD_MINUTES) in every steps directory of the project.\n\n" +
	"With --resolve FILE, resets those phases of FILE (or, when its task is FAILED, every\n" +
	"unfinished phase) to NOT_EXECUTED, makes the task PARTIAL so that it can start again,\n" +
	"and records the resolution in the audit trail. FILE is relative to the current directory\n" +
	"(or absolute) and inside the project root (CLAUDE_PROJECT_DIR, else the git top level, else\n" +
	"the current directory); a relative FILE that is not here is taken from the project root,\n" +
	"as des prints paths. --resolve is refused inside an agent's tool call (CLAUDECODE set, or a\n" +
	"tool call of the project running): an agent's resolution does not count."

func runStale(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "stale", "[--resolve FILE]", staleDoc)
	file := fs.String("resolve", "", "reset the stale or unfinished phases of this step file")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	// Built as the hook builds it, so that a resolution is announced to the
	// effect check (an agent's command may be running meanwhile).
	root := commandRoot(ctx, e.lookupEnv)
	eng, err := hookEngine(ctx, e, root)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook stale: %v\n", err)
		return exitUsage
	}
	if *file != "" {
		// A resolution settles a Gate 2 failure for Gate 3: the agent
		// whose step failed must not make it.
		if refuseAgentCall(e, "des-hook stale --resolve", root, time.Now()) {
			return exitUsage
		}
		path, err := argPath(root, *file)
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook stale: %v\n", err)
			return exitUsage
		}
		res, err := eng.ResolveStale(ctx, path)
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
	fmt.Fprintln(e.stdout, "\nResolve each file with: des-hook stale --resolve FILE")
	return exitOK
}

// argPath is a FILE argument of a subcommand as every CLI reads it:
// relative to the current directory, or absolute; it must be inside the
// project root. The paths des prints in its messages are relative to the
// project root, so a relative FILE that names nothing from here but names
// a file from the root is that file: the commands des suggests work from
// any directory. A root or current directory reached through a symbolic
// link (/tmp on macOS) is compared by its real path, and the result is
// under root as given, so that the library's root-relative names hold.
func argPath(root, file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if !filepath.IsAbs(file) {
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
			if fromRoot := filepath.Join(root, file); fromRoot != abs {
				if _, err := os.Lstat(fromRoot); err == nil {
					abs = fromRoot
				}
			}
		}
	}
	if rel, ok := under(root, abs); ok {
		return filepath.Join(root, rel), nil
	}
	realRoot, err1 := filepath.EvalSymlinks(root)
	realDir, err2 := filepath.EvalSymlinks(filepath.Dir(abs))
	if err1 == nil && err2 == nil {
		if rel, ok := under(realRoot, filepath.Join(realDir, filepath.Base(abs))); ok {
			return filepath.Join(root, rel), nil
		}
	}
	return "", fmt.Errorf("%s (%s) is outside the project root %s: name a file inside it, or set CLAUDE_PROJECT_DIR to the project that holds it", file, abs, root)
}

// under is path relative to root, and whether it is inside root.
func under(root, path string) (string, bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

func orDash(s string) string {
	if s == "" {
		return "(no status)"
	}
	return s
}
