package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A new turn (UserPromptSubmit) through the hook leaves run records that
// only look old: their modification time was set back (touch -d), but
// their change time says they are new, so they are neither removed nor, as
// removals des made, kept removed.
func TestE2EUserPromptKeepsBackdatedRunRecords(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	names := []string{"toolu_old.json", "toolu_live.json", "toolu_live.stop.json"}
	writeFile(t, root, ".des/runs/toolu_live.json", `{"step_file": "`+effStep+`"}`+"\n")
	writeFile(t, root, ".des/runs/toolu_live.stop.json", `{"tool_use_id": "toolu_live"}`+"\n")
	old := time.Now().Add(-72 * time.Hour)
	for _, name := range names {
		if err := os.Chtimes(filepath.Join(root, ".des/runs", name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	r := runHookProcess(t, root, nil, userPromptEv(root, "go on"))
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("UserPromptSubmit: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	for _, name := range names {
		if _, err := os.Lstat(filepath.Join(root, ".des/runs", name)); err != nil {
			t.Errorf("%s: %v, want it kept", name, err)
		}
	}
}
