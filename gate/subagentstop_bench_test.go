package gate_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
)

// BenchmarkGate2 is Gate 2 for a 14-phase step whose subagent changed 1,000
// files (half of them outside allowed_file_patterns), in process, git
// included: the budget is a median at or under 100 ms.
func BenchmarkGate2(b *testing.B) {
	root := b.TempDir()
	initRepo(b, root)
	file := func(i int) string {
		dir := "src/app"
		if i%2 == 1 {
			dir = "lib/other"
		}
		return fmt.Sprintf("%s/d%02d/f%04d.go", dir, i%50, i)
	}
	for i := range 1000 {
		testenv.WriteFile(b, root, file(i), "package x\n")
	}
	runGit(b, root, "add", ".")
	runGit(b, root, "commit", "-q", "-m", "base")
	for i := range 1000 { // every file modified after the commit
		testenv.WriteFile(b, root, file(i), "package x // changed\n")
	}

	var started []audit.Entry
	for _, name := range canonical {
		started = append(started, audit.Entry{Event: audit.PhaseStarted, Fields: map[string]any{
			"step_file": stepRel, "phase": name, "from": "NOT_EXECUTED", "to": "IN_PROGRESS", "confirmed": true}})
	}
	step := map[string]any{"task_id": "01-01", "state": map[string]any{"status": "IN_PROGRESS"},
		"allowed_file_patterns": []any{"src/app/**/*.go"},
		"tdd_cycle":             map[string]any{"max_turns": 50, "duration_minutes": 90, "phase_execution_log": fourteenPhases()}}
	data, _ := json.MarshalIndent(step, "", "  ")
	testenv.WriteFile(b, root, stepRel, string(data))
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
