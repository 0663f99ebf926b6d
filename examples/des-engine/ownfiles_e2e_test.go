package main

import (
	"strings"
	"testing"
)

// des's own files are never an agent's change, whatever happened to an
// earlier call: a Bash call declined by the user (its PostToolUse never
// comes), then a new prompt (the subagent registry takes its lock, creating
// .des/sessions/turns.lock), then an ordinary command. A real Claude Code
// 2.1.270 sequence.
func TestE2EOwnLockFileAfterDeclinedCall(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{}`)
	declined := bashEvent(t, root, "rm -rf build")
	declined["tool_use_id"] = "toolu_declined"
	if r := runHookProcess(t, root, nil, declined); r.code != 0 || r.stdout != "" {
		t.Fatalf("declined call's PreToolUse: %+v", r)
	}
	prompt := map[string]any{"session_id": declined["session_id"], "cwd": root, "hook_event_name": "UserPromptSubmit", "prompt": "never mind, say hello"}
	if r := runHookProcess(t, root, nil, prompt); r.code != 0 || r.stdout != "" {
		t.Fatalf("UserPromptSubmit: %+v", r)
	}
	hello := bashEvent(t, root, "echo hello")
	hello["tool_use_id"] = "toolu_hello"
	if r := runHookProcess(t, root, nil, hello); r.code != 0 || r.stdout != "" {
		t.Fatalf("echo hello PreToolUse: %+v", r)
	}
	hello["hook_event_name"] = "PostToolUse"
	hello["tool_response"] = map[string]any{"stdout": "hello", "stderr": "", "interrupted": false}
	if r := runHookProcess(t, root, nil, hello); strings.Contains(r.stdout, "DES-INTEGRITY") {
		t.Errorf("des flagged its own file: %s", r.stdout)
	}
}
