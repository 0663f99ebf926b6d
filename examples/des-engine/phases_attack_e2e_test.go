package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

// An attacker's review of the phase workflow guards, through
// the built binary: recovery lines the write guard would refuse, and
// decisions on huge prompts.

// writeState writes st as the project's workflow state.
func writeState(t *testing.T, root string, st map[string]any) {
	t.Helper()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, ".isdlc/state.json", string(data))
}

// stateWriteEvent is a Write of the whole workflow state.
func stateWriteEvent(t *testing.T, root string, st map[string]any) map[string]any {
	t.Helper()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return fileEv("PreToolUse", "Write", root, filepath.Join(root, ".isdlc", "state.json"), map[string]any{"content": string(data)}, evToolUseID("toolu_state"))
}

// DES-PHASE-UNTRACKED on a phase whose status is "completed" told the
// orchestrator to set it back to "in_progress", a status regression the
// workflow-state write guard (DES-STATE-V8-STATUS) refuses. The recovery
// must name a write the guard accepts: followed to the letter, the write is
// allowed and the delegation then is too.
func TestE2EAttackUntrackedCompletedRecoveryIsWritable(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	st := isdlcState()
	st["active_workflow"].(map[string]any)["phase_status"].(map[string]any)["06-implementation"] = "completed"
	st["phases"].(map[string]any)["06-implementation"].(map[string]any)["status"] = "completed"
	writeState(t, root, st)

	reason := denyReason(t, runHookProcess(t, root, nil, phaseAgentEvent(root, "PreToolUse", "software-developer", "Implement T0001")))
	if !strings.Contains(reason, "[DES-PHASE-UNTRACKED]") {
		t.Fatalf("delegation to a completed phase: reason =\n%s", reason)
	}
	// The recovery of a completed phase names the write guard's exemption.
	if !strings.Contains(reason, `recovery_action.type to "retry"`) {
		t.Fatalf("the recovery of a completed phase does not name a write the state guard accepts:\n%s", reason)
	}
	// Followed: status back to in_progress with recovery_action retry.
	st["active_workflow"].(map[string]any)["phase_status"].(map[string]any)["06-implementation"] = "in_progress"
	st["phases"].(map[string]any)["06-implementation"].(map[string]any)["status"] = "in_progress"
	st["active_workflow"].(map[string]any)["recovery_action"] = map[string]any{"type": "retry"}
	if reason := denyReason(t, runHookProcess(t, root, nil, stateWriteEvent(t, root, st))); reason != "" {
		t.Fatalf("the recovery's write is refused:\n%s", reason)
	}
	writeState(t, root, st)
	if reason := denyReason(t, runHookProcess(t, root, nil, phaseAgentEvent(root, "PreToolUse", "software-developer", "Implement T0001"))); reason != "" {
		t.Errorf("after the recovery: %s", reason)
	}
}

// DES-GATE-BLOCKED for an index ahead of the current phase told the
// orchestrator to lower active_workflow.current_phase_index, which
// DES-STATE-V8-INDEX refuses without a rollback.
func TestE2EAttackIndexAheadRecoveryIsWritable(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	st := isdlcState()
	st["active_workflow"].(map[string]any)["current_phase_index"] = 3
	writeState(t, root, st)
	skill := skillEv("PreToolUse", root, "isdlc", "advance", evToolUseID("toolu_skill"))
	reason := denyReason(t, runHookProcess(t, root, nil, skill))
	if !strings.Contains(reason, "active_workflow.phases[3] (active_workflow.current_phase_index)") {
		t.Fatalf("index ahead: reason =\n%s", reason)
	}
	if !strings.Contains(reason, `recovery_action.type to "rollback"`) {
		t.Fatalf("lowering the index is recommended without the rollback the state guard requires:\n%s", reason)
	}
	st["active_workflow"].(map[string]any)["current_phase_index"] = 2
	st["active_workflow"].(map[string]any)["recovery_action"] = map[string]any{"type": "rollback"}
	if reason := denyReason(t, runHookProcess(t, root, nil, stateWriteEvent(t, root, st))); reason != "" {
		t.Fatalf("the recovery's write is refused:\n%s", reason)
	}
}

