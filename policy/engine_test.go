package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/deterministic-exec/des/policy"
)

func newEngine(t *testing.T, opts ...policy.Option) *policy.Engine {
	t.Helper()
	e, err := policy.New(t.Context(), opts...)
	if err != nil {
		t.Fatalf("policy.New: %v", err)
	}
	return e
}

var obsoleteStep = map[string]any{"step": map[string]any{"path": "steps/01-01.json", "document": map[string]any{"step_id": "01-01", "task_id": "01-01"}}}

func TestBuiltinGateDenies(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	d, err := e.Eval(t.Context(), policy.SubagentStop, obsoleteStep, policy.At(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	want := []policy.Violation{{
		Code:     "DES-STEPFILE-OBSOLETE",
		Severity: policy.Deny,
		Field:    "/step_id",
		Policy:   "des.stepfile",
	}}
	if diff := cmp.Diff(want, d.Deny, cmpopts.IgnoreFields(policy.Violation{}, "Message", "Recovery")); diff != "" {
		t.Errorf("deny (-want +got):\n%s", diff)
	}
	if d.Allowed() {
		t.Error("Allowed() = true with a deny")
	}
	if !strings.Contains(d.Deny[0].Message, "steps/01-01.json") || len(d.Deny[0].Recovery) == 0 {
		t.Errorf("message %q / recovery %q should name the file and the fix", d.Deny[0].Message, d.Deny[0].Recovery)
	}
}

func TestCleanInputAllowed(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	for _, g := range policy.Gates() {
		if g == policy.PreInvocation {
			continue // Gate 1 is asked only about prompts with DES markers: an empty one is invalid
		}
		d, err := e.Eval(t.Context(), g, map[string]any{})
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if !d.Allowed() || len(d.Warn) != 0 {
			t.Errorf("%s: empty input gave %+v", g, d)
		}
	}
}

func TestTeamPoliciesExtendAndWaive(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithDirs("testdata/team"))
	d, err := e.Eval(t.Context(), policy.PreCommit, obsoleteStep)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Codes(); !cmp.Equal(got, []string{"TEAM-OWNER"}) {
		t.Errorf("codes = %v, want the team warning only", got)
	}
	if len(d.Waived) != 1 || d.Waived[0].Code != "DES-STEPFILE-OBSOLETE" {
		t.Errorf("waived = %+v, want DES-STEPFILE-OBSOLETE", d.Waived)
	}
	if d.Warn[0].Policy != "des.gates.pre_commit" {
		t.Errorf("team warning policy = %q", d.Warn[0].Policy)
	}
	// The waiver is for pre_commit only.
	d, err = e.Eval(t.Context(), policy.SubagentStop, obsoleteStep)
	if err != nil || d.Allowed() {
		t.Errorf("pre_invocation should still deny: %+v, %v", d, err)
	}
	// fixture.json is not named data.json and must not be loaded.
	if _, ok := e.Data("this file"); ok {
		t.Error("a stray JSON file was loaded as data")
	}
	if v, ok := e.Data("team.waive_obsolete"); !ok || v != true {
		t.Errorf("team data = %v, %v", v, ok)
	}
}

func TestTestFilesAreNotPolicy(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithDirs("testdata/team"))
	cat, err := e.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cat {
		if strings.Contains(r.Location, "_test.rego") {
			t.Errorf("catalogue lists a rule from a test file: %+v", r)
		}
	}
	// A test file defining a rule that fails to compile alone would break New.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x_test.rego"), "package x_test\n\ntest_broken if { undefined_fn(1) }\n")
	newEngine(t, policy.WithDirs(dir))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseErrorHasLocation(t *testing.T) {
	t.Parallel()
	_, err := policy.New(t.Context(), policy.WithDirs("testdata/badparse"))
	var errs policy.Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("err = %v, want policy.Errors", err)
	}
	if e := errs[0]; !strings.HasSuffix(e.File, "broken.rego") || e.Row == 0 || e.Col == 0 {
		t.Errorf("error %+v lacks file:line:col", e)
	}
	if !strings.Contains(err.Error(), "broken.rego:3:") {
		t.Errorf("message %q does not name broken.rego:3:", err)
	}
}

func TestCompileErrorHasLocation(t *testing.T) {
	t.Parallel()
	_, err := policy.New(t.Context(), policy.WithDirs("testdata/badcompile"))
	var errs policy.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v, want policy.Errors", err)
	}
	if !strings.Contains(err.Error(), "unsafe.rego:3:") || !strings.Contains(err.Error(), "unsafe") {
		t.Errorf("message %q does not locate the unsafe variable", err)
	}
}

func TestNetworkBuiltinsWithheld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "net.rego"), `package des.gates.tool_use

deny contains {"code": "X", "msg": "m"} if http.send({"method": "GET", "url": "http://127.0.0.1"})
`)
	_, err := policy.New(t.Context(), policy.WithDirs(dir))
	if err == nil || !strings.Contains(err.Error(), "http.send") {
		t.Errorf("err = %v, want an undefined http.send", err)
	}
}

func TestMissingDirIsAnError(t *testing.T) {
	t.Parallel()
	_, err := policy.New(t.Context(), policy.WithDirs("testdata/no-such-dir"))
	if err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Errorf("err = %v, want one naming the directory", err)
	}
}

func TestEvalErrorIsKeptApart(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithDirs("testdata/evalerror"))
	d, err := e.Eval(t.Context(), policy.ToolUse, map[string]any{"x": true})
	if err == nil {
		t.Fatalf("want an evaluation error, got decision %+v", d)
	}
	if !d.Allowed() || len(d.Deny)+len(d.Warn) != 0 {
		t.Errorf("an error must come with an empty decision, got %+v", d)
	}
	// The same engine still answers inputs that do not hit the conflict.
	if _, err := e.Eval(t.Context(), policy.ToolUse, map[string]any{}); err != nil {
		t.Errorf("clean input: %v", err)
	}
}

