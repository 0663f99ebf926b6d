package policytest_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/policy/policytest"
	builtin "github.com/deterministic-exec/des/rego"
)

const pkg = "package team\n\nallow if input.ok\n\nlabel := \"big\" if input.n > 10\n"

func TestRunReportsPassFailAndCoverage(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"team.rego":      {Data: []byte(pkg)},
		"team_test.rego": {Data: []byte("package team_test\n\nimport data.team\n\ntest_allow if team.allow with input as {\"ok\": true}\n\ntest_wrong if team.allow with input as {\"ok\": false}\n")},
	}
	rep, err := policytest.Run(t.Context(), fsys, policytest.WithCoverage())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("results = %+v", rep.Results)
	}
	failed := rep.Failed()
	if len(failed) != 1 || failed[0].Name != "test_wrong" || !strings.HasPrefix(failed[0].Location, "team_test.rego:") {
		t.Errorf("failed = %+v, want test_wrong at team_test.rego", failed)
	}
	if len(rep.Coverage) != 1 || rep.Coverage[0].Package != "team" {
		t.Fatalf("coverage = %+v, want one entry for package team (tests excluded)", rep.Coverage)
	}
	// label is never evaluated: coverage is partial.
	if p := rep.Coverage[0].Percent(); p <= 0 || p >= 100 {
		t.Errorf("coverage = %.1f%%, want partial", p)
	}
	if len(rep.Files) != 1 || rep.Files[0].File != "team.rego" || len(rep.Files[0].Uncovered) == 0 || rep.Files[0].Uncovered[0] != "5" {
		t.Errorf("files = %+v, want team.rego with line 5 (label) not covered", rep.Files)
	}
}

func TestRunWithBuiltinQueriesGates(t *testing.T) {
	t.Parallel()
	rep, err := policytest.Run(t.Context(), os.DirFS("../testdata/team"), policytest.WithBuiltin())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || len(rep.Failed()) != 0 {
		t.Errorf("team tests against the built-in bundle: %+v", rep.Results)
	}
}

func TestUnformatted(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"ok.rego":  {Data: []byte(pkg)},
		"bad.rego": {Data: []byte("package team\nallow   if   input.ok\n")},
	}
	got, err := policytest.Unformatted(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "bad.rego" {
		t.Errorf("Unformatted = %v, want [bad.rego]", got)
	}
}

func TestRunCompileError(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"x_test.rego": {Data: []byte("package x_test\n\ntest_a if undefined_function(1)\n")}}
	if _, err := policytest.Run(t.Context(), fsys); err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("err = %v, want an undefined function error", err)
	}
}

// The README's snippet, for a team whose tests cover its own files: the
// minimum applies to the team's packages, never to the built-in ones.
func TestCheckMinCoverageCountsTheTeamsFilesOnly(t *testing.T) {
	t.Parallel()
	rep := policytest.Check(t, os.DirFS("testdata/team"), policytest.WithBuiltin(), policytest.WithMinCoverage(90))
	if len(rep.Results) != 3 {
		t.Errorf("results = %+v, want the team's 3 tests and no built-in test", rep.Results)
	}
	for _, c := range rep.Coverage {
		if strings.HasPrefix(c.Package, "des.") && c.Package != "des.gates.pre_commit" || len(c.Files) != 1 || c.Files[0] != "owner.rego" {
			t.Errorf("coverage of %s %v: want only the team's file", c.Package, c.Files)
		}
	}
	if len(rep.Files) != 1 || rep.Files[0].Percent() < 90 {
		t.Errorf("files = %+v, want owner.rego covered", rep.Files)
	}
}

// recorder is a testing.TB that keeps the errors Check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}

func TestCheckReportsLowCoverageOfTheTeamsPackage(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"team.rego":      {Data: []byte(pkg)},
		"team_test.rego": {Data: []byte("package team_test\n\nimport data.team\n\ntest_allow if team.allow with input as {\"ok\": true}\n")},
	}
	r := &recorder{TB: t}
	policytest.Check(r, fsys, policytest.WithBuiltin(), policytest.WithMinCoverage(90))
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "package team is") {
		t.Errorf("errors = %q, want one, about package team only", r.errs)
	}
}