// hugePrompt is about 5 MB of ordinary words, naming no phase or agent and
// holding no phrase of the guards' tables, though every word of the
// phrases occurs in it now and then, as in prose ("the phases are
// completed", "delegated", "ready"), so no phrase can be skipped unread.
func hugePrompt() string {
	words := []string{"implement", "the", "login", "form", "with", "tests", "and", "refactor", "code", "carefully", "navigate", "aggregate"}
	rare := []string{"phases", "completed", "ready", "reviewed", "submitted", "marked", "done", "finished", "gateway", "advanced",
		"proceeding", "nextly", "moved", "progressive", "delegated", "handed", "offer", "declared", "validation", "as", "for", "to"}
	var b strings.Builder
	for i := 0; b.Len() < 5<<20; i++ {
		if i%500 == 0 {
			b.WriteString(rare[i/500%len(rare)])
		} else {
			b.WriteString(words[i%len(words)])
		}
		b.WriteByte(" \n"[i%7/6])
	}
	return b.String()
}

// A 5 MB prompt in a workflow: a call the guards have nothing against must
// be allowed, not denied with DES-INTERNAL because reading the prompt for
// phase names took too long. Reading it was quadratic once (seconds); now
// it takes about 0.1 s of evaluation. The budget is raised here so that a
// loaded test machine checks the decision, not the speed: the times are
// logged, and speed is the benchmarks' business (docs/performance.md).
func TestE2EAttackHugePromptWithinBudget(t *testing.T) {
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	budget := []string{"DES_VALIDATION_TIMEOUT_MS=10000"}
	root := isdlcProject(t)
	// Tests failed last: the test corridor is open, so every call's text
	// is read for the corridor phrases as well.
	st := isdlcState()
	st["phases"].(map[string]any)["06-implementation"].(map[string]any)["iteration_requirements"].(map[string]any)["test_iteration"].(map[string]any)["last_test_result"] = "failed"
	writeState(t, root, st)
	prompt := hugePrompt()
	for _, agent := range []string{"general-purpose", "sdlc-orchestrator", "software-developer"} {
		ev := phaseAgentEvent(root, "PreToolUse", agent, prompt)
		start := time.Now()
		r := runHookProcess(t, root, budget, ev)
		took := time.Since(start)
		if reason := denyReason(t, r); reason != "" {
			t.Errorf("%s with a 5 MB prompt (%v): denied\n%.400s", agent, took, reason)
			continue
		}
		t.Logf("%s with a 5 MB prompt: %v", agent, took)
	}
	// The same prompt naming one phase as its last word is still read.
	ev := phaseAgentEvent(root, "PreToolUse", "general-purpose", prompt+" 08-code-review")
	if reason := denyReason(t, runHookProcess(t, root, budget, ev)); !strings.Contains(reason, "[DES-PHASE-OUT-OF-ORDER]") {
		t.Errorf("5 MB prompt naming 08-code-review at its end: reason =\n%.400s", reason)
	}
	ev = phaseAgentEvent(root, "PreToolUse", "sdlc-orchestrator", prompt+" now advance.")
	if reason := denyReason(t, runHookProcess(t, root, budget, ev)); !strings.Contains(reason, "[DES-GATE-BLOCKED]") {
		t.Errorf("5 MB orchestrator prompt ending in advance: reason =\n%.400s", reason)
	}
}

