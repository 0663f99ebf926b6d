package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A real step file, for the false-deny tests.
const realStep = `{
  "task_id": "01-01",
  "state": {"status": "TODO"},
  "tdd_cycle": {"phase_execution_log": [{"phase_name": "PREPARE", "phase_index": 0, "status": "NOT_EXECUTED"}]}
}
`

// find -delete and find -exec rm with a name test reach only the entries
// the test matches: cleaning .pyc or .log files is allowed beside step
// files and DES's settings, while a test that matches them, a find with no
// test, or one whose -o puts the delete outside the test is still denied.
// Each allowed command is then run, and the guarded files are still there.
func TestE2EFindWithANameTest(t *testing.T) {
	cases := []struct {
		command string
		code    string // "" = allowed
	}{
		{`find . -name '*.pyc' -delete`, ""},
		{`find . -name '*.log' -exec rm {} +`, ""},
		{`find . -type f -name '*.log' -exec rm -f {} \;`, ""},
		{`find . -name '__pycache__' -type d -exec rm -rf {} +`, ""},
		{`find docs -iname '*.PYC' -delete`, ""},
		{`find . -path './build/*' -delete`, ""},
		{`find . -name '*.pyc' ! -path './.git/*' -delete`, ""},
		{`find . -name '*.json' -delete`, "DES-STATE-BASH-WRITE"},
		{`find docs -name '01-01.json' -delete`, "DES-STATE-BASH-WRITE"},
		{`find . -name 'config.json' -delete`, "DES-PROTECTED-PATH"},
		{`find . -name 'steps' -exec rm -rf {} +`, "DES-STATE-BASH-WRITE"},
		{`find . -name '.des' -exec rm -rf {} +`, "DES-PROTECTED-PATH"},
		{`find . -name 'pre-commit' -delete`, "DES-PROTECTED-PATH"},
		{`find . -path '*/steps/*' -delete`, "DES-STATE-BASH-WRITE"},
		{`find .des -delete`, "DES-PROTECTED-PATH"},
		{`find . -delete`, "DES-PROTECTED-PATH"},
		{`find . -delete -name '*.pyc'`, "DES-PROTECTED-PATH"},
		{`find . -name x -o -name y -delete`, "DES-PROTECTED-PATH"},
		{`find . ! -name '*.pyc' -delete`, "DES-PROTECTED-PATH"},
		{`find . -name "$P" -delete`, "DES-PROTECTED-PATH"},
		{`find -L . -name '*.pyc' -delete`, "DES-PROTECTED-PATH"},
		{`find . -name '*.log' -exec sh -c 'rm "$1"' _ {} \;`, "DES-PROTECTED-PATH"},
	}
	for _, c := range cases {
		t.Run(c.command, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeFile(t, root, e2eStep, realStep)
			writeFile(t, root, ".des/config.json", `{"validation_timeout_ms": 5000}`)
			writeFile(t, root, ".git/hooks/pre-commit", "#!/bin/sh\n")
			writeFile(t, root, "src/app.pyc", "x")
			writeFile(t, root, "src/__pycache__/m.pyc", "x")
			writeFile(t, root, "docs/old.PYC", "x")
			writeFile(t, root, "logs/run.log", "x")
			writeFile(t, root, "build/out.o", "x")
			reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, c.command)))
			if c.code == "" {
				if reason != "" {
					t.Fatalf("denied: %s", reason)
				}
				runBash(t, root, c.command)
				for _, f := range []string{e2eStep, ".des/config.json", ".git/hooks/pre-commit"} {
					if _, err := os.Stat(filepath.Join(root, f)); err != nil {
						t.Errorf("%s: %v", f, err)
					}
				}
				return
			}
			if !strings.Contains(reason, "["+c.code+"]") {
				t.Errorf("want %s, got %q", c.code, reason)
			}
		})
	}
}
