package policy_test

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/policy"
)

var gateInputs = map[policy.Gate]map[string]any{
	policy.PreInvocation: {"prompt": map[string]any{"validation": "required", "origin": "command:/nw:baseline", "sections": []any{"DES_METADATA"}}, "step": obsoleteStep["step"]},
	policy.SubagentStop:  obsoleteStep,
	policy.PreCommit:     obsoleteStep,
	policy.DocumentWrite: {"writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}},
	policy.ToolUse:       {"writes": []any{map[string]any{"path": ".des/policies/a.rego", "tool": "Edit"}}},
}

// A lazy engine decides exactly as an eager one, gate by gate, also when a
// rule reaches another package through a reference built at run time.
func TestLazyDecidesAsEager(t *testing.T) {
	t.Parallel()
	eager := newEngine(t, policy.WithDirs("testdata/team", "testdata/dynamic"))
	lazy := newEngine(t, policy.WithDirs("testdata/team", "testdata/dynamic"), policy.WithLazyCompile())
	for g, in := range gateInputs {
		want, err1 := eager.Eval(t.Context(), g, in)
		got, err2 := lazy.Eval(t.Context(), g, in)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v / %v", g, err1, err2)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: lazy differs (-eager +lazy):\n%s", g, diff)
		}
		if len(want.Deny)+len(want.Warn)+len(want.Waived) == 0 {
			t.Errorf("%s: the input should yield something to compare", g)
		}
	}
	if d, _ := lazy.Eval(t.Context(), policy.ToolUse, gateInputs[policy.ToolUse]); !slices.Contains(d.Codes(), "TEAM-DYN") {
		t.Errorf("lazy engine lost the rule with a dynamic reference: %v", d.Codes())
	}
	eagerCat, _ := eager.Catalogue()
	lazyCat, err := lazy.Catalogue()
	if err != nil || !cmp.Equal(eagerCat, lazyCat) {
		t.Errorf("lazy catalogue differs: %v", err)
	}
}

// In a lazy engine a broken policy stops only the gate that needs it, with
// its location; New and the other gates are unaffected.
func TestLazyIsolatesABrokenGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "broken.rego"), "package des.gates.pre_commit\n\ndeny contains x if {\n")
	if _, err := policy.New(t.Context(), policy.WithDirs(dir)); err == nil {
		t.Fatal("an eager engine must refuse the broken policy")
	}
	e := newEngine(t, policy.WithDirs(dir), policy.WithLazyCompile())
	if d, err := e.Eval(t.Context(), policy.ToolUse, gateInputs[policy.ToolUse]); err != nil || d.Allowed() {
		t.Errorf("tool_use with a broken pre_commit policy: %+v, %v", d, err)
	}
	_, err := e.Eval(t.Context(), policy.PreCommit, obsoleteStep)
	if err == nil || !strings.Contains(err.Error(), "broken.rego:4:") {
		t.Errorf("pre_commit: err = %v, want the parse error located", err)
	}
	if _, err := e.Catalogue(); err == nil {
		t.Error("the catalogue compiles every policy and must report the broken one")
	}
}

func TestLazyCompileError(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithDirs("testdata/badcompile"), policy.WithLazyCompile())
	_, err := e.Eval(t.Context(), policy.PreCommit, obsoleteStep)
	var errs policy.Errors
	if !strings.Contains(err.Error(), "unsafe.rego:3:") || !errorsAs(err, &errs) {
		t.Errorf("err = %v", err)
	}
}

func errorsAs(err error, target *policy.Errors) bool {
	for err != nil {
		if e, ok := err.(policy.Errors); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// BenchmarkFirstDecision is what a hook process pays before its first
// decision: load the sources, then parse, compile and prepare, eagerly (all
// gates) or lazily (the gate's packages only), and evaluate once.
func BenchmarkFirstDecision(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []policy.Option
	}{{"eager", nil}, {"lazy", []policy.Option{policy.WithLazyCompile()}}} {
		for _, g := range []policy.Gate{policy.ToolUse, policy.PreInvocation} {
			b.Run(mode.name+"/"+string(g), func(b *testing.B) {
				for b.Loop() {
					e, err := policy.New(b.Context(), mode.opts...)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := e.Eval(b.Context(), g, gateInputs[g]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestLazyConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithLazyCompile())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			g := policy.Gates()[i%len(policy.Gates())]
			if _, err := e.Eval(t.Context(), g, gateInputs[g]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Go(func() {
		if _, err := e.Catalogue(); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
}