// A v2.0 task plan of 1,000 tasks (60 KB, each blocked by the one before):
// the implementation phase's delegation is allowed, not denied with
// DES-INTERNAL because the blocked_by graph was built in quadratic time
// (seconds; now 0.17 s). The budget is raised as above: the decision is
// checked here, the time logged.
func TestE2EAttackLargePlanWithinBudget(t *testing.T) {
	t.Parallel()
	budget := []string{"DES_VALIDATION_TIMEOUT_MS=10000"}
	root := isdlcProject(t)
	var b strings.Builder
	b.WriteString("# Tasks\nFormat: v2.0\n\n## Phase 06: Implementation\n")
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "- [ ] T%04d task %d | traces: REQ-1\n  files: src/f%d.go (CREATE)\n", i, i, i)
		if i > 1 {
			fmt.Fprintf(&b, "  blocked_by: [T%04d]\n", i-1)
		}
	}
	writeFile(t, root, "docs/isdlc/tasks.md", b.String())
	start := time.Now()
	r := runHookProcess(t, root, budget, phaseAgentEvent(root, "PreToolUse", "software-developer", "Implement T0001"))
	if reason := denyReason(t, r); reason != "" {
		t.Fatalf("delegation with a 1,000-task plan (%v): denied\n%.400s", time.Since(start), reason)
	}
	t.Logf("1,000-task plan: %v", time.Since(start))
	// A cycle is still found: T0001 blocked by the last task.
	writeFile(t, root, "docs/isdlc/tasks.md", strings.Replace(b.String(), "(CREATE)\n", "(CREATE)\n  blocked_by: [T1000]\n", 1))
	r = runHookProcess(t, root, budget, phaseAgentEvent(root, "PreToolUse", "software-developer", "Implement T0001"))
	if out := r.stdout; !strings.Contains(out, "DES-PLAN-FORMAT") || !strings.Contains(out, "blocked_by graph has a cycle") {
		t.Errorf("a cycle through 1,000 tasks: exit %d\n%.600s\n%s", r.code, out, r.stderr)
	}
}

// A commit that names its repository with --git-dir lands on that
// repository's branch, whatever repository holds the directory git runs in:
// a directory with a .git of its own on another branch (or none at all) must
// not hide a commit on main.
func TestE2EAttackBranchGuardGitDirOption(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	writeFile(t, root, "sub/.git/HEAD", "ref: refs/heads/other\n") // a decoy repository
	outside := t.TempDir()                                         // no repository at all
	for _, command := range []string{
		`cd sub && git --git-dir=../.git commit -m x`,
		`git -C sub --git-dir ../.git commit -m x`,
		`git -C ` + outside + ` --git-dir=` + filepath.Join(root, ".git") + ` commit -m x`,
	} {
		ev := bashEv("PreToolUse", root, command, evToolUseID("toolu_gitdir"))
		if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-BRANCH-PROTECTED]") {
			t.Errorf("%s: reason =\n%s", command, reason)
		}
	}
	// git reads a relative --git-dir from the directory it ends up in: the
	// decoy's own branch, not main.
	ev := bashEv("PreToolUse", root, `git --git-dir=.git -C sub commit -m x`, evToolUseID("toolu_gitdir"))
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); reason != "" {
		t.Errorf("--git-dir=.git -C sub commits in sub/.git: %s", reason)
	}
}

// The policy reads git_branch.name "refs/heads/feature/x" as branch
// feature/x; the branch facts must look for the same ref, or the workflow
// branch "does not exist" and a commit on main goes through.
func TestE2EAttackBranchGuardFullRefName(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	st := isdlcState()
	st["active_workflow"].(map[string]any)["git_branch"] = map[string]any{"name": "refs/heads/feature/REQ-0001-login", "status": "active"}
	writeState(t, root, st)
	ev := bashEv("PreToolUse", root, `git commit -m x`, evToolUseID("toolu_ref"))
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-BRANCH-PROTECTED]") {
		t.Errorf("git_branch.name as a full ref: reason =\n%s", reason)
	}
}

// On a case-insensitive file system (macOS, Windows) HEAD naming
// refs/heads/MAIN commits onto main's ref file: a protected branch is
// recognised in any case.
func TestE2EAttackBranchGuardProtectedBranchCase(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	writeFile(t, root, ".git/HEAD", "ref: refs/heads/MAIN\n")
	ev := bashEv("PreToolUse", root, `git commit -m x`, evToolUseID("toolu_case"))
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-BRANCH-PROTECTED]") {
		t.Errorf("HEAD on MAIN: reason =\n%s", reason)
	}
}