// A team adds rules to every gate, rules that fire on any input: the
// built-in tests, run beside them, still pass, because they assert what
// des's own rules yield.
func TestBuiltinTestsPassWithTeamRulesInEveryGate(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(builtin.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(builtin.FS(), p)
		fsys[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	team, err := filepath.Glob("testdata/everygate/*.rego")
	if err != nil || len(team) != 5 {
		t.Fatalf("team files %v, %v", team, err)
	}
	for _, f := range team {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fsys["team/"+filepath.Base(f)] = &fstest.MapFile{Data: b}
	}
	rep, err := policytest.Run(t.Context(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) < 500 {
		t.Fatalf("%d results: the built-in tests were not found", len(rep.Results))
	}
	for _, f := range rep.Failed() {
		t.Errorf("%s %s.%s fails beside the team's rules: %v", f.Location, f.Package, f.Name, f.Err)
	}
}

func TestTeamDataPatchesBuiltinData(t *testing.T) {
	t.Parallel()
	team := fstest.MapFS{
		"des/commit/data.json": {Data: []byte(`{"skip_prefixes": ["TEAM:"], "deferred_prefix": null}`)},
		"t_test.rego": {Data: []byte(`package t_test

test_team_data if {
	data.des.commit.skip_prefixes == ["TEAM:"]
	not data.des.commit.deferred_prefix
	data.des.commit.workflows_without_phase_log == ["configuration_setup"]
}
`)},
	}
	rep, err := policytest.Run(t.Context(), team, policytest.WithBuiltin())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || len(rep.Failed()) != 0 {
		t.Errorf("results = %+v", rep.Results)
	}
}

func TestTeamDataConflictNamesBothFiles(t *testing.T) {
	t.Parallel()
	a := fstest.MapFS{"des/sections/data.json": {Data: []byte(`{"origins": {"ad-hoc": "full"}}`)}}
	b := fstest.MapFS{"data.json": {Data: []byte(`{"des": {"sections": {"origins": {"ad-hoc": "partial"}}}}`)}}
	_, err := policytest.Run(t.Context(), a, policytest.WithName("a"), policytest.WithDir("b", b), policytest.WithBuiltin())
	var errs policy.Errors
	if !errors.As(err, &errs) || errs[0].File != "b/data.json" || !strings.Contains(errs[0].Message, "a/des/sections/data.json") {
		t.Errorf("err = %v, want a conflict in b/data.json naming a/des/sections/data.json", err)
	}
	c := fstest.MapFS{"des/config/data.json": {Data: []byte(`{"stale_threshold_minutes": 1}`)}}
	if _, err := policytest.Run(t.Context(), c, policytest.WithBuiltin()); err == nil || !strings.Contains(err.Error(), ".des/config.json") {
		t.Errorf("err = %v, want data.des.config refused as in the hook", err)
	}
}

func TestRunParseErrorHasLocation(t *testing.T) {
	t.Parallel()
	_, err := policytest.Run(t.Context(), fstest.MapFS{"bad.rego": {Data: []byte("package x\n\nallow if {\n")}}, policytest.WithName(".des/policies"))
	var errs policy.Errors
	if !errors.As(err, &errs) || errs[0].File != ".des/policies/bad.rego" || errs[0].Row == 0 {
		t.Errorf("err = %#v, want a policy.Error at .des/policies/bad.rego:line", err)
	}
}

func TestRunWithTraceSaysWhichExpressionFailed(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"x_test.rego": {Data: []byte("package x_test\n\ntest_a if {\n\t1 == 1\n\t2 == 3\n}\n")}}
	rep, err := policytest.Run(t.Context(), fsys, policytest.WithTrace())
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Failed(); len(f) != 1 || f[0].FailedAt != "x_test.rego:5: 2 == 3" {
		t.Errorf("failed = %+v, want FailedAt x_test.rego:5: 2 == 3", f)
	}
}

// A policy the hook refuses (strict: an unused variable) must not pass its
// tests: opa test's own compile is not strict, and would run them.
func TestRunCompilesPoliciesAsTheHookDoes(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"team/team.rego":      {Data: []byte("package des.gates.pre_commit\n\ndeny contains {\"code\": \"TEAM-X\", \"msg\": \"x\"} if {\n\tx := 1\n\tinput.never\n}\n")},
		"team/team_test.rego": {Data: []byte("package team_test\n\ntest_ok if true\n")},
	}
	_, err := policytest.Run(t.Context(), fsys, policytest.WithBuiltin(), policytest.WithName(".des/policies"))
	var errs policy.Errors
	if !errors.As(err, &errs) || errs[0].File != ".des/policies/team/team.rego" || errs[0].Row != 4 || !strings.Contains(errs[0].Message, "assigned var x unused") {
		t.Fatalf("err = %v, want the hook's strict error at .des/policies/team/team.rego:4", err)
	}
	// The same as policy.New, which the hook runs, reports.
	_, hookErr := policy.New(t.Context(), policy.WithFS(".des/policies", fsys))
	if hookErr == nil || !strings.Contains(hookErr.Error(), errs[0].Error()) {
		t.Errorf("policy.New: %v, want %v", hookErr, errs[0])
	}
	// A built-in des withholds is refused here as in the hook.
	fsys["team/team.rego"] = &fstest.MapFile{Data: []byte("package team\n\nn := rand.intn(\"x\", 10)\n")}
	if _, err := policytest.Run(t.Context(), fsys); err == nil || !strings.Contains(err.Error(), "rand.intn") {
		t.Errorf("err = %v, want rand.intn refused", err)
	}
	// A strict-only problem in a test file is no policy: opa test runs it.
	fsys["team/team.rego"] = &fstest.MapFile{Data: []byte("package team\n\nallow if input.ok\n")}
	fsys["team/team_test.rego"] = &fstest.MapFile{Data: []byte("package team_test\n\ntest_ok if {\n\tx := 1\n\tdata.team.allow with input as {\"ok\": true}\n}\n")}
	if rep, err := policytest.Run(t.Context(), fsys); err != nil || len(rep.Results) != 1 || len(rep.Failed()) != 0 {
		t.Errorf("test file with an unused variable: %+v, %v", rep, err)
	}
}
