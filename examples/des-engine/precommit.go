package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/policy"
)

// Exit statuses of `des-hook precommit` (docs/reference.md, "Exit statuses"): 0 pass, 1 fail, 2 error.
const exitFail = 1

const precommitDoc = "Runs Gate 3 on step files before they are committed: every canonical phase recorded and\n" +
	"finished honestly, in order, and no unresolved Gate 2 failure in the audit trail.\n\n" +
	"With FILEs (relative to the current directory, else to the project root, or absolute; inside\n" +
	"the project root), judges them as they are on disk. With none, judges the step files staged\n" +
	"in the git repository of the current directory (those the write guard guards: setting\n" +
	"guarded_step_files, default **/steps/*.json), as staged: the content the commit will hold,\n" +
	"not the work tree. Staged step files outside the project root are left out, with a note.\n\n" +
	"Prints FILE: [CODE] message for each violation, the recovery steps and a summary. Exit\n" +
	"status: 0 every file passes, 1 a file fails, 2 DES could not judge (a bad flag or setting,\n" +
	"a git failure, an unreadable audit trail: [DES-INTERNAL]). Each file's verdict is audited.\n\n" +
	"With --install, writes the git pre-commit hook (core.hooksPath is respected) that runs\n" +
	"this binary's precommit, and the reference-transaction hook that judges the commits\n" +
	"every branch or tag move brings in (--ref-transaction). An existing hook that DES did\n" +
	"not write is left alone: the command exits 2 and prints the lines to add to it.\n\n" +
	"The project root is CLAUDE_PROJECT_DIR, else the git top level, else the current directory."

func runPrecommit(ctx context.Context, e env, args []string) int {
	flags := newFlagSet(e, "precommit", "[--install [--command PATH]] [--git-hook] [FILE...]", precommitDoc)
	install := flags.Bool("install", false, "write the git pre-commit hook that runs this command")
	command := flags.String("command", "", "with --install: path of the hook binary (default: this executable)")
	gitHook := flags.Bool("git-hook", false, "run as git's pre-commit hook (recorded as source git-hook)")
	refTx := flags.String("ref-transaction", "", "run as git's reference-transaction hook in state `STATE`: judge the commits the ref updates on standard input bring in (recorded as source ref-update)")
	if code, done := parseFlags(flags, args, -1); done {
		return code
	}
	if *refTx != "" {
		if flags.NArg() > 0 || *gitHook || *install || *command != "" {
			fmt.Fprintln(e.stderr, "des-hook precommit: --ref-transaction takes no files and no other flag")
			flags.Usage()
			return exitUsage
		}
		return runRefTransaction(ctx, e, *refTx, os.Stdin)
	}
	if *install {
		if flags.NArg() > 0 || *gitHook {
			fmt.Fprintln(e.stderr, "des-hook precommit: --install takes no files and no --git-hook")
			flags.Usage()
			return exitUsage
		}
		return installPreCommit(ctx, e, *command)
	}
	if *command != "" {
		fmt.Fprintln(e.stderr, "des-hook precommit: --command goes with --install")
		flags.Usage()
		return exitUsage
	}

	root := commandRoot(ctx, e.lookupEnv)
	eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(e.lookupEnv),
		des.WithLogger(newLogger(e.stderr, e.lookupEnv)), des.WithLazyPolicies())
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	}
	commit := gate.Commit{Source: gate.SourceCLI}
	if *gitHook {
		commit.Source = gate.SourceGitHook
	}
	if flags.NArg() > 0 {
		for _, f := range flags.Args() {
			path, err := argPath(root, f)
			if err != nil {
				fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
				return exitUsage
			}
			commit.Files = append(commit.Files, gate.CommitFile{Path: path})
		}
	} else {
		staged, err := eng.StepFiles().Staged(ctx, ".")
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook precommit: cannot list the staged step files: %v\n", err)
			return exitUsage
		}
		var outside []string
		commit.Files, outside = eng.PreCommitGate().InProject(staged)
		for _, p := range outside {
			fmt.Fprintf(e.stderr, "des-hook precommit: %s is outside the project root %s; not judged\n", p, root)
		}
		if len(commit.Files) == 0 {
			fmt.Fprintln(e.stdout, "Gate 3: no staged step files")
			return exitOK
		}
	}

	res, err := eng.CheckCommit(ctx, commit)
	if errors.Is(err, gate.ErrOutsideRoot) || errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err) // a file named on the command line
		return exitUsage
	}
	if err != nil && !errors.Is(err, gate.ErrNotRecorded) {
		// DES could not judge: the commit is refused, with the cause.
		fmt.Fprintf(e.stderr, "des-hook precommit: %s\n", gate.Internal(policy.PreCommit, err,
			"Fix the cause named above (an unreadable file or audit trail, a DES setting, a team policy), then commit again.",
			"`des-hook audit verify` reports where the audit trail is broken.").Reason())
		return exitUsage
	}
	printCommitResult(e, res)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit: the verdicts could not be recorded in the audit trail: %v\n", err)
		if !res.Denied() {
			return exitUsage // an allow that is not recorded is not given
		}
	}
	if res.Denied() {
		return exitFail
	}
	return exitOK
}

