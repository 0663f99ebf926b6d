package main

import (
	"bytes"
	"cmp"
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
	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/internal/program"
	"github.com/deterministic-exec/des/internal/statedir"
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
	"this binary's precommit, the reference-transaction hook that judges the commits\n" +
	"every branch or tag move brings in (--ref-transaction), and the post-commit hook that\n" +
	"notes the audit trail's head on each new commit in " + auditNotesRef + " (--post-commit;\n" +
	"`des-hook audit verify` checks the notes). An existing hook that DES did\n" +
	"not write is left alone: the command exits 2 and prints the lines to add to it.\n\n" +
	"The project root is CLAUDE_PROJECT_DIR, else the git top level, else the current directory."

func runPrecommit(ctx context.Context, e env, args []string) int {
	flags := newFlagSet(e, "precommit", "[--install [--command PATH]] [--git-hook] [FILE...]", precommitDoc)
	install := flags.Bool("install", false, "write the git pre-commit hook that runs this command")
	command := flags.String("command", "", "with --install: path of the hook binary (default: this executable)")
	gitHook := flags.Bool("git-hook", false, "run as git's pre-commit hook (recorded as source git-hook): settings come from .des/config.json only")
	refTx := flags.String("ref-transaction", "", "run as git's reference-transaction hook in state `STATE`: judge the commits the ref updates on standard input bring in (recorded as source ref-update); settings come from .des/config.json only")
	postCommit := flags.Bool("post-commit", false, "run as git's post-commit hook: note the audit trail's head on the new commit ("+auditNotesRef+"); never fails")
	pinRoot := flags.String("root", "", "with --git-hook, --ref-transaction or --post-commit: the project root the installed hook judges for")
	pinState := flags.String("state-dir", "", "with --git-hook, --ref-transaction or --post-commit: DES's per-user state directory the installed hook uses")
	if code, done := parseFlags(flags, args, -1); done {
		return code
	}
	if *refTx != "" {
		if flags.NArg() > 0 || *gitHook || *install || *command != "" {
			fmt.Fprintln(e.stderr, "des-hook precommit: --ref-transaction takes no files and no flag but --root and --state-dir")
			flags.Usage()
			return exitUsage
		}
		// Like the pre-commit hook: git runs it with the environment of
		// whoever runs git, so it decides with what it was installed with.
		e.lookupEnv = gitHookEnv(e.lookupEnv, *pinRoot, *pinState)
		return runRefTransaction(ctx, e, *refTx, os.Stdin)
	}
	if *postCommit {
		if flags.NArg() > 0 || *gitHook || *install || *command != "" {
			fmt.Fprintln(e.stderr, "des-hook precommit: --post-commit takes no files and no flag but --root and --state-dir")
			flags.Usage()
			return exitUsage
		}
		e.lookupEnv = gitHookEnv(e.lookupEnv, *pinRoot, *pinState)
		return runPostCommit(ctx, e)
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
	if (*pinRoot != "" || *pinState != "") && !*gitHook {
		fmt.Fprintln(e.stderr, "des-hook precommit: --root and --state-dir go with --git-hook")
		flags.Usage()
		return exitUsage
	}
	if *gitHook {
		// git runs the hook with the committer's environment, which an
		// agent chooses (DES_GUARDED_STEP_FILES=none git commit): the hook
		// decides with what it was installed with and the project's config.
		e.lookupEnv = gitHookEnv(e.lookupEnv, *pinRoot, *pinState)
	}

	root := commandRoot(ctx, e.lookupEnv)
	eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(e.lookupEnv),
		des.WithLogger(hooklog.New(e.stderr, e.lookupEnv)), des.WithLazyPolicies())
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
		staged, err := eng.StepFilesGate().Staged(ctx, ".")
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
	if name, _, ok := insideClaudeCode(e.lookupEnv); ok {
		// The hook is what judges the agent's commits: the agent does not
		// choose the binary it runs, nor the root it pins.
		fmt.Fprintf(e.stderr, "des-hook precommit: --install is refused inside Claude Code (%s is set): the pre-commit hook judges the agent's commits, so a person installs it, from a terminal\n", name)
		return exitUsage
	}
	if command == "" {
		exe, err := program.CommandPath(e.lookupEnv)
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
	pin := hookPin{Root: root, StateDir: statedir.Base(e.lookupEnv)}
	script, line := hookScript("DES Gate 3: refuses a commit whose staged step files are unfinished.", command, pin, "precommit", "--git-hook")
	// Beside pre-commit, the hook that judges every branch or tag move.
	refCode := installRefTransaction(ctx, e, hooks, command, pin, root)
	// And the hook that notes the audit trail's head on each new commit.
	postCode := installPostCommit(ctx, e, hooks, command, pin, root)
	if code := writeGitHook(ctx, e, hooks, "pre-commit", script, line, "where a failure should stop the commit", root, command); code != exitOK {
		return code
	}
	return cmp.Or(refCode, postCode)
}

// writeGitHook writes one of des's git hooks (pre-commit,
// reference-transaction) into the hooks directory: a hook des did not write
// is left alone, and the line to add to it is printed. The write is
// announced as des's own, so that the check after an agent's command that
// installs the hook does not take it for a change to undo, only when the
// hook runs des's own binary: DES's hook entries in Claude Code's settings
// are told by the command they run, and an install with --command
// /bin/true is a change the check undoes.
func writeGitHook(ctx context.Context, e env, hooks, name, script, line, where, root, command string) int {
	path := filepath.Join(hooks, name)
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	case !writtenByDES(old):
		fmt.Fprintf(e.stderr, "des-hook precommit: %s already exists and was not written by DES; it is left as it is.\n"+
			"Add this line to it, %s:\n\n%s || exit 1\n", path, where, line)
		return exitUsage
	}
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit: %v\n", err)
		return exitUsage
	}
	chk := projectChecker(e, root)
	if exe, _ := program.CommandPath(e.lookupEnv); chk != nil && !program.Runs(shellQuote(command), exe, root, e.lookupEnv) {
		chk = nil
	}
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
		sctx, cancel := context.WithTimeout(ctx, settleBudget)
		_ = chk.Settle(sctx, path)
		cancel()
	}
	fmt.Fprintf(e.stdout, "installed %s: it runs %s for the project %s\n", path, line, root)
	return exitOK
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

