package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A document that is not JSON is denied with where it breaks, as a person
// editing it counts: line and column.
func TestE2EInvalidJSONDenyNamesLineAndColumn(t *testing.T) {
	t.Parallel()
	// The value of "state" on line 3 starts with an 'o' at column 12.
	const broken = "{\n  \"task_id\": \"01-01\",\n  \"state\": oops\n}\n"
	const where = "line 3, column 12"

	t.Run("step file write", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
		reason := denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, "Write", e2eStep, map[string]any{"content": broken})))
		wantDeny(t, reason, "[DES-STEPFILE-SCHEMA] ", where)
	})
	t.Run("step file edit", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, e2eStep, "{\n  \"task_id\": \"01-01\",\n  \"state\": {\"status\": \"TODO\"},\n  \"tdd_cycle\": {\"phase_execution_log\": []}\n}\n")
		ev := writeToolEvent(root, "Edit", e2eStep, map[string]any{"old_string": `{"status": "TODO"}`, "new_string": "oops"})
		wantDeny(t, denyReason(t, runHookProcess(t, root, nil, ev)), "[DES-STEPFILE-SCHEMA] ", where)
	})
	t.Run("workflow state write", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, ".isdlc/state.json", stateV5)
		reason := denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": broken})))
		wantDeny(t, reason, "[DES-STATE-INVALID] ", where)
	})
	t.Run("task graph write", func(t *testing.T) {
		root := t.TempDir()
		rel := ".claude/state/active_task_graph.json"
		reason := denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, "Write", rel, map[string]any{"content": broken})))
		wantDeny(t, reason, "[DES-TASKGRAPH-INVALID] ", where)
	})
	t.Run("Gate 1 reads the step file", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, e2eStep, broken)
		reason := denyReason(t, runHookProcess(t, root, nil, agentEvent(root, "Agent", renderPrompt(t, "execute-step"))))
		wantDeny(t, reason, "[DES-STEPFILE-SCHEMA] ", where)
	})
	t.Run("Gate 3 commits the step file", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, stepPath, broken)
		r := runIn(t, root, []string{"CLAUDE_PROJECT_DIR=" + root}, "precommit", filepath.FromSlash(stepPath))
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
		}
		wantDeny(t, r.stdout, stepPath+": [DES-STEPFILE-SCHEMA] ", where)
	})
}

func wantDeny(t *testing.T, reason string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(reason, w) {
			t.Errorf("the deny lacks %q:\n%s", w, reason)
		}
	}
}
