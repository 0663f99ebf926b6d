package gate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/gate"
)

// BenchmarkGate1 is Gate 1 as the hook runs it, in process: a 20 KB prompt
// parsed, its step file read and validated, the 50 step files of its
// directory scanned for stale work, the policy evaluated, the outcome
// audited. The first run moves the task to IN_PROGRESS; the others are
// resumes, which write no step file.
func BenchmarkGate1(b *testing.B) {
	p := newBenchProject(b)
	step := todoStep()
	prompt := render(b, "execute-step", step)
	// Pad TASK_CONTEXT with realistic prose to 20 KB.
	pad := strings.Repeat("The cart total sums line prices times quantities, applies discounts, and rounds half-even to cents. ", 200)
	prompt = strings.Replace(prompt, "<!-- DES-SECTION: QUALITY_GATES -->", pad[:20<<10-len(prompt)]+"\n<!-- DES-SECTION: QUALITY_GATES -->", 1)
	if len(prompt) < 20<<10 {
		b.Fatalf("prompt is %d bytes", len(prompt))
	}
	inv := gate.Invocation{Prompt: prompt, ToolUseID: "toolu_bench", SessionID: "s"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := p.eng.PreInvocation(b.Context(), inv)
		if err != nil || res.Denied() {
			b.Fatalf("%v\n%s", err, res.Reason())
		}
	}
}

func newBenchProject(b *testing.B) *project {
	p := newProjectTB(b)
	p.writeStep(stepRel, todoStep())
	for i := 2; i <= 50; i++ {
		p.writeStep(fmt.Sprintf("docs/feature/shop/steps/01-%02d.json", i), map[string]any{
			"task_id": fmt.Sprintf("01-%02d", i), "state": map[string]any{"status": "DONE"},
			"tdd_cycle": map[string]any{"phase_execution_log": fourteenPhases()},
		})
	}
	return p
}

// canonical is the contract's 14 phases, in order.
var canonical = []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW",
	"REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"}

func fourteenPhases() []any {
	var log []any
	for i, name := range canonical {
		log = append(log, map[string]any{"phase_name": name, "phase_index": i, "status": "EXECUTED", "outcome": "PASS",
			"outcome_details": "all tests green", "started_at": "2026-11-20T10:00:00Z", "ended_at": "2026-11-20T10:05:00Z",
			"turn_count": 3, "duration_seconds": 300, "history": []any{}})
	}
	return log
}
