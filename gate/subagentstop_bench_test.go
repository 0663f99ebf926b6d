package gate_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
)

// BenchmarkGate2 is Gate 2 for a 14-phase step whose subagent changed 1,000
// files (half of them outside allowed_file_patterns), in process, git
// included: the budget is a median at or under 100 ms.
func BenchmarkGate2(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	root := b.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=b", "-c", "user.email=b@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	for i := range 1000 {
		dir := "src/app"
		if i%2 == 1 {
			dir = "lib/other"
		}
		p := filepath.Join(root, dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	run("add", ".")
	run("commit", "-q", "-m", "base")
	for i := range 1000 { // every file modified after the commit
		dir := "src/app"
		if i%2 == 1 {
			dir = "lib/other"
		}
		p := filepath.Join(root, dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.go", i))
		if err := os.WriteFile(p, []byte("package x // changed\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}

	var log []any
	var started []audit.Entry
	for i, name := range canonical {
		log = append(log, map[string]any{"phase_name": name, "phase_index": i, "status": "EXECUTED", "outcome": "PASS",
			"outcome_details": "tests green", "turn_count": 5, "duration_seconds": 60})
		started = append(started, audit.Entry{Event: audit.PhaseStarted, Fields: map[string]any{
			"step_file": stepRel, "phase": name, "from": "NOT_EXECUTED", "to": "IN_PROGRESS", "confirmed": true}})
	}
	step := map[string]any{"task_id": "01-01", "state": map[string]any{"status": "IN_PROGRESS"},
		"allowed_file_patterns": []any{"src/app/**/*.go"},
		"tdd_cycle":             map[string]any{"max_turns": 50, "duration_minutes": 60, "phase_execution_log": log}}
	data, _ := json.MarshalIndent(step, "", "  ")
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(stepRel)), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, stepRel), data, 0o644); err != nil {
		b.Fatal(err)
	}
	eng, err := des.New(b.Context(), des.WithRoot(root))
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.Audit().Append(b.Context(), started...); err != nil {
		b.Fatal(err)
	}
	check := func() gate.StopResult {
		res, err := eng.CheckStop(b.Context(), gate.Stop{StepFile: stepRel})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	if res := check(); res.Denied() || len(res.OutOfScope) != 500 {
		b.Fatalf("fixture: denied %v (%s), %d out of scope; want a pass with 500 files out of scope", res.Denied(), res.Reason(), len(res.OutOfScope))
	}
	for b.Loop() {
		check()
	}
}

var canonical = []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW", "REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"}
