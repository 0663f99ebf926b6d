package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/audit"
)

// forgeTrailLine appends to the newest day file of the project's trail a
// line chained after its last line, as any process that may write the audit
// directory can (Claude Code's sandbox lets Bash append to it, for the
// pre-commit hook): the chain says in what order lines were written, not by
// whom. audit verify finds nothing wrong with it.
func forgeTrailLine(t *testing.T, root string, fields map[string]any) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, ".des", "audit", "audit-*.log"))
	if len(files) == 0 {
		t.Fatal("no trail to forge into")
	}
	newest := files[len(files)-1]
	data, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.TrimSuffix(data, []byte{'\n'})
	last := data[bytes.LastIndexByte(body, '\n')+1:]
	var prev struct {
		Seq int64 `json:"seq"`
	}
	if err := json.Unmarshal(last, &prev); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(last)
	line := map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "seq": prev.Seq + 1, "prev": hex.EncodeToString(sum[:])}
	for k, v := range fields {
		line[k] = v
	}
	enc, _ := json.Marshal(line)
	f, err := os.OpenFile(newest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(enc, '\n')); err != nil {
		t.Fatal(err)
	}
}

// removeTrailLines takes every line of event out of the project's trail, as
// sandboxed Bash, which may rewrite the audit directory, can.
func removeTrailLines(t *testing.T, root, event string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, ".des", "audit", "audit-*.log"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var kept []byte
		for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
			if !bytes.Contains(line, []byte(`"event":"`+event+`"`)) {
				kept = append(kept, line...)
			}
		}
		if err := os.WriteFile(file, kept, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A subagent writes its step finished with Bash, then a background process
// chains confirmed PHASE_STARTED lines into the trail for every phase, and
// after Gate 2 fails the step, a STALE_RESOLUTION that would let Gate 3
// commit it. Neither is DES's line: Gate 2 still finds the phases written
// around the write guard, and Gate 3 still finds the failure unresolved.
func TestE2EForgedTrailLinesDecideNothing(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	for _, name := range canonicalPhases {
		forgeTrailLine(t, root, map[string]any{"event": "PHASE_STARTED", "step_file": e2eStep, "phase": name,
			"from": "NOT_EXECUTED", "to": "IN_PROGRESS", "confirmed": true, "by": "write", "session_id": "s1", "tool_use_id": "toolu_w0"})
	}
	if r := runSub(t, root, "", env, "audit", "verify"); r.code != 0 {
		t.Fatalf("the forged lines should chain as well as des's (audit verify: %d %s %s)", r.code, r.stdout, r.stderr)
	}
	completeAroundTheGuard(t, root)
	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
		t.Fatalf("Gate 2 passed a step finished around the write guard on forged trail lines: %+v", out)
	}

	// Gate 2 recorded its failure; a forged resolution does not settle it.
	forgeTrailLine(t, root, map[string]any{"event": "STALE_RESOLUTION", "step_file": e2eStep, "outcome": "RESOLVED", "phases_reset": []string{}})
	r := runSub(t, root, "", env, "precommit", e2eStep)
	if r.code != 1 || !strings.Contains(r.stdout, "[DES-COMMIT-GATE2]") {
		t.Fatalf("Gate 3 on a forged resolution: exit %d, stdout %s, stderr %s; want DES-COMMIT-GATE2", r.code, r.stdout, r.stderr)
	}
	// A resolution des itself records (the person's stale --resolve) does.
	if r := runSub(t, root, "", env, "stale", "--resolve", e2eStep); r.code != 0 {
		t.Fatalf("stale --resolve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runSub(t, root, "", env, "precommit", e2eStep); strings.Contains(r.stdout, "[DES-COMMIT-GATE2]") {
		t.Errorf("Gate 3 after des's own resolution still finds the failure: %s", r.stdout)
	}
}

// replayTrailLine appends to the newest day file a copy of the trail's last
// line holding every one of marks, byte for byte: a line DES attested, in
// a second place in the trail.
func replayTrailLine(t *testing.T, root string, marks ...string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, ".des", "audit", "audit-*.log"))
	if len(files) == 0 {
		t.Fatal("no trail to replay into")
	}
	var found []byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
	lines:
		for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
			for _, m := range marks {
				if !bytes.Contains(line, []byte(m)) {
					continue lines
				}
			}
			found = line
		}
	}
	if found == nil {
		t.Fatalf("no trail line holds %q", marks)
	}
	f, err := os.OpenFile(files[len(files)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(found); err != nil {
		t.Fatal(err)
	}
}

// A person resolved a Gate 2 failure; Gate 2 then failed the step again.
// Sandboxed Bash copies the person's STALE_RESOLUTION line, byte for byte,
// to the end of the trail: its seq and hash are the attested ones, but it
// is not where DES wrote it, and it resolves nothing written after it.
func TestE2EReplayedResolutionDecidesNothing(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	completeAroundTheGuard(t, root)
	if out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false))); !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
		t.Fatalf("Gate 2 should fail the step: %+v", out)
	}
	if r := runSub(t, root, "", env, "stale", "--resolve", e2eStep); r.code != 0 {
		t.Fatalf("stale --resolve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	completeAroundTheGuard(t, root)
	if out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false))); !strings.Contains(out.SystemMessage, "DES-") {
		t.Fatalf("Gate 2 should fail the step again: %+v", out)
	}
	if r := runSub(t, root, "", env, "precommit", e2eStep); r.code != 1 || !strings.Contains(r.stdout, "[DES-COMMIT-GATE2]") {
		t.Fatalf("Gate 3 after the second failure: exit %d, stdout %s, stderr %s; want DES-COMMIT-GATE2", r.code, r.stdout, r.stderr)
	}
	replayTrailLine(t, root, `"event":"STALE_RESOLUTION"`)
	if r := runSub(t, root, "", env, "precommit", e2eStep); r.code != 1 || !strings.Contains(r.stdout, "[DES-COMMIT-GATE2]") {
		t.Fatalf("Gate 3 on a replayed resolution: exit %d, stdout %s, stderr %s; want DES-COMMIT-GATE2", r.code, r.stdout, r.stderr)
	}
}

