package main

// The task graph at delegation time and at the subagents' stops (CONTRACT
// §9): DES-TASKGRAPH-UNKNOWN-PHASE/-WAVE/-DEPENDENCY and DES-VERIFY-ESCALATE
// on PreToolUse Agent/Task, the wave sync DES itself carries out when a
// phase's subagent stops (one locked, atomic write; current_wave advanced
// exactly once however many stops race), TASK_GRAPH_UPDATED, what the
// orchestrator is told at PostToolUse, and the design's whole flow:
// delegate → wave 0 in parallel → wave sync → verification → FAIL →
// re-implementation → third FAIL → escalation. Helpers are in
// taskgraph_e2e_test.go.
//
// How DES learns which phase a stopping subagent ran is its business: the
// events carry what Claude Code gives it (the agent transcript, whose first
// line is the delegation prompt naming the phase, with the meta file naming
// the starting call's tool_use_id; the PreToolUse of that call before it).

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Delegation rules against the graph on disk, one state of the plan per
// case. A delegation names its phase with `Phase ID:` or the marker; both
// forms and both tool names are run for every case.
func TestGraphDelegationRules(t *testing.T) {
	t.Parallel()
	type st = []string
	cases := []struct {
		name     string
		statuses st
		wave     int
		mutate   func(g gdoc)
		phase    string
		w        tgWant
	}{
		{"wave 0 phase", nil, 0, nil, "phase_0_0", tgAllow},
		{"the other wave 0 phase", st{"phase_0_0", "in_progress"}, 0, nil, "phase_0_1", tgAllow},
		{"unknown phase", nil, 0, nil, "phase_9_9", tgDenies("DES-TASKGRAPH-UNKNOWN-PHASE").with("phase_9_9")},
		// A later wave whose dependencies are met: the wave alone.
		{"next wave, dependency met", st{"phase_0_0", "completed", "phase_0_1", "in_progress"}, 0, nil, "phase_1_0",
			tgDenies("DES-TASKGRAPH-WAVE").with("phase_1_0", "0", "1")},
		// A later wave with its dependency open: both rules hold, both are
		// reported (R lists every violation).
		{"next wave, dependency open", nil, 0, nil, "phase_1_0", tgDenies("DES-TASKGRAPH-WAVE", "DES-TASKGRAPH-DEPENDENCY")},
		{"two waves ahead", nil, 0, nil, "phase_2_0", tgDenies("DES-TASKGRAPH-WAVE", "DES-TASKGRAPH-DEPENDENCY")},
		{"verification, wave 1", st{"phase_0_0", "completed", "phase_0_1", "completed"}, 1, nil, "phase_1_0", tgAllow},
		// A verification whose verified phase was sent back by a failed
		// verification: its dependency is open again.
		{"verification before re-implementation", st{"phase_0_0", "pending", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 1 }, "phase_1_0", tgDenies("DES-TASKGRAPH-DEPENDENCY").with("phase_0_0")},
		// The re-implementation itself. The contract has the verified phase
		// set back to pending for this, and the flow runs it; a wave
		// rule read as "the current wave only" would make a failed
		// verification a dead end (current_wave may not move back). Assumed:
		// a phase sent back by a failed verification may be delegated again
		// while current_wave is the wave of its verification.
		{"re-implementation", st{"phase_0_0", "pending", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 1 }, "phase_0_0", tgAllow},
		{"verification again after re-implementation", st{"phase_0_0", "completed", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 2 }, "phase_1_0", tgAllow},
		// depends_on counts like verifies_phase_id.
		{"depends_on open", st{"phase_0_0", "completed", "phase_0_1", "completed", "phase_1_0", "completed", "phase_1_1", "failed"}, 2,
			nil, "phase_2_0", tgDenies("DES-TASKGRAPH-DEPENDENCY").with("phase_1_1")},
		{"depends_on met", st{"phase_0_0", "completed", "phase_0_1", "completed", "phase_1_0", "completed", "phase_1_1", "completed"}, 2,
			nil, "phase_2_0", tgAllow},

		// DES-VERIFY-ESCALATE: failed verification max_retries times (the
		// verified phase's retries), default 3.
		{"retries 2 of 3", st{"phase_0_0", "pending", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 2 }, "phase_0_0", tgAllow},
		{"retries 3 of 3", st{"phase_0_0", "pending", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 3 }, "phase_0_0", tgDenies("DES-VERIFY-ESCALATE").with("phase_0_0")},
		{"retries 1, max_retries 1", st{"phase_0_0", "pending", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 1; g["max_retries"] = 1 }, "phase_0_0", tgDenies("DES-VERIFY-ESCALATE")},
		{"retries 3, max_retries 5", st{"phase_0_0", "pending", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 3; g["max_retries"] = 5 }, "phase_0_0", tgAllow},
		{"max_retries null is 3", st{"phase_0_0", "pending", "phase_0_1", "completed", "phase_1_0", "failed", "phase_1_1", "completed"}, 1,
			func(g gdoc) { tgPhaseOf(t, g, "phase_0_0")["retries"] = 3; g["max_retries"] = nil }, "phase_0_0", tgDenies("DES-VERIFY-ESCALATE")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := withStatus(t, tgPlan(), c.statuses...)
			g["current_wave"] = c.wave
			if c.mutate != nil {
				c.mutate(g)
			}
			p := newGraphProject(t, gdoc{}, g)
			for i, prompt := range []string{phasePrompt(c.phase, "Do the phase"), markerPrompt(c.phase, "Do the phase")} {
				p.check(p.delegateEv(p.agent(tools(i), "code-cleanup-optimizer", prompt)), c.w)
			}
		})
	}
}

