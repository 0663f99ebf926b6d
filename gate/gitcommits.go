package gate

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/shell"
)

// What a git invocation of a Bash command commits, as Gate 3 judges it.
const (
	commitNone     = iota // commits nothing (an abort, a dry run, a command that is not git's)
	commitIndex           // `git commit` and what its arguments add; a --continue commits the index
	commitWiden           // DES cannot tell: every changed or staged step file
	commitMerge           // the merged tree's step files that differ from HEAD
	commitPick            // each picked commit's step files, as that commit has them
	commitRevert          // each reverted commit's step files, as its parent has them
	commitRebase          // the rebased commits, picked one by one
	commitOutside         // am, pull: content DES cannot see before the command runs
	maxAliasDepth  = 10
	aliasConfigKey = `^alias\.`
)

// invocation is one git invocation that may commit, its subcommand
// resolved through the repository's aliases.
type invocation struct {
	kind int
	args []string // the subcommand's arguments (an alias's own first)
	why  string   // for commitWiden and commitOutside: what DES cannot see
}

// classify says what `git SUB ARGS...` commits. aliases are the
// repository's alias.* values by lower-case name (git's alias names are
// case-insensitive); dynamic is set when the subcommand word is an
// expansion DES cannot read, which is judged as a commit of every changed
// or staged step file, since the expansion may hold -a or pathspecs.
func classify(sub string, args []string, dynamic bool, aliases map[string]string) invocation {
	if dynamic {
		// The hidden word may hold options too (`git $(echo commit -a)`):
		// judge every changed or staged step file.
		return invocation{kind: commitWiden, args: args, why: fmt.Sprintf("the subcommand %s cannot be read", sub)}
	}
	for depth := 0; ; depth++ {
		switch sub {
		case "", "commit":
			return invocation{kind: commitIndex, args: args}
		case "merge", "cherry-pick", "revert", "rebase", "am", "pull":
			return sequencer(sub, args)
		}
		if depth == maxAliasDepth {
			return invocation{kind: commitWiden, why: fmt.Sprintf("alias %q expands more than %d times", sub, maxAliasDepth)}
		}
		value, ok := aliases[strings.ToLower(sub)]
		if !ok {
			// Not an alias of the repository: a built-in that does not
			// commit, or an external git-SUB on PATH that DES cannot read
			// into (the git pre-commit hook judges what it commits).
			return invocation{kind: commitNone}
		}
		if strings.HasPrefix(value, "!") {
			return invocation{kind: commitWiden, why: fmt.Sprintf("alias %q runs a shell command (%s)", sub, value)}
		}
		words, ok := aliasWords(value)
		if !ok || len(words) == 0 || strings.HasPrefix(words[0], "-") {
			// Quoting, or git options before the subcommand: too much
			// to follow for what it is worth.
			return invocation{kind: commitWiden, why: fmt.Sprintf("alias %q is %q", sub, value)}
		}
		sub, args = words[0], append(words[1:], args...)
	}
}

