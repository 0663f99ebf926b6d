package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// subagentAgentID is the agent_id of the corpus's real subagent payload
// (curated/PostToolUse_Write.json), used when the corpus is absent too.
const subagentAgentID = "ad004ff72632ba099"

// asSubagent makes ev a tool call made inside a subagent, as Claude Code
// sends it: the event carries agent_id and agent_type.
func asSubagent(ev map[string]any) map[string]any {
	evAgent(subagentAgentID, "builder")(ev)
	return ev
}

// TestSubagentCorpusPayloadHasAgentID holds the constant above to the real
// payload, so that the tests below use what Claude Code sends.
func TestSubagentCorpusPayloadHasAgentID(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(corpusDir, "curated", "PostToolUse_Write.json"))
	if err != nil {
		t.Skipf("corpus not here: %v", err)
	}
	var ev struct {
		AgentID   string `json:"agent_id"`
		AgentType string `json:"agent_type"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.AgentID != subagentAgentID || ev.AgentType == "" {
		t.Errorf("the corpus payload has agent_id %q, agent_type %q", ev.AgentID, ev.AgentType)
	}
}

// wantAgentID checks that the last audit entry of event carries agent_id
// want ("" : no agent_id at all).
func wantAgentID(t *testing.T, root, event, toolUseID, want string) {
	t.Helper()
	var found map[string]any
	for _, e := range auditLines(t, root, event) {
		if e["tool_use_id"] == toolUseID {
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no %s entry for %s in the audit trail:\n%s", event, toolUseID, auditText(t, root))
	}
	got, has := found["agent_id"]
	switch {
	case want == "" && has:
		t.Errorf("%s of a main-thread call has agent_id %v: %v", event, got, found)
	case want != "" && got != want:
		t.Errorf("%s of a subagent's call: agent_id = %v, want %q: %v", event, got, want, found)
	}
}

// The audit entries the guards write for a subagent's tool call name the
// subagent (its agent_id); a main-thread call's entries do not.
func TestE2EAuditEntriesOfSubagentCallsCarryAgentID(t *testing.T) {
	t.Parallel()
	for _, sub := range []bool{true, false} {
		who := map[bool]string{true: "subagent", false: "main thread"}[sub]
		want := map[bool]string{true: subagentAgentID}[sub]
		as := func(ev map[string]any) map[string]any {
			if sub {
				return asSubagent(ev)
			}
			return ev
		}
		t.Run(who, func(t *testing.T) {
			t.Run("blocked step write", func(t *testing.T) {
				root := t.TempDir()
				rel := "docs/feature/shop/steps/01-01.json"
				disk := `{"task_id": "01-01", "state": {"status": "IN_PROGRESS"}, "tdd_cycle": {"phase_execution_log": [{"phase_name": "PREPARE", "status": "NOT_EXECUTED"}]}}`
				writeFile(t, root, rel, disk)
				jump := strings.Replace(disk, `"NOT_EXECUTED"`, `"EXECUTED", "outcome": "PASS"`, 1)
				ev := as(writeToolEvent(root, "Write", rel, map[string]any{"content": jump}))
				if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-PHASE-JUMP]") {
					t.Fatalf("reason = %q", reason)
				}
				wantAgentID(t, root, "DOCUMENT_WRITE_BLOCKED", "toolu_w", want)
			})
			t.Run("allowed step write, confirmed", func(t *testing.T) {
				root := t.TempDir()
				rel := "docs/feature/shop/steps/01-01.json"
				disk := `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": [{"phase_name": "PREPARE", "status": "NOT_EXECUTED"}]}}`
				writeFile(t, root, rel, disk)
				start := strings.Replace(strings.Replace(disk, `"NOT_EXECUTED"`, `"IN_PROGRESS"`, 1), `"TODO"`, `"IN_PROGRESS"`, 1)
				if r := runHookProcess(t, root, nil, as(writeToolEvent(root, "Write", rel, map[string]any{"content": start}))); denyReason(t, r) != "" {
					t.Fatalf("allowed start denied: %s", r.stdout)
				}
				writeFile(t, root, rel, start) // Claude Code writes the file
				post := as(writeToolEvent(root, "Write", rel, map[string]any{"content": start}))
				post["hook_event_name"] = "PostToolUse"
				post["tool_response"] = map[string]any{"filePath": filepath.Join(root, rel), "success": true}
				if r := runHookProcess(t, root, nil, post); r.code != 0 || r.stdout != "" {
					t.Fatalf("PostToolUse: %+v", r)
				}
				wantAgentID(t, root, "PHASE_STARTED", "toolu_w", want)
				wantAgentID(t, root, "TASK_STATE_CHANGED", "toolu_w", want)
			})
			t.Run("write to DES's own files", func(t *testing.T) {
				root := t.TempDir()
				if reason := denyReason(t, runHookProcess(t, root, nil, as(writeEvent(root, "Edit", ".des/config.json")))); !strings.HasPrefix(reason, "[DES-PROTECTED-PATH] ") {
					t.Fatalf("reason = %q", reason)
				}
				wantAgentID(t, root, "DOCUMENT_WRITE_BLOCKED", "toolu_1", want)
			})
			t.Run("Bash write to the workflow state", func(t *testing.T) {
				root := t.TempDir()
				writeFile(t, root, ".isdlc/state.json", stateV5)
				ev := as(map[string]any{"session_id": "s", "cwd": root, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_b",
					"tool_input": map[string]any{"command": "echo '{}' > .isdlc/state.json"}})
				if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-STATE-BASH-WRITE]") {
					t.Fatalf("reason = %q", reason)
				}
				wantAgentID(t, root, "DOCUMENT_WRITE_BLOCKED", "toolu_b", want)
			})
			t.Run("commit of an unfinished step", func(t *testing.T) {
				root := gitProject(t)
				writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
				git(t, root, "add", stepPath)
				ev := bashEvent(t, root, heredocCommit)
				delete(ev, "agent_id")
				delete(ev, "agent_type")
				ev["tool_use_id"] = "toolu_c"
				if reason := denyReason(t, runHookProcess(t, root, nil, as(ev))); !strings.Contains(reason, "[DES-COMMIT-PHASE-OPEN]") {
					t.Fatalf("reason = %q", reason)
				}
				wantAgentID(t, root, "COMMIT_VALIDATION_FAILED", "toolu_c", want)
			})
			t.Run("DES's files changed by a command", func(t *testing.T) {
				root := effProject(t)
				begin(t, root)
				command := `echo x > .des/config.json`
				if reason := denyReason(t, runHookProcess(t, root, nil, as(effBashEvent(root, "PreToolUse", "toolu_x", command)))); reason == "" {
					t.Log("the command was not denied before it ran; its effects are undone after")
				}
				sh(t, root, command)
				wantRestored(t, readAfter(t, runHookProcess(t, root, nil, as(effBashEvent(root, "PostToolUse", "toolu_x", command)))), ".des/config.json")
				wantAgentID(t, root, "INTEGRITY_VIOLATION", "toolu_x", want)
			})
		})
	}
}
