package claudecode

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
	"os"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/policy"
)

// refSnapshotFile is where PreToolUse keeps a Bash call's snapshot of the
// branches and tags, in the state directory (outside the sandbox's reach).
func (h *hookEnv) refSnapshotFile(toolUseID string) string {
	sum := sha256.Sum256([]byte(toolUseID))
	return filepath.Join(statedir.For(h.root, h.lookupEnv), "refs", hex.EncodeToString(sum[:16])+".json")
}

// beginRefs records, before a Bash call runs, the branches and tags of the
// project's repository and the call's (one `git for-each-ref` each). A
// failure is logged: the ref-transaction hook still judges the moves.
func (h *hookEnv) beginRefs(ctx context.Context, ev *Event) {
	ctx, cancel := context.WithTimeout(ctx, integrityBudget)
	defer cancel()
	snaps := map[string]gate.RefSnapshot{}
	for _, top := range gitexec.WorkTrees(ctx, h.root, eventDir(ev, h.root)) {
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
				why = gate.Internal(policy.PreCommit, fmt.Errorf("what %s now points at cannot be judged: %w", m.Ref, err), gate.RefMoveRecovery(err)...).Reason()
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
		steps = eng.StepFilesGate()
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
