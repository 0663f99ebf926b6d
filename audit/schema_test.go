package audit

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// representative holds entries of every event type as the code that writes
// them builds them: gate/preinvocation.go, gate/documentwrite.go,
// gate/tooluse.go, gate/bashguard.go, des.go and stale.go today, and the
// fields Gate 2 and Gate 3 are specified to write. The gates' own tests
// append through the real builders, so a builder that drifts from its
// schema fails there too.
func representative() map[EventType][]Entry {
	const step, tu, sess = "docs/feature/shop/steps/01-01.json", "toolu_01A", "sess-1"
	phase := func(ev EventType, from, to string, extra map[string]any) Entry {
		f := map[string]any{"step_file": step, "phase": "RED_UNIT", "from": from, "to": to}
		for k, v := range extra {
			f[k] = v
		}
		return Entry{Event: ev, Fields: f}
	}
	return map[EventType][]Entry{
		TaskInvocationValidated: {{Event: TaskInvocationValidated, Fields: map[string]any{
			"step_file": step, "tool_use_id": tu, "session_id": sess, "origin": "execute-step", "level": "full",
			"codes": []string{}, "duration_ms": int64(3)}},
			{Event: TaskInvocationValidated, Fields: map[string]any{ // level none: no step file
				"step_file": "", "tool_use_id": tu, "session_id": sess, "origin": "", "level": "none",
				"codes": []string{"DES-PROMPT-WARN"}, "duration_ms": int64(0)}}},
		TaskInvocationRejected: {{Event: TaskInvocationRejected, Fields: map[string]any{
			"step_file": step, "tool_use_id": tu, "session_id": sess, "origin": "execute-step", "level": "full",
			"codes": []string{"DES-TEMPLATE-SECTION", "DES-STATE-DONE"}, "duration_ms": int64(12)}}},
		PreExecuteSafetyPassed: {{Event: PreExecuteSafetyPassed, Fields: map[string]any{"step_file": step, "tool_use_id": tu, "codes": []string{}}}},
		PreExecuteSafetyBlocked: {{Event: PreExecuteSafetyBlocked, Fields: map[string]any{
			"step_file": step, "tool_use_id": tu, "codes": []string{"DES-SAFETY-TURNS"}}}},
		TaskInvocationStarted: {{Event: TaskInvocationStarted, Fields: map[string]any{
			"step_file": step, "tool_use_id": tu, "session_id": sess, "agent_type": "software-crafter", "status": "IN_PROGRESS"}}},
		TaskStateChanged: {
			{Event: TaskStateChanged, Fields: map[string]any{"step_file": step, "from": "TODO", "to": "IN_PROGRESS", "by": "gate1", "tool_use_id": tu}},
			{Event: TaskStateChanged, Fields: map[string]any{"step_file": step, "from": "IN_PROGRESS", "to": "DONE", "by": "write",
				"tool_use_id": tu, "session_id": sess, "confirmed": true}},
			{Event: TaskStateChanged, Fields: map[string]any{"step_file": step, "from": "FAILED", "to": "PARTIAL", "by": "stale-resolution"}},
			{Event: TaskStateChanged, Fields: map[string]any{"step_file": step, "from": "IN_PROGRESS", "to": "FAILED", "by": "gate2"}},
		},
		HookError: {{Event: HookError, Fields: map[string]any{"step_file": step, "tool_use_id": tu, "error": "rename: permission denied",
			"msg": "the TASK_STATE_CHANGED recorded just before was not applied: the step file could not be rewritten"}}},
		IntegrityViolation: {{Event: IntegrityViolation, Fields: map[string]any{"gate": "tool_use", "tool": "Bash", "paths": []any{".des/config.json"},
			"changes": []any{map[string]any{"path": ".des/config.json", "kind": "file", "what": "modified", "was": "file", "now": "file", "restored": true}},
			"codes":   []string{"DES-INTEGRITY"}, "tool_use_id": tu, "session_id": sess}}},
		GitSync: {{Event: GitSync, Fields: map[string]any{"gate": "tool_use", "tool": "Bash", "paths": []any{step},
			"files":       []any{map[string]any{"path": step, "what": "modified", "was": strings.Repeat("a", 64), "now": strings.Repeat("b", 64), "from": "set_aside", "kept": "0a1b2c3d4e5f"}},
			"head_before": map[string]any{"commit": strings.Repeat("1", 40), "ref": "refs/heads/main"}, "head_after": map[string]any{"commit": strings.Repeat("2", 40), "ref": "refs/heads/feat"},
			"git_commands": []string{"checkout"}, "tool_use_id": tu, "session_id": sess, "agent_id": "a1"}}},
		PhaseEscalation: {{Event: PhaseEscalation, Fields: map[string]any{"type": "gate_blocked", "phase": "06-implementation",
			"codes": []string{"DES-GATE-BLOCKED"}, "state_file": ".isdlc/state.json", "tool": "Skill", "tool_use_id": tu, "session_id": sess}}},
		TestRunObserved: {
			{Event: TestRunObserved, Fields: map[string]any{"runner": "go test", "command": "cd shop && go test ./...", "result": "failed",
				"exit_code": 1, "interrupted": false, "passed": 3, "failed": 1, "skipped": 0, "coverage": 82.5,
				"signature": "--- FAIL: TestCart (0.00s)", "state_file": ".isdlc/state.json", "isdlc_phase": "06-implementation",
				"step_file": step, "step_phase": "RED_UNIT", "task_phase": "impl-auth", "tool_use_id": tu, "session_id": sess, "agent_id": "a1"}},
			{Event: TestRunObserved, Fields: map[string]any{"runner": "pytest", "command": "pytest", "result": "inconclusive", "interrupted": true}},
		},
		TestIterationUpdated: {{Event: TestIterationUpdated, Fields: map[string]any{"state_file": ".isdlc/state.json", "phase": "06-implementation",
			"current_iteration": 3, "max_iterations": 10, "last_test_result": "failed", "completed": true, "status": "escalated", "escalation_reason": "circuit_breaker"}}},
		WriteNotConfirmed: {{Event: WriteNotConfirmed, Fields: map[string]any{"step_file": "docs/feature/x/steps/01-01.json",
			"what": `at /state/status the write allowed "IN_PROGRESS", the file holds "TODO"`, "tool_use_id": "toolu_1"}}},
		TaskGraphUpdated: {{Event: TaskGraphUpdated, Fields: map[string]any{"task_graph": ".claude/state/active_task_graph.json", "phase": "verify-auth",
			"status": "failed", "from": "pending", "found": "record", "gate2_failed": false, "verdict": "FAIL", "verified_phase": "impl-auth", "verified_retries": 2,
			"wave_from": 1, "wave_to": 1, "wave_advanced": false,
			"agent_id": "a1", "agent_type": "verifier", "session_id": sess, "tool_use_id": tu}}},
		DocumentWriteBlocked: {
			{Event: DocumentWriteBlocked, Fields: map[string]any{"gate": "document_write", "tool": "Write", "paths": []any{step}, "kind": "step",
				"codes": []string{"DES-STEP-TRANSITION"}, "tool_use_id": tu, "session_id": sess}},
			{Event: DocumentWriteBlocked, Fields: map[string]any{"gate": "tool_use", "tool": "Edit", "paths": []any{".des/policies/x.rego"},
				"codes": []string{"DES-PROTECTED-PATH"}}},
			{Event: DocumentWriteBlocked, Fields: map[string]any{"gate": "tool_use", "tool": "Bash", "paths": []any{step},
				"codes": []string{"DES-STATE-BASH-WRITE"}, "tool_use_id": tu, "session_id": sess}},
		},
		PhaseStarted:   {phase(PhaseStarted, "NOT_EXECUTED", "IN_PROGRESS", nil)},
		PhaseCompleted: {phase(PhaseCompleted, "IN_PROGRESS", "EXECUTED", map[string]any{"outcome": "PASS", "tool_use_id": tu, "session_id": sess, "confirmed": true})},
		PhaseSkipped:   {phase(PhaseSkipped, "NOT_EXECUTED", "SKIPPED", map[string]any{"blocked_by": "NOT_APPLICABLE: no UI"})},
		PhaseFailed:    {phase(PhaseFailed, "IN_PROGRESS", "FAILED", map[string]any{"outcome": "FAIL"})},
		PolicyException: {{Event: PolicyException, Fields: map[string]any{
			"gate": "pre_commit", "code": "DES-STEPFILE-OBSOLETE", "msg": "step file s.json uses ...", "policy": "des.stepfile"}}},
		StaleResolution: {{Event: StaleResolution, Fields: map[string]any{
			"step_file": step, "phases": []string{"GREEN", "REFACTOR"}, "from": "IN_PROGRESS", "to": "PARTIAL"}}},
		SubagentStopValidation: {
			{Event: SubagentStopValidation, Fields: map[string]any{"step_file": step, "outcome": "FAIL", "codes": []string{"DES-PHASE-GAP"},
				"action": "block", "agent_id": "a1", "agent_type": "software-crafter", "tool_use_id": tu, "session_id": sess,
				"transcript": "/home/u/.claude/projects/p/agent-a1.jsonl", "reason": "phase GREEN was not executed", "duration_ms": 41.5}},
			{Event: SubagentStopValidation, Fields: map[string]any{"step_file": "", "outcome": "NO_OPINION", "codes": []string{}, "action": "none"}},
		},
		ScopeViolation: {{Event: ScopeViolation, Fields: map[string]any{
			"step_file": step, "files": []string{"src/other.go"}, "patterns": []string{"src/shop/**"}, "agent_id": "a1", "session_id": sess}}},
		CommitValidationPassed: {{Event: CommitValidationPassed, Fields: map[string]any{"step_file": step, "codes": []string{}, "source": "git-hook"}}},
		CommitValidationFailed: {{Event: CommitValidationFailed, Fields: map[string]any{
			"step_file": step, "codes": []string{"DES-COMMIT-GATE2"}, "source": "claude-code", "tool_use_id": tu, "session_id": sess}}},
		InvalidTransition: {{Event: InvalidTransition, Fields: map[string]any{
			"step_file": step, "phase": "GREEN", "from": "NOT_EXECUTED", "to": "EXECUTED", "codes": []string{"DES-PHASE-TRANSITION"}}}},
	}
}

