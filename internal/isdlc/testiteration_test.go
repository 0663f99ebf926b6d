package isdlc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/datadoc"
)

// doc decodes a JSON object as des reads states and tables (numbers as
// json.Number).
func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := datadoc.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := v.(map[string]any)
	return m
}

func TestTestIterationLimitsPrecedence(t *testing.T) {
	const tables = `{"iteration_requirements": {
		"phase_requirements": {
			"06-implementation": {"test_iteration": {"enabled": true, "max_iterations": 7, "circuit_breaker_threshold": 4}},
			"07-testing": {"test_iteration": {"enabled": true, "max_iterations": 0, "circuit_breaker_threshold": 0}}
		},
		"workflow_overrides": {
			"fix": {"06-implementation": {"test_iteration": {"max_iterations": 5}}},
			"zero": {"06-implementation": {"test_iteration": {"max_iterations": 0, "circuit_breaker_threshold": 0}}}
		}}}`
	cases := []struct {
		name, state, phase string
		max, breaker       int
	}{
		{"table", `{"active_workflow": {"type": "feature"}}`, "06-implementation", 7, 4},
		{"override over table", `{"active_workflow": {"type": "fix"}}`, "06-implementation", 5, 4},
		{"iteration_config over override", `{"active_workflow": {"type": "fix"}, "iteration_config": {"testing_max": 3, "circuit_breaker_threshold": 2, "configured_at": "2026-02-07T14:30:00Z"}}`, "06-implementation", 3, 2},
		{"iteration_config without configured_at is ignored", `{"active_workflow": {"type": "fix"}, "iteration_config": {"testing_max": 3, "circuit_breaker_threshold": 2}}`, "06-implementation", 5, 4},
		{"iteration_config with an empty configured_at is ignored", `{"active_workflow": {"type": "fix"}, "iteration_config": {"testing_max": 3, "configured_at": ""}}`, "06-implementation", 5, 4},
		{"zero iteration_config falls through", `{"active_workflow": {"type": "fix"}, "iteration_config": {"testing_max": 0, "circuit_breaker_threshold": 0, "configured_at": "x"}}`, "06-implementation", 5, 4},
		{"zero override falls through to the default", `{"active_workflow": {"type": "zero"}}`, "06-implementation", 10, 3},
		{"zero table falls through to the default", `{"active_workflow": {"type": "feature"}}`, "07-testing", 10, 3},
		{"no table entry: defaults", `{"active_workflow": {"type": "feature"}}`, "99-none", 10, 3},
		{"partial iteration_config", `{"active_workflow": {"type": "feature"}, "iteration_config": {"testing_max": 2, "configured_at": "x"}}`, "06-implementation", 2, 4},
	}
	for _, c := range cases {
		lim := TestIterationLimits(doc(t, tables), doc(t, c.state), c.phase, nil)
		if lim.MaxIterations != c.max || lim.CircuitBreaker != c.breaker {
			t.Errorf("%s: max %d, breaker %d; want %d, %d", c.name, lim.MaxIterations, lim.CircuitBreaker, c.max, c.breaker)
		}
	}
	// A document decoded plainly (float64) reads the same.
	var tab, st map[string]any
	_ = json.Unmarshal([]byte(tables), &tab)
	_ = json.Unmarshal([]byte(`{"active_workflow": {"type": "fix"}}`), &st)
	if lim := TestIterationLimits(tab, st, "06-implementation", nil); lim.MaxIterations != 5 || lim.CircuitBreaker != 4 {
		t.Errorf("float64 numbers: %+v", lim)
	}
	// A legacy key of the tables, through the aliases.
	legacy := `{"iteration_requirements": {"phase_requirements": {"05-implementation": {"test_iteration": {"max_iterations": 6}}}}}`
	if lim := TestIterationLimits(doc(t, legacy), doc(t, `{}`), "06-implementation", map[string]string{"05-implementation": "06-implementation"}); lim.MaxIterations != 6 {
		t.Errorf("alias: %+v", lim)
	}
}

