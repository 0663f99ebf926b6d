package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Attacks on orchestration governance through the built hook: an
// orchestrator (or a subagent) that tries to get around the task graph's
// rules or delegation.

// orchEscalated is orchPlan after impl-a failed verification max_retries
// (3) times: des set it back to pending with retries 3, its verifier stands
// failed, and current_wave is 1.
const orchEscalated = `{
  "task_id": "T-1",
  "current_wave": 1,
  "waves": [
    {"wave_id": 0, "parallel_execution": true, "phases": [
      {"phase_id": "impl-a", "type": "implementation", "objective": "Add the login handler", "agent": "coder",
       "status": "pending", "retries": 3,
       "deliverable_manifest": {"files": [{"path": "src/login.go", "must_exist": true}]}}
    ]},
    {"wave_id": 1, "phases": [
      {"phase_id": "verify-a", "type": "verification", "objective": "Verify the login handler", "agent": "verifier", "verifies_phase_id": "impl-a", "status": "failed"}
    ]}
  ]
}
`

// An orchestrator whose phase is escalated (the user must decide) writes
// the graph again to get its retries back: a new task_id, the phase renamed,
// or its statuses walked to completed. Each is denied.
func TestE2ETaskGraphAttackEscalationEscape(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, "")
	writeFile(t, root, orchGraph, orchEscalated)
	out, _ := orchRun(t, root, orchAgentCall(root, "toolu_1", "Phase ID: impl-a\n"))
	if !strings.Contains(out.Specific.Reason, "DES-VERIFY-ESCALATE") {
		t.Fatalf("delegating the escalated phase: %+v", out)
	}
	for name, graph := range map[string]string{
		"new task_id": strings.Replace(orchPlan, `"T-1"`, `"T-2"`, 1),
		"renamed":     strings.ReplaceAll(strings.Replace(orchEscalated, `"retries": 3`, `"retries": 0`, 1), `impl-a`, `impl-a2`),
		"walked":      strings.Replace(orchEscalated, `"status": "pending"`, `"status": "in_progress"`, 1),
		"verifier":    strings.Replace(orchEscalated, `"status": "failed"`, `"status": "in_progress"`, 1),
		"retyped":     strings.Replace(strings.Replace(orchEscalated, `"type": "implementation"`, `"type": "documentation"`, 1), `"status": "failed"`, `"status": "in_progress"`, 1),
	} {
		ev := orchTool(root, "PreToolUse", "Write", "toolu_w", map[string]any{"file_path": filepath.Join(root, orchGraph), "content": graph})
		ev["agent_id"] = "planner-1" // a subagent: delegation is not what stops it
		out, _ := orchRun(t, root, ev)
		if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-TASKGRAPH-TRANSITION") {
			t.Errorf("%s: %+v, want DES-TASKGRAPH-TRANSITION", name, out)
		}
	}
}

// A hard link in the temporary directory to a project file (made earlier,
// say by a subagent's `ln`) is the project file under another name: writing
// it in the main thread is project work, not a scratch file, and writing a
// hard link of the task graph is a write of the task graph.
func TestE2ETaskGraphAttackHardLinkInTemp(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, `{"delegation_mode": "enforce"}`)
	writeFile(t, root, orchGraph, orchEscalated)
	writeFile(t, root, "main.go", "package main\n")
	tmp := t.TempDir()
	if err := os.Link(filepath.Join(root, "main.go"), filepath.Join(tmp, "main.go")); err != nil {
		t.Skip("no hard links here:", err)
	}
	if err := os.Link(filepath.Join(root, orchGraph), filepath.Join(tmp, "g.json")); err != nil {
		t.Fatal(err)
	}
	out, _ := orchRun(t, root, orchTool(root, "PreToolUse", "Write", "toolu_w", map[string]any{"file_path": filepath.Join(tmp, "main.go"), "content": "package main // done by the main thread\n"}), "TMPDIR="+tmp)
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-DELEGATION-REQUIRED") {
		t.Errorf("main-thread Write of a hard link of main.go under $TMPDIR: %+v, want DES-DELEGATION-REQUIRED", out)
	}
	// A plain scratch file there stays free.
	if out, raw := orchRun(t, root, orchTool(root, "PreToolUse", "Write", "toolu_s", map[string]any{"file_path": filepath.Join(tmp, "notes.md"), "content": "x"}), "TMPDIR="+tmp); raw != "" {
		t.Errorf("scratch file: %+v", out)
	}
	ev := orchTool(root, "PreToolUse", "Write", "toolu_g", map[string]any{"file_path": filepath.Join(tmp, "g.json"), "content": strings.Replace(orchEscalated, `"retries": 3`, `"retries": 0`, 1)})
	ev["agent_id"] = "planner-1"
	out, _ = orchRun(t, root, ev, "TMPDIR="+tmp)
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-TASKGRAPH-TRANSITION") {
		t.Errorf("a subagent's Write of a hard link of the task graph outside the project: %+v, want DES-TASKGRAPH-TRANSITION", out)
	}
}

