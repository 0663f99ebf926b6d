package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Decision logs leave the machine (`logs push`): the default mask must
// keep out what a Bash command carries, which is whatever the agent typed:
// secrets in variables, file contents in heredocs. The branch guard hands
// the policy the whole command of a commit made during a workflow.
func TestAttackDecisionLogMasksBashCommand(t *testing.T) {
	t.Parallel()
	root := branchRepo(t, "main")
	withWorkflow(t, root, workflowState(featurePhases, 5))
	command := "export DES_OPA_TOKEN=canary-secret-1 && cat > notes.txt <<'EOF'\ncanary-content-2\nEOF\ngit commit -am x"
	r := runPhaseHook(t, root, []string{"DES_DECISION_LOG=on"}, bashEvent(t, root, command))
	if reason := denyReason(t, r); !strings.Contains(reason, "DES-BRANCH-PROTECTED") {
		t.Fatalf("the commit on main: reason %q, stderr %s", reason, r.stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(root, ".des", "decisions", "*.jsonl"))
	if len(logs) == 0 {
		t.Fatal("decision_log on logged nothing")
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "canary-") {
			t.Errorf("%s holds the command's text:\n%s", filepath.Base(p), b)
		}
		if !strings.Contains(string(b), `"/input/command"`) {
			t.Errorf("%s: /input/command not in the erased list:\n%s", filepath.Base(p), b)
		}
	}
}