func TestTestIterationLimitsCoverage(t *testing.T) {
	table := func(cov string) string {
		return `{"iteration_requirements": {"phase_requirements": {"06-implementation": {"test_iteration": {"enabled": true, "success_criteria": {"min_coverage_percent": ` + cov + `}}}}}}`
	}
	tiered := `{"light": 60, "standard": 80, "epic": 95}`
	cases := []struct {
		name, cov, intensity string
		want                 any // float64, or nil for no threshold
	}{
		{"number", `90`, "light", 90.0},
		{"light", tiered, "light", 60.0},
		{"standard", tiered, "standard", 80.0},
		{"epic", tiered, "epic", 95.0},
		{"no sizing: standard", tiered, "", 80.0},
		{"unknown tier: standard", tiered, "unknown_tier", 80.0},
		{"no standard key: 80", `{"light": 60, "epic": 95}`, "standard", 80.0},
		{"empty object: 80", `{}`, "standard", 80.0},
		{"null tier: standard", `{"light": null, "standard": 75}`, "light", 75.0},
		{"string: 80", `"90"`, "standard", 80.0},
		{"array: 80", `[90]`, "standard", 80.0},
		{"null: none", `null`, "standard", nil},
		{"zero", `0`, "standard", 0.0},
	}
	for _, c := range cases {
		state := `{"active_workflow": {"type": "feature"}}`
		if c.intensity != "" {
			state = `{"active_workflow": {"type": "feature", "sizing": {"effective_intensity": "` + c.intensity + `"}}}`
		}
		lim := TestIterationLimits(doc(t, table(c.cov)), doc(t, state), "06-implementation", nil)
		switch want := c.want.(type) {
		case nil:
			if lim.MinCoverage != nil {
				t.Errorf("%s: threshold %v; want none", c.name, *lim.MinCoverage)
			}
		case float64:
			if lim.MinCoverage == nil {
				t.Errorf("%s: no threshold; want %v", c.name, want)
			} else if *lim.MinCoverage != want {
				t.Errorf("%s: threshold %v; want %v", c.name, *lim.MinCoverage, want)
			}
		}
	}
	if lim := TestIterationLimits(doc(t, `{"iteration_requirements": {"phase_requirements": {"06-implementation": {"test_iteration": {}}}}}`), doc(t, `{}`), "06-implementation", nil); lim.MinCoverage != nil {
		t.Errorf("no success_criteria: threshold %v", *lim.MinCoverage)
	}
}

// runs makes test runs a minute apart: "p" passed, "f:ERR" failed with
// ERR, "i" inconclusive, "c:N" passed with N% coverage.
func runs(specs ...string) []TestRun {
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	out := make([]TestRun, 0, len(specs))
	for i, s := range specs {
		r := TestRun{Time: base.Add(time.Duration(i) * time.Minute), Command: "npm test"}
		switch {
		case s == "p":
			r.Result = "passed"
		case s == "i":
			r.Result, r.Error, r.Signature = "inconclusive", "Unable to determine test result", "Unable to determine test result"
		case len(s) > 2 && s[:2] == "f:":
			r.Result, r.Error, r.Signature = "failed", s[2:], s[2:]
		case len(s) > 2 && s[:2] == "c:":
			var c float64
			_ = json.Unmarshal([]byte(s[2:]), &c)
			r.Result, r.Coverage = "passed", &c
		default:
			panic(s)
		}
		out = append(out, r)
	}
	return out
}

func TestDeriveTestIterationCircuitBreaker(t *testing.T) {
	lim := IterationLimits{MaxIterations: 10, CircuitBreaker: 3}
	ti := DeriveTestIteration(runs("f:A", "f:A"), lim)
	if ti["completed"] != false || ti["status"] != nil || ti["identical_failure_count"] != 2 {
		t.Errorf("below the threshold: %v", ti)
	}
	ti = DeriveTestIteration(runs("f:A", "f:A", "f:A"), lim)
	if ti["completed"] != true || ti["status"] != "escalated" || ti["escalation_reason"] != "circuit_breaker" ||
		ti["identical_failure_count"] != 3 || ti["escalation_details"] != "Same error repeated 3 times" {
		t.Errorf("at the threshold: %v", ti)
	}
	// Another error, a pass or an inconclusive run in between starts the
	// count again.
	for _, seq := range [][]string{{"f:A", "f:B", "f:A"}, {"f:A", "p", "f:A", "f:A"}, {"f:A", "f:A", "i", "f:A"}} {
		if ti := DeriveTestIteration(runs(seq...), lim); ti["status"] == "escalated" || ti["identical_failure_count"] == 3 {
			t.Errorf("%v: %v", seq, ti)
		}
	}
	// An inconclusive run leaves the count as it was.
	if ti := DeriveTestIteration(runs("f:A", "f:A", "i"), lim); ti["identical_failure_count"] != 2 || ti["failures_count"] != 2 {
		t.Errorf("inconclusive: %v", ti)
	}
	if ti := DeriveTestIteration(nil, lim); ti != nil {
		t.Errorf("no runs: %v", ti)
	}
}

