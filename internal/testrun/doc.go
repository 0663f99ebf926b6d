// Package testrun holds the test runs des saw: which Bash commands run a
// test runner (a table the policies hold, data.des.evidence.test_runners),
// what their output says (passed, failed or inconclusive, the counts and
// the coverage it prints, the error and its signature for a circuit
// breaker), and the attested record of each run des keeps in the
// project's evidence directory, outside the reach of sandboxed Bash.
//
// Recognising and parsing follow iSDLC's test-watcher
// (src/claude/hooks/test-watcher.cjs of vihang-hub/isdlc-framework): its
// command patterns are the built-in table's entries, and its output
// patterns, coverage patterns, error extraction and error normalisation
// are taken as they are, so that its own test inputs give the same
// results here (parse_test.go). Where des differs it says so: a command is
// matched on the commands the line runs (internal/shell), not on its text,
// so `cat jest.config.js` runs no test; and the exit status, which Claude
// Code always gives, is authoritative for a failure.
package testrun
