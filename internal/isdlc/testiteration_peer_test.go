package isdlc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/shell"
	"github.com/deterministic-exec/des/internal/testrun"
)

// iSDLC's test-watcher suite (src/claude/hooks/tests/test-test-watcher.test.cjs
// of https://github.com/vihang-hub/isdlc-framework at
// 0689df912ef7c375b34c1486693ce19f737a8b9a), case by case, against des's
// derivation of test_iteration: each of its 100 it() cases is here, by its
// title, either replayed or listed as not applicable with the reason.
//
// A replayed hook case is the Bash call it sends, recognised by des's test
// runner table (data.des.evidence.test_runners), read by testrun.Parse and
// folded by DeriveTestIteration under TestIterationLimits of the case's
// state and requirements. How the peer's inputs translate:
//
//   - bashTestInput(command, output) sends output as a string tool_result:
//     the peer reads the exit status from the text (extractExitCode:
//     "exited with code N", else none), so the run is Parse(output,
//     ExitInText(output)). bashTestInput(command, output, code) sends
//     {output, exitCode}: Parse(output, &code).
//   - The peer's runHook cases run with its own iteration-requirements.json
//     (peerTables: the part test-watcher reads); its check(ctx) cases with
//     the requirements they give (ctxTables).
//   - A case that starts mid-loop (a test_iteration already in the state)
//     starts with the runs that made that state: failedIterationState(n)
//     (current_iteration n, failures_count n, empty history) is n earlier
//     failures with distinct errors, so that none repeats the next one, as
//     the empty history makes the peer count the next failure as the first
//     of its kind; history entries with errors are failures with those
//     errors; earlier inconclusive iterations are inconclusive runs.
//   - Only what the peer's test asserts is compared. An assertion on the
//     hook's message is compared where the message reports the state ("TESTS
//     PASSED" is status success, "CIRCUIT BREAKER TRIGGERED" escalation
//     reason circuit_breaker, "4/10, Remaining iterations: 6" iteration 4 of
//     10, "COVERAGE" coverage not met).
//
// The peer's helpers (normalizeErrorForComparison, isIdenticalFailure,
// parseTestResult, resolveCoverageThreshold) are compared with des's
// (testrun.NormalizeError, testrun.IdenticalFailure, testrun.Parse,
// TestIterationLimits' coverage threshold).
//
// ISDLC_PEER_REPO=<a checkout at that commit> also checks that the titles
// here are the suite's.

// peerWatcherCases is the number of it() cases of the peer's suite.
const peerWatcherCases = 100

// watcherCase is one it() case of the peer's suite: run compares des with
// the peer's assertions (nil when the case is not applicable, na saying
// why), returning the differences; differs, when set, documents why des
// differs on purpose.
type watcherCase struct {
	name    string
	run     func(t *testing.T) []string
	na      string
	differs string
}

// peerTables is the part of the peer's iteration-requirements.json that
// test-watcher reads for its suite's phases.
const peerTables = `{"iteration_requirements": {"phase_requirements": {
	"01-requirements": {"test_iteration": {"enabled": false}},
	"06-implementation": {"test_iteration": {"enabled": true, "max_iterations": 10, "circuit_breaker_threshold": 3,
		"success_criteria": {"all_tests_passing": true, "min_coverage_percent": {"light": 60, "standard": 80, "epic": 95}}}}}}}`

// scalarTables is peerTables with the scalar coverage TC-24 writes.
const scalarTables = `{"iteration_requirements": {"phase_requirements": {
	"06-implementation": {"test_iteration": {"enabled": true, "max_iterations": 10, "circuit_breaker_threshold": 3,
		"success_criteria": {"all_tests_passing": true, "min_coverage_percent": 80}}}}}}`

// ctxTables is the requirements of the suite's check(ctx) cases.
const ctxTables = `{"iteration_requirements": {"phase_requirements": {
	"06-implementation": {"test_iteration": {"enabled": true, "max_iterations": 10, "circuit_breaker_threshold": 3}}}}}`

// baseState is the suite's baseTestState; withSizing the same with an
// active workflow of that type and intensity; configured an
// iteration_config.
const baseState = `{"current_phase": "06-implementation", "iteration_enforcement": {"enabled": true},
	"active_workflow": {"type": "feature", "current_phase": "06-implementation", "current_phase_index": 5}}`

func withSizing(wtype, intensity string) string {
	sizing := ""
	if intensity != "" {
		sizing = `, "sizing": {"effective_intensity": "` + intensity + `"}`
	}
	return `{"current_phase": "06-implementation", "iteration_enforcement": {"enabled": true},
	"active_workflow": {"type": "` + wtype + `", "current_phase": "06-implementation"` + sizing + `}}`
}

func configured(cfg string) string {
	return `{"current_phase": "06-implementation", "iteration_enforcement": {"enabled": true},
	"active_workflow": {"type": "feature", "current_phase": "06-implementation", "current_phase_index": 5},
	"iteration_config": ` + cfg + `}`
}

// bashCall is a Bash call of a case, as des would read it.
type bashCall struct {
	command, output string
	exit            *int
}

// bash is bashTestInput(command, output): a string tool_result.
func bash(command, output string) bashCall {
	return bashCall{command, output, testrun.ExitInText(output)}
}

