package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A new turn (UserPromptSubmit) removes run records older than a day, while
// a Bash call is in flight: its effect check takes the removals for des's
// own and neither restores the records nor blames the command; a record
// removed by the command itself is still restored.
func TestE2EUserPromptPrunesOldRunRecords(t *testing.T) {
	root := effProject(t)
	writeFile(t, root, ".des/runs/toolu_new.json", `{"step_file": "`+effStep+`"}`+"\n")
	writeFile(t, root, ".des/runs/prompt-aa.json", `{"step_file": "`+effStep+`"}`+"\n")
	writeFile(t, root, ".des/runs/toolu_old.stop.json", `{"tool_use_id": "toolu_old"}`+"\n")
	old := time.Now().Add(-25 * time.Hour)
	for _, name := range []string{"toolu_old.json", "prompt-aa.json", "toolu_old.stop.json"} {
		if err := os.Chtimes(filepath.Join(root, ".des/runs", name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	begin(t, root)
	if reason := denyReason(t, runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_b", "rm .des/runs/toolu_new.json"))); reason != "" {
		t.Logf("PreToolUse said: %s", reason) // the check after the command is what is tested
	}
	sh(t, root, "rm .des/runs/toolu_new.json")
	r := runHookProcess(t, root, nil, map[string]any{"session_id": "s1", "cwd": root, "hook_event_name": "UserPromptSubmit", "prompt": "go on"})
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("UserPromptSubmit: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	post := readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_b", "rm .des/runs/toolu_new.json")))
	wantRestored(t, post, ".des/runs/toolu_new.json")
	for _, name := range []string{"toolu_old.json", "prompt-aa.json", "toolu_old.stop.json"} {
		if _, err := os.Lstat(filepath.Join(root, ".des/runs", name)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed", name, err)
		}
	}
	fileText(t, root, ".des/runs/toolu_new.json")
}
