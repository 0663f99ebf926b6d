package gate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
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
	t.Parallel()
	r := gate.Result{Decision: policy.Decision{
		Deny: []policy.Violation{
			{Code: "DES-A", Message: "first", Recovery: []string{"fix a", "shared"}},
			{Code: "DES-B", Message: "second", Recovery: []string{"shared"}},
		},
		Warn: []policy.Violation{{Code: "DES-W", Message: "careful"}},
	}}
	want := "[DES-A] first\n[DES-B] second\n[DES-W] careful\nRecovery:\n- fix a\n- shared"
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
	multi := gate.Text(policy.Violation{Code: "DES-M", Message: "line one\nline two\n", Recovery: []string{" step\nmore ", ""}})
	if want := "[DES-M] line one\n  line two\nRecovery:\n- step\n  more"; multi != want {
		t.Errorf("Text() =\n%q\nwant\n%q", multi, want)
	}
}

func TestInternalFailsClosed(t *testing.T) {
	t.Parallel()
	r := gate.Internal(policy.PreInvocation, errors.New("setting x is bad"))
	if !r.Denied() || r.Decision.Deny[0].Code != gate.CodeInternal {
		t.Fatalf("Internal = %+v", r)
	}
	if !strings.Contains(r.Reason(), "setting x is bad") || !strings.Contains(r.Reason(), "Recovery:") {
		t.Errorf("reason %q lacks the cause or the recovery", r.Reason())
	}
}

func TestToolUseConcerns(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	f := &fakeEvaluator{err: errors.New("must not be called")}
	res, err := gate.ToolUse{Root: t.TempDir()}.Check(t.Context(), f, gate.ToolCall{Tool: "Edit", Paths: []string{"src/a.go"}})
	if err != nil || res.Evaluated || res.Denied() || len(f.calls) != 0 {
		t.Errorf("unconcerned call: %+v, %v, %d evaluations", res, err, len(f.calls))
	}
}

func TestToolUseInputIsRootRelative(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

func TestReasonOrderAndDedup(t *testing.T) {
	t.Parallel()
	d := policy.Decision{
		Deny: []policy.Violation{
			{Code: "DES-SECTION-MISSING", Message: "section TDD_14_PHASES is missing", Recovery: []string{"Add the section.", "Run hook policies."}},
			{Code: "DES-TASK-TERMINAL", Message: "task is DONE\nstatus found: DONE", Recovery: []string{" Run hook policies. ", "Start a new step.", ""}},
		},
		Warn: []policy.Violation{{Code: "DES-SAFETY-METADATA", Message: "no safety block", Recovery: []string{"Add safety.", "Add the section."}}},
	}
	want := strings.Join([]string{
		"[DES-SECTION-MISSING] section TDD_14_PHASES is missing",
		"[DES-TASK-TERMINAL] task is DONE",
		"  status found: DONE",
		"[DES-SAFETY-METADATA] no safety block",
		"Recovery:",
		"- Add the section.",
		"- Run hook policies.",
		"- Start a new step.",
		"- Add safety.",
	}, "\n")
	if got := (gate.Result{Decision: d}).Reason(); got != want {
		t.Errorf("Reason:\n%s\nwant:\n%s", got, want)
	}
	if got, want := (gate.Result{Decision: d}).Warnings(), "[DES-SAFETY-METADATA] no safety block\nRecovery:\n- Add safety.\n- Add the section."; got != want {
		t.Errorf("Warnings:\n%s\nwant:\n%s", got, want)
	}
	if got := (gate.Result{}).Reason(); got != "" {
		t.Errorf("empty decision: %q", got)
	}
	if got, want := (gate.Result{Decision: policy.Decision{Deny: []policy.Violation{{Code: "C", Message: "m"}}}}).Reason(), "[C] m"; got != want {
		t.Errorf("no recovery: %q, want %q", got, want)
	}
}

func TestToolUseRecordsBlocks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e, err := des.New(t.Context(), des.WithRoot(root), des.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CheckToolUse(t.Context(), gate.ToolCall{Tool: "Edit", Paths: []string{".des/config.json"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CheckToolUse(t.Context(), gate.ToolCall{Tool: "Edit", Paths: []string{".des/state.json"}}); err != nil {
		t.Fatal(err)
	}
	files, err := e.Audit().Files()
	if err != nil || len(files) != 1 {
		t.Fatalf("audit files %v, %v", files, err)
	}
	entries, err := audit.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Event != audit.DocumentWriteBlocked {
		t.Fatalf("entries = %+v, want one DOCUMENT_WRITE_BLOCKED (allowed writes are not recorded)", entries)
	}
	f := entries[0].Fields
	if f["tool"] != "Edit" || f["gate"] != "tool_use" || !strings.Contains(fmt.Sprint(f["codes"]), "DES-PROTECTED-PATH") || !strings.Contains(fmt.Sprint(f["paths"]), ".des/config.json") {
		t.Errorf("fields = %v", f)
	}
}

func TestToolUseKeepsDecisionWhenAuditFails(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// A file where the audit directory should be makes every append fail.
	if err := os.WriteFile(filepath.Join(root, "blocked"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(root, "blocked", "audit"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEvaluator{answer: policy.Decision{Deny: []policy.Violation{{Code: "DES-PROTECTED-PATH", Message: "m"}}}}
	res, err := gate.ToolUse{Root: root, Audit: log}.Check(t.Context(), f, gate.ToolCall{Tool: "Write", Paths: []string{".des/config.json"}})
	if !errors.Is(err, gate.ErrNotRecorded) || !res.Denied() || !res.Evaluated {
		t.Errorf("res %+v, err %v: want the deny kept and ErrNotRecorded", res, err)
	}
}

// Paths that reach DES's files by other spellings are still protected:
// settings given as absolute paths or outside the root, a dangling link,
// and "link/.." resolved as the operating system does.
func TestToolUseSpellingsOfProtectedPaths(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{".des/policies/sub", "audit"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		"DES_AUDIT_DIR":   filepath.Join(root, "audit"),
		"DES_POLICY_DIRS": ".des/policies" + string(os.PathListSeparator) + outside,
	}
	e, err := des.New(t.Context(), des.WithRoot(root), des.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"cfg":    filepath.Join(root, ".des", "config.json"), // dangling: the file does not exist yet
		"newpol": filepath.Join(root, ".des", "policies", "new.rego"),
		"lnk":    filepath.Join(root, ".des", "policies", "sub"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Skip("symlinks unavailable:", err)
		}
	}
	for _, p := range []string{
		filepath.Join(root, "audit", "audit-x.log"),
		filepath.Join(outside, "team.rego"),
		"cfg",
		"newpol",
		filepath.Join(root, "lnk") + "/../evil.rego",
	} {
		res, err := e.CheckToolUse(t.Context(), gate.ToolCall{Tool: "Write", Paths: []string{p}})
		if err != nil || !res.Denied() {
			t.Errorf("write %s: %+v, %v", p, res.Decision, err)
		}
	}
	if got := gate.ProjectPath(root, "lnk/../evil.rego"); got != ".des/policies/evil.rego" {
		t.Errorf("ProjectPath(lnk/../evil.rego) = %q", got)
	}
	if got := gate.ProjectPath(root, "src/./a/../b.go"); got != "src/b.go" {
		t.Errorf("ProjectPath of a missing path = %q", got)
	}
}