// A field of an unexpected type in an Agent call (a description that is
// not a string, say: a future Claude Code's) must not hide its
// subagent_type from the phase guards: each field is read on its own.
func TestE2EAttackOddDescriptionKeepsSubagentType(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	for _, desc := range []any{7, map[string]any{"text": "review"}, []any{"x"}} {
		ev := phaseAgentEvent(root, "PreToolUse", "qa-engineer", "Review the login code")
		ev["tool_input"].(map[string]any)["description"] = desc
		if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-PHASE-OUT-OF-ORDER]") {
			t.Errorf("description %v: reason =\n%s", desc, reason)
		}
	}
	// PostToolUse: the observers still know the discover agent.
	ev := phaseAgentEvent(root, "PostToolUse", "discover-orchestrator", "/discover")
	ev["tool_input"].(map[string]any)["description"] = 7
	ev["tool_response"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "Discovery complete."}}}
	if out := readAfter(t, runHookProcess(t, root, nil, ev)); !strings.Contains(out.Specific.AdditionalContext, "[DES-WALKTHROUGH-MISSING]") {
		t.Errorf("PostToolUse with a numeric description: %+v", out)
	}
}

// GIT_DIR in git's environment names its repository as --git-dir does:
// a prefix assignment or env NAME=VALUE in front of git.
func TestE2EAttackBranchGuardGitDirEnvironment(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	writeFile(t, root, "sub/.git/HEAD", "ref: refs/heads/other\n") // a decoy repository
	outside := t.TempDir()
	for _, command := range []string{
		`cd sub && GIT_DIR=../.git git commit -m x`,
		`GIT_DIR=` + filepath.Join(root, ".git") + ` git -C ` + outside + ` commit -m x`,
		`cd sub && env GIT_DIR=../.git git commit -m x`,
		`cd sub && GIT_DIR=../.git sh -c 'git commit -m x'`,
	} {
		ev := bashEv("PreToolUse", root, command, evToolUseID("toolu_gitdirenv"))
		if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-BRANCH-PROTECTED]") {
			t.Errorf("%s: reason =\n%s", command, reason)
		}
	}
	// --git-dir wins over GIT_DIR, as in git: here the decoy's branch.
	ev := bashEv("PreToolUse", root, `GIT_DIR=.git git --git-dir=sub/.git commit -m x`, evToolUseID("toolu_gitdirenv"))
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); reason != "" {
		t.Errorf("--git-dir over GIT_DIR: %s", reason)
	}
}

// One Write of "{}" to a new .des/state.json, the first state des looks
// for, would replace the workflow state in effect for every phase guard:
// the creation is denied while the state in effect has an active workflow,
// and the guards still judge by the real state afterwards. A monorepo
// project's new state over the root state is the same move.
func TestE2EAttackShadowStateDenied(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	writeState(t, root, isdlcState())
	shadow := func(rel string) map[string]any {
		return fileEv("PreToolUse", "Write", root, filepath.Join(root, filepath.FromSlash(rel)), nil, evToolUseID("toolu_shadow"))
	}
	reason := denyReason(t, runHookProcess(t, root, nil, shadow(".des/state.json")))
	if !strings.Contains(reason, "[DES-STATE-SHADOW] creating .des/state.json would replace .isdlc/state.json") {
		t.Fatalf("a shadowing state write: reason =\n%s", reason)
	}
	if _, err := os.Stat(filepath.Join(root, ".des", "state.json")); err == nil {
		t.Fatal(".des/state.json was created")
	}
	// The guards still read the real state: out of order is still denied.
	if reason := denyReason(t, runHookProcess(t, root, nil, phaseAgentEvent(root, "PreToolUse", "qa-engineer", "review"))); !strings.Contains(reason, "[DES-PHASE-OUT-OF-ORDER]") {
		t.Errorf("after the refused shadow: reason =\n%s", reason)
	}

	// A monorepo whose chosen project has no state yet: creating it over
	// the root state is the same move.
	writeFile(t, root, ".isdlc/monorepo.json", `{"projects": {"api": {"path": "apps/api"}}, "default_project": "api"}`)
	if reason := denyReason(t, runHookProcess(t, root, nil, shadow(".isdlc/projects/api/state.json"))); !strings.Contains(reason, "[DES-STATE-SHADOW]") {
		t.Errorf("a project state over the root state: reason =\n%s", reason)
	}

	// Without an active workflow in effect, a new state file is just a write.
	idle := t.TempDir()
	writeFile(t, idle, ".isdlc/state.json", `{"state_version": 1}`)
	ev := shadow(".des/state.json")
	ev["cwd"] = idle
	ev["tool_input"].(map[string]any)["file_path"] = filepath.Join(idle, ".des", "state.json")
	if reason := denyReason(t, runHookProcess(t, idle, nil, ev)); reason != "" {
		t.Errorf("a state file with no active workflow in effect: reason =\n%s", reason)
	}
}

