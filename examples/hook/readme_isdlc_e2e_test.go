package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EReadmeISDLCFixture runs the README's worked iSDLC example: the
// project in testdata/isdlc-project (phase 06-implementation in progress,
// its tests failing) and the two events beside it.
func TestE2EReadmeISDLCFixture(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/isdlc-project")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		event string
		want  []string
	}{
		{"testdata/isdlc-out-of-order.json", []string{
			`[DES-PHASE-OUT-OF-ORDER] Agent qa-engineer delegates phase "08-code-review"`,
			`the next phase is "16-quality-loop"`,
		}},
		{"testdata/isdlc-advance.json", []string{
			`[DES-GATE-BLOCKED] Skill isdlc tries to advance from phase "06-implementation" to "16-quality-loop", but its tests are not done: 2/5 test iterations, last result failed`,
			`[DES-ITERATION-CORRIDOR]`,
			`phases["06-implementation"].constitutional_validation.status`,
		}},
	} {
		raw, err := os.ReadFile(c.event)
		if err != nil {
			t.Fatal(err)
		}
		reason := denyReason(t, runHookProcess(t, root, nil, raw))
		for _, w := range c.want {
			if !strings.Contains(reason, w) {
				t.Errorf("%s: reason lacks %q:\n%s", c.event, w, reason)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".des", "audit")); err != nil {
		t.Errorf("the blocks were not audited: %v", err)
	}
}