// No graph, or no phase id in the prompt: the graph rules give no
// opinion, whatever the prompt or the plan says.
func TestGraphNoOpinion(t *testing.T) {
	t.Parallel()
	noGraph := newGraphProject(t, gdoc{}, nil)
	for i, prompt := range []string{phasePrompt("phase_9_9", "Unknown"), markerPrompt("phase_1_0", "Verify"), "Create calculator.py"} {
		a := noGraph.agent(tools(i), "code-cleanup-optimizer", prompt)
		noGraph.check(noGraph.delegateEv(a), tgAllow)
		noGraph.lifecycle(a, "VERDICT: FAIL")
	}
	p := newGraphProject(t, gdoc{}, tgPlan())
	before := p.graphText()
	for i, prompt := range []string{
		"Verify calculator.py (phase_1_0 of the plan) and report a verdict.",
		"Explore the code base; the plan's phase ids look like phase_0_0.",
	} {
		a := p.agent(tools(i), "task-completion-verifier", prompt)
		p.check(p.delegateEv(a), tgAllow)
		p.lifecycle(a, "VERDICT: FAIL\nadd() is missing")
	}
	if p.graphText() != before {
		t.Errorf("a subagent that named no phase changed the graph:\n%s", p.graphText())
	}
	if n := len(auditLines(t, p.root, "TASK_GRAPH_UPDATED")); n != 0 {
		t.Errorf("%d TASK_GRAPH_UPDATED lines for subagents that ran no phase", n)
	}
}

// graphUpdates are the TASK_GRAPH_UPDATED lines that name phase id.
func graphUpdates(t *testing.T, root, id string) int {
	t.Helper()
	n := 0
	for _, line := range auditLines(t, root, "TASK_GRAPH_UPDATED") {
		raw, _ := json.Marshal(line)
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(id) + `\b`).Match(raw) {
			n++
		}
	}
	return n
}

