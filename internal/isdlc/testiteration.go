package isdlc

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// TestRun is one test run des saw in a workflow phase (internal/testrun's
// attested record, reduced to what the test iteration reads).
type TestRun struct {
	Time    time.Time
	Command string
	Result  string // "passed", "failed" or "inconclusive"
	// Failures is the failure count the output prints, nil when none.
	Failures *int
	// Coverage is the percentage the output prints, nil when none.
	Coverage *float64
	// Error is the failure's message ("" for a pass), Signature the same
	// normalised: two failures with one signature are the same failure.
	Error, Signature string
}

// IterationLimits are a phase's test iteration limits, as iSDLC's
// test-watcher finds them.
type IterationLimits struct {
	MaxIterations  int
	CircuitBreaker int
	// MinCoverage is the coverage a pass needs, nil when none is required.
	MinCoverage *float64
}

// Defaults of iSDLC's test-watcher when neither the state nor the tables
// give a limit.
const (
	defaultMaxIterations  = 10
	defaultCircuitBreaker = 3
)

// TestIterationLimits finds phase's limits as iSDLC's test-watcher does:
// state.iteration_config (testing_max, circuit_breaker_threshold; only
// when its configured_at is set, as the peer's getIterationConfig) first,
// then the requirement tables' phase_requirements[phase].test_iteration
// with workflow_overrides[active_workflow.type][phase] laid over it, then
// 10 iterations and 3 identical failures. A zero or absent value falls
// through, as JavaScript's || does. The coverage threshold is
// success_criteria.min_coverage_percent: a number, or an object by
// intensity (active_workflow.sizing.effective_intensity, else
// "standard"; 80 when it names neither). aliases maps legacy phase keys of
// the tables to the current ones.
func TestIterationLimits(tables, state map[string]any, phase string, aliases map[string]string) IterationLimits {
	iter, _ := tables[iterationKey].(map[string]any)
	reqs, _ := iter["phase_requirements"].(map[string]any)
	req := phaseEntry(reqs, phase, aliases)
	ti, _ := req["test_iteration"].(map[string]any)
	aw, _ := state["active_workflow"].(map[string]any)
	if wtype, _ := aw["type"].(string); wtype != "" {
		ovs, _ := iter["workflow_overrides"].(map[string]any)
		byType, _ := ovs[wtype].(map[string]any)
		ov := phaseEntry(byType, phase, aliases)
		if o, ok := ov["test_iteration"].(map[string]any); ok {
			merged := make(map[string]any, len(ti)+len(o))
			for k, v := range ti {
				merged[k] = v
			}
			for k, v := range o {
				merged[k] = v
			}
			ti = merged
		}
	}
	// The peer reads iteration_config only once the user configured it
	// (getIterationConfig: a truthy configured_at).
	cfg, _ := state["iteration_config"].(map[string]any)
	if !truthy(cfg["configured_at"]) {
		cfg = nil
	}
	lim := IterationLimits{
		MaxIterations:  firstPositive(defaultMaxIterations, cfg["testing_max"], ti["max_iterations"]),
		CircuitBreaker: firstPositive(defaultCircuitBreaker, cfg["circuit_breaker_threshold"], ti["circuit_breaker_threshold"]),
	}
	crit, _ := ti["success_criteria"].(map[string]any)
	raw := crit["min_coverage_percent"]
	if n, ok := number(raw); ok {
		lim.MinCoverage = &n
		return lim
	}
	switch v := raw.(type) {
	case nil:
	case map[string]any:
		sizing, _ := aw["sizing"].(map[string]any)
		key, _ := sizing["effective_intensity"].(string)
		if key == "" {
			key = "standard"
		}
		c := 80.0
		if n, ok := number(v[key]); ok {
			c = n
		} else if n, ok := number(v["standard"]); ok {
			c = n
		}
		lim.MinCoverage = &c
	default:
		c := 80.0
		lim.MinCoverage = &c
	}
	return lim
}

// number is a JSON number as a float64: the state and the tables reach des
// with their numbers kept exact (json.Number, datadoc.Decode and the
// policies' data); float64 for a document decoded plainly.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// truthy is JavaScript's truthiness of a JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	}
	if n, ok := number(v); ok {
		return n != 0 && !math.IsNaN(n)
	}
	return true
}

// phaseEntry is obj[phase], else the first entry (by key order) whose key
// an alias maps to phase.
func phaseEntry(obj map[string]any, phase string, aliases map[string]string) map[string]any {
	if e, ok := obj[phase].(map[string]any); ok {
		return e
	}
	var best string
	var found map[string]any
	for k, v := range obj {
		e, ok := v.(map[string]any)
		if ok && aliases[strings.TrimSpace(k)] == phase && (found == nil || k < best) {
			best, found = k, e
		}
	}
	return found
}

func firstPositive(def int, vals ...any) int {
	for _, v := range vals {
		if n, ok := number(v); ok && n > 0 && n == math.Trunc(n) && n <= math.MaxInt32 {
			return int(n)
		}
	}
	return def
}

// TestIterationKeys are the keys of a phase's test_iteration that
// DeriveTestIteration computes: des writes them, and a state write that
// changes one of them is checked against des's evidence. Others
// (escalation_approved, a person's notes) are left to the state.
var TestIterationKeys = []string{
	"required", "completed", "current_iteration", "max_iterations", "failures_count",
	"identical_failure_count", "last_test_result", "last_test_command", "last_test_at",
	"status", "escalation_reason", "escalation_details", "coverage", "started_at", "completed_at", "history",
	"escalation_approved",
}

