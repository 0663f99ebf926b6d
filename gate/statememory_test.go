package gate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/gate"
)

const memState = `{"state_version": 1, "active_workflow": {"phases": ["a", "b"], "current_phase": "a", "current_phase_index": 0,
 "phase_status": {"a": "completed", "b": "in_progress"}}}`

// The memory moves only when an allowed write is confirmed to have landed,
// and a memory that cannot be read stops the guard (fail closed).
func TestStateMemoryKeptOnConfirm(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	guard := p.eng.DocumentWriteGate()
	guard.StateDir = t.TempDir()
	state := filepath.Join(p.root, ".isdlc", "state.json")
	os.MkdirAll(filepath.Dir(state), 0o755)
	os.WriteFile(state, []byte(memState), 0o644)
	next := strings.Replace(memState, `"state_version": 1`, `"state_version": 2`, 1)
	call := gate.WriteCall{Tool: "Write", Path: state, Content: &next, ToolUseID: "toolu_m1"}
	res, err := guard.Check(t.Context(), p.eng, call)
	if err != nil || res.Denied() {
		t.Fatalf("Check: %v %s", err, res.Reason())
	}
	memories := func() []string {
		m, _ := filepath.Glob(filepath.Join(guard.StateDir, "statewrite", "*.json"))
		return m
	}
	if len(memories()) != 0 {
		t.Fatal("memory kept before the write landed")
	}
	// Refused by the user: the file does not hold the content; nothing is kept.
	if ok, err := guard.Confirm(t.Context(), "toolu_m1"); ok || err != nil {
		t.Fatalf("Confirm of a write that did not land: %v %v", ok, err)
	}
	if len(memories()) != 0 {
		t.Fatal("memory kept for a write that did not land")
	}
	if _, err := guard.Check(t.Context(), p.eng, call); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(state, []byte(next), 0o644)
	if ok, err := guard.Confirm(t.Context(), "toolu_m1"); !ok || err != nil {
		t.Fatalf("Confirm: %v %v", ok, err)
	}
	m := memories()
	if len(m) != 1 {
		t.Fatalf("memories: %v", m)
	}
	raw, _ := os.ReadFile(m[0])
	if !strings.Contains(string(raw), `"a":"completed"`) || !strings.Contains(string(raw), `"path":".isdlc/state.json"`) {
		t.Errorf("memory: %s", raw)
	}
	os.WriteFile(m[0], []byte("{oops"), 0o600)
	if _, err := guard.Check(t.Context(), p.eng, call); err == nil || !strings.Contains(err.Error(), "remove the file") {
		t.Errorf("corrupt memory: %v", err)
	}
}
