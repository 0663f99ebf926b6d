package taskgraph

import (
	"context"
	"os"
	"testing"
	"time"
)

const evGraph = `{"task_id": "T-1", "current_wave": 0, "max_retries": 3, "waves": [
 {"phases": [{"phase_id": "impl", "type": "implementation", "objective": "Create calc.py", "status": "completed",
   "deliverable_manifest": {"files": [{"path": "calc.py"}]}}]},
 {"phases": [{"phase_id": "verify", "type": "verification", "verifies_phase_id": "impl", "status": "pending"}]}]}`

func TestEvidenceRememberAndFacts(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	rel := ".claude/state/active_task_graph.json"
	if f := EvidenceFacts(dir, rel, nil); f["known"] != false {
		t.Fatalf("no record: %v", f)
	}
	if err := Remember(context.Background(), dir, rel, []byte(evGraph), Update{PhaseID: "impl", To: StatusCompleted}, "coder", now); err != nil {
		t.Fatal(err)
	}
	// A failed verification sends impl back with a retry.
	if err := Remember(context.Background(), dir, rel, []byte(evGraph), Update{PhaseID: "verify", To: StatusFailed, Reset: "impl", ResetRetries: 1}, "", now); err != nil {
		t.Fatal(err)
	}
	// The plan renamed, and impl renamed too: found by its content.
	_, doc, err := Parse([]byte(`{"task_id": "T-2", "waves": [{"phases": [{"phase_id": "impl-2", "type": "implementation", "objective": "create  Calc.py",
	  "deliverable_manifest": {"files": [{"path": "calc.py"}]}}]}, {"phases": [{"phase_id": "verify", "type": "verification", "verifies_phase_id": "impl-2"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	f := EvidenceFacts(dir, rel, doc)
	phases := f["phases"].(map[string]any)
	impl, ok := phases["impl-2"].(map[string]any)
	if !ok || impl["matched_by"] != "content" || impl["recorded_id"] != "impl" || impl["retries"] != 1 || impl["status"] != StatusPending {
		t.Fatalf("impl-2: %v", phases)
	}
	if v := phases["verify"].(map[string]any); v["status"] != StatusFailed || v["matched_by"] != "phase_id" {
		t.Fatalf("verify: %v", v)
	}
	if f["max_retries"] != 3 || f["known"] != true {
		t.Fatalf("facts: %v", f)
	}
	// The plan done: the record goes.
	done := `{"current_wave": 2, "waves": [{"phases": [{"phase_id": "impl", "type": "implementation", "status": "completed"}]}, {"phases": [{"phase_id": "verify", "type": "verification", "status": "completed"}]}]}`
	if err := Remember(context.Background(), dir, rel, []byte(done), Update{PhaseID: "verify", To: StatusCompleted}, "", now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(MemoryPath(dir, rel)); !os.IsNotExist(err) {
		t.Fatalf("record of a finished plan still there: %v", err)
	}
	// An unreadable record sees nothing.
	if err := os.WriteFile(MemoryPath(dir, rel), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f := EvidenceFacts(dir, rel, doc); f["known"] != false || f["error"] == nil {
		t.Fatalf("bad record: %v", f)
	}
}
