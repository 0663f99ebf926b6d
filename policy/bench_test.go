package policy_test

import (
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/deterministic-exec/des/policy"
)

// benchInputs are typical facts for each gate: a 14-phase step document for
// the step gates, with a complete prompt's facts for Gate 1, a write for the
// tool gate. Each input is allowed, so every rule body runs to the end.
func benchInputs(b *testing.B) map[policy.Gate]ast.Value {
	phases := []any{}
	for _, p := range []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW",
		"REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"} {
		phases = append(phases, map[string]any{"phase_name": p, "status": "EXECUTED", "outcome": "PASS"})
	}
	step := map[string]any{"step": map[string]any{"path": "docs/feature/x/steps/01-01.json", "document": map[string]any{
		"task_id": "01-01", "state": map[string]any{"status": "IN_PROGRESS"},
		"tdd_cycle": map[string]any{"phase_execution_log": phases},
	}}}
	write := map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/state.json", "tool": "Write"}}}
	invocation := map[string]any{"step": step["step"], "in_progress": []any{}, "prompt": map[string]any{
		"validation": "required", "origin": "command:/nw:execute", "step_file": "docs/feature/x/steps/01-01.json",
		"sections":    []any{"DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "TDD_14_PHASES", "QUALITY_GATES", "OUTCOME_RECORDING", "BOUNDARY_RULES", "TIMEOUT_INSTRUCTION"},
		"phase_words": []any{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW", "REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"},
	}}
	out := map[policy.Gate]ast.Value{}
	for _, g := range policy.Gates() {
		in := step
		switch g {
		case policy.ToolUse:
			in = write
		case policy.PreInvocation:
			in = invocation
		}
		v, err := ast.InterfaceToValue(in)
		if err != nil {
			b.Fatal(err)
		}
		out[g] = v
	}
	return out
}

// BenchmarkEval measures one warm evaluation of each gate entrypoint with the
// input already parsed: the cost every decision pays after start-up.
func BenchmarkEval(b *testing.B) {
	e, err := policy.New(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	inputs := benchInputs(b)
	now := policy.At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, g := range policy.Gates() {
		b.Run(string(g), func(b *testing.B) {
			if _, err := e.Eval(b.Context(), g, inputs[g], now); err != nil { // prepare outside the loop
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Eval(b.Context(), g, inputs[g], now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNew measures loading and compiling the built-in bundle: what a
// hook process pays once before its first decision.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := policy.New(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}
