package des

import (
	"testing"
	"time"

	"github.com/deterministic-exec/des/policy"
)

// gate1Input is a complete nWave prompt's facts for a step in progress:
// Gate 1 allows it, so every rule body runs to the end.
func gate1Input() map[string]any {
	var phases, words []any
	for _, p := range []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW",
		"REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"} {
		phases = append(phases, map[string]any{"phase_name": p, "status": "NOT_EXECUTED"})
		words = append(words, p)
	}
	step := map[string]any{"path": "docs/feature/x/steps/01-01.json", "document": map[string]any{
		"task_id": "01-01", "state": map[string]any{"status": "TODO"},
		"tdd_cycle": map[string]any{"phase_execution_log": phases},
	}}
	return map[string]any{"step": step, "in_progress": []any{}, "prompt": map[string]any{
		"validation": "required", "origin": "command:/nw:execute", "step_file": "docs/feature/x/steps/01-01.json",
		"sections":    []any{"DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "TDD_14_PHASES", "QUALITY_GATES", "OUTCOME_RECORDING", "BOUNDARY_RULES", "TIMEOUT_INSTRUCTION"},
		"phase_words": words,
	}}
}

// BenchmarkNewGate1 measures des.New and one Gate 1 decision, as a
// decision server pays them per request: without a cache (compiled in
// full, or per gate as the hook does), with a warm cache for the same
// project, and with a warm cache for a project it has not seen (its
// settings differ: the compiled policies are shared, the queries prepared).
func BenchmarkNewGate1(b *testing.B) {
	lookup := env(map[string]string{"DES_STATE_DIR": b.TempDir()})
	in := gate1Input()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(b *testing.B, root func(i int) string, opts ...Option) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			e, err := New(b.Context(), append([]Option{WithRoot(root(i)), WithEnv(lookup), WithClock(func() time.Time { return at })}, opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			d, err := e.Evaluate(b.Context(), policy.PreInvocation, in)
			if err != nil || !d.Allowed() {
				b.Fatalf("Gate 1: %+v, %v", d, err)
			}
			i++
		}
	}
	one := b.TempDir()
	same := func(int) string { return one }
	b.Run("uncached", func(b *testing.B) { run(b, same) })
	b.Run("uncached-lazy", func(b *testing.B) { run(b, same, WithLazyPolicies()) })
	b.Run("cached-same-project", func(b *testing.B) {
		c := NewPolicyCache(8)
		run(b, same, WithPolicyCache(c))
	})
	b.Run("cached-new-project", func(b *testing.B) {
		c := NewPolicyCache(8)
		roots := make([]string, 16) // twice the bound: every project is new to the cache
		for i := range roots {
			roots[i] = b.TempDir()
		}
		if _, err := New(b.Context(), WithRoot(roots[0]), WithEnv(lookup), WithPolicyCache(c)); err != nil {
			b.Fatal(err)
		}
		run(b, func(i int) string { return roots[(i+1)%len(roots)] }, WithPolicyCache(c))
		if s := c.Stats(); s.Compiles != 1 {
			b.Errorf("stats %+v: want one compile", s)
		}
	})
}
