package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/statedir"
)

// Claude Code's sandbox lets Bash write .des/runs (a sandboxed git commit
// appends there), and a process a Bash call leaves in the background keeps
// writing after the call's PostToolUse check. These tests play such a
// process: it rewrites a record DES keeps in .des/runs between the moment
// DES wrote it and the moment a gate reads it, with no effect check in
// between (none runs for Write, Edit or SubagentStop). A gate must not
// decide on the forgery.

// bashCall runs the PreToolUse and PostToolUse of a Bash call that leaves
// a process behind, as Claude Code does, and fails on any deny.
func bashCall(t *testing.T, root string, env []string, id, command string) {
	t.Helper()
	ev := bashEv("PreToolUse", root, command, evToolUseID(id))
	if reason := denyReason(t, runHookProcess(t, root, env, ev)); reason != "" {
		t.Fatalf("Bash %q denied: %s", command, reason)
	}
	post := afterEv(ev, "PostToolUse", evResponse(map[string]any{"stdout": "", "stderr": "", "interrupted": false}))
	if r := runHookProcess(t, root, env, post); r.code != 0 || strings.Contains(r.stdout, "DES-INTEGRITY") {
		t.Fatalf("Bash %q PostToolUse: %+v", command, r)
	}
}

// A pending record rewritten while its Write is in flight makes
// PostToolUse append what the forger chose to the trail, as confirmed:
// here a confirmed PHASE_STARTED for every phase, so that a step written
// as finished with Bash then passes Gate 2's DES-PHASE-JUMP check.
func TestE2EForgedPendingRecordIsNotConfirmed(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	// The forger, left in the background by an earlier Bash call.
	bashCall(t, root, env, "toolu_bg", "nohup ./forge.sh >/dev/null 2>&1 &")

	// An honest Write: PREPARE NOT_EXECUTED -> IN_PROGRESS.
	doc := readStep(t, root)
	prepare := stepPhases(doc)[0].(map[string]any)
	prepare["status"], prepare["started_at"] = "IN_PROGRESS", "2026-11-22T12:00:00Z"
	next, _ := json.MarshalIndent(doc, "", "  ")
	ev := writeToolEvent(root, "Write", e2eStep, map[string]any{"content": string(next)})
	ev["session_id"], ev["tool_use_id"] = "s1", "toolu_w0"
	if reason := denyReason(t, runHookProcess(t, root, env, ev)); reason != "" {
		t.Fatalf("write denied: %s", reason)
	}

	// The background process finds DES's pending record by listing the
	// directory and rewrites it: one PHASE_STARTED per phase, the same
	// path and hash, so that the landed write "confirms" them.
	pendingDir := filepath.Join(root, ".des", "runs", "pending")
	names, _ := filepath.Glob(filepath.Join(pendingDir, "*.json"))
	if len(names) != 1 {
		// Where the record is kept is DES's business; the forger writes
		// where it can, under the name it would have.
		names = []string{filepath.Join(pendingDir, "toolu_w0.json")}
	}
	var rec struct {
		Path    string           `json:"path"`
		SHA256  string           `json:"sha256"`
		Entries []map[string]any `json:"entries"`
	}
	if raw, err := os.ReadFile(names[0]); err == nil {
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
	}
	var entries []map[string]any
	for _, name := range canonicalPhases {
		entries = append(entries, map[string]any{"timestamp": "0001-01-01T00:00:00Z", "event": "PHASE_STARTED", "step_file": e2eStep, "phase": name, "from": "NOT_EXECUTED", "to": "IN_PROGRESS", "session_id": "s1", "tool_use_id": "toolu_w0"})
	}
	forged, _ := json.Marshal(map[string]any{"path": e2eStep, "sha256": contentSHA256(next), "entries": entries})
	writeFile(t, filepath.Dir(names[0]), filepath.Base(names[0]), string(forged))

	// Claude Code writes the file; PostToolUse confirms.
	writeFile(t, root, e2eStep, string(next))
	ev = writtenEv(ev, filepath.Join(root, e2eStep))
	if r := runHookProcess(t, root, env, ev); r.code != 0 || r.stdout != "" {
		t.Fatalf("PostToolUse: %+v", r)
	}
	for _, e := range auditLines(t, root, "PHASE_STARTED") {
		if e["phase"] != "PREPARE" {
			t.Errorf("the trail holds a PHASE_STARTED no write made (confirmed %v): %v", e["confirmed"], e)
		}
	}

	// The dishonest subagent then writes the step finished with Bash (step
	// files are not in the sandbox's denyWrite) and stops: Gate 2 must
	// find the phases written around the write guard.
	completeAroundTheGuard(t, root)
	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
		t.Errorf("Gate 2 passed a step finished around the write guard on forged confirmations: %+v", out)
	}
}

// A run record rewritten after Gate 1 wrote it (phases_at_start claiming
// every phase already done) makes Gate 2 take the phases written with Bash
// in this run for work done before it, and pass the stop.
func TestE2EForgedRunRecordDoesNotPassGate2(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	runs := filepath.Join(root, ".des", "runs")
	forge := func(t *testing.T) {
		names, _ := filepath.Glob(filepath.Join(runs, "*.json"))
		if len(names) == 0 {
			t.Fatal("Gate 1 left no run record")
		}
		for _, n := range names {
			raw, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			var r map[string]any
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			phases, ok := r["phases_at_start"].(map[string]any)
			if !ok {
				continue
			}
			for k := range phases {
				phases[k] = "EXECUTED"
			}
			out, _ := json.Marshal(r)
			if err := os.WriteFile(n, out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The subagent's last Bash call writes the step finished and leaves
	// the forger behind; the call's own check finds nothing yet.
	bashCall(t, root, env, "toolu_bg", "python3 finish.py; (sleep 1; python3 forge.py) &")
	completeAroundTheGuard(t, root)
	forge(t)
	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
		t.Errorf("Gate 2 passed a step finished around the write guard on a forged run record: %+v", out)
	}
	if s := readStepState(t, root); s["status"] != "FAILED" {
		t.Errorf("step state after the stop: %v; want FAILED", s["status"])
	}
}

// A verdict rewritten after Gate 2 failed the step hides the failure from
// the orchestrator at PostToolUse for the Agent call.
func TestE2EForgedStopVerdictStillReportsTheFailure(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	completeAroundTheGuard(t, root)
	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
		t.Fatalf("fixture: Gate 2 did not fail the stop: %+v", out)
	}
	verdict := filepath.Join(root, ".des", "runs", "toolu_e2e.stop.json")
	raw, err := os.ReadFile(verdict)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	v["failed"], v["reason"], v["action"] = false, "", "none"
	forged, _ := json.Marshal(v)
	if err := os.WriteFile(verdict, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	post := agentDoneEvent(root)
	po := decodeStop(t, runHookProcess(t, root, env, post))
	if po.HookSpecificOutput == nil || !strings.Contains(po.HookSpecificOutput.AdditionalContext, "[DES-PHASE-JUMP]") {
		t.Errorf("the orchestrator was not told that Gate 2 failed the step (forged verdict): %+v", po)
	}
}

func contentSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// evidenceDir is where the hook processes of these tests keep the records
// the gates read (statedir.Evidence in the test's state directory).
func evidenceDir(root string) string {
	return statedir.Evidence(statedir.For(root, func(k string) (string, bool) {
		if k == statedir.EnvVar {
			return testStateDir, true
		}
		return "", false
	}))
}