// printablePath keeps one violation on one line: a path with a control
// character (a newline, say) is printed Go-quoted.
func printablePath(p string) string {
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

// printCommitResult prints FILE: [CODE] message per violation, the recovery
// steps, and a summary line.
func printCommitResult(e env, res gate.CommitResult) {
	var steps []string
	count := 0
	for _, f := range res.Files {
		for _, v := range append(slices.Clone(f.Decision.Deny), f.Decision.Warn...) {
			// Messages name their file; the line already starts with it.
			msg := strings.TrimPrefix(v.Message, f.StepFile+": ")
			fmt.Fprintf(e.stdout, "%s: [%s] %s\n", printablePath(f.StepFile), v.Code, indent(msg))
			for _, s := range v.Recovery {
				if s = strings.TrimSpace(s); s != "" && !slices.Contains(steps, s) {
					steps = append(steps, s)
				}
			}
		}
		count += len(f.Decision.Deny)
	}
	if len(steps) > 0 {
		fmt.Fprintln(e.stdout, "Recovery:")
		for _, s := range steps {
			fmt.Fprintf(e.stdout, "- %s\n", indent(s))
		}
	}
	failed := len(res.Failed())
	switch {
	case failed == 0:
		fmt.Fprintf(e.stdout, "Gate 3: %s passed\n", plural(len(res.Files), "step file"))
	default:
		fmt.Fprintf(e.stdout, "Gate 3: %d of %s failed (%s); the commit is refused\n", failed, plural(len(res.Files), "step file"), plural(count, "violation"))
	}
}

// indent indents the continuation lines of a message, so that every line
// that starts a violation starts with its file.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// hookMarker identifies a pre-commit hook DES wrote, which --install may
// rewrite; any other hook is left alone. oldHookMarkers are the lines
// earlier versions wrote, so that their hooks are still rewritten.
const hookMarker = "# Installed by `des-hook precommit --install` (des)."

var oldHookMarkers = []string{"# Installed by `hook precommit --install` (des)."}

// writtenByDES reports whether a pre-commit hook carries a marker DES wrote.
func writtenByDES(script []byte) bool {
	if bytes.Contains(script, []byte(hookMarker)) {
		return true
	}
	for _, m := range oldHookMarkers {
		if bytes.Contains(script, []byte(m)) {
			return true
		}
	}
	return false
}

func installPreCommit(ctx context.Context, e env, command string) int {
	if command == "" {
		exe, err := commandPath(e.lookupEnv)
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook precommit: cannot find this executable (%v); pass --command\n", err)
			return exitUsage
		}
		command = exe
		warnIfTransient(e.stderr, e.lookupEnv, "precommit --install", exe)
	}
	hooks, err := gitHooksDir(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	}
	// The project root is fixed at install time: a commit from a terminal
	// has no CLAUDE_PROJECT_DIR, and in a monorepo the git top level is not
	// the project whose audit trail holds the Gate 2 verdicts.
	root, err := filepath.Abs(installRoot(ctx, e.lookupEnv))
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	}
	setRoot := "if [ -z \"$CLAUDE_PROJECT_DIR\" ]; then CLAUDE_PROJECT_DIR=" + shellQuote(root) + "; fi\n" +
		"export CLAUDE_PROJECT_DIR\n"
	line := shellQuote(command) + " precommit --git-hook"
	// Beside pre-commit, the hook that judges every branch or tag move.
	refCode := installRefTransaction(ctx, e, hooks, command, setRoot, root)
	script := "#!/bin/sh\n" + hookMarker + "\n" +
		"# DES Gate 3: refuses a commit whose staged step files are unfinished. Remove this file to uninstall.\n" +
		setRoot + "exec " + line + "\n"
	path := filepath.Join(hooks, "pre-commit")
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	case !writtenByDES(old):
		fmt.Fprintf(e.stderr, "des-hook precommit: %s already exists and was not written by DES; it is left as it is.\n"+
			"Add these lines to it, where a failure should stop the commit:\n\n%s%s || exit 1\n", path, setRoot, line)
		return exitUsage
	}
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	}
	// DES's own write: announced, so that the check after an agent's
	// command that installs the hook does not take it for a change to undo.
	chk := newHookEnv(root, "", e.lookupEnv, newLogger(e.stderr, e.lookupEnv), e.stderr).checker()
	if chk != nil {
		_ = chk.Expect(path, []byte(script))
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	}
	if err := os.Chmod(path, 0o755); err != nil { // WriteFile keeps the mode of an existing file
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	}
	if chk != nil {
		sctx, cancel := context.WithTimeout(ctx, integrityBudget)
		_ = chk.Settle(sctx, path)
		cancel()
	}
	fmt.Fprintf(e.stdout, "installed %s: it runs %s for the project %s\n", path, line, root)
	return refCode
}

// installRoot is the project the installed hook judges for: the
// subcommands' root (CLAUDE_PROJECT_DIR, else the git top level), except
// that without CLAUDE_PROJECT_DIR the nearest directory from here up to the
// top level that holds .des wins, so that a project inside a larger
// repository keeps its own audit trail.
func installRoot(ctx context.Context, lookupEnv func(string) (string, bool)) string {
	root := commandRoot(ctx, lookupEnv)
	if v, ok := lookupEnv("CLAUDE_PROJECT_DIR"); ok && v != "" {
		return root
	}
	wd, err := os.Getwd()
	if err != nil {
		return root
	}
	top, _ := filepath.Abs(root)
	for d := wd; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, ".des")); err == nil && fi.IsDir() {
			return d
		}
		if d == top || filepath.Dir(d) == d {
			return root
		}
	}
}

// gitHooksDir is where git looks for hooks in the repository of the current
// directory: .git/hooks, or core.hooksPath, resolved by git itself.
func gitHooksDir(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := new(gitexec.Runner).Run(ctx, ".", nil, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", fmt.Errorf("cannot find the git hooks directory (is this a git repository?): %w", err)
	}
	dir := filepath.FromSlash(strings.TrimSpace(string(out)))
	if !filepath.IsAbs(dir) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(wd, dir)
	}
	return dir, nil
}