func TestEventSchemasAcceptWhatTheCodeWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rep := representative()
	for _, ev := range EventTypes() {
		t.Run(string(ev), func(t *testing.T) {
			entries := rep[ev]
			if len(entries) == 0 {
				t.Fatalf("no representative entry of %s", ev)
			}
			var schema struct {
				ID    string `json:"$id"`
				Title string `json:"title"`
				Ref   string `json:"$ref"`
			}
			if err := json.Unmarshal(Schema(ev), &schema); err != nil || schema.Title != string(ev) ||
				!strings.HasSuffix(schema.ID, "/"+string(ev)+".schema.json") || schema.Ref != "entry.schema.json" {
				t.Errorf("schema of %s: %+v, %v", ev, schema, err)
			}
			l := mustOpen(t, t.TempDir(), fixedClock(day))
			for _, e := range entries {
				if err := l.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
				// As pending records carry them: through JSON and back.
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				var back Entry
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				if err := l.Append(ctx, back); err != nil {
					t.Fatalf("after a JSON round trip: %v", err)
				}
			}
			assertIntact(t, l.Dir(), 2*len(entries))
		})
	}
	if len(rep) != len(EventTypes()) {
		t.Errorf("%d event types with representatives, want %d", len(rep), len(EventTypes()))
	}
	if Schema("") == nil || Schema("NO_SUCH_EVENT") != nil {
		t.Error(`Schema("") must be the shared schema, Schema of an unknown event nil`)
	}
}

