package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeToolEvent is a PreToolUse of a file tool on rel with input.
// Options apply after its own (session "s", tool_use_id "toolu_w").
func writeToolEvent(root, tool, rel string, input map[string]any, opts ...evOpt) map[string]any {
	return fileEv("PreToolUse", tool, root, filepath.Join(root, filepath.FromSlash(rel)), input, append([]evOpt{evSession("s"), evToolUseID("toolu_w")}, opts...)...)
}

const stateV5 = `{
  "state_version": 5,
  "current_phase": "02-design",
  "active_workflow": {
    "type": "feature",
    "phases": ["01-requirements", "02-design", "03-build"],
    "current_phase": "02-design",
    "current_phase_index": 1,
    "phase_status": {"01-requirements": "completed", "02-design": "in_progress", "03-build": "pending"}
  },
  "phases": {"01-requirements": {"status": "completed"}, "02-design": {"status": "in_progress"}},
  "custom": {"kept": true}
}
`

// The scenarios of the phase handshake audit, through the built hook.
func TestE2EWorkflowStateGuard(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".isdlc/state.json", stateV5)
	stale := strings.Replace(stateV5, `"state_version": 5`, `"state_version": 3`, 1)
	regress := strings.Replace(strings.Replace(stateV5, `"state_version": 5`, `"state_version": 6`, 1), `"01-requirements": "completed", "02-design"`, `"01-requirements": "pending", "02-design"`, 1)
	redo := strings.Replace(strings.Replace(stateV5, `"state_version": 5`, `"state_version": 6`, 1), `"01-requirements": "completed", "02-design"`, `"01-requirements": "in_progress", "02-design"`, 1)
	redo = strings.Replace(redo, `"type": "feature",`, `"type": "feature", "supervised_review": {"status": "redo_pending", "redo_count": 1},`, 1)
	forward := strings.Replace(stateV5, `"state_version": 5`, `"state_version": 6`, 1)

	cases := []struct {
		name  string
		event map[string]any
		codes []string
	}{
		{"stale write", writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": stale}), []string{"DES-STATE-V7-STALE"}},
		{"completed to pending", writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": regress}), []string{"DES-STATE-V8-STATUS"}},
		{"supervised redo", writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": redo}), nil},
		{"forward write", writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": forward}), nil},
		{"edit regresses a status", writeToolEvent(root, "Edit", ".isdlc/state.json", map[string]any{
			"old_string": `"01-requirements": {"status": "completed"}`, "new_string": `"01-requirements": {"status": "pending"}`}), []string{"DES-STATE-V8-STATUS"}},
		{"not json", writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": "{oops"}), []string{"DES-STATE-INVALID"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runHookProcess(t, root, nil, c.event)
			if c.codes == nil {
				if r.code != 0 || strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
					t.Errorf("allowed write denied: %s", r.stdout)
				}
				return // warnings (V9, handshake) may accompany an allowed write
			}
			reason := denyReason(t, r)
			for _, code := range c.codes {
				if !strings.Contains(reason, "["+code+"]") {
					t.Errorf("reason lacks %s:\n%s", code, reason)
				}
			}
			if raw, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json")); string(raw) != stateV5 {
				t.Error("the disk changed")
			}
		})
	}
}

func TestE2EStepFileGuardAndConfirmation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rel := "docs/feature/shop/steps/01-01.json"
	disk := `{"task_id": "01-01", "state": {"status": "IN_PROGRESS"}, "tdd_cycle": {"phase_execution_log": [{"phase_name": "PREPARE", "status": "NOT_EXECUTED"}]}}`
	writeFile(t, root, rel, disk)
	jump := strings.Replace(disk, `"NOT_EXECUTED"`, `"EXECUTED", "outcome": "PASS"`, 1)
	reason := denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, "Write", rel, map[string]any{"content": jump})))
	if !strings.HasPrefix(reason, "[DES-PHASE-JUMP] "+rel+": phase PREPARE cannot move from NOT_EXECUTED to EXECUTED") {
		t.Fatalf("reason = %q", reason)
	}
	start := strings.Replace(disk, `"NOT_EXECUTED"`, `"IN_PROGRESS"`, 1)
	pre := writeToolEvent(root, "Write", rel, map[string]any{"content": start})
	if r := runHookProcess(t, root, nil, pre); denyReason(t, r) != "" {
		t.Fatalf("allowed start denied: %s", r.stdout)
	}
	writeFile(t, root, rel, start) // Claude Code writes the file
	post := writeToolEvent(root, "Write", rel, map[string]any{"content": start})
	post["hook_event_name"] = "PostToolUse"
	post["tool_response"] = map[string]any{"filePath": filepath.Join(root, rel), "success": true}
	if r := runHookProcess(t, root, nil, post); r.code != 0 || r.stdout != "" {
		t.Fatalf("PostToolUse: %+v", r)
	}
	files, _ := filepath.Glob(filepath.Join(root, ".des", "audit", "*.log"))
	var trail string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		trail += string(b)
	}
	if !strings.Contains(trail, `"event":"DOCUMENT_WRITE_BLOCKED"`) || !strings.Contains(trail, `"event":"PHASE_STARTED"`) || !strings.Contains(trail, `"confirmed":true`) {
		t.Errorf("audit trail:\n%s", trail)
	}
}

