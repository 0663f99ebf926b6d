package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The wiring of the phase workflow guards (contract §8) through the built
// binary: each route hands the facts to the policy and renders its
// decision. The full scenario suite (TS-001..015) is phases_e2e_test.go.

// isdlcState is a workflow in phase 06-implementation, started, with its
// tests not yet passing and the workflow branch active.
func isdlcState() map[string]any {
	return map[string]any{
		"state_version": 3,
		"current_phase": "06-implementation",
		"active_workflow": map[string]any{
			"type":                "feature",
			"phases":              []any{"01-requirements", "05-test-strategy", "06-implementation", "08-code-review"},
			"current_phase":       "06-implementation",
			"current_phase_index": 2,
			"phase_status":        map[string]any{"01-requirements": "completed", "05-test-strategy": "completed", "06-implementation": "in_progress"},
			"git_branch":          map[string]any{"name": "feature/REQ-0001-login", "status": "active"},
			"artifact_folder":     "REQ-0001-login",
		},
		"phases": map[string]any{
			"06-implementation": map[string]any{
				"status": "in_progress",
				"iteration_requirements": map[string]any{
					"test_iteration": map[string]any{"completed": false, "current_iteration": 2, "last_test_result": "passed"},
				},
			},
		},
		"discovery_context": map[string]any{"walkthrough_completed": false},
	}
}

// isdlcProject is a git repository on main, with the workflow branch
// created, a task plan and the workflow state.
func isdlcProject(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("uses git and a POSIX shell")
	}
	root := newTestProject(t, projGit("main"))
	git(t, root, "branch", "feature/REQ-0001-login")
	writeFile(t, root, "docs/isdlc/tasks.md", "# Tasks\n\n## Phase 06: Implementation\n- [ ] T0001 login form\n")
	data, _ := json.MarshalIndent(isdlcState(), "", "  ")
	writeFile(t, root, ".isdlc/state.json", string(data))
	return root
}

func phaseAgentEvent(root, event, subagent, prompt string) map[string]any {
	return agentEv(event, "Agent", root, subagent, "phase work", prompt, evToolUseID("toolu_phase"))
}

