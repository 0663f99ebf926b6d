package policytest_test

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/deterministic-exec/des/policy/policytest"
)

const pkg = "package team\n\nallow if input.ok\n\nlabel := \"big\" if input.n > 10\n"

func TestRunReportsPassFailAndCoverage(t *testing.T) {
	fsys := fstest.MapFS{
		"team.rego":      {Data: []byte(pkg)},
		"team_test.rego": {Data: []byte("package team_test\n\nimport data.team\n\ntest_allow if team.allow with input as {\"ok\": true}\n\ntest_wrong if team.allow with input as {\"ok\": false}\n")},
	}
	rep, err := policytest.Run(t.Context(), fsys)
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
}

func TestRunWithBuiltinQueriesGates(t *testing.T) {
	rep, err := policytest.Run(t.Context(), os.DirFS("../testdata/team"), policytest.WithBuiltin())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || len(rep.Failed()) != 0 {
		t.Errorf("team tests against the built-in bundle: %+v", rep.Results)
	}
}

func TestUnformatted(t *testing.T) {
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
	fsys := fstest.MapFS{"x_test.rego": {Data: []byte("package x_test\n\ntest_a if undefined_function(1)\n")}}
	if _, err := policytest.Run(t.Context(), fsys); err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("err = %v, want an undefined function error", err)
	}
}