// aliasWords splits an alias value at blanks; false when it quotes or
// escapes, which git's own split honours and this one does not.
func aliasWords(value string) ([]string, bool) {
	if strings.ContainsAny(value, `"'\`) {
		return nil, false
	}
	return strings.Fields(value), true
}

// sequencer classifies merge, cherry-pick, revert, rebase, am and pull.
func sequencer(sub string, args []string) invocation {
	for _, a := range args {
		switch a {
		case "--continue":
			return invocation{kind: commitIndex} // commits the resolved index
		case "--abort", "--quit", "--skip", "--show-current-patch", "--edit-todo":
			return invocation{kind: commitNone}
		}
	}
	for _, a := range args {
		if a == "--no-commit" || a == "-n" && (sub == "cherry-pick" || sub == "revert") {
			return invocation{kind: commitNone} // the changes are staged; the later commit is judged
		}
		if sub == "merge" && (a == "--squash" || a == "--no-commit") {
			return invocation{kind: commitNone}
		}
	}
	switch sub {
	case "merge":
		return invocation{kind: commitMerge, args: args}
	case "cherry-pick":
		return invocation{kind: commitPick, args: args}
	case "revert":
		return invocation{kind: commitRevert, args: args}
	case "rebase":
		return invocation{kind: commitRebase, args: args}
	}
	return invocation{kind: commitOutside, why: "git " + sub + " commits content that is not in the repository before it runs"}
}

// revisions are the non-option arguments of merge, cherry-pick, revert or
// rebase; ok is false when one cannot be read (an expansion) or an option
// DES does not know takes a value.
func revisions(args []string, valued map[string]bool) (revs []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.ContainsAny(a, "$`"):
			return nil, false
		case a == "--":
			revs = append(revs, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, _, hasVal := strings.Cut(a[2:], "=")
			if valued[name] && !hasVal {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if valued[a[1:]] && len(a) == 2 {
				i++
			}
		default:
			revs = append(revs, a)
		}
	}
	return revs, true
}

// Options of merge, cherry-pick, revert and rebase that take a value as
// the next word.
var (
	mergeValued  = map[string]bool{"m": true, "F": true, "s": true, "X": true, "message": true, "file": true, "strategy": true, "strategy-option": true, "cleanup": true, "into-name": true}
	pickValued   = map[string]bool{"m": true, "mainline": true, "s": false, "X": true, "strategy": true, "strategy-option": true, "cleanup": true}
	rebaseValued = map[string]bool{"onto": true, "s": true, "X": true, "strategy": true, "strategy-option": true, "x": true, "exec": true, "C": true, "whitespace": true, "empty": true, "rebase-merges": false}
)

// blobRef is one version of a step file a commit would hold.
type blobRef struct{ path, oid string }

// blobSet gathers the versions whose paths keep accepts (a step file by
// its name, or maybe by its content, which collect reads).
type blobSet struct {
	keep func(path string) bool
	refs []blobRef
}

// stepBlobs appends the step files that `git diff-tree ARGS` shows added
// or changed (repository path and the new side's blob).
func stepBlobs(ctx context.Context, git *gitexec.Runner, top string, into *blobSet, args ...string) error {
	full := append([]string{"diff-tree", "-r", "-z", "--raw", "--no-abbrev", "--no-renames", "--no-commit-id", "--diff-filter=ACMRT"}, args...)
	out, err := runGit(ctx, git, top, nil, full...)
	if err != nil {
		return err
	}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta, path := strings.Fields(fields[i]), fields[i+1]
		if len(meta) != 5 || !into.keep(path) || !strings.HasPrefix(meta[1], "100") {
			continue
		}
		into.refs = append(into.refs, blobRef{path, meta[3]})
	}
	return nil
}

// mergeBlobs adds the step files a merge of revs into HEAD would commit:
// those of the merged tree (`git merge-tree --write-tree`, which touches
// neither the index nor the work tree) that differ from HEAD. A merge that
// would stop on a conflict commits nothing. Strategies, several heads or
// revisions DES cannot read widen to every step file any head changes
// against HEAD, with the head's content.
func mergeBlobs(ctx context.Context, git *gitexec.Runner, top string, args []string, into *blobSet) error {
	revs, ok := revisions(args, mergeValued)
	if !ok {
		return errWiden
	}
	if len(revs) == 0 {
		revs = []string{"@{upstream}"}
	}
	plain := len(revs) == 1
	for _, a := range args {
		if a == "-s" || a == "-X" || strings.HasPrefix(a, "--strategy") || strings.HasPrefix(a, "-X") || strings.HasPrefix(a, "-s") {
			plain = false
		}
	}
	if plain {
		out, err := runGit(ctx, git, top, nil, "merge-tree", "--write-tree", "HEAD", revs[0])
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 1 && ctx.Err() == nil:
			return nil // conflicts: the merge stops, and the commit that resolves them is judged
		case err != nil:
			return err
		}
		tree, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return stepBlobs(ctx, git, top, into, "HEAD", tree)
	}
	for _, r := range revs {
		if err := stepBlobs(ctx, git, top, into, "HEAD", r); err != nil {
			return err
		}
	}
	return nil
}

// errWiden says that DES cannot read what a git invocation commits, so
// every changed or staged step file is judged.
var errWiden = errors.New("cannot read the revisions")