// hookPin is what a git hook des installs fixes for the run it starts: the
// project root and DES's per-user state directory. They are flags in the
// script, which DES protects, not variables of the environment git hands
// the hook, which whoever runs git chooses.
type hookPin struct {
	Root     string
	StateDir string
}

// hookScript is the text of a git hook des installs (pre-commit, and any
// other des installs beside it), and the command line it runs: this
// binary's args with the pinned root and state directory, then git's own
// arguments. The environment does not move what the line pins; the
// subcommand reads the rest of its settings from .des/config.json only
// (gitHookEnv).
func hookScript(purpose, command string, pin hookPin, args ...string) (script, line string) {
	words := []string{shellQuote(command)}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	words = append(words, "--root", shellQuote(pin.Root))
	if pin.StateDir != "" {
		words = append(words, "--state-dir", shellQuote(pin.StateDir))
	}
	line = strings.Join(words, " ") + ` "$@"`
	script = "#!/bin/sh\n" + hookMarker + "\n" +
		"# " + purpose + " Remove this file to uninstall.\n" +
		"# The project root and DES's state directory are fixed here; DES_* variables of the commit's\n" +
		"# environment are ignored (DES_LOG_LEVEL aside): settings come from the project's .des/config.json.\n" +
		"exec " + line + "\n"
	return script, line
}

// gitHookEnv is the environment a run as a git hook reads: the pinned root
// and state directory, and of the DES_* variables only those that loosen no
// guard: DES_LOG_LEVEL (what is logged) and the tokens (*_TOKEN) a setting
// of .des/config.json names for a server, which can only make a request
// succeed that the configured server would refuse. Every other DES_*
// variable (guarded files, state and audit directories, policy
// directories, an OPA server or bundles, ...) is unset, so the settings
// are those of .des/config.json. Other variables (HOME, PATH, git's) are
// passed on. An empty pin leaves the variable as the environment has it,
// for hooks installed by an earlier des.
func gitHookEnv(lookupEnv func(string) (string, bool), root, stateDir string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch {
		case name == "CLAUDE_PROJECT_DIR" && root != "":
			return root, true
		case name == statedir.EnvVar && stateDir != "":
			return stateDir, true
		case name == statedir.EnvVar:
			return "", false
		case name == "DES_LOG_LEVEL", strings.HasPrefix(name, "DES_") && strings.HasSuffix(name, "_TOKEN"):
			return lookupEnv(name)
		case strings.HasPrefix(name, "DES_"):
			return "", false
		}
		return lookupEnv(name)
	}
}