func TestMalformedViolation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bad.rego"), "package des.gates.tool_use\n\ndeny contains \"just a string\" if input.bad\n\nwarn contains {\"msg\": \"no code\"} if input.nocode\n")
	e := newEngine(t, policy.WithDirs(dir))
	for _, in := range []map[string]any{{"bad": true}, {"nocode": true}} {
		if _, err := e.Eval(t.Context(), policy.ToolUse, in); !errors.Is(err, policy.ErrMalformedDecision) {
			t.Errorf("input %v: err = %v, want ErrMalformedDecision", in, err)
		}
	}
}

func TestUnknownGate(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	if _, err := e.Eval(t.Context(), policy.Gate("nope"), nil); !errors.Is(err, policy.ErrUnknownGate) {
		t.Errorf("err = %v, want ErrUnknownGate", err)
	}
}

func TestEvalHonoursDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A rule that takes far longer than the deadline.
	write(t, filepath.Join(dir, "slow.rego"), `package des.gates.tool_use

deny contains {"code": "SLOW", "msg": "m"} if {
	input.slow
	count([x | some x in numbers.range(1, 100000000)]) > 0
}
`)
	e := newEngine(t, policy.WithDirs(dir))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Eval(ctx, policy.ToolUse, map[string]any{"slow": true})
	if err == nil {
		t.Fatal("want a cancellation error")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("evaluation ignored the deadline: %v", time.Since(start))
	}
}

func TestEvalTimeIsTheCallers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "clock.rego"), `package des.gates.tool_use

warn contains {"code": "TEAM-YEAR", "msg": sprintf("%d", [time.date(time.now_ns())[0]])} if true
`)
	e := newEngine(t, policy.WithDirs(dir))
	d, err := e.Eval(t.Context(), policy.ToolUse, nil, policy.At(time.Date(2001, 2, 3, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	if d.Warn[0].Message != "2001" {
		t.Errorf("policy saw year %s, want 2001", d.Warn[0].Message)
	}
}

func TestWithDataOverridesConfig(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithData("des.config.policy_dirs", []string{"rules"}))
	in := map[string]any{"writes": []any{map[string]any{"path": "rules/a.rego", "tool": "Write"}}}
	d, err := e.Eval(t.Context(), policy.ToolUse, in)
	if err != nil || d.Allowed() {
		t.Errorf("write to an overridden policy dir: %+v, %v", d, err)
	}
	if v, _ := e.Data("des.config.stale_threshold_minutes"); v == nil {
		t.Error("override of one key dropped its siblings")
	}
}

func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				in := map[string]any{}
				if (i+j)%2 == 0 {
					in = obsoleteStep
				}
				d, err := e.Eval(context.Background(), policy.Gates()[1+(i+j)%3], in)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed() != ((i+j)%2 != 0) {
					t.Errorf("wrong decision under concurrency: %+v", d)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDecisionOrderIsStable(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	in := map[string]any{"step": map[string]any{"path": "s.json", "document": map[string]any{"step_id": 1, "phase_id": 2, "tdd_phase": 3}}}
	var first []string
	for range 20 {
		d, err := e.Eval(t.Context(), policy.PreCommit, in)
		if err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, v := range d.Deny {
			fields = append(fields, v.Field)
		}
		if first == nil {
			first = fields
		} else if !cmp.Equal(first, fields) {
			t.Fatalf("order changed: %v then %v", first, fields)
		}
	}
	if !cmp.Equal(first, []string{"/phase_id", "/step_id", "/tdd_phase"}) {
		t.Errorf("order = %v", first)
	}
}

// A bundle built by `opa build` (testdata/team-bundle.tar.gz, from a
// directory with team/rules.rego, team/rules_test.rego and team/data.json):
// its rules and data load, its tests do not.
func TestBundleFile(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithBundles("testdata/team-bundle.tar.gz"))
	d, err := e.Eval(t.Context(), policy.SubagentStop, map[string]any{"stop": true})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Codes(); !cmp.Equal(got, []string{"TEAM-BUNDLE-STOP"}) {
		t.Errorf("codes = %v, want the bundle's warning and no test rule", got)
	}
	if d.Warn[0].Message != "limit is 7" {
		t.Errorf("bundle data not loaded: %q", d.Warn[0].Message)
	}
}

func TestBundleFileMissing(t *testing.T) {
	t.Parallel()
	if _, err := policy.New(t.Context(), policy.WithBundles("testdata/nope.tar.gz")); err == nil || !strings.Contains(err.Error(), "nope.tar.gz") {
		t.Errorf("err = %v", err)
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	in := map[string]any{"prompt": map[string]any{"validation": "required", "origin": "command:/nw:baseline"}}
	d, err := e.Eval(t.Context(), policy.PreInvocation, in)
	if err != nil {
		t.Fatal(err)
	}
	if d.Info["level"] != "partial" || d.Info["workflow_type"] != "tdd_cycle" {
		t.Errorf("info = %v", d.Info)
	}
	d, err = e.Eval(t.Context(), policy.PreCommit, map[string]any{})
	if err != nil || d.Info != nil {
		t.Errorf("a gate without info: %v, %v", d.Info, err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "info.rego"), "package des.gates.tool_use\n\ninfo := \"not an object\"\n")
	if _, err := newEngine(t, policy.WithDirs(dir)).Eval(t.Context(), policy.ToolUse, nil); !errors.Is(err, policy.ErrMalformedDecision) {
		t.Errorf("non-object info: err = %v", err)
	}
}
