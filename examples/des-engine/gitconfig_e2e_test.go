package main

import (
	"strings"
	"testing"
)

// A step whose task is FAILED is not committed, though every phase says
// EXECUTED: the installed hook, des-hook precommit and an agent's git
// commit all refuse it with DES-COMMIT-TASK-STATUS.
func TestE2EGate3FailedTaskIsRefused(t *testing.T) {
	root := gitProject(t)
	if r := runIn(t, root, nil, "precommit", "--install"); r.code != 0 {
		t.Fatalf("install: exit %d\n%s", r.code, r.stderr)
	}
	step := strings.Replace(finishedStep(t, "EXECUTED"), `"status": "IN_PROGRESS"`, `"status": "FAILED"`, 1)
	if !strings.Contains(step, `"status": "FAILED"`) {
		t.Fatalf("the step holds no FAILED task:\n%s", step)
	}
	writeFile(t, root, stepPath, step)
	git(t, root, "add", stepPath)
	out, code := gitRun(t, root, "commit", "-qm", "abandoned step")
	if code == 0 || !strings.Contains(out, "[DES-COMMIT-TASK-STATUS]") || !strings.Contains(out, "des-hook stale --resolve "+stepPath) {
		t.Errorf("git commit of a FAILED task: exit %d\n%s", code, out)
	}
	r := runHookProcess(t, root, nil, bashEvent(t, root, "git commit -m wip"))
	if reason := denyReason(t, r); !strings.Contains(reason, "[DES-COMMIT-TASK-STATUS]") {
		t.Errorf("an agent's git commit of a FAILED task: %q", reason)
	}
	// The same step, its task DONE, commits.
	writeFile(t, root, stepPath, strings.Replace(step, `"status": "FAILED"`, `"status": "DONE"`, 1))
	git(t, root, "add", stepPath)
	if out, code := gitRun(t, root, "commit", "-qm", "done step"); code != 0 {
		t.Errorf("git commit of a DONE task: exit %d\n%s", code, out)
	}
}