// Sandboxed Bash may write the audit directory, not only append to it: it
// takes out the line of Gate 2's failure (or rewrites its outcome). The
// attestations say which lines DES wrote, not that they are all still
// there; Gate 3 then finds no failure to resolve. audit verify reports the
// trail rewritten; Gate 3 does not ask. Known gap (attested review, F3):
// skipped until Gate 3 is given the fact that attested lines are missing.
func TestE2ERemovedFailureDecidesNothing(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	completeAroundTheGuard(t, root)
	if out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false))); !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
		t.Fatalf("Gate 2 should fail the step: %+v", out)
	}
	removeTrailLines(t, root, "SUBAGENT_STOP_VALIDATION")
	r := runSub(t, root, "", env, "precommit", e2eStep)
	if r.code != 1 || !strings.Contains(r.stdout, "[DES-COMMIT-GATE2]") {
		t.Fatalf("Gate 3 with Gate 2's failure taken out of the trail: exit %d, stdout %s; want DES-COMMIT-GATE2", r.code, r.stdout)
	}
	// The kept failure names the codes Gate 2 failed the step with.
	if !strings.Contains(r.stdout, "DES-PHASE-JUMP") {
		t.Errorf("Gate 3's message does not name Gate 2's codes: %s", r.stdout)
	}
}

// A trail from before attestations (a project upgraded to them, des's
// lines not recorded anywhere) holds a Gate 2 failure. Before the hook has
// appended anything, sandboxed Bash chains a STALE_RESOLUTION in and
// commits: the hook's Gate 3 is the first to read the trail, and must not
// take it as a trail no writer attests (every line attested) when it is
// the one that starts the attestations.
func TestE2EForgedResolutionBeforeAttestationsStart(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	old, err := audit.Open(filepath.Join(root, ".des", "audit"))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Append(context.Background(), audit.Entry{Event: audit.SubagentStopValidation, Fields: map[string]any{
		"step_file": stepPath, "outcome": "FAIL", "codes": []any{"DES-PHASE-ABANDONED"}, "action": "block",
		"agent_id": "a1", "agent_type": "software-crafter", "tool_use_id": "toolu_1", "session_id": "s1", "transcript": "t.jsonl", "duration_ms": 1}}); err != nil {
		t.Fatal(err)
	}
	forgeTrailLine(t, root, map[string]any{"event": "STALE_RESOLUTION", "step_file": stepPath, "outcome": "RESOLVED", "phases_reset": []string{}})
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, heredocCommit)))
	if !strings.Contains(reason, "[DES-COMMIT-GATE2]") {
		t.Fatalf("the hook's Gate 3 on a resolution chained in before attestations started: %q; want DES-COMMIT-GATE2", reason)
	}
}