// A team that adds a verification type in Rego data (verification_types)
// has its phases of that type accepted as verifications by the write rules:
// the wave sync must then fail them on VERDICT: FAIL as it fails
// "verification" phases, not mark them completed.
func TestE2ETaskGraphAttackTeamVerificationTypeFails(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, "")
	writeFile(t, root, ".des/policies/des/taskgraph/data.json", `{"verification_types": {"review": true}, "read_only_types": {"review": true}}`)
	writeFile(t, root, orchGraph, `{"task_id": "T-1", "current_wave": 1, "waves": [
  {"phases": [{"phase_id": "impl-a", "type": "implementation", "status": "completed"}]},
  {"phases": [{"phase_id": "rev-a", "type": "review", "verifies_phase_id": "impl-a"}]}
]}`)
	prompt := "Review the login handler.\nPhase ID: rev-a\n"
	tr := orchTranscript(t, root, "r1", prompt, "Checked.")
	orchRun(t, root, orchStop(root, "r1", "reviewer", tr, "The handler has no tests.\nVERDICT: FAIL"))
	doc := orchGraphDoc(t, root)
	if p := orchPhase(doc, "rev-a"); p["status"] != "failed" {
		t.Errorf("rev-a after VERDICT: FAIL = %v, want failed", p)
	}
	if p := orchPhase(doc, "impl-a"); p["status"] != "pending" || p["retries"] != float64(1) {
		t.Errorf("impl-a after its review failed = %v, want pending with retries 1", p)
	}
}

// Claude Code applies the env block of its settings files to the session,
// hooks included: an agent that writes DES_DELEGATION_MODE (or any DES_
// setting, or TMPDIR) there switches governance off for the next session.
// Those entries are DES's part of the file, like its hook entries.
func TestE2ETaskGraphAttackSettingsEnv(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, `{"delegation_mode": "enforce"}`)
	writeFile(t, root, ".claude/settings.json", `{"env": {"FOO": "1"}, "model": "x"}`+"\n")
	for name, content := range map[string]string{
		"delegation off": `{"env": {"FOO": "1", "DES_DELEGATION_MODE": "off"}, "model": "x"}`,
		"policy dirs":    `{"env": {"FOO": "1", "DES_POLICY_DIRS": "/tmp/mine"}, "model": "x"}`,
		"tmpdir":         `{"env": {"FOO": "1", "TMPDIR": "/"}, "model": "x"}`,
	} {
		for _, file := range []string{".claude/settings.json", ".claude/settings.local.json"} {
			ev := orchTool(root, "PreToolUse", "Write", "toolu_s", map[string]any{"file_path": filepath.Join(root, file), "content": content})
			ev["agent_id"] = "a1"
			out, _ := orchRun(t, root, ev)
			if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-PROTECTED-PATH") {
				t.Errorf("%s in %s: %+v, want DES-PROTECTED-PATH", name, file, out)
			}
		}
	}
	// Any env entry is guarded (PATH or XDG_STATE_HOME reach des too);
	// what Claude Code rewrites itself (the model, allow rules) is not.
	ev := orchTool(root, "PreToolUse", "Write", "toolu_s", map[string]any{"file_path": filepath.Join(root, ".claude/settings.json"), "content": `{"env": {"FOO": "2", "XDG_STATE_HOME": "/tmp/fresh"}, "model": "x"}`})
	ev["agent_id"] = "a1"
	if out, _ := orchRun(t, root, ev); out.Specific.PermissionDecision != "deny" {
		t.Errorf("a change of env entries: %+v, want DES-PROTECTED-PATH", out)
	}
	ev = orchTool(root, "PreToolUse", "Write", "toolu_s", map[string]any{"file_path": filepath.Join(root, ".claude/settings.json"), "content": `{"env": {"FOO": "1"}, "model": "y", "permissions": {"allow": ["Bash(ls)"]}}`})
	ev["agent_id"] = "a1"
	if out, raw := orchRun(t, root, ev); raw != "" {
		t.Errorf("a change of the model and the allow rules: %+v", out)
	}
}

