package testrun

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Results.
const (
	Passed       = "passed"
	Failed       = "failed"
	Inconclusive = "inconclusive"
)

// Outcome is what a test run's output and exit status say.
type Outcome struct {
	Result string // Passed, Failed or Inconclusive
	// Counts the output prints; nil when it prints none.
	Passed, Failed, Skipped *int
	// Coverage is the percentage the output prints (the first of the
	// coverage patterns found), nil when none.
	Coverage *float64
	// Error is the failure's message as the peer extracts it ("" when the
	// run passed), Signature the same normalised for comparison
	// (NormalizeError): two failures with one signature are the same
	// failure to a circuit breaker.
	Error, Signature string
}

// patterns are the peer's patterns (test-watcher.cjs FAILURE_PATTERNS,
// SUCCESS_PATTERNS, COVERAGE_PATTERNS, and those of its helpers), as RE2,
// compiled on first use: a hook process that sees no test run pays
// nothing for them.
type patterns struct {
	failure, success, coverage                                []*regexp.Regexp
	failCount, passCount, errorLine, failLine                 *regexp.Regexp
	failCountOnLine, noTests, someTests                       *regexp.Regexp
	jestSkipped, anySkipped, mochaPending, goTestLine, exitIn *regexp.Regexp
	isoTime, plainTime, stackParen, stackPath, lineCol        *regexp.Regexp
	address, spaces, mavenFailed, duration                    *regexp.Regexp
}

var pats = sync.OnceValue(func() *patterns {
	return &patterns{
		failure: compile(
			`(?i)(\d+)\s+fail(ed|ing|ure)?`,
			`FAIL\b`,
			`FAILED\b`,
			`(?i)Error:`,
			`(?i)AssertionError`,
			`(?i)TypeError:`,
			`(?i)ReferenceError:`,
			`(?i)SyntaxError:`,
			`(?i)Tests:\s+\d+\s+failed`,
			`FAILURES!`,
			`(?i)pytest.*(\d+)\s+failed`,
			`FAIL\s+\[`,
			`--- FAIL:`,
			`✖|✗`,
			`(?i)npm ERR!`,
			`(?i)error Command failed`,
			`(?i)exited with code [1-9]`,
		),
		success: compile(
			`(?i)All tests passed`,
			`Tests:\s+\d+\s+passed,\s+\d+\s+total`,
			`(?i)(\d+)\s+passing`,
			`(?i)OK \(\d+ tests?\)`,
			`\bPASSED\b`,
			`(?i)0 failures`,
			`(?i)pytest.*(\d+)\s+passed.*0 failed`,
			`(?i)ok\s+\d+\s+tests`,
			`(?i)BUILD SUCCESS`,
			`✓|✔`,
			`(?i)Test Suites:.*passed.*0 failed`,
			`(?i)Tests:.*passed.*0 failed`,
		),
		coverage: compile(
			`Statements\s*:\s*(\d+\.?\d*)%`,       // Jest/Vitest
			`Lines\s*:\s*(\d+\.?\d*)%`,            // Jest/Vitest
			`TOTAL\s+\d+\s+\d+\s+(\d+)%`,          // pytest-cov
			`coverage:\s*(\d+\.?\d*)%`,            // go test -cover
			`(\d+\.?\d*)%\s*(?:coverage|covered)`, // generic
		),
		failCount: regexp.MustCompile(`(?i)(\d+)\s+fail`),
		// The peer's failCount lets \s cross a line: "want 5" above a
		// "FAIL" line reads as 5 failures. The counts des keeps stay on
		// one line; the peer's pass/fail reading keeps the peer's.
		failCountOnLine: regexp.MustCompile(`(?i)(\d+)[ \t]+fail`),
		// What runners print when they ran no test, and when they ran some
		// (go test per package, unittest, mocha, jest/vitest, node --test,
		// cargo test).
		noTests:   regexp.MustCompile(`(?im)\[no tests to run\]|\[no test files\]|^Ran 0 tests|\b0 passing\b|No tests found|No test files found|^# tests 0\s*$|running 0 tests|Tests are skipped\.|No tests to run\.|^0 examples, 0 failures|No tests executed!|No test matches the given testcase filter`),
		someTests: regexp.MustCompile(`(?im)^ok\s+\S+\s+(?:\(cached\)|[\d.]+s)(?:\s+coverage:[^\n\[]*)?\s*$|\b[1-9]\d*\s+(?:passed|passing)\b|^Ran [1-9]|running [1-9]\d* tests?|^# tests [1-9]|^\s*--- PASS`),
		passCount: regexp.MustCompile(`(?i)(\d+)\s+pass(?:ed|ing)\b`),
		// Maven's surefire summary: failures or errors counted while the
		// build still succeeds (testFailureIgnore).
		mavenFailed:  regexp.MustCompile(`Tests run:\s*\d+,\s*Failures:\s*(?:[1-9]\d*,\s*Errors:\s*\d+|\d+,\s*Errors:\s*[1-9])`),
		errorLine:    regexp.MustCompile(`(?i)error:|fail|assert|exception|TypeError|ReferenceError`),
		failLine:     regexp.MustCompile(`FAIL|✖|✗`),
		jestSkipped:  regexp.MustCompile(`(?i)Tests:.*?(\d+)\s+skipped`),
		anySkipped:   regexp.MustCompile(`(?i)(\d+)\s+skipped`),
		mochaPending: regexp.MustCompile(`(?i)(\d+)\s+pending`),
		goTestLine:   regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP):`),
		exitIn:       regexp.MustCompile(`(?i)exit(?:ed)?\s+(?:with\s+)?(?:code\s+)?(\d+)`),
		isoTime:      regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?`),
		plainTime:    regexp.MustCompile(`\d{4}-\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}`),
		stackParen:   regexp.MustCompile(`at\s+.*?\(.*?\)`),
		stackPath:    regexp.MustCompile(`at\s+/.*?:\d+:\d+`),
		lineCol:      regexp.MustCompile(`:\d+:\d+`),
		address:      regexp.MustCompile(`0x[0-9a-fA-F]+`),
		// A test's duration: the same failure takes another time under
		// another load, and is the same failure for the circuit breaker.
		duration: regexp.MustCompile(`(\(|\s)\d+(?:\.\d+)?s\b`),
		spaces:   regexp.MustCompile(`\s+`),
	}
})

