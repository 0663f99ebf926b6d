package gate_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deterministic-exec/des/gate"
)

// des remembers each workflow content once, the newest last, at most 32
// per identity; another identity or document has its own.
func TestRememberWorkflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := func(phase int) map[string]any {
		return map[string]any{"active_workflow": map[string]any{"type": "feature", "started_at": "2026-11-20T09:00:00Z", "current_phase_index": phase}}
	}
	read := func() map[string]map[string][]string {
		raw, err := os.ReadFile(filepath.Join(dir, "workflows-seen.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]map[string][]string
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	gate.RememberWorkflow(t.Context(), dir, ".isdlc/state.json", doc(0))
	gate.RememberWorkflow(t.Context(), dir, ".isdlc/state.json", doc(0))
	if got := read()[".isdlc/state.json"]["feature@2026-11-20T09:00:00Z"]; len(got) != 1 {
		t.Fatalf("one content remembered twice: %v", got)
	}
	for i := 1; i <= 40; i++ {
		gate.RememberWorkflow(t.Context(), dir, ".isdlc/state.json", doc(i))
	}
	gate.RememberWorkflow(t.Context(), dir, ".des/state.json", doc(0))
	gate.RememberWorkflow(t.Context(), dir, ".isdlc/state.json", map[string]any{"active_workflow": nil})
	m := read()
	sums := m[".isdlc/state.json"]["feature@2026-11-20T09:00:00Z"]
	if len(sums) != 32 {
		t.Errorf("contents kept: %d, want 32", len(sums))
	}
	if len(m[".des/state.json"]) != 1 || len(m[".isdlc/state.json"]) != 1 {
		t.Errorf("documents and identities: %v", fmt.Sprint(len(m[".des/state.json"]), len(m[".isdlc/state.json"])))
	}
}
