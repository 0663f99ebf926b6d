package main

// The task graph from evidence (issue 28 item 4), through the built hook
// binary: only des's wave sync finishes a phase (completed, failed,
// escalated) or moves current_wave, from the subagent runs it recorded; a
// plan may not start with finished phases; retries belong to a plan's
// phases across task_ids (known by phase_id, else by content), so the
// escalation cannot be put off; and under delegation_mode enforce the MCP
// tools that write files or commit are the main agent's work. Each attack
// beside the honest run that must pass. Both decision modes: the default
// warm server, and DES_TEST_DECISION_SERVER=off.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// landGraph writes content to the graph as Claude Code would after an
// allowed Write: PreToolUse (must allow), the file written, PostToolUse.
func (p *tgProject) landGraph(agent *tgAgent, content gdoc, id string) {
	p.t.Helper()
	w := p.writeGraphEv(agent, tgGraphPath, content)
	w["tool_use_id"] = id
	p.check(w, tgAllow)
	writeFile(p.t, p.root, tgGraphPath, tgJSON(p.t, content))
	p.quiet(writtenEv(w, w["tool_input"].(gdoc)["file_path"]))
}

// The main agent walks its own phases, moves current_wave and starts plans
// finished: each write is denied and names what des saw and the way out.
// What an orchestrator honestly writes (a new plan all pending, a phase
// started, a description edited, a phase added) passes.
func TestGraphEvidenceSelfWalkDenied(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{}, nil)
	plan := tgPlan()
	p.landGraph(nil, plan, "toolu_01EvPlan")

	// Honest edits: started, described, a phase added.
	started := withStatus(t, tgClone(t, plan), "phase_0_0", "in_progress")
	p.landGraph(nil, started, "toolu_01EvStarted")
	described := tgClone(t, started)
	described["description"] = "Create calculator.py AND utils.py, each verified"
	more := tgClone(t, described)
	w0 := more["waves"].([]any)[0].(gdoc)
	w0["phases"] = append(w0["phases"].([]any), tgImpl("phase_0_2", "README.md"))
	w1 := more["waves"].([]any)[1].(gdoc)
	w1["phases"] = append(w1["phases"].([]any), tgVerify("phase_1_2", "phase_0_2"))
	p.landGraph(nil, more, "toolu_01EvMore")

	// Self-walked: in_progress → completed, no subagent ever ran.
	walked := withStatus(t, tgClone(t, more), "phase_0_0", "completed")
	o := p.check(p.writeGraphEv(nil, tgGraphPath, walked), tgDenies("DES-GRAPH-STATUS-UNSEEN").with(
		`"phase_0_0"`, `from "in_progress" to "completed"`, "des saw no subagent run", `Phase ID: phase_0_0`, "des marks it completed"))
	t.Logf("self-walked: %s", o.deny)
	// The same by Edit.
	path := filepath.Join(p.root, filepath.FromSlash(tgGraphPath))
	text := p.graphText()
	i := strings.Index(text, `"status": "in_progress"`)
	if i < 0 {
		t.Fatalf("fixture:\n%s", text)
	}
	p.check(p.tool(nil, "Edit", gdoc{"file_path": path, "old_string": `"status": "in_progress"`, "new_string": `"status": "completed"`}), tgDenies("DES-GRAPH-STATUS-UNSEEN"))
	// failed and escalated are des's too.
	p.check(p.writeGraphEv(nil, tgGraphPath, withStatus(t, tgClone(t, more), "phase_0_0", "failed")), tgDenies("DES-GRAPH-STATUS-UNSEEN"))

	// current_wave moved, even with the wave's phases completed on disk.
	moved := tgClone(t, more)
	moved["current_wave"] = 1
	p.check(p.writeGraphEv(nil, tgGraphPath, moved), tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-WAVE-MOVED").with("leave current_wave at 0"))

	// A plan that starts finished: a new task_id over the disk, and a plan
	// written where none was.
	fresh := withStatus(t, tgPlan(), "phase_0_0", "completed", "phase_0_1", "completed")
	fresh["task_id"], fresh["current_wave"] = "root-2", 1
	o = p.check(p.writeGraphEv(nil, tgGraphPath, fresh), tgDenies("DES-GRAPH-PLAN-FINISHED").with(`task_id "root-2"`, "des saw no subagent run"))
	t.Logf("plan finished: %s", o.deny)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	q := newGraphProject(t, gdoc{}, nil)
	q.check(q.writeGraphEv(nil, tgGraphPath, fresh), tgDenies("DES-GRAPH-PLAN-FINISHED").with("no graph on disk"))
	atWave := tgPlan()
	atWave["current_wave"] = 2
	q.check(q.writeGraphEv(nil, tgGraphPath, atWave), tgDenies("DES-GRAPH-PLAN-FINISHED").with("set current_wave to 0"))
	q.check(q.writeGraphEv(nil, tgGraphPath, tgPlan()), tgAllow)
}