// The design's whole flow through the hook, as Claude Code sends the
// events, under delegation_mode enforce and a concurrency limit of 4.
func TestGraphDesignFlow(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"delegation_mode": "enforce", "max_concurrent_agents": 4, "session_ttl_minutes": 60}, nil)
	plan := tgPlan()
	plan["team_notes"] = "kept on every rewrite" // assumed: DES's sync keeps fields it does not know
	tgPhaseOf(t, plan, "phase_0_0")["ticket"] = "CALC-1"

	p.quiet(p.userPrompt("Create calculator.py AND utils.py, verified"))

	// 1. The plan, written by the planner subagent (what enforce asks for;
	// whether the main thread may write it itself is
	// TestGraphDelegationPlanWrite's), passes DES's document rules.
	planner := p.agent("Agent", "task-decomposer", "Break the task down into a task graph in waves and write it to "+tgGraphPath+".")
	p.check(p.delegateEv(planner), tgAllow)
	p.quiet(p.startEv(planner))
	w := p.writeGraphEv(planner, tgGraphPath, plan)
	w["tool_use_id"] = "toolu_01GraphPlanWrite"
	p.check(w, tgAllow)
	writeFile(t, p.root, tgGraphPath, tgJSON(t, plan)) // Claude Code writes the file
	p.quiet(afterEv(w, "PostToolUse", evResponse(gdoc{"type": "create", "filePath": w["tool_input"].(gdoc)["file_path"]})))
	p.quiet(p.stopEv(planner, "Plan written: 3 waves, 5 phases."))
	p.post(planner, "Plan written: 3 waves, 5 phases.")
	if p.currentWave() != 0 || p.status("phase_0_0") != "pending" {
		t.Fatalf("the planner's stop changed the plan:\n%s", p.graphText())
	}

	// 2. Wave 0 in parallel: both implementation phases, one per prompt
	// form; verification and the last wave are out of order.
	impl0 := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_0", "Create calculator.py"))
	impl1 := p.agent("Task", "code-cleanup-optimizer", markerPrompt("phase_0_1", "Create utils.py"))
	p.check(p.delegateEv(impl0), tgAllow)
	p.check(p.delegateEv(impl1), tgAllow)
	early := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_0", "Verify calculator.py"))
	p.check(p.delegateEv(early), tgDenies("DES-TASKGRAPH-WAVE", "DES-TASKGRAPH-DEPENDENCY"))
	p.parallel(p.startEv(impl0), p.startEv(impl1))
	if line := p.statusline(); !strings.Contains(line, "[PAR] Active: 2 Wave 0") {
		t.Errorf("status line during wave 0 = %q", line)
	}
	// Work in the subagents is theirs to do.
	p.check(p.workCall(impl0, "Write"), tgAllow)
	p.check(p.workCall(impl1, "Bash"), tgAllow)

	// 3. Wave sync: both stop at once.
	p.parallel(p.stopEv(impl0, "Created calculator.py with add, subtract, multiply, divide."), p.stopEv(impl1, "Created utils.py."))
	p.wantDisk("phase_0_0", "completed", "phase_0_1", "completed", "phase_1_0", "pending")
	if got := p.currentWave(); got != 1 {
		t.Fatalf("current_wave after wave 0 = %d, want 1:\n%s", got, p.graphText())
	}
	g := p.graph()
	if g["team_notes"] != "kept on every rewrite" || tgPhaseOf(t, g, "phase_0_0")["ticket"] != "CALC-1" {
		t.Errorf("the sync lost fields it does not know:\n%s", p.graphText())
	}
	for _, id := range []string{"phase_0_0", "phase_0_1"} {
		if graphUpdates(t, p.root, id) == 0 {
			t.Errorf("no TASK_GRAPH_UPDATED line names %s", id)
		}
	}
	// What to run next: the verification phase of each implementation.
	if ctx := p.post(impl0, "Created calculator.py"); !strings.Contains(ctx, "phase_1_0") {
		t.Errorf("PostToolUse after phase_0_0 does not name its verification phase_1_0: %q", ctx)
	}
	if ctx := p.post(impl1, "Created utils.py"); !strings.Contains(ctx, "phase_1_1") {
		t.Errorf("PostToolUse after phase_0_1 does not name its verification phase_1_1: %q", ctx)
	}
	if line := p.statusline(); !strings.Contains(line, "[PAR] Active: 0 Wave 1") || !strings.Contains(line, "Last: code-cleanup-optimizer completed") {
		t.Errorf("status line after the wave sync = %q", line)
	}

	// 4. Verification: utils.py passes, calculator.py fails.
	ver0 := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_0", "Verify calculator.py"))
	ver1 := p.agent("Agent", "task-completion-verifier", markerPrompt("phase_1_1", "Verify utils.py"))
	p.check(p.delegateEv(ver0), tgAllow)
	p.check(p.delegateEv(ver1), tgAllow)
	p.check(p.delegateEv(p.agent("Agent", "task-completion-verifier", phasePrompt("phase_2_0", "Integration tests"))), tgDenies("DES-TASKGRAPH-WAVE", "DES-TASKGRAPH-DEPENDENCY"))
	p.parallel(p.startEv(ver0), p.startEv(ver1))
	p.parallel(p.stopEv(ver0, failVerdict(1)), p.stopEv(ver1, "All acceptance criteria met.\n\nVERDICT: PASS"))
	p.wantDisk("phase_1_0", "failed", "phase_1_1", "completed", "phase_0_0", "pending", "phase_0_1", "completed")
	if n := p.retries("phase_0_0"); n != 1 {
		t.Errorf("phase_0_0 retries after the first failed verification = %d, want 1", n)
	}
	if got := p.currentWave(); got != 1 {
		t.Errorf("current_wave with a failed verification = %d, want 1", got)
	}
	// The failed verification sends the orchestrator back to phase_0_0.
	if ctx := p.post(ver0, failVerdict(1)); !strings.Contains(ctx, "phase_0_0") {
		t.Errorf("PostToolUse after the failed verification does not name phase_0_0 to re-implement: %q", ctx)
	}
	p.post(ver1, "VERDICT: PASS")

	// 5. Re-implementation and verification again, failing twice more.
	for attempt := 2; attempt <= 3; attempt++ {
		re := p.agent(tools(attempt), "code-cleanup-optimizer", phasePrompt("phase_0_0", fmt.Sprintf("Create calculator.py (attempt %d): fix the verifier's findings", attempt)))
		p.check(p.delegateEv(re), tgAllow)
		p.check(p.delegateEv(p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_0", "Verify calculator.py"))), tgDenies("DES-TASKGRAPH-DEPENDENCY"))
		if ctx := p.lifecycle(re, "Fixed the findings in calculator.py."); !strings.Contains(ctx, "phase_1_0") {
			t.Errorf("attempt %d: PostToolUse after the re-implementation does not name phase_1_0: %q", attempt, ctx)
		}
		p.wantDisk("phase_0_0", "completed", "phase_1_0", "failed")
		if got := p.currentWave(); got != 1 {
			t.Errorf("attempt %d: current_wave after the re-implementation = %d, want 1 (wave 1 is not done)", attempt, got)
		}
		ver := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_0", "Verify calculator.py again"))
		p.check(p.delegateEv(ver), tgAllow)
		ctx := p.lifecycle(ver, failVerdict(attempt))
		p.wantDisk("phase_1_0", "failed", "phase_0_0", "pending")
		if n := p.retries("phase_0_0"); n != attempt {
			t.Errorf("phase_0_0 retries after failed verification %d = %d", attempt, n)
		}
		if attempt < 3 {
			if !strings.Contains(ctx, "phase_0_0") {
				t.Errorf("attempt %d: PostToolUse does not name phase_0_0 to re-implement: %q", attempt, ctx)
			}
			continue
		}
		// 6. Escalation: the user must decide.
		if !regexp.MustCompile(`(?i)\buser\b`).MatchString(ctx) || !strings.Contains(ctx, "phase_0_0") {
			t.Errorf("PostToolUse after the third failed verification does not say the user must decide about phase_0_0: %q", ctx)
		}
	}
	o := p.check(p.delegateEv(p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_0", "Create calculator.py (attempt 4)"))),
		tgDenies("DES-VERIFY-ESCALATE").with("phase_0_0"))
	if !regexp.MustCompile(`(?i)\buser\b`).MatchString(o.deny) {
		t.Errorf("the escalation deny does not say the user must decide:\n%s", o.deny)
	}
	p.check(p.delegateEv(p.agent("Task", "code-cleanup-optimizer", markerPrompt("phase_0_0", "Try once more"))), tgDenies("DES-VERIFY-ESCALATE"))
	if got := p.currentWave(); got != 1 {
		t.Errorf("current_wave at the escalation = %d, want 1", got)
	}
	// Every stop of a phase's subagent was an update: wave 0's two, two
	// verifications, two re-implementations, two more verifications.
	if n := len(auditLines(t, p.root, "TASK_GRAPH_UPDATED")); n < 8 {
		t.Errorf("%d TASK_GRAPH_UPDATED lines, want one per phase stop (8)", n)
	}
	if n := graphUpdates(t, p.root, "phase_1_0"); n < 3 {
		t.Errorf("%d TASK_GRAPH_UPDATED lines name phase_1_0, want 3 (one per verification)", n)
	}
	// The trail is intact after all this.
	if r := runIn(t, p.root, []string{"CLAUDE_PROJECT_DIR=" + p.root}, "audit", "verify"); r.code != 0 {
		t.Errorf("hook audit verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func failVerdict(n int) string {
	return fmt.Sprintf("Verification report (run %d)\n- calculator.py exists\n- divide(1, 0) raises nothing: FAIL\n\nVERDICT: FAIL\nRemediation: raise ZeroDivisionError.", n)
}

// Parallel stops race: a wave of six implementation phases whose subagents
// all stop at the same moment, each stop in its own hook process. Every
// phase ends completed, and current_wave moves by exactly one; in several
// projects at once, so the races are real.
func TestGraphWaveSyncRace(t *testing.T) {
	t.Parallel()
	const width = 6
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			t.Parallel()
			var impls, vers []gdoc
			for i := range width {
				impls = append(impls, tgImpl(fmt.Sprintf("build_%d", i), fmt.Sprintf("mod%d.py", i)))
				vers = append(vers, tgVerify(fmt.Sprintf("check_%d", i), fmt.Sprintf("build_%d", i)))
			}
			g := tgGraph(tgWave(0, true, impls...), tgWave(1, true, vers...))
			p := newGraphProject(t, gdoc{}, g)
			var agents []*tgAgent
			var starts, stops []gdoc
			for i := range width {
				a := p.agent(tools(i), "code-cleanup-optimizer", phasePrompt(fmt.Sprintf("build_%d", i), fmt.Sprintf("Create mod%d.py", i)))
				p.check(p.delegateEv(a), tgAllow)
				agents = append(agents, a)
				starts = append(starts, p.startEv(a))
				stops = append(stops, p.stopEv(a, fmt.Sprintf("Created mod%d.py.", i)))
			}
			p.parallel(starts...)
			p.parallel(stops...)
			for i := range width {
				p.wantDisk(fmt.Sprintf("build_%d", i), "completed")
				if graphUpdates(t, p.root, fmt.Sprintf("build_%d", i)) == 0 {
					t.Errorf("no TASK_GRAPH_UPDATED for build_%d", i)
				}
			}
			if got := p.currentWave(); got != 1 {
				t.Fatalf("current_wave after %d racing stops = %d, want 1:\n%s", width, got, p.graphText())
			}
			// Stops repeated (Claude Code may run a SubagentStop hook again
			// with stop_hook_active) change nothing more.
			var again []gdoc
			for _, ev := range stops[:3] {
				ev = tgClone(t, ev)
				ev["stop_hook_active"] = true
				again = append(again, ev)
			}
			p.parallel(again...)
			if got := p.currentWave(); got != 1 {
				t.Errorf("current_wave after repeated stops = %d, want 1", got)
			}
			// Every PostToolUse, in parallel too, names wave 1's work.
			var wg sync.WaitGroup
			for i, a := range agents {
				wg.Go(func() {
					if ctx := p.post(a, "done"); !strings.Contains(ctx, fmt.Sprintf("check_%d", i)) {
						t.Errorf("PostToolUse after build_%d does not name check_%d: %q", i, i, ctx)
					}
				})
			}
			wg.Wait()
		})
	}
}

// Only a verification phase's verdict fails a phase: an implementation
// phase whose subagent's last message quotes a failing verdict is
// completed; PASS_WITH_MINOR_ISSUES (the design's third verdict) passes.
func TestGraphVerdicts(t *testing.T) {
	t.Parallel()
	g := withStatus(t, tgPlan(), "phase_0_0", "completed")
	p := newGraphProject(t, gdoc{}, g)
	impl := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_1", "Create utils.py"))
	p.check(p.delegateEv(impl), tgAllow)
	p.lifecycle(impl, "Created utils.py. The old lint step reported VERDICT: FAIL on legacy code, which this phase does not touch.")
	p.wantDisk("phase_0_1", "completed")
	if got := p.currentWave(); got != 1 {
		t.Fatalf("current_wave = %d, want 1", got)
	}
	ver := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_1", "Verify utils.py"))
	p.check(p.delegateEv(ver), tgAllow)
	p.lifecycle(ver, "Two style nits, nothing blocking.\n\nVERDICT: PASS_WITH_MINOR_ISSUES")
	p.wantDisk("phase_1_1", "completed", "phase_0_1", "completed")
	if n := p.retries("phase_0_1"); n != 0 {
		t.Errorf("phase_0_1 retries = %d after a passing verification", n)
	}
}

// A phase whose subagent Gate 2 fails is failed in the graph, not
// completed (§9: "or failed when Gate 2 failed it"); its wave does not
// advance; no verification failed, so no retry is counted. The delegation
// is an nWave step (Gate 1 and Gate 2 in charge) that also names its phase.
func TestGraphGate2FailsThePhase(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{}, tgPlan())
	var log []string
	for i, name := range canonicalPhases {
		log = append(log, `{"phase_name": "`+name+`", "phase_index": `+itoa(i)+`, "status": "NOT_EXECUTED"}`)
	}
	writeFile(t, p.root, e2eStep, `{"task_id": "01-01", "description": "Add a cart total", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": [`+strings.Join(log, ", ")+`]}}`+"\n")
	step := p.agent("Agent", "software-crafter", renderPrompt(t, "execute-step")+"\n\nPhase ID: phase_0_0\n")
	p.check(p.delegateEv(step), tgAllow)
	other := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_1", "Create utils.py"))
	p.check(p.delegateEv(other), tgAllow)
	p.parallel(p.startEv(step), p.startEv(other))
	completeAroundTheGuard(t, p.root) // the subagent claims all 14 phases at once
	outs := p.parallel(p.stopEv(step, "All 14 phases done, tests green."), p.stopEv(other, "Created utils.py."))
	if !strings.Contains(outs[0].system, "[DES-PHASE-JUMP]") {
		t.Errorf("Gate 2 did not fail the step: %q", outs[0].stdout)
	}
	p.wantDisk("phase_0_0", "failed", "phase_0_1", "completed")
	if got := p.currentWave(); got != 0 {
		t.Errorf("current_wave = %d with a failed phase in wave 0, want 0", got)
	}
	if n := p.retries("phase_0_0"); n != 0 {
		t.Errorf("retries = %d: Gate 2's failure is no failed verification", n)
	}
	if graphUpdates(t, p.root, "phase_0_0") == 0 {
		t.Errorf("no TASK_GRAPH_UPDATED for the failed phase")
	}
}

// Under enforce, the main thread writing the plan itself. The contract
// lists what delegation never affects (subagents' calls, tools outside the
// work list, Write/Edit of a temporary file outside the project) and the
// plan is not in the list: a main-thread Write of the graph is work like
// any other, and the plan is written by a planner subagent (the design's
// task-decomposer). Kept apart from the flow because an implementation may
// choose to exempt the plan; that would be a change to the contract.
func TestGraphDelegationPlanWrite(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"delegation_mode": "enforce"}, nil)
	p.check(p.writeGraphEv(nil, tgGraphPath, tgPlan()), tgDenies("DES-DELEGATION-REQUIRED"))
	planner := p.agent("Agent", "task-decomposer", "Write the plan")
	p.check(p.writeGraphEv(planner, tgGraphPath, tgPlan()), tgAllow)
}