func compile(exprs ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		out[i] = regexp.MustCompile(e)
	}
	return out
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// ParsePeer is the peer's parseTestResult: the output's success patterns
// first (unless a failure pattern and a non-zero failure count go with
// them), then its failure patterns, then the exit status; with none of
// them the result is inconclusive. exit is nil when unknown. failures is
// the peer's failure count (set on a failure found in the output).
func ParsePeer(output string, exit *int) (result string, failures int, errMsg string) {
	p := pats()
	if output == "" {
		if exit != nil && *exit == 0 {
			return Passed, 0, ""
		}
		return Failed, 0, "No output, non-zero exit"
	}
	if anyMatch(p.success, output) {
		hasFailure := false
		if anyMatch(p.failure, output) {
			if m := p.failCount.FindStringSubmatch(output); m != nil && atoi(m[1]) > 0 {
				hasFailure = true
			}
		}
		if !hasFailure {
			return Passed, 0, ""
		}
	}
	if anyMatch(p.failure, output) {
		n := 1
		if m := p.failCount.FindStringSubmatch(output); m != nil {
			n = atoi(m[1])
		}
		return Failed, n, ExtractError(output)
	}
	if exit != nil {
		if *exit == 0 {
			return Passed, 0, ""
		}
		return Failed, 0, "Exit code: " + strconv.Itoa(*exit)
	}
	return Inconclusive, 0, "Unable to determine test result"
}

// ExitInText is the peer's reading of an exit status from text ("exited
// with code 1"), for an event that gives none; nil when there is none.
func ExitInText(s string) *int {
	p := pats()
	if m := p.exitIn.FindStringSubmatch(s); m != nil {
		n := atoi(m[1])
		return &n
	}
	return nil
}

// Parse reads a test run: output is what it printed (stdout and stderr),
// exit its exit status (nil when unknown), interrupted whether the user
// stopped it. It is ParsePeer with three differences. Two because Claude
// Code gives the exit status: an interrupted run is inconclusive, and a
// run that exited non-zero has failed even when its output reads as a
// pass (the peer's patterns take "All tests passed" printed before a
// crash, or a pass of another package, for the whole run's). And a run
// whose output says it ran no test ("[no tests to run]", "Ran 0 tests",
// "0 passing", ...) is inconclusive, not a pass: otherwise a filter that
// matches nothing would pass any phase. (Also: a run that exited 0 and
// prints only zero failure counts passed, where the peer reads "0 failed"
// as a failure.)
func Parse(output string, exit *int, interrupted bool) Outcome {
	res, _, msg := ParsePeer(output, exit)
	var o Outcome
	switch {
	case interrupted:
		o.Result, msg = Inconclusive, "Interrupted"
	case res == Passed && exit != nil && *exit != 0:
		o.Result, msg = Failed, "Exit code: "+strconv.Itoa(*exit)
	case res == Passed && pats().mavenFailed.MatchString(output):
		o.Result, msg = Failed, "Tests failed (the build succeeded all the same)"
	case res == Failed && exit != nil && *exit == 0 && zeroFailed(output):
		// The peer reads "0 failed" as a failure (cargo test's "test
		// result: ok. 3 passed; 0 failed"); the runner exited 0 and says
		// nothing failed.
		o.Result = Passed
		if noTestsRan(output) {
			o.Result, msg = Inconclusive, "No tests ran"
		}
	case res == Passed && noTestsRan(output):
		// A run of no test is no pass: go test -run NoSuchTest, a package
		// without tests, a filter that matched nothing.
		o.Result, msg = Inconclusive, "No tests ran"
	default:
		o.Result = res
	}
	o.counts(output)
	if c, ok := ParseCoverage(output); ok {
		o.Coverage = &c
	}
	if o.Result != Passed {
		o.Error = bounded(msg, maxError)
		o.Signature = NormalizeError(o.Error)
	}
	return o
}

