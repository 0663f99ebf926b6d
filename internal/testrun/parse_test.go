package testrun

import (
	"strings"
	"testing"
)

func intp(n int) *int { return &n }

// The outputs of iSDLC's test-watcher suite
// (src/claude/hooks/tests/test-test-watcher.test.cjs), with the result the
// peer records for each. Its cases embed no exit status unless they say
// so (bashTestInput's third argument): exit nil.
func TestParsePeerCases(t *testing.T) {
	cases := []struct {
		name, output string
		exit         *int
		want         string
	}{
		{"records success when npm test passes", "Test Suites: 5 passed, 5 total\nTests: 20 passed, 0 failed, 20 total\nAll tests passed", nil, Passed},
		{"records failure when npm test fails", "Tests: 3 failed, 17 passed, 20 total\nFAIL src/auth.test.js\nError: Expected true to be false", nil, Failed},
		{"pytest", "5 passed in 2.1s\nAll tests passed", nil, Passed},
		{"go test", "ok  \tgithub.com/user/repo\t0.5s\n3 passing\nPASSED", nil, Passed},
		{"cargo test", "test result: ok. 10 passed; 0 failed; 0 ignored\nAll tests passed", nil, Passed},
		{"jest", "Tests: 8 passed, 0 failed, 8 total\nAll tests passed", nil, Passed},
		{"first failure", "FAIL src/app.test.js\n1 failed, 4 passed\nError: assertion failed", nil, Failed},
		{"subsequent failure", "FAIL src/app.test.js\n1 failed\nTypeError: Cannot read property", nil, Failed},
		{"success after failure", "All tests passed\nTests: 10 passed, 0 failed, 10 total", nil, Passed},
		{"max iterations", "FAIL\n1 failed\nError: Something broken", nil, Failed},
		{"exitCode in structured tool_result", "", intp(1), Failed},
		{"FAIL keyword", "FAIL src/components/Button.test.js\n  Expected: true\n  Received: false", nil, Failed},
		{"Tests: N passed, 0 failed", "Tests: 5 passed, 0 failed, 5 total\nTime: 2.5s", nil, Passed},
		{"vitest", "Tests: 12 passed, 0 failed\nAll tests passed", nil, Passed},
		{"mvn test", "BUILD SUCCESS\nTests run: 25, Failures: 0, Errors: 0", nil, Passed},
		{"exited with code 1", "npm test exited with code 1", ExitInText("npm test exited with code 1"), Failed},
		// BUG-0007, parseTestResult.
		{"AC-1.1 inconclusive", "Running checks... Done. Summary complete.", nil, Inconclusive},
		{"AC-1.2 exit 0", "Running checks... Done. Summary complete.", intp(0), Passed},
		{"AC-1.2 exit 1", "Running checks... Done. Summary complete.", intp(1), Failed},
		{"AC-1.3 failure patterns", "FAIL src/app.test.js\n2 failed\nError: assertion failed", nil, Failed},
		{"AC-1.4 success patterns", "All tests passed\nTests: 5 passed, 0 failed, 5 total", nil, Passed},
		{"AC-1.5 pass", "All tests passed", nil, Passed},
		{"AC-1.5 fail", "FAIL\n1 failed\nError: bad", nil, Failed},
		{"AC-1.5 exit 0", "some output", intp(0), Passed},
		{"AC-1.5 exit 1", "some output", intp(1), Failed},
		// Coverage (BUG-0054), tests passed.
		{"TC-20", "Tests: 10 passed, 0 failed, 10 total\nAll tests passed\nStatements   : 62%\nBranches     : 50%\nFunctions    : 70%\nLines        : 62%", nil, Passed},
	}
	for _, c := range cases {
		got, _, _ := ParsePeer(c.output, c.exit)
		if got != c.want {
			t.Errorf("%s: ParsePeer = %s; want %s", c.name, got, c.want)
		}
	}
	// The peer's exact errors.
	if _, _, e := ParsePeer("Running checks... Done. Summary complete.", nil); e != "Unable to determine test result" {
		t.Errorf("inconclusive error = %q", e)
	}
	if _, _, e := ParsePeer("Running checks... Done. Summary complete.", intp(1)); e != "Exit code: 1" {
		t.Errorf("exit error = %q", e)
	}
	if _, n, e := ParsePeer("FAIL src/app.test.js\n2 failed\nError: assertion failed", nil); n != 2 || e != "FAIL src/app.test.js" {
		t.Errorf("failures, error = %d, %q", n, e)
	}
	if _, _, e := ParsePeer("FAIL src/app.test.js\n1 failed\nError: assertion failed", nil); e == "" {
		t.Error("no error extracted")
	}
}