// bashExit is bashTestInput(command, output, code).
func bashExit(command, output string, code int) bashCall {
	return bashCall{command, output, &code}
}

// Earlier runs of a case that starts mid-loop.
func failedRuns(n int) []TestRun {
	errs := make([]string, n)
	for i := range errs {
		errs[i] = fmt.Sprintf("Error: earlier failure %d", i+1)
	}
	return failedWith(errs...)
}

func failedWith(errs ...string) []TestRun {
	out := make([]TestRun, len(errs))
	for i, e := range errs {
		out[i] = TestRun{Command: "npm test", Result: testrun.Failed, Error: e, Signature: testrun.NormalizeError(e)}
	}
	return out
}

func inconclusiveRuns(n int) []TestRun {
	const e = "Unable to determine test result"
	out := make([]TestRun, n)
	for i := range out {
		out[i] = TestRun{Command: "npm test", Result: testrun.Inconclusive, Error: e, Signature: e}
	}
	return out
}

// Expectations beyond equality.
type (
	present struct{}        // set, and not empty
	notEq   struct{ v any } // anything else (absent included)
	atLeast int
)

// noIteration expects no test_iteration at all.
const noIteration = "(test_iteration)"

// runnerTable is des's built-in test runner table.
func runnerTable(t *testing.T) testrun.Table {
	t.Helper()
	raw, err := os.ReadFile("../../rego/des/evidence/data.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		TestRunners any `json:"test_runners"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	tab, err := testrun.ParseTable(d.TestRunners)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// check replays a hook case: prior runs, then call, under tables and
// state; want maps a path of test_iteration ("coverage.met",
// "history.0.result", "history.#" for a length) to what the peer's test
// asserts.
func check(tables, state string, prior []TestRun, call bashCall, want map[string]any) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		var ti map[string]any
		if _, ok := runnerTable(t).Recognise(shell.Analyze(call.command).Runs); ok {
			o := testrun.Parse(call.output, call.exit, false)
			runs := append([]TestRun(nil), prior...)
			runs = append(runs, TestRun{Command: call.command, Result: o.Result, Failures: o.Failed,
				Coverage: o.Coverage, Error: o.Error, Signature: o.Signature})
			for i := range runs {
				runs[i].Time = base.Add(time.Duration(i) * time.Minute)
			}
			st := doc(t, state)
			aw, _ := st["active_workflow"].(map[string]any)
			phase, _ := aw["current_phase"].(string)
			ti = DeriveTestIteration(runs, TestIterationLimits(doc(t, tables), st, phase, nil))
		}
		return compare(ti, want)
	}
}

func compare(ti map[string]any, want map[string]any) []string {
	var diffs []string
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w := want[k]
		if k == noIteration {
			if got := ti != nil; got != w.(bool) {
				diffs = append(diffs, fmt.Sprintf("test_iteration derived: %v, want %v", got, w))
			}
			continue
		}
		got, ok := lookup(ti, k)
		var good bool
		switch w := w.(type) {
		case present:
			good = ok && got != nil && got != ""
		case notEq:
			good = !ok || !reflect.DeepEqual(got, w.v)
		case atLeast:
			n, isInt := got.(int)
			good = isInt && n >= int(w)
		default:
			good = ok && reflect.DeepEqual(got, w)
		}
		if !good {
			diffs = append(diffs, fmt.Sprintf("%s = %#v, want %#v", k, got, w))
		}
	}
	return diffs
}

func lookup(v any, path string) (any, bool) {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, false
			}
		case []any:
			if p == "#" {
				return len(x), true
			}
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// parses compares testrun.Parse with parseTestResult: result, and error
// and the least failure count when given.
type parseWant struct {
	output    string
	exit      *int
	result    string
	err       string
	minFailed int
}

func parses(ws ...parseWant) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		var diffs []string
		for _, w := range ws {
			o := testrun.Parse(w.output, w.exit, false)
			if o.Result != w.result {
				diffs = append(diffs, fmt.Sprintf("Parse(%q).Result = %s, want %s", w.output, o.Result, w.result))
			}
			if w.err != "" && o.Error != w.err {
				diffs = append(diffs, fmt.Sprintf("Parse(%q).Error = %q, want %q", w.output, o.Error, w.err))
			}
			if w.minFailed > 0 && (o.Failed == nil || *o.Failed < w.minFailed) {
				diffs = append(diffs, fmt.Sprintf("Parse(%q).Failed = %v, want at least %d", w.output, o.Failed, w.minFailed))
			}
		}
		return diffs
	}
}

func ip(n int) *int { return &n }

// normalizes compares testrun.NormalizeError(in) with the peer's
// assertions: equal to eq (when set), containing each of has, none of not,
// and count[s] times s.
type normWant struct {
	in, eq   string
	checkEq  bool
	has, not []string
	count    map[string]int
}