func TestE2EBashWriteToStateBlocked(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".isdlc/state.json", stateV5)
	ev := bashEv("PreToolUse", root, "echo '{}' > .isdlc/state.json", evSession("s"), evToolUseID("toolu_b"), evInput(map[string]any{"description": "reset state"}))
	reason := denyReason(t, runHookProcess(t, root, nil, ev))
	if !strings.HasPrefix(reason, "[DES-STATE-BASH-WRITE] Bash would write .isdlc/state.json") || !strings.Contains(reason, "Edit tool") {
		t.Errorf("reason = %q", reason)
	}
	// Claude Code's timeout is a JSON number: a fractional one is as valid
	// as a whole one and must not turn the guard off.
	ev["tool_input"] = map[string]any{"command": "echo '{}' > .isdlc/state.json", "description": "reset state", "timeout": 1000.5}
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.HasPrefix(reason, "[DES-STATE-BASH-WRITE]") {
		t.Errorf("fractional timeout: reason = %q; want DES-STATE-BASH-WRITE", reason)
	}
	// A field des cannot read is a call it cannot judge: denied, naming
	// the field, never passed.
	ev["tool_input"] = map[string]any{"command": "echo '{}' > .isdlc/state.json", "timeout": "soon"}
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.HasPrefix(reason, "[DES-INTERNAL]") || !strings.Contains(reason, "timeout") {
		t.Errorf("mistyped timeout: reason = %q; want DES-INTERNAL naming timeout", reason)
	}
	ev["tool_input"] = map[string]any{"command": "jq .state_version .isdlc/state.json"}
	if r := runHookProcess(t, root, nil, ev); r.stdout != "" {
		t.Errorf("a read was judged: %s", r.stdout)
	}
}

// Claude Code matches an Edit's old_string with curly quotes read as
// straight ones; the guard must judge the document that edit produces, not
// let it through as "not matched".
func TestE2ECurlyQuoteEditIsJudged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".isdlc/state.json", stateV5)
	for _, tool := range []string{"Edit", "MultiEdit"} {
		t.Run(tool, func(t *testing.T) {
			edit := map[string]any{"old_string": "“01-requirements”: {“status”: “completed”}", "new_string": `"01-requirements": {"status": "pending"}`}
			in := edit
			if tool == "MultiEdit" {
				in = map[string]any{"edits": []any{edit}}
			}
			reason := denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, tool, ".isdlc/state.json", in)))
			if !strings.Contains(reason, "[DES-STATE-V8-STATUS]") || !strings.Contains(reason, `phases["01-requirements"].status moves down from "completed"`) {
				t.Errorf("reason = %q, want DES-STATE-V8-STATUS for 01-requirements", reason)
			}
			if raw, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json")); string(raw) != stateV5 {
				t.Errorf("state changed:\n%s", raw)
			}
		})
	}
	// The same edit moving forward is allowed.
	r := runHookProcess(t, root, nil, writeToolEvent(root, "Edit", ".isdlc/state.json", map[string]any{
		"old_string": "“02-design”: {“status”: “in_progress”}", "new_string": `"02-design": {"status": "completed"}`}))
	if strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
		t.Errorf("forward curly edit denied: %s", r.stdout)
	}
}

// stateStep is one Write of a workflow state through the built hook as
// Claude Code runs it: PreToolUse, then (when allowed) the file written and
// PostToolUse. It returns the deny reason, "" when the write landed.
func stateStep(t *testing.T, root string, env []string, id, content string) string {
	t.Helper()
	ev := writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": content}, evToolUseID(id))
	if r := runHookProcess(t, root, env, ev); strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
		return denyReason(t, r)
	} else if r.code != 0 {
		t.Fatalf("PreToolUse: %+v", r)
	}
	writeFile(t, root, ".isdlc/state.json", content)
	ev = writtenEv(ev, ev["tool_input"].(map[string]any)["file_path"])
	if r := runHookProcess(t, root, env, ev); r.code != 0 || strings.Contains(r.stdout, "deny") {
		t.Fatalf("PostToolUse: %+v", r)
	}
	return ""
}