// Where des departs from the peer, because Claude Code gives the exit
// status and the interruption.
func TestParseExitAndInterrupt(t *testing.T) {
	o := Parse("All tests passed\nsegmentation fault", intp(139), false)
	if o.Result != Failed || o.Error != "Exit code: 139" || o.Signature != "Exit code: 139" {
		t.Errorf("non-zero exit read as a pass: %+v", o)
	}
	o = Parse("Tests: 5 passed, 0 failed", intp(0), true)
	if o.Result != Inconclusive || o.Error != "Interrupted" {
		t.Errorf("interrupted: %+v", o)
	}
	o = Parse("Tests: 3 failed, 17 passed, 20 total\nFAIL src/auth.test.js", intp(1), false)
	if o.Result != Failed || o.Failed == nil || *o.Failed != 3 || o.Passed == nil || *o.Passed != 17 {
		t.Errorf("counts: %+v", o)
	}
	o = Parse("=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\n--- SKIP: TestC (0.00s)\nFAIL\ncoverage: 82.5% of statements", intp(1), false)
	if o.Result != Failed || *o.Passed != 1 || *o.Failed != 1 || *o.Skipped != 1 || o.Coverage == nil || *o.Coverage != 82.5 {
		t.Errorf("go test -v: %+v", o)
	}
	// A number at the end of a line above a FAIL line is no failure count
	// (the peer's pattern reads "want 5\nFAIL" as 5 failures).
	o = Parse("--- FAIL: TestTotal (0.00s)\n    cart_test.go:6: Total(2, 3) = -1, want 5\nFAIL\nFAIL\texample.com/shop\t0.002s\nFAIL", intp(1), false)
	if o.Result != Failed || o.Failed == nil || *o.Failed != 1 {
		t.Errorf("go test failure count: %+v", o)
	}
	o = Parse("ok  \texample.com/m\t0.01s", intp(0), false)
	if o.Result != Passed || o.Error != "" || o.Passed != nil {
		t.Errorf("go test pass: %+v", o)
	}
	for _, out := range []string{
		"ok  \texample.com/shop\t0.002s [no tests to run]",
		"?   \texample.com/shop\t[no test files]",
		"\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK",
		"\n  0 passing (2ms)\n",
		"No tests found, exiting with code 0",
		"running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored",
	} {
		if o := Parse(out, intp(0), false); o.Result != Inconclusive || o.Error != "No tests ran" {
			t.Errorf("no tests ran, read as %+v:\n%s", o, out)
		}
	}
	for _, out := range []string{
		"ok  \texample.com/shop\t0.002s\nok  \texample.com/util\t0.001s [no tests to run]",
		"ok  \texample.com/shop\t(cached)\n?   \texample.com/cmd\t[no test files]",
		"running 0 tests\nrunning 3 tests\ntest result: ok. 3 passed; 0 failed",
		"Ran 4 tests in 0.01s\n\nOK",
	} {
		if o := Parse(out, intp(0), false); o.Result != Passed {
			t.Errorf("some tests ran, read as %+v:\n%s", o, out)
		}
	}
	o = Parse("Running checks... Done.", nil, false)
	if o.Result != Inconclusive || o.Signature != "Unable to determine test result" {
		t.Errorf("inconclusive: %+v", o)
	}
}

func TestParseCoveragePeer(t *testing.T) {
	cases := []struct {
		output string
		want   float64
		ok     bool
	}{
		{"Statements   : 85.71%", 85.71, true},
		{"Lines        : 90.00%", 90, true},
		{"TOTAL    100    15    85%", 85, true},
		{"coverage: 82.5% of statements", 82.5, true},
		{"85.5% coverage", 85.5, true},
		{"Statements   : 75%\nBranches     : 70%\nFunctions    : 80%\nLines        : 75%", 75, true},
		{"no numbers", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseCoverage(c.output)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseCoverage(%q) = %v, %v; want %v, %v", c.output, got, ok, c.want, c.ok)
		}
	}
}