// pickedCommits lists the commits revs name, oldest first, as cherry-pick
// and revert walk them (a range A..B, or single commits).
func pickedCommits(ctx context.Context, git *gitexec.Runner, top string, revs []string) ([]string, error) {
	walk := false
	for _, r := range revs {
		if strings.Contains(r, "..") || strings.HasPrefix(r, "^") {
			walk = true
		}
	}
	args := []string{"rev-list", "--reverse"}
	if !walk {
		args = append(args, "--no-walk")
	}
	out, err := runGit(ctx, git, top, nil, append(append(args, revs...), "--")...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// pickBlobs appends the step files each commit changes, with the content
// the commit has (pick) or its first parent has (revert): what each new
// commit holds when it applies cleanly. Every version is judged, so an
// unfinished step in the middle of a range is found too.
func pickBlobs(ctx context.Context, git *gitexec.Runner, top string, commits []string, revert bool, into *blobSet) error {
	for _, c := range commits {
		args := []string{"--root", c}
		if revert {
			args = []string{"-R", c}
		}
		if err := stepBlobs(ctx, git, top, into, args...); err != nil {
			return err
		}
	}
	return nil
}

// gitSubcommand is the subcommand of a git invocation the analyzer
// reports, and whether DES cannot read what it runs: the subcommand is an
// expansion, or the command name is (`$G commit`: $G may carry options or
// another repository). A directory DES cannot read (Dir holds the
// expansion) does not hide a subcommand it can.
func gitSubcommand(c shell.GitCommit) (string, bool) {
	if !c.Dynamic || c.Alias {
		return c.Subcommand, false
	}
	return c.Subcommand, !knownSubcommand(c.Subcommand) || !strings.ContainsAny(c.Dir, "$`")
}

// ErrRepositoryUnknown is wrapped when a git invocation names its
// repository with options DES does not follow (--git-dir, --work-tree,
// core.worktree): DES cannot tell what it commits.
var ErrRepositoryUnknown = errors.New("cannot tell which repository the git command commits in")

// repositoryOptions refuses the global options that move git to another
// repository or work tree than its directory's.
func repositoryOptions(c shell.GitCommit) error {
	for _, o := range c.Options {
		lo := strings.ToLower(o)
		if strings.HasPrefix(lo, "--git-dir") || strings.HasPrefix(lo, "--work-tree") || strings.HasPrefix(lo, "core.worktree") || strings.HasPrefix(lo, "core.bare") {
			return fmt.Errorf("git %s %s: %w (%s); run it without that option, from the repository's work tree", strings.Join(c.Options, " "), c.Subcommand, ErrRepositoryUnknown, o)
		}
	}
	return nil
}

// knownSubcommand reports whether classify needs no alias to read sub.
func knownSubcommand(sub string) bool {
	switch sub {
	case "", "commit", "merge", "cherry-pick", "revert", "rebase", "am", "pull":
		return true
	}
	return false
}

// sequencerBlobs appends the step-file versions the commits of a merge,
// cherry-pick, revert or rebase hold; errWiden when DES cannot read which
// commits they are.
func sequencerBlobs(ctx context.Context, git *gitexec.Runner, top string, inv invocation, into *blobSet) error {
	switch inv.kind {
	case commitMerge:
		return mergeBlobs(ctx, git, top, inv.args, into)
	case commitPick, commitRevert:
		revs, ok := revisions(inv.args, pickValued)
		if !ok || len(revs) == 0 {
			return errWiden
		}
		commits, err := pickedCommits(ctx, git, top, revs)
		if err != nil {
			return err
		}
		return pickBlobs(ctx, git, top, commits, inv.kind == commitRevert, into)
	case commitRebase:
		return rebaseBlobs(ctx, git, top, inv.args, into)
	}
	return nil
}

// rebaseBlobs appends the step files of the commits a rebase replays:
// `git rebase [--onto N] [UPSTREAM [BRANCH]]` picks UPSTREAM..BRANCH
// (UPSTREAM defaults to the branch's upstream, BRANCH to HEAD; --root
// picks every commit of BRANCH), merges left out as rebase leaves them. An
// --exec runs a command DES cannot read: widen.
func rebaseBlobs(ctx context.Context, git *gitexec.Runner, top string, args []string, into *blobSet) error {
	root := false
	for _, a := range args {
		switch {
		case a == "-x" || a == "--exec" || strings.HasPrefix(a, "--exec=") || strings.HasPrefix(a, "-x"):
			return errWiden
		case a == "--root":
			root = true
		}
	}
	revs, ok := revisions(args, rebaseValued)
	if !ok || len(revs) > 2 {
		return errWiden
	}
	upstream, branch := "@{upstream}", "HEAD"
	if root {
		if len(revs) > 0 {
			branch = revs[0]
		}
	} else {
		if len(revs) > 0 {
			upstream = revs[0]
		}
		if len(revs) > 1 {
			branch = revs[1]
		}
	}
	walk := []string{"rev-list", "--reverse", "--no-merges"}
	if root {
		walk = append(walk, branch, "--")
	} else {
		walk = append(walk, upstream+".."+branch, "--")
	}
	out, err := runGit(ctx, git, top, nil, walk...)
	if err != nil {
		return err
	}
	return pickBlobs(ctx, git, top, strings.Fields(string(out)), false, into)
}