// DeriveTestIteration computes a phase's test_iteration from the test runs
// des saw in it (oldest first) as iSDLC's test-watcher computes it, one
// run at a time: each run is an iteration; a pass (with the coverage the
// limits require, when the output prints coverage) completes the phase's
// tests; a failure counts towards the circuit breaker when its error is
// the previous run's (normalised); an inconclusive run (interrupted, or
// output that reads neither way without an exit status) neither passes nor
// fails. At the circuit breaker or at the maximum the iteration is
// escalated (completed, status "escalated", with the reason). nil when
// there are no runs.
func DeriveTestIteration(runs []TestRun, lim IterationLimits) map[string]any {
	if len(runs) == 0 {
		return nil
	}
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	ti := map[string]any{
		"required": true, "completed": false, "current_iteration": 0, "max_iterations": lim.MaxIterations,
		"failures_count": 0, "identical_failure_count": 0, "started_at": stamp(runs[0].Time),
	}
	history := make([]any, 0, len(runs))
	n, failures, identical := 0, 0, 0
	prevErr, prevSig := "", ""
	escalate := func(reason, details string) {
		ti["completed"], ti["status"], ti["escalation_reason"], ti["escalation_details"] = true, "escalated", reason, details
	}
	for _, r := range runs {
		n++
		result := strings.ToUpper(r.Result)
		entry := map[string]any{"iteration": n, "timestamp": stamp(r.Time), "command": r.Command, "result": result, "failures": 0, "error": nil}
		if r.Failures != nil {
			entry["failures"] = *r.Failures
		} else if r.Result == "failed" {
			entry["failures"] = 1
		}
		if r.Error != "" {
			entry["error"] = r.Error
		}
		history = append(history, entry)
		ti["last_test_result"], ti["last_test_command"], ti["last_test_at"] = r.Result, r.Command, stamp(r.Time)
		switch r.Result {
		case "passed":
			identical = 0
			cov := map[string]any{"found": r.Coverage != nil, "percentage": nil, "threshold": nil, "met": true}
			if r.Coverage != nil {
				cov["percentage"] = *r.Coverage
			}
			if lim.MinCoverage != nil && *lim.MinCoverage != 0 {
				cov["threshold"] = *lim.MinCoverage
			}
			low := r.Coverage != nil && lim.MinCoverage != nil && *lim.MinCoverage != 0 && *r.Coverage < *lim.MinCoverage
			cov["met"] = !low
			ti["coverage"] = cov
			if low {
				if lim.MaxIterations-n <= 0 {
					escalate("coverage_below_threshold", fmt.Sprintf("Coverage %v%% below %v%% after %d iterations", *r.Coverage, *lim.MinCoverage, lim.MaxIterations))
				}
				break
			}
			ti["completed"], ti["status"], ti["completed_at"] = true, "success", stamp(r.Time)
		case "failed":
			failures++
			if r.Error != "" && prevErr != "" && prevSig == r.Signature {
				identical++
			} else {
				identical = 1
			}
			switch {
			case identical >= lim.CircuitBreaker:
				escalate("circuit_breaker", fmt.Sprintf("Same error repeated %d times", lim.CircuitBreaker))
			case n >= lim.MaxIterations:
				escalate("max_iterations", fmt.Sprintf("Exceeded %d iterations without success", lim.MaxIterations))
			}
		default:
			if n >= lim.MaxIterations {
				escalate("max_iterations", fmt.Sprintf("Exceeded %d iterations without success", lim.MaxIterations))
			}
		}
		prevErr, prevSig = r.Error, r.Signature
	}
	ti["current_iteration"], ti["failures_count"], ti["identical_failure_count"] = n, failures, identical
	ti["history"] = history
	return ti
}

// WorkflowID names the active workflow of a state: its type and started_at
// ("feature@2026-11-29T10:00:00Z"), "" when there is no active workflow.
// Test runs belong to the workflow they ran in: a new workflow (another
// started_at) starts with no test evidence.
func WorkflowID(state map[string]any) string {
	aw, ok := state["active_workflow"].(map[string]any)
	if !ok {
		return ""
	}
	wtype, _ := aw["type"].(string)
	started, _ := aw["started_at"].(string)
	return wtype + "@" + started
}

// CurrentPhase is the workflow's current phase as the state holds it:
// active_workflow.current_phase, else the top-level current_phase, trimmed
// ("" when there is no active workflow or no phase).
func CurrentPhase(state map[string]any) string {
	aw, ok := state["active_workflow"].(map[string]any)
	if !ok {
		return ""
	}
	if p, _ := aw["current_phase"].(string); strings.TrimSpace(p) != "" {
		return strings.TrimSpace(p)
	}
	p, _ := state["current_phase"].(string)
	return strings.TrimSpace(p)
}

// PhaseKey is the key under which state.phases holds phase: phase itself,
// else a key an alias maps to it, else raw (the current phase as the state
// spells it), where a new entry goes.
func PhaseKey(state map[string]any, phase, raw string, aliases map[string]string) string {
	phases, _ := state["phases"].(map[string]any)
	if _, ok := phases[phase]; ok {
		return phase
	}
	var best string
	for k := range phases {
		if aliases[strings.TrimSpace(k)] == phase && (best == "" || k < best) {
			best = k
		}
	}
	if best != "" {
		return best
	}
	return raw
}
