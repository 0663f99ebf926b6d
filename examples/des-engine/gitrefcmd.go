package main

// Gate 3 at the ref move: git's reference-transaction hook, and the check
// after an agent's Bash call of the branches and tags it moved.
//
// A commit lands when a branch or tag points at it, however it was made
// (git commit -n, commit-tree and update-ref, stash create, fast-import, a
// fetch from a nested clone, a worktree's commit). So Gate 3 is asked of
// the commits a ref move introduces (gate.StepFiles.RefMoves), at the move:
// git runs reference-transaction for every ref update, and --no-verify does
// not skip it. Where git's hooks did not run (hooks switched off by a
// config des did not read), the check after the Bash call moves the ref
// back.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/policy"
)

// refHookName is the git hook that judges ref moves.
const refHookName = "reference-transaction"

// refTransactionScript is the reference-transaction hook --install writes.
// Only "prepared" can abort the transaction; the other states return at
// once without starting des (git ignores the unread input).
func refTransactionScript(command string, pin hookPin) string {
	return "#!/bin/sh\n" + hookMarker + "\n" +
		"# DES Gate 3: refuses a branch or tag move that brings in unfinished step files. Remove this file to uninstall.\n" +
		"# The project root and DES's state directory are fixed here; DES_* variables of git's environment are ignored.\n" +
		"[ \"$1\" = prepared ] || exit 0\n" +
		"exec " + refTransactionLine(command, pin) + "\n"
}

// refTransactionLine runs the judgment on the hook's input and state, with
// the pinned root and state directory.
func refTransactionLine(command string, pin hookPin) string {
	line := shellQuote(command) + " precommit --root " + shellQuote(pin.Root)
	if pin.StateDir != "" {
		line += " --state-dir " + shellQuote(pin.StateDir)
	}
	return line + ` --ref-transaction "$1"`
}

// installRefTransaction writes the reference-transaction hook beside
// pre-commit, under the same rule: a hook des did not write is left alone,
// and the lines to add are printed.
func installRefTransaction(ctx context.Context, e env, hooks, command string, pin hookPin, root string) int {
	return writeGitHook(ctx, e, hooks, refHookName, refTransactionScript(command, pin), refTransactionLine(command, pin),
		"where a failure should stop the ref update (git gives the hook its state as $1 and the updates on standard input, which this line must receive)",
		root, command)
}

// maxRefInput bounds the reference-transaction input des reads.
const maxRefInput = 16 << 20