// The honest run: des's wave sync finishes the phases; the orchestrator's
// writes of the graph after it (a stale copy with a new description, the
// plan renamed carrying what des finished) pass, since des's record shows
// the runs.
func TestGraphEvidenceHonestRun(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"delegation_mode": "enforce"}, nil)
	p.quiet(p.userPrompt("Create calculator.py AND utils.py, verified"))
	planner := p.agent("Agent", "task-decomposer", "Break the task down into a task graph in waves and write it to "+tgGraphPath+".")
	p.check(p.delegateEv(planner), tgAllow)
	p.quiet(p.startEv(planner))
	p.landGraph(planner, tgPlan(), "toolu_01EvHonestPlan")
	p.quiet(p.stopEv(planner, "Plan written."))
	p.post(planner, "Plan written.")

	impl0 := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_0", "Create calculator.py"))
	impl1 := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_1", "Create utils.py"))
	p.check(p.delegateEv(impl0), tgAllow)
	p.check(p.delegateEv(impl1), tgAllow)
	p.lifecycle(impl0, "Created calculator.py.")
	p.lifecycle(impl1, "Created utils.py.")
	p.wantDisk("phase_0_0", "completed", "phase_0_1", "completed")
	if got := p.currentWave(); got != 1 {
		t.Fatalf("current_wave = %d, want 1", got)
	}

	// A planner rewrites the plan as it stands, with a new description.
	re := p.agent("Agent", "task-decomposer", "Reword the plan's description.")
	p.check(p.delegateEv(re), tgAllow)
	p.quiet(p.startEv(re))
	g := p.graph()
	g["description"] = "Calculator and utils, each verified"
	p.landGraph(re, g, "toolu_01EvHonestReword")
	// The plan renamed keeps what des finished, at the wave after it.
	renamed := tgClone(t, g)
	renamed["task_id"] = "calc-v2"
	p.landGraph(re, renamed, "toolu_01EvHonestRename")
	p.quiet(p.stopEv(re, "Done."))

	// The run goes on to the end under the new name.
	for _, id := range []string{"phase_1_0", "phase_1_1"} {
		v := p.agent("Agent", "task-completion-verifier", phasePrompt(id, "Verify"))
		p.check(p.delegateEv(v), tgAllow)
		p.lifecycle(v, "All criteria met.\n\nVERDICT: PASS")
	}
	fin := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_2_0", "Run the integration tests"))
	p.check(p.delegateEv(fin), tgAllow)
	p.lifecycle(fin, "VERDICT: PASS")
	if got := p.currentWave(); got != 3 {
		t.Fatalf("current_wave at the end = %d, want 3:\n%s", got, p.graphText())
	}
	// The plan is over: a next plan starts afresh, all pending.
	next := tgPlan()
	next["task_id"] = "next"
	writer := p.agent("Agent", "task-decomposer", "Plan the next task.")
	p.check(p.delegateEv(writer), tgAllow)
	p.quiet(p.startEv(writer))
	p.landGraph(writer, next, "toolu_01EvHonestNext")
}