// .isdlc/monorepo.json chooses the workflow state in effect: pointing
// default_project at a forged project state switches every phase guard to
// it. A Write or Edit that would do so while the state in effect holds an
// active workflow is denied; one that adds a project no call moves to is
// not; a Bash write of it is undone like a write of the state.
func TestE2EAttackMonorepoSwitchDenied(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	writeState(t, root, isdlcState())
	forged := isdlcState()
	forged["active_workflow"].(map[string]any)["current_phase"] = "08-code-review"
	data, _ := json.Marshal(forged)
	writeFile(t, root, ".isdlc/projects/x/state.json", string(data))
	write := func(content string) map[string]any {
		return fileEv("PreToolUse", "Write", root, filepath.Join(root, ".isdlc", "monorepo.json"), map[string]any{"content": content}, evToolUseID("toolu_mono"))
	}
	reason := denyReason(t, runHookProcess(t, root, nil, write(`{"projects": {"x": {"path": "apps/x"}}, "default_project": "x"}`)))
	if !strings.Contains(reason, "[DES-STATE-SWITCH] this write to .isdlc/monorepo.json would make des read .isdlc/projects/x/state.json (project x) instead of .isdlc/state.json for calls made in the project root") {
		t.Fatalf("default_project at a forged state: reason =\n%s", reason)
	}
	// Calls made in a project's directory count too.
	reason = denyReason(t, runHookProcess(t, root, nil, write(`{"projects": {"x": {"path": "."}}}`)))
	if !strings.Contains(reason, "[DES-STATE-SWITCH]") {
		t.Errorf("a project at the root: reason =\n%s", reason)
	}
	// A project whose directory no call is made in, with no state of its
	// own and no default, switches nothing: allowed.
	if reason := denyReason(t, runHookProcess(t, root, nil, write(`{"projects": {"web": {"path": "apps/web"}}}`))); reason != "" {
		// apps/web: a call made there would read .isdlc/state.json either way.
		t.Errorf("a new project nobody moves to: reason =\n%s", reason)
	}
	if _, err := os.Stat(filepath.Join(root, ".isdlc", "monorepo.json")); err == nil {
		t.Fatal("the hook wrote .isdlc/monorepo.json itself")
	}

	// Bash may not write it either: denied when the command names it,
	// undone when it does not.
	if a := agentBash(t, root, root, `echo '{"default_project": "x", "projects": {"x": {"path": "."}}}' > .isdlc/monorepo.json`); !strings.Contains(a.deny, "[DES-STATE-BASH-WRITE]") {
		t.Errorf("echo > .isdlc/monorepo.json: deny =\n%s", a.deny)
	}
	a := agentBash(t, root, root, `python3 -c 'open(".isdlc/"+"monorepo.json","w").write("{\"default_project\": \"x\", \"projects\": {\"x\": {\"path\": \".\"}}}")'`)
	if a.deny != "" {
		t.Fatalf("python3: denied before it ran:\n%s", a.deny)
	}
	if !strings.Contains(a.reason, "DES-INTEGRITY") || !strings.Contains(a.reason, ".isdlc/monorepo.json") {
		t.Errorf("python3 wrote .isdlc/monorepo.json: post reason =\n%s", a.reason)
	}
	if _, err := os.Stat(filepath.Join(root, ".isdlc", "monorepo.json")); err == nil {
		t.Error(".isdlc/monorepo.json written by Bash was left in place")
	}
	// The guards still judge by the real state.
	if reason := denyReason(t, runHookProcess(t, root, nil, phaseAgentEvent(root, "PreToolUse", "qa-engineer", "review"))); !strings.Contains(reason, "[DES-PHASE-OUT-OF-ORDER]") {
		t.Errorf("after the refused switch: reason =\n%s", reason)
	}
}