// runRefTransaction is git's reference-transaction hook: in state
// "prepared" it judges the commits the updates bring onto branches and
// tags, and exits 1 (git aborts the transaction, no ref moves) when Gate 3
// refuses them or des cannot judge them.
func runRefTransaction(ctx context.Context, e env, state string, stdin io.Reader) int {
	if state != "prepared" {
		return exitOK
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxRefInput+1))
	if err == nil && len(raw) > maxRefInput {
		err = fmt.Errorf("over %d MiB of ref updates", maxRefInput>>20)
	}
	var updates []gate.RefUpdate
	if err == nil {
		updates, err = gate.ParseRefUpdates(raw)
	}
	if err != nil {
		return refRefused(e, fmt.Errorf("cannot read the ref updates: %w", err), "Retry the git command; if this persists, report it.")
	}
	if why := auditNotesDropped(ctx, updates); why != "" {
		fmt.Fprintf(e.stderr, "des-hook precommit: %s; git will not move the ref.\n"+
			"Notes are added or removed with `git notes --ref=des-audit` (the ref's history keeps them); to take the remote's notes, `git notes --ref=des-audit merge` them. `des-hook audit verify` checks the trail against every head noted there.\n", why)
		return exitFail
	}
	if !slices.ContainsFunc(updates, judgedUpdate) {
		return exitOK // no branch or tag moves to a value: nothing to read
	}
	root := commandRoot(ctx, e.lookupEnv)
	eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(e.lookupEnv),
		des.WithLogger(hooklog.New(e.stderr, e.lookupEnv)), des.WithLazyPolicies())
	if err != nil {
		return refRefused(e, err, "Fix the DES setting named above, then run the git command again.")
	}
	dir, err := refHookDir(ctx)
	if err != nil {
		return refRefused(e, err, "Run the git command from the repository's work tree.")
	}
	// A linked worktree (git worktree add) shares the project's refs and
	// objects: its commits are read against the project's work tree, where
	// the step-file globs are rooted.
	if repos := gitexec.WorkTrees(ctx, root, dir); len(repos) == 1 {
		for _, top := range repos {
			dir = top
		}
	}
	moves, err := eng.StepFilesGate().RefMoves(ctx, dir, updates, nil)
	if err != nil {
		return refRefused(e, err, gate.RefMoveRecovery(err)...)
	}
	if len(moves.Replaced) > 0 {
		return refRefused(e, fmt.Errorf("git replace (%s) would make git show other content for an existing commit, which Gate 3 does not judge", strings.Join(moves.Replaced, ", ")),
			"Do not replace objects: commit the change you want on top of the branch (git commit), where Gate 3 judges it.")
	}
	// The branch guard: a move that gives a branch commits of its own is a
	// commit on that branch.
	if branches, err := gate.CommitsOnBranches(ctx, dir, updates, nil); err != nil {
		return refRefused(e, err, "Fix the cause named above (git failing in this repository), then run the git command again.")
	} else if br, err := eng.CheckRefBranches(ctx, dir, branches); err != nil && (!errors.Is(err, gate.ErrNotRecorded) || !br.Denied()) {
		return refRefused(e, err, "Fix the cause named above (the workflow state, a DES setting), then run the git command again.")
	} else if br.Denied() {
		fmt.Fprintln(e.stderr, br.Reason())
		fmt.Fprintf(e.stderr, "the ref update (%s) commits on a branch the workflow's branch guard protects; git will not move the ref\n", updatedRefs(updates))
		return exitFail
	}
	files, outside := eng.PreCommitGate().InProject(moves.Files)
	for _, p := range outside {
		fmt.Fprintf(e.stderr, "des-hook precommit: %s is outside the project root %s; not judged\n", p, root)
	}
	if len(files) == 0 {
		return exitOK
	}
	res, err := eng.CheckCommit(ctx, gate.Commit{Files: files, Source: gate.SourceRefUpdate})
	if err != nil && (!errors.Is(err, gate.ErrNotRecorded) || !res.Denied()) {
		return refRefused(e, err, "Fix the cause named above (an unreadable file or audit trail, a DES setting, a team policy), then run the git command again.")
	}
	if !res.Denied() {
		return exitOK
	}
	// git sends a hook's output to its stderr; the reasons go there.
	printCommitResult(env{stdout: e.stderr, stderr: e.stderr, lookupEnv: e.lookupEnv}, res)
	fmt.Fprintf(e.stderr, "Gate 3: the ref update (%s) brings in %d commit(s) holding these step files; git will not move the ref\n", updatedRefs(updates), len(moves.Commits))
	return exitFail
}

// judgedUpdate is an update RefMoves reads: a branch or tag moved to a
// value, or a replacement made.
func judgedUpdate(u gate.RefUpdate) bool {
	return u.Replaces() || u.Landed() && strings.Trim(u.New, "0") != ""
}

// updatedRefs names the refs a transaction moves, for messages.
func updatedRefs(updates []gate.RefUpdate) string {
	var out []string
	for _, u := range updates {
		if judgedUpdate(u) {
			out = append(out, u.Ref)
		}
	}
	return strings.Join(out, ", ")
}

// refRefused prints DES-INTERNAL with the cause and refuses the move.
func refRefused(e env, err error, recovery ...string) int {
	fmt.Fprintf(e.stderr, "des-hook precommit: %s\n", gate.Internal(policy.PreCommit,
		fmt.Errorf("the ref update cannot be judged, so it is refused: %w", err), recovery...).Reason())
	return exitFail
}

// refHookDir is the work tree git runs the hook for: the current directory,
// or, where git runs it in the git directory (receive-pack, for a push
// into this repository), the work tree that directory belongs to.
func refHookDir(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	git := new(gitexec.Runner)
	out, err := git.Run(ctx, ".", nil, "rev-parse", "--is-inside-work-tree")
	if err == nil && strings.TrimSpace(string(out)) == "true" {
		return ".", nil
	}
	out, err = git.Run(ctx, ".", nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", fmt.Errorf("find the repository of the ref update: %w", err)
	}
	gd := strings.TrimSpace(string(out))
	if filepath.Base(gd) == ".git" {
		return filepath.Dir(gd), nil
	}
	return "", fmt.Errorf("the ref update is in %s, a repository without a work tree, which des does not judge", gd)
}
