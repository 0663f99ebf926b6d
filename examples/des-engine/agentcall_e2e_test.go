package main

import (
	"strings"
	"testing"
)

// A person's commands whose run by the agent must not count (a resolution,
// accepting des's files, adopting the trail) are refused inside an agent's
// tool call: with Claude Code's variables in the environment, or, with them
// unset, while a tool call of the project is recorded as running (the
// agent's own Bash call is one). The resolution is not written.
func TestE2EPersonsCommandsRefusedInsideAgentCall(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "TODO")
	step := "docs/feature/shop/steps/01-02.json"
	stale := `{"task_id": "01-02", "state": {"status": "IN_PROGRESS"}, "tdd_cycle": {"phase_execution_log": [
  {"phase_name": "RED_ACCEPTANCE", "status": "IN_PROGRESS", "started_at": "2020-01-01T00:00:00Z"}]}}`
	writeFile(t, root, step, stale)
	commands := [][]string{{"stale", "--resolve", step}, {"integrity", "accept"}, {"audit", "verify", "--adopt"}}
	for _, env := range [][]string{{"CLAUDECODE=1"}, {"CLAUDE_CODE_CHILD_SESSION=1"}} {
		for _, args := range commands {
			r := runSub(t, root, "", env, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "refused inside an agent's tool call: "+strings.Split(env[0], "=")[0]) {
				t.Errorf("%v with %v: exit %d, want 2 and a refusal\n%s%s", args, env, r.code, r.stdout, r.stderr)
			}
		}
	}
	// The variables unset (env -u CLAUDECODE ...) from inside the agent's
	// Bash call: the call is recorded as running.
	bash := bashEvent(t, root, "env -u CLAUDECODE des-hook stale --resolve "+step)
	if reason := denyReason(t, runHookProcess(t, root, nil, bash)); reason != "" {
		t.Fatalf("the Bash call: %q", reason)
	}
	for _, args := range commands {
		r := runSub(t, root, "", nil, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "refused inside an agent's tool call: tool calls are running") {
			t.Errorf("%v during the agent's call: exit %d, want 2 and a refusal\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if got := readFileString(t, root, step); got != stale {
		t.Errorf("the step file changed:\n%s", got)
	}
	// Once the call ended (PostToolUse), the person's run counts.
	post := bashEvent(t, root, "env -u CLAUDECODE des-hook stale --resolve "+step)
	post["hook_event_name"] = "PostToolUse"
	post["tool_response"] = map[string]any{"stdout": "", "stderr": "", "interrupted": false}
	runHookProcess(t, root, nil, post)
	if r := runSub(t, root, "", nil, "stale", "--resolve", step); r.code != 0 || !strings.Contains(r.stdout, "-> PARTIAL") {
		t.Errorf("after the call: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
