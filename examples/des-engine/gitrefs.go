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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/statedir"
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
		des.WithLogger(newLogger(e.stderr, e.lookupEnv)), des.WithLazyPolicies())
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
	if repos := refRepos(ctx, root, dir); len(repos) == 1 {
		for _, top := range repos {
			dir = top
		}
	}
	moves, err := eng.StepFiles().RefMoves(ctx, dir, updates, nil)
	if err != nil {
		return refRefused(e, err, refRecovery(err)...)
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

// refRecovery is what to do when the ref move cannot be judged.
func refRecovery(err error) []string {
	if errors.Is(err, gate.ErrTooManyCommits) {
		return []string{fmt.Sprintf("Move the ref in steps of at most %d new commits (merge or fast-forward to a nearer commit first), or let a person run the command outside Claude Code.", gate.MaxIntroducedCommits)}
	}
	return []string{"Retry the git command; if git itself fails, fix the repository first."}
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

// refSnapshotFile is where PreToolUse keeps a Bash call's snapshot of the
// branches and tags, in the state directory (outside the sandbox's reach).
func (h *hookEnv) refSnapshotFile(toolUseID string) string {
	sum := sha256.Sum256([]byte(toolUseID))
	return filepath.Join(statedir.For(h.root, h.lookupEnv), "refs", hex.EncodeToString(sum[:16])+".json")
}

// refRepos are the work trees of the repositories that hold dirs, each
// repository (git common dir) once, with the work tree of the first dir
// that is in it: the project's first, whose step-file globs apply.
func refRepos(ctx context.Context, dirs ...string) map[string]string {
	git := new(gitexec.Runner)
	out := map[string]string{} // common git dir -> top level
	for _, d := range dirs {
		raw, err := git.Run(ctx, d, nil, "rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel")
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if len(lines) != 2 || lines[1] == "" {
			continue
		}
		if _, ok := out[lines[0]]; !ok {
			out[lines[0]] = filepath.FromSlash(lines[1])
		}
	}
	return out
}

// beginRefs records, before a Bash call runs, the branches and tags of the
// project's repository and the call's (one `git for-each-ref` each). A
// failure is logged: the ref-transaction hook still judges the moves.
func (h *hookEnv) beginRefs(ctx context.Context, ev *Event) {
	ctx, cancel := context.WithTimeout(ctx, integrityBudget)
	defer cancel()
	snaps := map[string]gate.RefSnapshot{}
	for _, top := range refRepos(ctx, h.root, eventDir(ev, h.root)) {
		snap, err := gate.Refs(ctx, top)
		if err != nil {
			h.logger.Warn("hook: cannot record the branches and tags before the call", "dir", top, "err", err)
			continue
		}
		snaps[top] = snap
	}
	if len(snaps) == 0 {
		return
	}
	raw, err := json.Marshal(snaps)
	if err == nil {
		path := h.refSnapshotFile(ev.ToolUseID)
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			err = fileio.WriteAtomic(path, raw)
		}
	}
	if err != nil {
		h.logger.Warn("hook: cannot keep the branches and tags before the call", "err", err)
	}
}

// postToolUseBash is the check after a Bash call: DES's files
// (postToolUseEffects), then the branches and tags it moved; and the
// record of the test run it made, if it ran a test runner.
func postToolUseBash(ctx context.Context, h *hookEnv, ev *Event) response {
	r := postToolUseEffects(ctx, h, ev)
	reason, sys := h.checkRefs(ctx, ev)
	note := h.recordTestRun(ctx, ev)
	if reason == "" {
		return withNote(r, ev.HookEventName, note)
	}
	reason = joinNonEmpty("\n\n", reason, note)
	if !r.isNoOpinion() {
		reason = strings.TrimSpace(r.reason+"\n"+r.additionalContext) + "\n\n" + reason
		sys = strings.TrimSpace(r.systemMessage + "\n" + sys)
	}
	return blockAfterTool(ev.HookEventName, reason, sys)
}

// checkRefs compares the branches and tags with the snapshot PreToolUse
// took, judges what the moves brought in as the ref-transaction hook does,
// and moves back each ref Gate 3 refuses (its commits stay in the object
// store and the reflog: nothing is lost). It returns the reason for the
// model and the message for the user, "" when nothing was moved back.
func (h *hookEnv) checkRefs(ctx context.Context, ev *Event) (string, string) {
	snaps, ok := h.refSnapshots(ev.ToolUseID)
	_ = os.Remove(h.refSnapshotFile(ev.ToolUseID)) // read once: this call's check is the last
	if !ok {
		return "", "" // no snapshot: not a Bash call des saw start, or not a repository
	}
	ctx, cancel := context.WithTimeout(ctx, integrityBudget)
	defer cancel()
	var reasons, restored []string
	for top, before := range snaps {
		now, err := gate.Refs(ctx, top)
		if err != nil {
			h.logger.Warn("hook: cannot read the branches and tags after the call", "dir", top, "err", err)
			continue
		}
		var moved []gate.RefUpdate
		for _, m := range before.Moves(now) {
			if m.New != "" {
				moved = append(moved, m)
			}
		}
		if len(moved) == 0 {
			continue
		}
		// Judged together first (one read); one by one only to tell
		// which refs to move back.
		why, err := h.judgeRefMoves(ctx, ev, top, moved, before)
		if why == "" && err == nil {
			continue
		}
		for _, m := range moved {
			why, err := h.judgeRefMoves(ctx, ev, top, []gate.RefUpdate{m}, before)
			if why == "" && err == nil {
				continue
			}
			if err != nil {
				why = gate.Internal(policy.PreCommit, fmt.Errorf("what %s now points at cannot be judged: %w", m.Ref, err), refRecovery(err)...).Reason()
			}
			if rerr := restoreRef(ctx, top, m); rerr != nil {
				reasons = append(reasons, fmt.Sprintf("%s in %s points at commits Gate 3 refuses, and DES could not move it back (%v):\n%s", m.Ref, top, rerr, why))
				continue
			}
			restored = append(restored, m.Ref)
			was := "did not exist"
			if m.Old != "" {
				was = "was at " + m.Old
			}
			reasons = append(reasons, fmt.Sprintf("DES moved %s in %s back (it %s; the call moved it to %s, whose commits stay in the object store and the reflog):\n%s", m.Ref, top, was, m.New, why))
		}
	}
	if len(reasons) == 0 {
		return "", ""
	}
	h.requireValidation()
	reason := "The last Bash call moved a branch or tag onto step files Gate 3 refuses, where git's reference-transaction hook did not stop it.\n" +
		strings.Join(reasons, "\n\n") + "\nFinish the steps through the write guard, then commit them with git commit."
	return reason, fmt.Sprintf("DES moved back %d ref(s) the Bash call had moved onto unfinished step files: %s", len(restored), strings.Join(restored, ", "))
}

// judgeRefMoves is Gate 3 on what moves bring in, recorded with source
// ref-check: the violations, "" when it passes.
func (h *hookEnv) judgeRefMoves(ctx context.Context, ev *Event, top string, moves []gate.RefUpdate, before gate.RefSnapshot) (string, error) {
	key := top + "\x00" + fmt.Sprint(moves)
	if v, ok := h.refVerdicts[key]; ok {
		return v.reason, v.err
	}
	reason, err := h.judgeRefMovesOnce(ctx, ev, top, moves, before)
	if h.refVerdicts == nil {
		h.refVerdicts = map[string]refVerdict{}
	}
	h.refVerdicts[key] = refVerdict{reason, err}
	return reason, err
}

// headTrusted tells the effect check whether the commit HEAD points to
// after a Bash call is one des judged: no branch or tag the call moved
// brings in what Gate 3 or the branch guard refuses (the ref check after
// the call moves such a ref back). Without a record of the refs before the
// call there is nothing to judge the call's moves by: trusted.
func (h *hookEnv) headTrusted(ctx context.Context, ev *Event, commit string) bool {
	snaps, ok := h.refSnapshots(ev.ToolUseID)
	if !ok {
		return true
	}
	for top, before := range snaps {
		now, err := gate.Refs(ctx, top)
		if err != nil {
			return false
		}
		moved := before.Moves(now)
		if len(moved) == 0 {
			continue
		}
		if reason, err := h.judgeRefMoves(ctx, ev, top, moved, before); err != nil || reason != "" {
			return false
		}
	}
	return true
}

// refSnapshots reads the branches and tags beginRefs recorded before the
// call, by repository; ok is false when there is no record (not a Bash call
// des saw start, or no repository) or it does not read.
func (h *hookEnv) refSnapshots(toolUseID string) (map[string]gate.RefSnapshot, bool) {
	raw, err := os.ReadFile(h.refSnapshotFile(toolUseID))
	if err != nil {
		return nil, false
	}
	var snaps map[string]gate.RefSnapshot
	if err := json.Unmarshal(raw, &snaps); err != nil {
		h.logger.Warn("hook: the branches and tags recorded before the call do not read", "err", err)
		return nil, false
	}
	return snaps, true
}

// judgeRefMovesOnce is judgeRefMoves without the memory.
func (h *hookEnv) judgeRefMovesOnce(ctx context.Context, ev *Event, top string, moves []gate.RefUpdate, before gate.RefSnapshot) (string, error) {
	// With a bad setting, the default globs say whether des is in charge:
	// a move that brings in no step file is not held up by it.
	eng, eerr := h.engine(ctx)
	steps := gate.StepFiles{Root: h.root, Globs: des.DefaultConfig().GuardedStepFiles}
	if eerr == nil {
		steps = eng.StepFiles()
	}
	res, err := steps.RefMoves(ctx, top, moves, before)
	if err != nil {
		return "", err
	}
	// The branch guard, as the hook would have asked it.
	if eerr == nil {
		branches, err := gate.CommitsOnBranches(ctx, top, moves, before)
		if err != nil {
			return "", err
		}
		br, err := eng.CheckRefBranches(ctx, top, branches)
		if err != nil && (!errors.Is(err, gate.ErrNotRecorded) || !br.Denied()) {
			return "", err
		}
		if br.Denied() {
			return br.Reason(), nil
		}
	}
	files, _ := gate.PreCommit{Root: h.root}.InProject(res.Files)
	if len(files) > 0 && eerr != nil {
		return "", eerr
	}
	if len(files) == 0 {
		return "", nil
	}
	cres, err := eng.CheckCommit(ctx, gate.Commit{Files: files, Source: gate.SourceRefCheck, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID})
	if err != nil && (!errors.Is(err, gate.ErrNotRecorded) || !cres.Denied()) {
		return "", err
	}
	if !cres.Denied() {
		return "", nil
	}
	return cres.Reason(), nil
}

// restoreRef moves a ref back to where it was (deletes it when it did not
// exist), only if it still points where the call left it. git's hooks are
// off for it: the old value was landed before, and is not judged again.
func restoreRef(ctx context.Context, top string, m gate.RefUpdate) error {
	environ := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_CONFIG_") {
			environ = append(environ, kv)
		}
	}
	environ = append(environ, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0="+os.DevNull)
	ctx = gitexec.WithEnviron(ctx, environ)
	args := []string{"update-ref", "-m", "des: moved back, Gate 3 refuses what the move brought in", m.Ref, m.Old, m.New}
	if m.Old == "" {
		args = []string{"update-ref", "-m", "des: removed, Gate 3 refuses what it points at", "-d", m.Ref, m.New}
	}
	_, err := new(gitexec.Runner).Run(ctx, top, nil, args...)
	return err
}

// withNote adds note for the agent to r, a response after a tool call.
func withNote(r response, event, note string) response {
	switch {
	case note == "":
		return r
	case r.decision != "":
		r.reason = joinNonEmpty("\n\n", r.reason, note)
	default:
		r.additionalContext = joinNonEmpty("\n\n", r.additionalContext, note)
		if r.specificEvent == "" {
			r.specificEvent = event
		}
	}
	return r
}