func normalizes(w normWant) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		got := testrun.NormalizeError(w.in)
		var diffs []string
		if w.checkEq && got != w.eq {
			diffs = append(diffs, fmt.Sprintf("NormalizeError(%q) = %q, want %q", w.in, got, w.eq))
		}
		for _, s := range w.has {
			if !strings.Contains(got, s) {
				diffs = append(diffs, fmt.Sprintf("NormalizeError(%q) = %q lacks %q", w.in, got, s))
			}
		}
		for _, s := range w.not {
			if strings.Contains(got, s) {
				diffs = append(diffs, fmt.Sprintf("NormalizeError(%q) = %q keeps %q", w.in, got, s))
			}
		}
		for s, n := range w.count {
			if c := strings.Count(got, s); c != n {
				diffs = append(diffs, fmt.Sprintf("NormalizeError(%q) = %q has %q %d times, want %d", w.in, got, s, c, n))
			}
		}
		return diffs
	}
}

// identical compares testrun.IdenticalFailure with isIdenticalFailure.
type identWant struct {
	current string
	history []string
	want    bool
}

func identical(ws ...identWant) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		var diffs []string
		for _, w := range ws {
			if got := testrun.IdenticalFailure(w.current, w.history); got != w.want {
				diffs = append(diffs, fmt.Sprintf("IdenticalFailure(%q, %q) = %v, want %v", w.current, w.history, got, w.want))
			}
		}
		return diffs
	}
}

// thresholds compares TestIterationLimits' coverage threshold with
// resolveCoverageThreshold(cov, state): the threshold of a table whose
// min_coverage_percent is cov (JSON), under state (JSON); want nil for none.
type threshWant struct {
	cov, state string
	want       *float64
}

func fp(f float64) *float64 { return &f }

func intensity(i string) string {
	return `{"active_workflow": {"sizing": {"effective_intensity": "` + i + `"}}}`
}

func thresholds(ws ...threshWant) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		var diffs []string
		for _, w := range ws {
			tables := `{"iteration_requirements": {"phase_requirements": {"06-implementation": {"test_iteration": {"enabled": true, "success_criteria": {"min_coverage_percent": ` + w.cov + `}}}}}}`
			got := TestIterationLimits(doc(t, tables), doc(t, w.state), "06-implementation", nil).MinCoverage
			switch {
			case got == nil && w.want == nil:
			case got == nil || w.want == nil || *got != *w.want:
				diffs = append(diffs, fmt.Sprintf("threshold of %s under %s = %s, want %s", w.cov, w.state, showF(got), showF(w.want)))
			}
		}
		return diffs
	}
}