func TestSchemaRefusesBadEntries(t *testing.T) {
	t.Parallel()
	good := representative()
	with := func(ev EventType, k string, v any) Entry {
		e := good[ev][0]
		f := map[string]any{}
		for kk, vv := range e.Fields {
			f[kk] = vv
		}
		if v == nil {
			delete(f, k)
		} else {
			f[k] = v
		}
		return Entry{Event: ev, Fields: f}
	}
	for _, tc := range []struct {
		name  string
		entry Entry
		want  string // in the error: the event and the JSON pointer
	}{
		{"missing field", with(SubagentStopValidation, "outcome", nil), "SUBAGENT_STOP_VALIDATION: (root): missing properties: 'outcome'"},
		{"wrong type", with(TaskStateChanged, "from", 3), "TASK_STATE_CHANGED: /from: expected string, but got number"},
		{"not in enum", with(TaskStateChanged, "by", "someone"), "TASK_STATE_CHANGED: /by: value must be one of"},
		{"array item", with(CommitValidationFailed, "codes", []any{"A", 1}), "COMMIT_VALIDATION_FAILED: /codes/1: expected string"},
		{"passed with codes", with(CommitValidationPassed, "codes", []string{"X"}), "COMMIT_VALIDATION_PASSED: /codes: maximum 0 items"},
		{"phase event and status disagree", with(PhaseStarted, "to", "EXECUTED"), "PHASE_STARTED: /to: value must be \"IN_PROGRESS\""},
		{"negative duration", with(TaskInvocationValidated, "duration_ms", -1), "TASK_INVOCATION_VALIDATED: /duration_ms: must be >= 0"},
		{"unknown event", Entry{Event: "TASK_DONE"}, `no schema for event type "TASK_DONE"`},
		{"timestamp out of RFC 3339 range", Entry{Time: day.AddDate(9000, 0, 0), Event: HookError, Fields: map[string]any{"error": "e"}}, "HOOK_ERROR: /timestamp: does not match pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "trail")
			// A valid entry ahead of the bad one is not written either.
			err := mustOpen(t, dir).Append(context.Background(), hookError(nil), tc.entry)
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "entry 1: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant ErrSchema for entry 1 with %q", err, tc.want)
			}
			assertUntouched(t, dir)
		})
	}
}
