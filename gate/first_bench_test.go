package gate_test

import (
	"testing"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
)

// BenchmarkGate1Cold is Gate 1 from a fresh lazy engine, as one hook
// process runs it: settings, policies, schema, step file, scan, decision.
func BenchmarkGate1Cold(b *testing.B) {
	p := newBenchProject(b)
	prompt := render(b, "execute-step", todoStep())
	for b.Loop() {
		eng, err := des.New(b.Context(), des.WithRoot(p.root), des.WithLazyPolicies(),
			des.WithEnv(func(string) (string, bool) { return "", false }), des.WithClock(func() time.Time { return gate1Now }))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.PreInvocation(b.Context(), gate.Invocation{Prompt: prompt, ToolUseID: "toolu_x"}); err != nil {
			b.Fatal(err)
		}
	}
}