func showF(f *float64) string {
	if f == nil {
		return "none"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

const (
	tieredUnit        = `{"light": 60, "standard": 80, "epic": 95}`
	tieredIntegration = `{"light": 50, "standard": 70, "epic": 85}`
	inconclusiveOut   = "Running checks... Done. Summary complete."
)

// inconclusiveCall is buildInconclusiveCtx's call.
var inconclusiveCall = bash("npm test", inconclusiveOut)

func watcherCases() []watcherCase {
	const tw = "test-watcher.js: "
	const fz = "normalizeErrorForComparison -- fuzzy circuit breaker: "
	const pr = "parseTestResult -- inconclusive result type (BUG-0007): "
	const ic = "check() -- inconclusive handling (BUG-0007): "
	const rc = "resolveCoverageThreshold (BUG-0054-GH-52): "
	const cf = "iteration-requirements.json tiered config (BUG-0054-GH-52): "
	const it = "integration: tiered coverage enforcement (BUG-0054-GH-52): "
	const bh = "behavioral: prose and documentation (BUG-0054-GH-52): "
	const bc = "backward compatibility (BUG-0007): "
	passed := map[string]any{"status": "success", "completed": true, "last_test_result": "passed"}
	cov := func(pct string) string {
		return "Tests: 10 passed, 0 failed, 10 total\nAll tests passed\nStatements   : " + pct + "%\nBranches     : 70%\nFunctions    : 80%\nLines        : " + pct + "%"
	}
	return []watcherCase{
		// test-watcher.js (runHook, the peer's own requirements).
		{name: tw + "passes through non-Bash tools (e.g., Task)",
			na: "des records test runs of Bash calls only (the hook's recordTestRun reads a Bash command); no other tool makes one"},
		{name: tw + "passes through Bash commands that are not test commands (e.g., npm install)",
			run: check(peerTables, baseState, nil, bash("npm install", "added 150 packages"), map[string]any{noIteration: false})},
		{name: tw + "records success in state when npm test passes",
			run: check(peerTables, baseState, nil, bash("npm test", "Test Suites: 5 passed, 5 total\nTests: 20 passed, 0 failed, 20 total\nAll tests passed"), passed)},
		{name: tw + "records failure in state when npm test fails",
			run: check(peerTables, baseState, nil, bash("npm test", "Tests: 3 failed, 17 passed, 20 total\nFAIL src/auth.test.js\nError: Expected true to be false"),
				map[string]any{"completed": false, "last_test_result": "failed", "failures_count": atLeast(1)})},
		{name: tw + "detects pytest as a test command",
			run: check(peerTables, baseState, nil, bash("pytest tests/", "5 passed in 2.1s\nAll tests passed"), passed)},
		{name: tw + "detects go test as a test command",
			run: check(peerTables, baseState, nil, bash("go test ./...", "ok  \tgithub.com/user/repo\t0.5s\n3 passing\nPASSED"), passed)},
		{name: tw + "detects cargo test as a test command",
			run: check(peerTables, baseState, nil, bash("cargo test", "test result: ok. 10 passed; 0 failed; 0 ignored\nAll tests passed"), passed)},
		{name: tw + "detects jest as a test command",
			run: check(peerTables, baseState, nil, bash("jest --coverage", "Tests: 8 passed, 0 failed, 8 total\nAll tests passed"), passed)},
		{name: tw + "creates iteration state on first test failure",
			run: check(peerTables, baseState, nil, bash("npm test", "FAIL src/app.test.js\n1 failed, 4 passed\nError: assertion failed"),
				map[string]any{"current_iteration": 1, "completed": false, "last_test_result": "failed", "started_at": present{},
					"history.#": 1, "history.0.result": "FAILED"})},
		{name: tw + "increments iteration counter on subsequent failures",
			run: check(peerTables, baseState, failedRuns(2), bash("npm test", "FAIL src/app.test.js\n1 failed\nTypeError: Cannot read property"),
				map[string]any{"current_iteration": 3, "completed": false})},
		{name: tw + `marks iteration as completed with status "success" after passing tests`,
			run: check(peerTables, baseState, failedRuns(3), bash("npm test", "All tests passed\nTests: 10 passed, 0 failed, 10 total"),
				map[string]any{"status": "success", "completed": true, "last_test_result": "passed", "completed_at": present{}})},
		{name: tw + "escalates when max iterations are exceeded",
			run: check(peerTables, baseState, failedRuns(9), bash("npm test", "FAIL\n1 failed\nError: Something broken"),
				map[string]any{"completed": true, "status": "escalated", "escalation_reason": "max_iterations"})},
		{name: tw + "passes through without state changes when enforcement is disabled",
			na: "des ignores iteration_enforcement.enabled: false on purpose (README: nothing in the state switches des off, the agent writes the state); DeriveTestIteration has no switch to read"},
		{name: tw + "detects failure from exitCode in structured tool_result",
			run: check(peerTables, baseState, nil, bashExit("npm test", "", 1), map[string]any{"last_test_result": "failed"})},
		{name: tw + "detects failure from FAIL keyword in output",
			run: check(peerTables, baseState, nil, bash("npm test", "FAIL src/components/Button.test.js\n  Expected: true\n  Received: false"),
				map[string]any{"last_test_result": "failed"})},
		{name: tw + `detects success from "Tests: N passed, 0 failed" pattern`,
			run: check(peerTables, baseState, nil, bash("npm test", "Tests: 5 passed, 0 failed, 5 total\nTime: 2.5s"), passed)},
		{name: tw + "passes through when state.json does not exist",
			na: "state file I/O: with no state des finds no workflow (isdlc.Discover) and derives nothing"},
		{name: tw + "passes through silently when no active_workflow exists",
			na: "no active workflow: des's test runs belong to a workflow (WorkflowID) and its guards give no opinion without one"},
		{name: tw + "detects vitest as a test command",
			run: check(peerTables, baseState, nil, bash("vitest run", "Tests: 12 passed, 0 failed\nAll tests passed"), passed)},
		{name: tw + "detects mvn test as a test command",
			run: check(peerTables, baseState, nil, bash("mvn test", "BUILD SUCCESS\nTests run: 25, Failures: 0, Errors: 0"), passed)},
		{name: tw + "records history entry with correct fields for each test run",
			run: check(peerTables, baseState, nil, bash("npm test", "FAIL src/app.test.js\n2 failed\nError: assertion failed"),
				map[string]any{"history.#": 1, "history.0.iteration": 1, "history.0.result": "FAILED", "history.0.command": "npm test",
					"history.0.timestamp": present{}, "history.0.error": present{}})},
		{name: tw + "passes through for a phase with test_iteration disabled",
			na: "whether a phase tracks test iterations (test_iteration.enabled, with the workflow's overrides) is decided by the Rego guards (enabled(\"test_iteration\")), not by DeriveTestIteration"},
		{name: tw + `extracts exit code from string "exited with code 1" in tool_result`,
			run: check(peerTables, baseState, nil, bash("npm test", "npm test exited with code 1"), map[string]any{"last_test_result": "failed"})},
		{name: tw + "failure output includes remaining iterations count",
			run: check(peerTables, baseState, failedRuns(3), bash("npm test", "FAIL\n1 failed\nError: broken"),
				map[string]any{"current_iteration": 4, "max_iterations": 10, "completed": false, "status": notEq{"escalated"}})},
		{name: tw + "success output mentions constitutional validation as next step",
			na: "the hook's guidance message; des reports the constitutional validation requirement through its gate guards"},
		{name: tw + "uses iteration_config.testing_max from state.json when present",
			run: check(peerTables, configured(`{"implementation_max": 5, "testing_max": 3, "circuit_breaker_threshold": 2, "escalation_behavior": "pause", "configured_at": "2026-02-07T14:30:00Z"}`),
				nil, bash("npm test", "FAIL src/app.test.js\n1 failed\nError: assertion failed"),
				map[string]any{"max_iterations": 3, "current_iteration": 1, "completed": false})},
		{name: tw + "uses iteration_config.circuit_breaker_threshold from state.json",
			run: check(peerTables, configured(`{"implementation_max": 5, "testing_max": 10, "circuit_breaker_threshold": 2, "escalation_behavior": "pause", "configured_at": "2026-02-07T14:30:00Z"}`),
				failedWith("TypeError: x is not a function"), bash("npm test", "FAIL\n1 failed\nTypeError: x is not a function"),
				map[string]any{"status": "escalated", "escalation_reason": "circuit_breaker"})},
		{name: tw + "falls back to iteration-requirements.json when iteration_config is absent",
			run: check(peerTables, baseState, nil, bash("npm test", "FAIL src/app.test.js\n1 failed\nError: something broke"),
				map[string]any{"max_iterations": 10})},
		{name: tw + "ignores iteration_config without configured_at timestamp",
			run: check(peerTables, configured(`{"implementation_max": 2, "testing_max": 2, "circuit_breaker_threshold": 1}`),
				nil, bash("npm test", "FAIL src/app.test.js\n1 failed\nError: assertion failed"),
				map[string]any{"max_iterations": 10, "status": notEq{"escalated"}})},
		{name: tw + "escalates at iteration_config.testing_max instead of requirements max",
			run: check(peerTables, configured(`{"implementation_max": 5, "testing_max": 3, "circuit_breaker_threshold": 5, "escalation_behavior": "pause", "configured_at": "2026-02-07T14:30:00Z"}`),
				failedRuns(2), bash("npm test", "FAIL\n1 failed\nError: Something broken"),
				map[string]any{"completed": true, "status": "escalated", "escalation_reason": "max_iterations"})},
		{name: tw + "does not overwrite max_iterations on existing iteration state",
			run: check(peerTables, configured(`{"implementation_max": 5, "testing_max": 3, "circuit_breaker_threshold": 2, "escalation_behavior": "pause", "configured_at": "2026-02-07T14:30:00Z"}`),
				failedRuns(2), bash("npm test", "FAIL\n1 failed\nError: another failure"),
				map[string]any{"max_iterations": 10}),
			differs: "des reads the limits from the tables and the state's iteration_config as they are when it derives (here testing_max 3), not from a max_iterations the state kept since the phase's first run: the state's test_iteration is what the agent writes, and des derives it from its evidence and the configuration alone"},

		// normalizeErrorForComparison, isIdenticalFailure.
		{name: fz + "returns empty string for null input", run: normalizes(normWant{in: "", eq: "", checkEq: true})},
		{name: fz + "returns empty string for undefined input", run: normalizes(normWant{in: "", eq: "", checkEq: true})},
		{name: fz + "returns empty string for non-string input",
			na: "des's errors are Go strings (\"\" when none): no number, object or boolean reaches NormalizeError"},
		{name: fz + "returns empty string for empty string input", run: normalizes(normWant{in: "", eq: "", checkEq: true})},
		{name: fz + "strips line:column references (:42:13 -> :X:X)",
			run: normalizes(normWant{in: "Error at file.js:42:13 something failed", has: []string{":X:X"}, not: []string{":42:13"}})},
		{name: fz + "strips multiple line:column references",
			run: normalizes(normWant{in: "Error at file.js:42:13 and file.js:100:5", not: []string{":42:13", ":100:5"}, count: map[string]int{":X:X": 2}})},
		{name: fz + "strips ISO 8601 timestamps",
			run: normalizes(normWant{in: "Error at 2026-02-11T10:30:00.000Z: connection failed", has: []string{"TIMESTAMP"}, not: []string{"2026-02-11"}})},
		{name: fz + "strips ISO 8601 timestamps without milliseconds",
			run: normalizes(normWant{in: "Error at 2026-02-11T10:30:00Z: connection failed", has: []string{"TIMESTAMP"}, not: []string{"2026-02-11"}})},
		{name: fz + "strips common date formats (YYYY-MM-DD HH:MM:SS)",
			run: normalizes(normWant{in: "Error logged at 2026-02-11 10:30:00 in module X", has: []string{"TIMESTAMP"}, not: []string{"2026-02-11"}})},
		{name: fz + "strips stack trace paths with parenthesized form",
			run: normalizes(normWant{in: "at Object.<anonymous> (/path/to/file.js:42:13)", has: []string{"at STACK"}, not: []string{"/path/to/file.js"}})},
		{name: fz + "strips stack trace paths without parentheses",
			run: normalizes(normWant{in: "at /Users/dev/project/src/index.js:99:5", has: []string{"at STACK"}, not: []string{"/Users/dev"}})},
		{name: fz + "strips memory addresses (0x7fff5fbff8c0 -> 0xADDR)",
			run: normalizes(normWant{in: "Segfault at address 0x7fff5fbff8c0", has: []string{"0xADDR"}, not: []string{"0x7fff5fbff8c0"}})},
		{name: fz + "strips multiple memory addresses",
			run: normalizes(normWant{in: "Error: 0xDEADBEEF vs 0xCAFEBABE", not: []string{"0xDEADBEEF", "0xCAFEBABE"}, count: map[string]int{"0xADDR": 2}})},
		{name: fz + "collapses multiple spaces into single space",
			run: normalizes(normWant{in: "Error:   multiple    spaces   here", eq: "Error: multiple spaces here", checkEq: true})},
		{name: fz + "collapses tabs and newlines into single space",
			run: normalizes(normWant{in: "Error:\ttab\nand\nnewline", eq: "Error: tab and newline", checkEq: true})},
		{name: fz + "trims leading and trailing whitespace",
			run: normalizes(normWant{in: "  Error: something  ", eq: "Error: something", checkEq: true})},
		{name: fz + "isIdenticalFailure matches errors that differ only in line numbers",
			run: identical(identWant{"TypeError: Cannot read property at file.js:50:10", []string{"TypeError: Cannot read property at file.js:42:13", "TypeError: Cannot read property at file.js:45:8"}, true})},
		{name: fz + "isIdenticalFailure matches errors that differ only in timestamps",
			run: identical(identWant{"Connection timeout at 2026-02-11T12:00:00.000Z", []string{"Connection timeout at 2026-02-10T08:30:00.000Z", "Connection timeout at 2026-02-11T10:15:00.000Z"}, true})},
		{name: fz + "isIdenticalFailure matches errors that differ only in memory addresses",
			run: identical(identWant{"Segfault at 0xDEADBEEF in module X", []string{"Segfault at 0xCAFEBABE in module X", "Segfault at 0x12345678 in module X"}, true})},
		{name: fz + "isIdenticalFailure does NOT match genuinely different errors",
			run: identical(identWant{"TypeError: Cannot read property x of undefined", []string{"ReferenceError: y is not defined", "SyntaxError: Unexpected token"}, false})},
		{name: fz + "isIdenticalFailure returns false when history has fewer than 2 entries",
			run: identical(identWant{"Error: something broke", nil, false}, identWant{"Error: something broke", []string{"Error: something broke"}, false})},
		{name: fz + "isIdenticalFailure returns false for null/empty history",
			run: identical(identWant{"Error", nil, false})},
		{name: fz + "fuzzy circuit breaker triggers via check() for errors differing only in line numbers",
			run: check(ctxTables, baseState, failedWith("TypeError: x is not a function at file.js:10:5", "TypeError: x is not a function at file.js:20:8"),
				bash("npm test", "FAIL\n1 failed\nTypeError: x is not a function at file.js:35:12"),
				map[string]any{"status": "escalated", "escalation_reason": "circuit_breaker"})},

		// parseTestResult.
		{name: pr + "returns inconclusive when no patterns match and no exit code (AC-1.1)",
			run: parses(parseWant{output: inconclusiveOut, result: testrun.Inconclusive, err: "Unable to determine test result"})},
		{name: pr + "returns PASSED when exit code is 0 even if no patterns match (AC-1.2)",
			run: parses(parseWant{output: inconclusiveOut, exit: ip(0), result: testrun.Passed})},
		{name: pr + "returns FAILED when exit code is non-zero even if no patterns match (AC-1.2)",
			run: parses(parseWant{output: inconclusiveOut, exit: ip(1), result: testrun.Failed, err: "Exit code: 1"})},
		{name: pr + "returns FAILED when failure patterns match, not inconclusive (AC-1.3)",
			run: parses(parseWant{output: "FAIL src/app.test.js\n2 failed\nError: assertion failed", result: testrun.Failed, minFailed: 1})},
		{name: pr + "returns PASSED when success patterns match, not inconclusive (AC-1.4)",
			run: parses(parseWant{output: "All tests passed\nTests: 5 passed, 0 failed, 5 total", result: testrun.Passed})},
		{name: pr + "inconclusive is absent or false on all determinate results (AC-1.5)",
			run: parses(parseWant{output: "All tests passed", result: testrun.Passed}, parseWant{output: "FAIL\n1 failed\nError: bad", result: testrun.Failed},
				parseWant{output: "some output", exit: ip(0), result: testrun.Passed}, parseWant{output: "some output", exit: ip(1), result: testrun.Failed})},

		// check() with an inconclusive run (the check(ctx) requirements).
		{name: ic + "records INCONCLUSIVE in history entry, not FAILED (AC-2.1)",
			run: check(ctxTables, baseState, nil, inconclusiveCall, map[string]any{"history.#": 1, "history.0.result": "INCONCLUSIVE"})},
		{name: ic + "does not increment failures_count for inconclusive results (AC-2.2)",
			run: check(ctxTables, baseState, failedRuns(2), inconclusiveCall, map[string]any{"failures_count": 2})},
		{name: ic + "does not increment identical_failure_count for inconclusive results (AC-2.3)",
			run: check(ctxTables, baseState, failedWith("Error: same", "Error: same"), inconclusiveCall, map[string]any{"identical_failure_count": 2})},
		{name: ic + "skips circuit breaker entirely for inconclusive results (AC-2.4)",
			run: check(ctxTables, baseState, failedWith("Unable to determine test result", "Unable to determine test result"), inconclusiveCall,
				map[string]any{"status": notEq{"escalated"}, "completed": false, "failures_count": 2, "identical_failure_count": 2})},
		{name: ic + `sets last_test_result to "inconclusive" (AC-2.5)`,
			run: check(ctxTables, baseState, nil, inconclusiveCall, map[string]any{"last_test_result": "inconclusive"})},
		{name: ic + "outputs a warning about unparseable output, not an error (AC-2.6)",
			run: check(ctxTables, baseState, nil, inconclusiveCall,
				map[string]any{"last_test_result": "inconclusive", "failures_count": 0, "status": notEq{"escalated"}, "escalation_reason": notEq{"circuit_breaker"}})},
		{name: ic + "increments current_iteration for inconclusive results (AC-3.1)",
			run: check(ctxTables, baseState, inconclusiveRuns(3), inconclusiveCall, map[string]any{"current_iteration": 4})},
		{name: ic + "escalates when max iterations reached with inconclusive results (AC-3.2)",
			run: check(ctxTables, baseState, inconclusiveRuns(9), inconclusiveCall,
				map[string]any{"completed": true, "status": "escalated", "escalation_reason": "max_iterations"})},
		{name: ic + `uses "max_iterations" escalation reason even when all results were inconclusive (AC-3.3)`,
			run: check(ctxTables, baseState, inconclusiveRuns(9), inconclusiveCall,
				map[string]any{"escalation_reason": "max_iterations", "failures_count": 0})},

		// resolveCoverageThreshold, as TestIterationLimits' threshold.
		{name: rc + "TC-01: returns light tier threshold when effective_intensity is light",
			run: thresholds(threshWant{tieredUnit, intensity("light"), fp(60)})},
		{name: rc + "TC-02: returns standard tier threshold when effective_intensity is standard",
			run: thresholds(threshWant{tieredUnit, intensity("standard"), fp(80)})},
		{name: rc + "TC-03: returns epic tier threshold when effective_intensity is epic",
			run: thresholds(threshWant{tieredUnit, intensity("epic"), fp(95)})},
		{name: rc + "TC-04: returns scalar value directly regardless of intensity (backward compat)",
			run: thresholds(threshWant{`80`, intensity("light"), fp(80)})},
		{name: rc + "TC-05: defaults to standard tier when no sizing in state",
			run: thresholds(threshWant{tieredUnit, `{"active_workflow": {}}`, fp(80)})},
		{name: rc + "TC-06: falls back to hardcoded 80 when standard key is missing from object",
			run: thresholds(threshWant{`{"light": 60, "epic": 95}`, intensity("standard"), fp(80)})},
		{name: rc + "TC-07: falls back to standard value for unknown intensity tier",
			run: thresholds(threshWant{tieredUnit, intensity("unknown_tier"), fp(80)})},
		{name: rc + "TC-08: returns null when coverage config is null",
			run: thresholds(threshWant{`null`, intensity("standard"), nil})},
		{name: rc + "TC-09: returns custom scalar override regardless of intensity (NFR-001)",
			run: thresholds(threshWant{`90`, intensity("light"), fp(90)})},
		{name: rc + "TC-10: falls back to hardcoded 80 for empty object",
			run: thresholds(threshWant{`{}`, intensity("standard"), fp(80)})},
		{name: rc + "resolves integration tiered thresholds correctly",
			run: thresholds(threshWant{tieredIntegration, intensity("light"), fp(50)}, threshWant{tieredIntegration, intensity("standard"), fp(70)},
				threshWant{tieredIntegration, intensity("epic"), fp(85)})},
		{name: rc + "defaults to standard when state is null", run: thresholds(threshWant{tieredUnit, `null`, fp(80)})},
		{name: rc + "falls back to hardcoded 80 for string config value", run: thresholds(threshWant{`"80"`, intensity("standard"), fp(80)})},
		{name: rc + "returns user config unit threshold when coverageType is provided",
			na: "the user's .isdlc/config.json coverage (by coverageType unit/integration), which the peer's check() consults before the table: des reads no project config, only the table's min_coverage_percent"},
		{name: rc + "returns user config integration threshold when coverageType is integration",
			na: "the user's .isdlc/config.json coverage (by coverageType unit/integration), which the peer's check() consults before the table: des reads no project config, only the table's min_coverage_percent"},
		{name: rc + "coverageType param is backward compatible — omitting it works as before",
			run: thresholds(threshWant{tieredUnit, intensity("epic"), fp(95)}, threshWant{`null`, intensity("standard"), nil}, threshWant{`80`, intensity("light"), fp(80)})},

		// The peer's shipped tables.
		{name: cf + "TC-17: Phase 06 min_coverage_percent is a tiered object with correct values",
			na: "checks the peer's shipped iteration-requirements.json, not the hook (and fails at that commit: it reads hooks/config/, moved to src/isdlc/config/); des's built-in copy (data.des.phases.requirements) still has the scalar 80"},
		{name: cf + "TC-18: Phase 16 min_coverage_percent is a tiered object with correct values",
			na: "checks the peer's shipped iteration-requirements.json, not the hook (and fails at that commit: it reads hooks/config/, moved to src/isdlc/config/); des's built-in copy (data.des.phases.requirements) still has the scalar 80"},
		{name: cf + "TC-19: Phase 07 min_coverage_percent is a tiered object with correct integration values",
			na: "checks the peer's shipped iteration-requirements.json, not the hook (and fails at that commit: it reads hooks/config/, moved to src/isdlc/config/); des's built-in copy (data.des.phases.requirements) still has the scalar 70"},

		// Tiered coverage through the hook.
		{name: it + "TC-20: light workflow with 62% coverage passes threshold (60%)",
			run: check(peerTables, withSizing("feature", "light"), nil, bash("npm test", cov("62")),
				map[string]any{"status": "success", "coverage.met": true, "coverage.threshold": 60.0})},
		{name: it + "TC-21: standard workflow with 75% coverage fails threshold (80%)",
			run: check(peerTables, withSizing("feature", "standard"), nil, bash("npm test", cov("75")),
				map[string]any{"completed": false, "coverage.met": false, "coverage.threshold": 80.0, "coverage.percentage": 75.0})},
		{name: it + "TC-22: epic workflow with 90% coverage fails threshold (95%)",
			run: check(peerTables, withSizing("feature", "epic"), nil, bash("npm test", cov("90")),
				map[string]any{"completed": false, "coverage.met": false, "coverage.threshold": 95.0})},
		{name: it + "TC-23: fix workflow without sizing with 75% coverage fails (standard default: 80%)",
			run: check(peerTables, withSizing("fix", ""), nil, bash("npm test", cov("75")),
				map[string]any{"completed": false, "coverage.met": false, "coverage.threshold": 80.0})},
		{name: it + "TC-24: scalar config with 82% coverage passes (backward compat)",
			run: check(scalarTables, withSizing("feature", "light"), nil, bash("npm test", cov("82")),
				map[string]any{"status": "success", "coverage.met": true})},

		// Prose, packaging, exports.
		{name: bh + "TC-25: Constitution Article II original threshold text is unchanged", na: "the peer's documentation"},
		{name: bh + "TC-26: Constitution has enforcement note about intensity-based tiers", na: "the peer's documentation"},
		{name: bh + "TC-27: Software developer agent does not hardcode 80% as absolute gate requirement", na: "the peer's agent prompts"},
		{name: bh + "TC-28: Quality loop agent GATE-16 references intensity tiers", na: "the peer's agent prompts"},
		{name: bh + "TC-29: Integration tester agent does not hardcode 70% as absolute gate requirement", na: "the peer's agent prompts"},
		{name: bh + "TC-30: package.json has no new dependencies", na: "the peer's package.json"},
		{name: bc + "exports all existing functions plus parseTestResult (AC-4.3)", na: "the peer's module exports"},
	}
}

func TestTestWatcherPeerSuite(t *testing.T) {
	cases := watcherCases()
	if len(cases) != peerWatcherCases {
		t.Fatalf("%d cases listed; the peer's suite has %d", len(cases), peerWatcherCases)
	}
	seen := map[string]bool{}
	var agree, differ, na int
	for _, c := range cases {
		if seen[c.name] {
			t.Errorf("case listed twice: %s", c.name)
		}
		seen[c.name] = true
		switch {
		case c.run == nil && c.na == "":
			t.Errorf("%s: neither replayed nor documented as not applicable", c.name)
		case c.run == nil:
			na++
		case c.na != "":
			t.Errorf("%s: replayed and documented as not applicable", c.name)
		default:
			diffs := c.run(t)
			switch {
			case len(diffs) == 0 && c.differs != "":
				t.Errorf("%s: documented as a divergence, but des agrees with the peer; remove the note", c.name)
			case len(diffs) == 0:
				agree++
			case c.differs != "":
				differ++
				t.Logf("%s: differs (documented: %s): %s", c.name, c.differs, strings.Join(diffs, "; "))
			default:
				t.Errorf("%s: des disagrees with the peer: %s", c.name, strings.Join(diffs, "; "))
			}
		}
	}
	t.Logf("iSDLC test-watcher suite: %d agree, %d differ (documented), %d not applicable", agree, differ, na)
	if agree+differ+na != peerWatcherCases && !t.Failed() {
		t.Errorf("%d+%d+%d cases counted; want %d", agree, differ, na, peerWatcherCases)
	}
}

// The titles here are the peer suite's, when a checkout of it is at hand.
func TestTestWatcherPeerTitles(t *testing.T) {
	repo := os.Getenv("ISDLC_PEER_REPO")
	if repo == "" {
		t.Skip("ISDLC_PEER_REPO not set")
	}
	src, err := os.ReadFile(filepath.Join(repo, "src/claude/hooks/tests/test-test-watcher.test.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	// describe('...') and it('...') in file order; the cases are named
	// "describe: title".
	re := regexp.MustCompile(`(?m)^\s*(describe|it)\('((?:[^'\\]|\\.)*)'`)
	var describe string
	var titles []string
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		title := strings.ReplaceAll(m[2], `\'`, `'`)
		if m[1] == "describe" {
			describe = title
			continue
		}
		titles = append(titles, describe+": "+title)
	}
	var ours []string
	for _, c := range watcherCases() {
		ours = append(ours, c.name)
	}
	if !reflect.DeepEqual(titles, ours) {
		for i := 0; i < max(len(titles), len(ours)); i++ {
			var a, b string
			if i < len(titles) {
				a = titles[i]
			}
			if i < len(ours) {
				b = ours[i]
			}
			if a != b {
				t.Errorf("case %d: peer %q, here %q", i, a, b)
			}
		}
	}
}
