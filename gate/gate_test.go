package gate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
)

// fakeEvaluator records its calls and answers with a fixed decision.
type fakeEvaluator struct {
	calls  []any
	answer policy.Decision
	err    error
}

func (f *fakeEvaluator) Evaluate(_ context.Context, _ policy.Gate, input any) (policy.Decision, error) {
	f.calls = append(f.calls, input)
	return f.answer, f.err
}

func TestResultRendering(t *testing.T) {
	r := gate.Result{Decision: policy.Decision{
		Deny: []policy.Violation{
			{Code: "DES-A", Message: "first", Recovery: []string{"fix a", "shared"}},
			{Code: "DES-B", Message: "second", Recovery: []string{"shared"}},
		},
		Warn: []policy.Violation{{Code: "DES-W", Message: "careful"}},
	}}
	want := "[DES-A] first\n[DES-B] second\nRecovery:\n- fix a\n- shared"
	if got := r.Reason(); got != want {
		t.Errorf("Reason() =\n%s\nwant\n%s", got, want)
	}
	if got := r.Warnings(); got != "[DES-W] careful" {
		t.Errorf("Warnings() = %q", got)
	}
	if !r.Denied() {
		t.Error("Denied() = false")
	}
	if (gate.Result{}).Reason() != "" {
		t.Error("empty result renders text")
	}
}

func TestInternalFailsClosed(t *testing.T) {
	r := gate.Internal(policy.PreInvocation, errors.New("setting x is bad"))
	if !r.Denied() || r.Decision.Deny[0].Code != gate.CodeInternal {
		t.Fatalf("Internal = %+v", r)
	}
	if !strings.Contains(r.Reason(), "setting x is bad") || !strings.Contains(r.Reason(), "Recovery:") {
		t.Errorf("reason %q lacks the cause or the recovery", r.Reason())
	}
}

func TestToolUseConcerns(t *testing.T) {
	root := t.TempDir()
	tu := gate.ToolUse{Root: root, Protected: []string{"rules", "/var/log/des-audit"}}
	cases := map[string]bool{
		".des/config.json":                        true,
		filepath.Join(root, ".des", "state.json"): true, // under .des: evaluated, the policy decides
		"rules/team.rego":                         true,
		"rules":                                   true,
		"rulesets/x":                              false,
		"src/main.go":                             false,
		"/var/log/des-audit/a.log":                true,
		"/var/log/other":                          false,
		filepath.Join(root, "..", ".des", "x"):    false, // another project's .des
		"./.des/../src/x.go":                      false,
	}
	for p, want := range cases {
		if got := tu.Concerns(gate.ToolCall{Tool: "Write", Paths: []string{p}}); got != want {
			t.Errorf("Concerns(%s) = %v, want %v", p, got, want)
		}
	}
}

func TestToolUseSkipsUnconcernedCalls(t *testing.T) {
	f := &fakeEvaluator{err: errors.New("must not be called")}
	res, err := gate.ToolUse{Root: t.TempDir()}.Check(t.Context(), f, gate.ToolCall{Tool: "Edit", Paths: []string{"src/a.go"}})
	if err != nil || res.Evaluated || res.Denied() || len(f.calls) != 0 {
		t.Errorf("unconcerned call: %+v, %v, %d evaluations", res, err, len(f.calls))
	}
}

func TestToolUseInputIsRootRelative(t *testing.T) {
	root := t.TempDir()
	f := &fakeEvaluator{}
	_, err := gate.ToolUse{Root: root}.Check(t.Context(), f, gate.ToolCall{Tool: "Write", Paths: []string{filepath.Join(root, ".des", "config.json")}})
	if err != nil || len(f.calls) != 1 {
		t.Fatalf("err %v, calls %d", err, len(f.calls))
	}
	in := f.calls[0].(map[string]any)
	w := in["writes"].([]any)[0].(map[string]any)
	if w["path"] != ".des/config.json" || w["tool"] != "Write" {
		t.Errorf("input = %v", in)
	}
}

// Through the real engine and policies: a symbolic link cannot hide a
// protected target.
func TestToolUseDeniesThroughSymlink(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".des", "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, ".des", "policies"), filepath.Join(root, "innocent")); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	e, err := des.New(t.Context(), des.WithRoot(root), des.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.CheckToolUse(t.Context(), gate.ToolCall{Tool: "Write", Paths: []string{"innocent/weaker.rego"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Denied() || res.Decision.Deny[0].Code != "DES-PROTECTED-PATH" {
		t.Errorf("write through a link into .des/policies: %+v", res)
	}
	if !strings.Contains(res.Reason(), ".des/policies/weaker.rego") {
		t.Errorf("reason should name the real target: %s", res.Reason())
	}
	// The workflow state under .des is evaluated and allowed.
	res, err = e.CheckToolUse(t.Context(), gate.ToolCall{Tool: "Write", Paths: []string{".des/state.json"}})
	if err != nil || !res.Evaluated || res.Denied() {
		t.Errorf(".des/state.json: %+v, %v", res, err)
	}
}