// zeroFailed reports whether the failure counts the output prints are all
// zero, and it prints one.
func zeroFailed(output string) bool {
	ms := pats().failCountOnLine.FindAllStringSubmatch(output, -1)
	for _, m := range ms {
		if atoi(m[1]) != 0 {
			return false
		}
	}
	return len(ms) > 0
}

// noTestsRan reports whether the output says the runner ran no test, and
// nowhere that it ran one.
func noTestsRan(output string) bool {
	p := pats()
	return p.noTests.MatchString(output) && !p.someTests.MatchString(output)
}

// counts fills the counts the output prints (not the peer's failure count
// of 1 when the output prints none): failures ("N failed", as the peer
// counts them), passes ("N passed", "N passing"), skips (as the peer's
// detectSkippedTests counts them); go test -v's --- PASS/FAIL/SKIP lines
// when it prints none of those.
func (o *Outcome) counts(output string) {
	p := pats()
	if m := p.passCount.FindStringSubmatch(output); m != nil {
		n := atoi(m[1])
		o.Passed = &n
	}
	if m := p.failCountOnLine.FindStringSubmatch(output); m != nil {
		n := atoi(m[1])
		o.Failed = &n
	}
	skipped, found := 0, false
	if m := p.jestSkipped.FindStringSubmatch(output); m != nil {
		skipped, found = atoi(m[1]), true
	} else if m := p.anySkipped.FindStringSubmatch(output); m != nil {
		skipped, found = atoi(m[1]), true
	}
	if m := p.mochaPending.FindStringSubmatch(output); m != nil {
		skipped, found = max(skipped, atoi(m[1])), true
	}
	if found {
		o.Skipped = &skipped
	}
	if o.Passed != nil || o.Failed != nil || o.Skipped != nil {
		return
	}
	var pass, fail, skip int
	for _, m := range p.goTestLine.FindAllStringSubmatch(output, -1) {
		switch m[1] {
		case "PASS":
			pass++
		case "FAIL":
			fail++
		default:
			skip++
		}
	}
	if pass+fail+skip > 0 {
		o.Passed, o.Failed, o.Skipped = &pass, &fail, &skip
	}
}

// ParseCoverage is the peer's parseCoverage: the percentage of the first
// coverage pattern the output matches.
func ParseCoverage(output string) (float64, bool) {
	p := pats()
	for _, re := range p.coverage {
		if m := re.FindStringSubmatch(output); m != nil {
			if f, err := strconv.ParseFloat(m[1], 64); err == nil {
				return f, true
			}
		}
	}
	return 0, false
}

// ExtractError is the peer's extractErrorMessage: the first line between
// 11 and 299 characters that reads as an error, else the first short line
// with FAIL, ✖ or ✗.
func ExtractError(output string) string {
	p := pats()
	lines := strings.Split(output, "\n")
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if n := jsLen(t); n > 10 && n < 300 && p.errorLine.MatchString(t) {
			return t
		}
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if p.failLine.MatchString(t) && jsLen(t) < 200 {
			return t
		}
	}
	return "Test failure (check output for details)"
}

// jsLen is a string's length as JavaScript counts it (UTF-16 units).
func jsLen(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// NormalizeError is the peer's normalizeErrorForComparison: timestamps,
// stack frames, line:column references and memory addresses replaced,
// white space collapsed, so that errors differing only in those compare
// equal.
func NormalizeError(s string) string {
	p := pats()
	s = p.isoTime.ReplaceAllString(s, "TIMESTAMP")
	s = p.plainTime.ReplaceAllString(s, "TIMESTAMP")
	s = p.stackParen.ReplaceAllString(s, "at STACK")
	s = p.stackPath.ReplaceAllString(s, "at STACK")
	s = p.lineCol.ReplaceAllString(s, ":X:X")
	s = p.address.ReplaceAllString(s, "0xADDR")
	s = p.duration.ReplaceAllString(s, "${1}Ns") // go test's "--- FAIL: TestX (0.01s)"
	return strings.TrimSpace(p.spaces.ReplaceAllString(s, " "))
}

// IdenticalFailure is the peer's isIdenticalFailure: whether the last two
// errors of history (oldest first; "" entries are no error) both
// normalise to what current does.
func IdenticalFailure(current string, history []string) bool {
	var recent []string
	for _, e := range history[max(0, len(history)-2):] {
		if e != "" {
			recent = append(recent, e)
		}
	}
	if len(recent) < 2 {
		return false
	}
	c := NormalizeError(current)
	for _, e := range recent {
		if NormalizeError(e) != c {
			return false
		}
	}
	return true
}

// maxError bounds the error kept; maxCommand the command.
const (
	maxError   = 512
	maxCommand = 2048
)

// bounded cuts s to at most n bytes, at a rune boundary.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