// Retries belong to the plan's phases, not to its task_id: after three
// failed verifications the escalation holds when the plan is renamed, when
// the graph is removed and written again, and when the phase is renamed.
func TestGraphEvidenceRetriesAcrossTaskIDs(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{}, tgPlan())
	for attempt := 1; attempt <= 3; attempt++ {
		impl := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_0", "Create calculator.py"))
		p.check(p.delegateEv(impl), tgAllow)
		p.lifecycle(impl, "Created calculator.py.")
		if attempt == 1 {
			other := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_1", "Create utils.py"))
			p.check(p.delegateEv(other), tgAllow)
			p.lifecycle(other, "Created utils.py.")
		}
		ver := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_0", "Verify calculator.py"))
		p.check(p.delegateEv(ver), tgAllow)
		p.lifecycle(ver, failVerdict(attempt))
	}
	if n := p.retries("phase_0_0"); n != 3 {
		t.Fatalf("retries = %d, want 3:\n%s", n, p.graphText())
	}
	p.check(p.delegateEv(p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_0", "Once more"))), tgDenies("DES-VERIFY-ESCALATE"))

	// Renamed plan, retries back to 0.
	renamed := withStatus(t, tgPlan(), "phase_0_1", "completed")
	renamed["task_id"] = "root-again"
	o := p.check(p.writeGraphEv(nil, tgGraphPath, renamed), tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-RETRIES-RESET").with(
		`"phase_0_0"`, "has retries 0, but des counted 3 failed verifications"))
	t.Logf("renamed: %s", o.deny)

	// The graph removed (as a person could), then the plan written again.
	if err := os.Remove(filepath.Join(p.root, filepath.FromSlash(tgGraphPath))); err != nil {
		t.Fatal(err)
	}
	p.check(p.writeGraphEv(nil, tgGraphPath, renamed), tgDenies("DES-GRAPH-RETRIES-RESET"))
	// max_retries raised in the new plan.
	raised := tgClone(t, renamed)
	raised["max_retries"] = 10
	tgPhaseOf(t, raised, "phase_0_0")["retries"] = 3
	p.check(p.writeGraphEv(nil, tgGraphPath, raised), tgDenies("DES-GRAPH-RETRIES-RESET").with("max_retries 10"))

	// The phase renamed too: known by its content.
	g := tgPlan()
	g["task_id"] = "root-3"
	ph := tgPhaseOf(t, g, "phase_0_0")
	ph["phase_id"] = "calc_impl"
	tgPhaseOf(t, g, "phase_1_0")["verifies_phase_id"] = "calc_impl"
	o = p.check(p.writeGraphEv(nil, tgGraphPath, g), tgDenies("DES-GRAPH-RETRIES-RESET").with(`"calc_impl"`, "phase_0_0, the same phase by its content"))
	t.Logf("renamed phase: %s", o.deny)

	// With its history kept, the plan may be written: the escalation holds.
	ph["retries"] = 3
	p.landGraph(nil, g, "toolu_01EvKept")
	p.check(p.delegateEv(p.agent("Agent", "code-cleanup-optimizer", phasePrompt("calc_impl", "Once more"))), tgDenies("DES-VERIFY-ESCALATE"))
}

// Under enforce the MCP tools that write files or commit are the main
// agent's work; MCP tools that read, and any MCP tool in a subagent, are
// not. Under nudge they are counted among the direct work calls.
func TestGraphDelegationMCPTools(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"delegation_mode": "enforce"}, nil)
	sub := p.agent("Agent", "code-cleanup-optimizer", "Write calc.py")
	write := gdoc{"path": filepath.Join(p.root, "calc.py"), "content": "x = 1\n"}
	commit := gdoc{"repo_path": p.root, "message": "calc"}
	p.check(p.tool(nil, "mcp__filesystem__write_file", write), tgDenies("DES-DELEGATION-REQUIRED").with("mcp__filesystem__write_file in the main thread"))
	p.check(p.tool(nil, "mcp__git__git_commit", commit), tgDenies("DES-DELEGATION-REQUIRED").with("mcp__git__git_commit"))
	p.check(p.tool(nil, "mcp__filesystem__edit_file", gdoc{"path": filepath.Join(p.root, "calc.py"), "edits": []any{}}), tgDenies("DES-DELEGATION-REQUIRED"))
	p.check(p.tool(nil, "mcp__filesystem__read_file", gdoc{"path": filepath.Join(p.root, "README.md")}), tgAllow)
	p.check(p.tool(nil, "mcp__git__git_status", gdoc{"repo_path": p.root}), tgAllow)
	p.check(p.tool(sub, "mcp__filesystem__write_file", write), tgAllow)
	p.check(p.tool(sub, "mcp__git__git_commit", commit), tgAllow)
	// A scratch file in the temporary directory stays free, as with Write.
	p.check(p.tool(nil, "mcp__filesystem__write_file", gdoc{"path": filepath.Join(t.TempDir(), "notes.md"), "content": "x"}), tgAllow)

	n := newGraphProject(t, gdoc{"delegation_mode": "nudge"}, nil)
	n.quiet(n.userPrompt("go"))
	n.check(n.tool(nil, "mcp__filesystem__read_file", gdoc{"path": filepath.Join(n.root, "README.md")}), tgAllow)
	o := n.check(n.tool(nil, "mcp__git__git_commit", gdoc{"repo_path": n.root, "message": "x"}), tgWarns("DES-DELEGATION-REQUIRED"))
	if !strings.Contains(o.context, "direct work call 1 since the last user prompt") {
		t.Errorf("the read was counted, or the commit was not: %q", o.context)
	}
	o = n.check(n.workCall(nil, "Bash"), tgWarns("DES-DELEGATION-REQUIRED"))
	if !strings.Contains(o.context, "direct work call 2 since") {
		t.Errorf("count after an MCP commit: %q", o.context)
	}
}
