package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/audit"
)

// phaseStatuses are the statuses of the step's phases, in log order.
func phaseStatuses(t *testing.T, root string) []string {
	t.Helper()
	log := readStep(t, root)["tdd_cycle"].(map[string]any)["phase_execution_log"].([]any)
	var out []string
	for _, p := range log {
		out = append(out, p.(map[string]any)["status"].(string))
	}
	return out
}

// gate2FailedAroundTheGuard is gate2Project after a subagent wrote its step
// finished around the write guard and Gate 2 failed it (DES-PHASE-JUMP,
// naming the phases to reset).
func gate2FailedAroundTheGuard(t *testing.T) (root, transcript string, env []string) {
	t.Helper()
	root, transcript, env = gate2Project(t)
	completeAroundTheGuard(t, root)
	if out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false))); !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
		t.Fatalf("Gate 2 should fail the step: %+v", out)
	}
	return root, transcript, env
}

// stale --resolve resets the phases Gate 2 named as done around the write
// guard only while that failure is the step's latest verdict. Sandboxed Bash
// chains a passing SUBAGENT_STOP_VALIDATION after it (a line des did not
// write, which Gate 3 already ignores): the person's stale --resolve must
// still reset those phases, or the forged EXECUTED phases survive the
// resolution and the redo.
func TestE2EForgedPassDoesNotSpareTheResets(t *testing.T) {
	t.Parallel()
	root, _, env := gate2FailedAroundTheGuard(t)
	forgeTrailLine(t, root, map[string]any{"event": "SUBAGENT_STOP_VALIDATION", "step_file": e2eStep, "outcome": "PASS", "codes": []string{},
		"action": "none", "agent_id": "a6fbb44895c6a27dd", "agent_type": "software-crafter", "tool_use_id": "", "session_id": "s1", "transcript": "t.jsonl", "duration_ms": 1})
	if r := runSub(t, root, "", env, "stale", "--resolve", e2eStep); r.code != 0 {
		t.Fatalf("stale --resolve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for i, s := range phaseStatuses(t, root) {
		if s != "NOT_EXECUTED" {
			t.Errorf("phase %s is %s after stale --resolve; Gate 2 found it done around the write guard", canonicalPhases[i], s)
		}
	}
}

// The same with Gate 2's failure line taken out of the trail (sandboxed Bash
// may rewrite it): Gate 3 finds the failure kept in the state directory, and
// so must stale --resolve, with the phases it named.
func TestE2ERemovedFailureDoesNotSpareTheResets(t *testing.T) {
	t.Parallel()
	root, _, env := gate2FailedAroundTheGuard(t)
	removeTrailLines(t, root, "SUBAGENT_STOP_VALIDATION")
	if r := runSub(t, root, "", env, "stale", "--resolve", e2eStep); r.code != 0 {
		t.Fatalf("stale --resolve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for i, s := range phaseStatuses(t, root) {
		if s != "NOT_EXECUTED" {
			t.Errorf("phase %s is %s after stale --resolve; Gate 2 found it done around the write guard", canonicalPhases[i], s)
		}
	}
}

// Gate 2 failed a step written finished around the write guard and marked
// it FAILED, its phases left EXECUTED for the person to read. The
// orchestrator does not ask anyone: it starts the subagent on the step
// again. Gate 1 restarts the FAILED task; the subagent stops at once; Gate 2
// finds every phase EXECUTED when the run started, nothing to judge, and
// passes; Gate 3 takes that pass as settling the failure and commits a step
// no phase of which went through the write guard. Gate 1 must reset the
// phases Gate 2 named when it restarts a FAILED task, as stale --resolve
// does.
func TestE2ERestartAfterGate2FailureRedoesTheNamedPhases(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2FailedAroundTheGuard(t)
	if reason := denyReason(t, runHookProcess(t, root, env, agentEvent(root, "Agent", renderPrompt(t, "execute-step")))); reason != "" {
		t.Fatalf("Gate 1 on the restart: %s", reason)
	}
	for i, s := range phaseStatuses(t, root) {
		if s != "NOT_EXECUTED" {
			t.Errorf("phase %s is %s after Gate 1 restarted the FAILED task; Gate 2 found it done around the write guard", canonicalPhases[i], s)
		}
	}
	decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if r := runSub(t, root, "", env, "precommit", e2eStep); r.code == 0 {
		t.Errorf("Gate 3 commits a step whose phases were all written around the write guard, after a mere restart: %s", r.stdout)
	}
}

// An upgrade (or a project moved or copied: its state directory is another)
// finds a trail whose lines no one attests: Gate 2 failed the step, sent the
// subagent back, and passed it. The hook's Gate 3 counts the failure and not
// the pass, and tells the person to run `des-hook stale --resolve`; that must
// resolve it, though there is nothing to reset, or the person is left with a
// commit refused and a command that says "nothing to resolve".
func TestE2EResolveAfterUpgradeSettlesTheFailure(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	old, err := audit.Open(filepath.Join(root, ".des", "audit"))
	if err != nil {
		t.Fatal(err)
	}
	verdict := func(outcome string) audit.Entry {
		return audit.Entry{Event: audit.SubagentStopValidation, Fields: map[string]any{
			"step_file": stepPath, "outcome": outcome, "codes": []any{}, "action": "block",
			"agent_id": "a1", "agent_type": "software-crafter", "tool_use_id": "toolu_1", "session_id": "s1", "transcript": "t.jsonl", "duration_ms": 1}}
	}
	if err := old.Append(context.Background(), verdict("FAIL"), verdict("PASS")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, heredocCommit)))
	if !strings.Contains(reason, "[DES-COMMIT-GATE2]") || !strings.Contains(reason, "des-hook stale --resolve") {
		t.Fatalf("the hook's Gate 3 after the upgrade: %q; want DES-COMMIT-GATE2 suggesting stale --resolve", reason)
	}
	if r := runSub(t, root, "", nil, "stale", "--resolve", stepPath); r.code != 0 || strings.Contains(r.stdout, "nothing to resolve") {
		t.Fatalf("stale --resolve, as the message says: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runSub(t, root, "", nil, "precommit", stepPath); r.code != 0 {
		t.Errorf("Gate 3 after the person's stale --resolve: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