// The peer's normalizeErrorForComparison and isIdenticalFailure cases.
func TestNormalizeErrorPeer(t *testing.T) {
	n := NormalizeError
	if n("") != "" {
		t.Error("empty")
	}
	if r := n("Error at file.js:42:13 something failed"); strings.Contains(r, ":42:13") || !strings.Contains(r, ":X:X") {
		t.Error(r)
	}
	if r := n("Error at file.js:42:13 and file.js:100:5"); strings.Count(r, ":X:X") != 2 {
		t.Error(r)
	}
	for _, in := range []string{"Error at 2026-02-11T10:30:00.000Z: connection failed", "Error at 2026-02-11T10:30:00Z: connection failed", "Error logged at 2026-02-11 10:30:00 in module X"} {
		if r := n(in); strings.Contains(r, "2026-02-11") || !strings.Contains(r, "TIMESTAMP") {
			t.Error(r)
		}
	}
	if r := n("at Object.<anonymous> (/path/to/file.js:42:13)"); !strings.Contains(r, "at STACK") || strings.Contains(r, "/path/to/file.js") {
		t.Error(r)
	}
	if r := n("at /Users/dev/project/src/index.js:99:5"); !strings.Contains(r, "at STACK") || strings.Contains(r, "/Users/dev") {
		t.Error(r)
	}
	if r := n("Segfault at address 0x7fff5fbff8c0"); strings.Contains(r, "0x7fff5fbff8c0") || !strings.Contains(r, "0xADDR") {
		t.Error(r)
	}
	if r := n("Error: 0xDEADBEEF vs 0xCAFEBABE"); strings.Count(r, "0xADDR") != 2 {
		t.Error(r)
	}
	for in, want := range map[string]string{
		"Error:   multiple    spaces   here": "Error: multiple spaces here",
		"Error:\ttab\nand\nnewline":          "Error: tab and newline",
		"  Error: something  ":               "Error: something",
	} {
		if r := n(in); r != want {
			t.Errorf("%q: %q; want %q", in, r, want)
		}
	}

	same := []struct {
		current string
		history []string
		want    bool
	}{
		{"TypeError: Cannot read property at file.js:50:10", []string{"TypeError: Cannot read property at file.js:42:13", "TypeError: Cannot read property at file.js:45:8"}, true},
		{"Connection timeout at 2026-02-11T12:00:00.000Z", []string{"Connection timeout at 2026-02-10T08:30:00.000Z", "Connection timeout at 2026-02-11T10:15:00.000Z"}, true},
		{"Segfault at 0xDEADBEEF in module X", []string{"Segfault at 0xCAFEBABE in module X", "Segfault at 0x12345678 in module X"}, true},
		{"TypeError: Cannot read property x of undefined", []string{"ReferenceError: y is not defined", "SyntaxError: Unexpected token"}, false},
		{"Error: something broke", nil, false},
		{"Error: something broke", []string{"Error: something broke"}, false},
	}
	for _, c := range same {
		if got := IdenticalFailure(c.current, c.history); got != c.want {
			t.Errorf("IdenticalFailure(%q, %q) = %v", c.current, c.history, got)
		}
	}
	// The fuzzy circuit breaker through check(): the error the peer
	// extracts from the third run's output is the same failure.
	_, _, e := ParsePeer("FAIL\n1 failed\nTypeError: x is not a function at file.js:35:12", nil)
	if !IdenticalFailure(e, []string{"TypeError: x is not a function at file.js:10:5", "TypeError: x is not a function at file.js:20:8"}) {
		t.Errorf("circuit breaker: %q", e)
	}
}

// The same go test failure under another load takes another time: its
// signature is the same (the circuit breaker counts it as identical).
func TestNormalizeErrorDropsDurations(t *testing.T) {
	a := NormalizeError(ExtractError("--- FAIL: TestTotal (0.00s)\n    cart_test.go:7: Total(2, 3) = -1, want 5\nFAIL\nFAIL\texample.com/shop\t0.003s\n"))
	b := NormalizeError(ExtractError("--- FAIL: TestTotal (0.12s)\n    cart_test.go:7: Total(2, 3) = -1, want 5\nFAIL\nFAIL\texample.com/shop\t1.204s\n"))
	if a != b {
		t.Errorf("signatures differ: %q, %q", a, b)
	}
	if NormalizeError("--- FAIL: TestTotal (0.00s)") == NormalizeError("--- FAIL: TestCart (0.00s)") {
		t.Error("different tests share a signature")
	}
}