func TestE2EPhaseDelegationWiring(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)

	// Out of order: the code review's agent while 06 runs.
	reason := denyReason(t, runHookProcess(t, root, nil, phaseAgentEvent(root, "PreToolUse", "qa-engineer", "Review the login code")))
	if !strings.Contains(reason, "[DES-PHASE-OUT-OF-ORDER]") {
		t.Errorf("out-of-order delegation: reason =\n%s", reason)
	}
	// The current phase's agent, the phase started: no output at all.
	r := runHookProcess(t, root, nil, phaseAgentEvent(root, "PreToolUse", "software-developer", "Implement T0001"))
	if r.code != 0 || strings.TrimSpace(r.stdout) != "" {
		t.Errorf("allowed delegation: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	// A routing marker alone asks for no nWave validation.
	r = runHookProcess(t, root, nil, phaseAgentEvent(root, "PreToolUse", "general-purpose", "<!-- DES-PHASE: 06-implementation -->\nImplement T0001"))
	if r.code != 0 || strings.TrimSpace(r.stdout) != "" {
		t.Errorf("routing marker: exit %d, stdout %q", r.code, r.stdout)
	}
	audit := auditText(t, root)
	if !strings.Contains(audit, `"TASK_INVOCATION_REJECTED"`) || !strings.Contains(audit, `"DES-PHASE-OUT-OF-ORDER"`) {
		t.Errorf("the deny is not audited:\n%s", audit)
	}
}

func TestE2ESkillAdvanceBlockedAndEscalated(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	skill := skillEv("PreToolUse", root, "isdlc", "advance", evToolUseID("toolu_skill"))
	for range 3 { // retried: one escalation within the minute
		reason := denyReason(t, runHookProcess(t, root, nil, skill))
		if !strings.Contains(reason, "[DES-GATE-BLOCKED]") {
			t.Fatalf("Skill advance with an unmet gate: reason =\n%s", reason)
		}
	}
	if n := strings.Count(auditText(t, root), `"PHASE_ESCALATION"`); n != 1 {
		t.Errorf("%d PHASE_ESCALATION lines, want 1", n)
	}

	out := runBinCLI(t, root, "escalations")
	if out.code != 0 || !strings.Contains(out.stdout, "gate_blocked") || !strings.Contains(out.stdout, "06-implementation") ||
		!strings.Contains(out.stdout, "DES-GATE-BLOCKED") {
		t.Errorf("hook escalations: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	js := runBinCLI(t, root, "escalations", "--json")
	var groups []map[string]any
	if err := json.Unmarshal([]byte(js.stdout), &groups); err != nil || len(groups) != 1 || groups[0]["count"] != 1.0 || groups[0]["open"] != true {
		t.Errorf("hook escalations --json: %v\n%s", err, js.stdout)
	}
	// Once the workflow has moved on, the escalation is no longer open.
	st := isdlcState()
	st["current_phase"] = "08-code-review"
	st["active_workflow"].(map[string]any)["current_phase"] = "08-code-review"
	data, _ := json.Marshal(st)
	writeFile(t, root, ".isdlc/state.json", string(data))
	if out := runBinCLI(t, root, "escalations"); out.code != 0 || !strings.Contains(out.stdout, "no open escalations") {
		t.Errorf("after the phase moved on: exit %d\n%s", out.code, out.stdout)
	}
	if out := runBinCLI(t, root, "escalations", "--all"); out.code != 0 || !strings.Contains(out.stdout, "gate_blocked") {
		t.Errorf("--all: exit %d\n%s", out.code, out.stdout)
	}
	if out := runBinCLI(t, root, "escalations", "extra"); out.code != 2 {
		t.Errorf("bad arguments: exit %d, want 2", out.code)
	}
}

func TestE2EBranchGuardCommitOnMain(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	for _, command := range []string{
		`git commit -m "wip"`,
		`git add -A && git -c user.name=x commit -qm wip`,
	} {
		ev := bashEv("PreToolUse", root, command, evToolUseID("toolu_commit"))
		reason := denyReason(t, runHookProcess(t, root, nil, ev))
		if !strings.Contains(reason, "[DES-BRANCH-PROTECTED]") {
			t.Errorf("%s on main: reason =\n%s", command, reason)
		}
	}
	// Not a commit: no opinion.
	ev := bashEv("PreToolUse", root, "git status && ls", evToolUseID("toolu_ls"))
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); reason != "" {
		t.Errorf("git status: %s", reason)
	}
}

func TestE2EPostToolUseWalkthroughWarning(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	ev := phaseAgentEvent(root, "PostToolUse", "discover-orchestrator", "/discover")
	ev["tool_response"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "Discovery complete."}}, "totalTokens": 10}
	out := readAfter(t, runHookProcess(t, root, nil, ev))
	if out.Specific.HookEventName != "PostToolUse" || !strings.Contains(out.Specific.AdditionalContext, "[DES-WALKTHROUGH-MISSING]") || out.Decision != "" {
		t.Errorf("walkthrough warning: %+v", out)
	}
	// Gate 2 failed the subagent's step as well: the orchestrator reads both.
	writeFile(t, evidenceDir(root), "toolu_phase.stop.json", `{"tool_use_id": "toolu_phase", "step_file": "docs/feature/x/steps/01-01.json", "at": "2026-11-25T13:00:00Z", "failed": true, "action": "record", "marked": true, "reason": "[DES-PHASE-ABANDONED] phase GREEN_UNIT left IN_PROGRESS"}`)
	both := readAfter(t, runHookProcess(t, root, nil, ev)).Specific.AdditionalContext
	gate2 := strings.Index(both, "DES Gate 2 failed the subagent's work on docs/feature/x/steps/01-01.json")
	if gate2 < 0 || !strings.Contains(both, "[DES-PHASE-ABANDONED]") || strings.Index(both, "[DES-WALKTHROUGH-MISSING]") < gate2 {
		t.Errorf("Gate 2 then the observers, in one additionalContext:\n%s", both)
	}
	// Without tool_response the call has not completed: no warning.
	delete(ev, "tool_response")
	if out := readAfter(t, runHookProcess(t, root, nil, ev)); strings.Contains(out.Specific.AdditionalContext, "WALKTHROUGH") {
		t.Errorf("no tool_response: %+v", out)
	}
}

// A bad requirement file where a workflow state applies fails closed and
// names the setting; without a state the same setting costs nothing.
func TestE2EBadRequirementFileFailsClosedInAWorkflow(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	env := []string{"DES_PHASE_REQUIREMENTS_FILES=team/iteration-requirements.json"}
	reason := denyReason(t, runHookProcess(t, root, env, phaseAgentEvent(root, "PreToolUse", "software-developer", "Implement T0001")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "phase_requirements_files") {
		t.Errorf("reason = %q", reason)
	}
	plain := t.TempDir()
	r := runHookProcess(t, plain, env, phaseAgentEvent(plain, "PreToolUse", "software-developer", "Implement T0001"))
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("no workflow: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// Hook processes blocked at once record the escalation once: the trail is
// read and appended to under its file lock.
func TestE2EEscalationOnceUnderParallelHooks(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	skill := skillEv("PreToolUse", root, "isdlc", "gate", evToolUseID("toolu_par"))
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if reason := denyReason(t, runHookProcess(t, root, nil, skill)); !strings.Contains(reason, "[DES-GATE-BLOCKED]") {
				t.Errorf("reason =\n%s", reason)
			}
		}()
	}
	wg.Wait()
	trail := auditText(t, root)
	if n := strings.Count(trail, `"PHASE_ESCALATION"`); n != 1 {
		t.Errorf("%d PHASE_ESCALATION lines, want 1", n)
	}
	if n := strings.Count(trail, `"TASK_INVOCATION_REJECTED"`); n != 6 {
		t.Errorf("%d TASK_INVOCATION_REJECTED lines, want 6", n)
	}
	if r := runBinCLI(t, root, "audit", "verify"); r.code != 0 {
		t.Errorf("audit verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