func TestDeriveTestIterationMaxWithInconclusiveRuns(t *testing.T) {
	lim := IterationLimits{MaxIterations: 3, CircuitBreaker: 3}
	ti := DeriveTestIteration(runs("i", "i"), lim)
	if ti["completed"] != false || ti["status"] != nil || ti["last_test_result"] != "inconclusive" {
		t.Errorf("below the maximum: %v", ti)
	}
	ti = DeriveTestIteration(runs("i", "i", "i"), lim)
	if ti["completed"] != true || ti["status"] != "escalated" || ti["escalation_reason"] != "max_iterations" ||
		ti["failures_count"] != 0 || ti["current_iteration"] != 3 || ti["escalation_details"] != "Exceeded 3 iterations without success" {
		t.Errorf("at the maximum: %v", ti)
	}
	// Failures with distinct errors reach the maximum too.
	ti = DeriveTestIteration(runs("f:A", "i", "f:B"), lim)
	if ti["escalation_reason"] != "max_iterations" || ti["failures_count"] != 2 {
		t.Errorf("failures: %v", ti)
	}
}

func TestDeriveTestIterationPassAfterEscalation(t *testing.T) {
	lim := IterationLimits{MaxIterations: 10, CircuitBreaker: 2}
	ti := DeriveTestIteration(runs("f:A", "f:A", "p"), lim)
	// As the peer: the pass completes the tests; the escalation's reason
	// stays, the identical count is reset.
	if ti["completed"] != true || ti["status"] != "success" || ti["completed_at"] == nil ||
		ti["escalation_reason"] != "circuit_breaker" || ti["identical_failure_count"] != 0 ||
		ti["last_test_result"] != "passed" || ti["current_iteration"] != 3 {
		t.Errorf("pass after escalation: %v", ti)
	}
	// A failure after the pass counts, but does not undo the success
	// below the limits.
	ti = DeriveTestIteration(runs("f:A", "f:A", "p", "f:B"), lim)
	if ti["completed"] != true || ti["status"] != "success" || ti["last_test_result"] != "failed" || ti["failures_count"] != 3 {
		t.Errorf("failure after the pass: %v", ti)
	}
}

func TestDeriveTestIterationCoverage(t *testing.T) {
	eighty := 80.0
	lim := IterationLimits{MaxIterations: 2, CircuitBreaker: 3, MinCoverage: &eighty}
	ti := DeriveTestIteration(runs("c:75"), lim)
	cov, _ := ti["coverage"].(map[string]any)
	if ti["completed"] != false || ti["status"] != nil || cov["met"] != false || cov["threshold"] != 80.0 || cov["percentage"] != 75.0 {
		t.Errorf("below the threshold: %v", ti)
	}
	ti = DeriveTestIteration(runs("c:75", "c:75"), lim)
	if ti["status"] != "escalated" || ti["escalation_reason"] != "coverage_below_threshold" ||
		ti["escalation_details"] != "Coverage 75% below 80% after 2 iterations" {
		t.Errorf("below the threshold at the maximum: %v", ti)
	}
	ti = DeriveTestIteration(runs("c:80"), lim)
	if cov, _ := ti["coverage"].(map[string]any); ti["status"] != "success" || cov["met"] != true {
		t.Errorf("at the threshold: %v", ti)
	}
	// No coverage printed: met (the peer enforces only what it sees).
	ti = DeriveTestIteration(runs("p"), lim)
	if cov, _ := ti["coverage"].(map[string]any); ti["status"] != "success" || cov["met"] != true || cov["found"] != false || cov["threshold"] != 80.0 {
		t.Errorf("no coverage: %v", ti)
	}
	// A zero threshold is none.
	zero := 0.0
	ti = DeriveTestIteration(runs("c:10"), IterationLimits{MaxIterations: 2, CircuitBreaker: 3, MinCoverage: &zero})
	if cov, _ := ti["coverage"].(map[string]any); ti["status"] != "success" || cov["threshold"] != nil {
		t.Errorf("zero threshold: %v", ti)
	}
}