// A graph larger than DES reads (taskgraph.MaxBytes) is no graph to compare
// a later write with: written once (padded), it would let the next write
// reset an escalated phase's retries unchecked. A write that large is
// refused.
func TestE2ETaskGraphAttackOversizedGraph(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, "")
	writeFile(t, root, orchGraph, orchEscalated)
	padded := strings.Replace(orchEscalated, `"task_id": "T-1",`, `"task_id": "T-1", "description": "`+strings.Repeat("x", 5<<20)+`",`, 1)
	ev := orchTool(root, "PreToolUse", "Write", "toolu_w", map[string]any{"file_path": filepath.Join(root, orchGraph), "content": padded})
	ev["agent_id"] = "planner-1"
	out, _ := orchRun(t, root, ev)
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-TASKGRAPH-INVALID") {
		t.Errorf("a 5 MiB graph: %.300s, want DES-TASKGRAPH-INVALID", out.Specific.Reason+out.Specific.PermissionDecision)
	}
}

// A relative notebook_path is resolved as the kernel resolves it: a link
// first, then "..". Cleaned lexically first, "lnk/../../x" can name the
// temporary directory while the kernel lands in the project.
func TestE2ETaskGraphAttackNotebookDotDot(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, `{"delegation_mode": "enforce"}`)
	tmp := t.TempDir()
	depth := strings.Count(filepath.Clean(root), string(filepath.Separator)) // root's depth below "/"
	// lnk -> root/d/d/.../d (depth+1 levels): from root/lnk, depth+1 ".."
	// lexically reach "/", while the kernel, from the link's target, reaches root.
	deep := root
	for range depth + 1 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deep, filepath.Join(root, "lnk")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	rest := strings.TrimPrefix(filepath.Join(tmp, "work.ipynb"), string(filepath.Separator))
	writeFile(t, root, filepath.ToSlash(rest), "{}") // the file the kernel reaches: in the project
	p := "lnk" + strings.Repeat(string(filepath.Separator)+"..", depth+1) + string(filepath.Separator) + rest
	ev := orchTool(root, "PreToolUse", "NotebookEdit", "toolu_n", map[string]any{"notebook_path": p, "new_source": "x", "cell_id": "c1"})
	out, _ := orchRun(t, root, ev, "TMPDIR="+tmp)
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-DELEGATION-REQUIRED") {
		t.Errorf("main-thread NotebookEdit of %s (a project file): %+v, want DES-DELEGATION-REQUIRED", p, out)
	}
}

// A graph so large that the policies take longer than validation_timeout_ms
// fails closed; its recovery names that budget, not git or the file system.
func TestE2ETaskGraphAttackBudgetRecovery(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, "")
	var b strings.Builder
	b.WriteString(`{"task_id": "big", "current_wave": 0, "waves": [{"phases": [`)
	for i := range 2000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"phase_id": "impl-` + strconv.Itoa(i) + `", "type": "implementation"}`)
	}
	b.WriteString(`]}, {"phases": [`)
	for i := range 2000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"phase_id": "ver-` + strconv.Itoa(i) + `", "type": "verification", "verifies_phase_id": "impl-` + strconv.Itoa(i) + `"}`)
	}
	b.WriteString(`]}]}`)
	writeFile(t, root, orchGraph, b.String())
	out, _ := orchRun(t, root, orchAgentCall(root, "toolu_1", "Phase ID: impl-1999\n"), "DES_VALIDATION_TIMEOUT_MS=1")
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-INTERNAL") {
		t.Fatalf("over the budget: %+v, want a DES-INTERNAL deny", out)
	}
	_, recovery, _ := strings.Cut(out.Specific.Reason, "Recovery:")
	if !strings.Contains(recovery, "validation_timeout_ms") || strings.Contains(recovery, "git") {
		t.Errorf("recovery = %q, want the validation budget named", recovery)
	}
}