func versioned(doc string, v int) string {
	return strings.Replace(doc, `"state_version": 5`, fmt.Sprintf(`"state_version": %d`, v), 1)
}

// V8 across writes: completed → reset (or removed) → pending. The first
// step is denied; had it happened anyway (the file rewritten outside the
// guarded tools), the second is denied from what des saw, kept in the
// per-user state directory.
func TestE2EWorkflowStateMemory(t *testing.T) {
	t.Parallel()
	for _, step1 := range []struct{ name, from, to string }{
		{"unknown status", `"01-requirements": "completed", "02-design"`, `"01-requirements": "reset", "02-design"`},
		{"key removed", `"01-requirements": "completed", "02-design"`, `"02-design"`},
	} {
		t.Run(step1.name, func(t *testing.T) {
			root, env := t.TempDir(), []string{"DES_STATE_DIR=" + t.TempDir()}
			writeFile(t, root, ".isdlc/state.json", stateV5)
			if reason := stateStep(t, root, env, "toolu_a", versioned(stateV5, 6)); reason != "" {
				t.Fatalf("forward write denied: %s", reason)
			}
			first := strings.Replace(versioned(stateV5, 7), step1.from, step1.to, 1)
			reason := stateStep(t, root, env, "toolu_b", first)
			if !strings.Contains(reason, `active_workflow.phase_status["01-requirements"] was "completed" but is `) {
				t.Fatalf("first step: %q", reason)
			}
			writeFile(t, root, ".isdlc/state.json", first) // it happened anyway
			second := strings.Replace(versioned(stateV5, 8), `"01-requirements": "completed", "02-design"`, `"01-requirements": "pending", "02-design"`, 1)
			reason = stateStep(t, root, env, "toolu_c", second)
			if !strings.Contains(reason, `[DES-STATE-V8-STATUS] .isdlc/state.json: active_workflow.phase_status["01-requirements"] is "pending" in this write, but des saw it reach "completed" since the workflow started`) {
				t.Errorf("second step: %q", reason)
			}
			if raw, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json")); string(raw) != first {
				t.Errorf("the second step landed:\n%s", raw)
			}
			// Without the memory (another state directory) only the disk speaks, and it says less.
			fresh := []string{"DES_STATE_DIR=" + t.TempDir()}
			if r := runHookProcess(t, root, fresh, writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": second})); strings.Contains(r.stdout, "des saw") {
				t.Errorf("memory leaked between state directories: %q", r.stdout)
			}
		})
	}
}

// A recovery exemption covers the write that introduces it, not the later
// writes that keep it in the document.
func TestE2ERecoveryExemptionAppliesOnce(t *testing.T) {
	t.Parallel()
	root, env := t.TempDir(), []string{"DES_STATE_DIR=" + t.TempDir()}
	writeFile(t, root, ".isdlc/state.json", stateV5)
	rollback := strings.Replace(versioned(stateV5, 6), `"type": "feature",`, `"type": "feature", "recovery_action": {"type": "rollback"},`, 1)
	rollback = strings.Replace(rollback, `"01-requirements": "completed", "02-design"`, `"01-requirements": "in_progress", "02-design"`, 1)
	rollback = strings.Replace(rollback, `"01-requirements": {"status": "completed"}`, `"01-requirements": {"status": "in_progress"}`, 1)
	if reason := stateStep(t, root, env, "toolu_r1", rollback); reason != "" {
		t.Fatalf("the rollback itself denied: %s", reason)
	}
	later := strings.Replace(strings.Replace(rollback, `"state_version": 6`, `"state_version": 7`, 1), `"02-design": "in_progress"`, `"02-design": "pending"`, 1)
	later = strings.Replace(later, `"02-design": {"status": "in_progress"}`, `"02-design": {"status": "pending"}`, 1)
	reason := stateStep(t, root, env, "toolu_r2", later)
	if !strings.Contains(reason, `moves down from "in_progress" (on disk) to "pending" (in this write)`) || !strings.Contains(reason, `recovery_action.type "rollback" is on disk already`) {
		t.Errorf("a later write keeping the rollback: %q", reason)
	}
	// Moving forward again after the rollback is fine: the memory went down with it.
	forward := strings.Replace(strings.Replace(rollback, `"state_version": 6`, `"state_version": 7`, 1), `"01-requirements": "in_progress", "02-design"`, `"01-requirements": "completed", "02-design"`, 1)
	forward = strings.Replace(forward, `"01-requirements": {"status": "in_progress"}`, `"01-requirements": {"status": "completed"}`, 1)
	if reason := stateStep(t, root, env, "toolu_r3", forward); reason != "" {
		t.Errorf("forward after the rollback: %s", reason)
	}
}
