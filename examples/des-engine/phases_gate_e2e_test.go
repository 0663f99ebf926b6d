package main

// Gates, corridors, constitution, supervised review, artifacts, escalations
// and the task plan (CONTRACT §8; GH-55 TS-004, TS-005, TS-013, TS-014,
// TS-015). Harness: phases_e2e_test.go.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// failingTests is TS-004's precondition on phase 06-implementation: test
// iteration 2 of 5, the last run failed; the constitution is compliant.
func failingTests() doc {
	s := readyToAdvance(featurePhases, 5)
	set(s, "phases.06-implementation.iteration_requirements.test_iteration",
		doc{"completed": false, "current_iteration": 2, "max_iterations": 5, "last_test_result": "failed"})
	return s
}

// TS-004: the test corridor and the gate while tests fail.
//
// Assumptions where §8 is silent: the "numbers" of a test-iteration
// violation are current_iteration/max_iterations of the state (issue 10's
// own example "2/5 test iterations, last result failed" with TS-004's
// precondition); the target phase of an advancement is the next phase of
// active_workflow.phases (16-quality-loop after 06-implementation).
func TestPhasesTestCorridorAndGate(t *testing.T) {
	t.Parallel()
	root := newProject(t, failingTests())
	gate := []string{"DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"}
	blocked := want{deny: gate, has: []string{
		`phases["06-implementation"].iteration_requirements.test_iteration.completed`, "2/5", "failed", "06-implementation", "16-quality-loop"}}
	corridor := denies("DES-ITERATION-CORRIDOR").with("06-implementation", "last_test_result", "failed")
	cases := []struct {
		name string
		ev   map[string]any
		w    want
	}{
		{"orchestrator advance, Agent", advanceCall(root, "Agent"), blocked},
		{"orchestrator advance, Task", advanceCall(root, "Task"), blocked},
		{"orchestrator alias, next phase", agentCall(root, "Agent", "00-sdlc-orchestrator", "next", "Move on to the next phase."), blocked},
		{"orchestrator alias, progress to", agentCall(root, "Task", "orchestrator", "go", "Progress to 16-quality-loop."), blocked},
		{"orchestrator, proceed", agentCall(root, "Agent", "sdlc-orchestrator", "go", "Proceed."), blocked},
		{"orchestrator, move to phase", agentCall(root, "Agent", "sdlc-orchestrator", "go", "Move to phase 16."), blocked},
		{"skill advance", skillCall(root, "isdlc", "advance"), blocked},
		{"skill gate", skillCall(root, "isdlc", "gate 06-implementation"), blocked},
		{"skill status", skillCall(root, "isdlc", "status"), allow},
		{"another skill", skillCall(root, "commit", "advance"), allow},
		{"delegate phrase", agentCall(root, "Agent", "general-purpose", "help", "Delegate the failing cart test to a helper."), corridor},
		{"hand off phrase", agentCall(root, "Task", "general-purpose", "help", "Hand off the cart work to someone else."), corridor},
		{"declare complete phrase", agentCall(root, "Agent", "general-purpose", "done", "Declare complete and move on."), corridor},
		{"no corridor phrase", agentCall(root, "Agent", "general-purpose", "tests", "Run npm test and list the failing assertions."), allow},
		{"phrases only as parts of words", agentCall(root, "Task", "general-purpose", "ops", "Check the gateway timeout and the proceeds report."), allow},
		{"orchestrator without advance phrase", agentCall(root, "Agent", "sdlc-orchestrator", "report", "Summarise the progress so far."), allow},
		// A phase delegation is never an advancement nor a corridor call;
		// GATE-06 in it counts for nothing (BUG-0008).
		{"phase delegation with advance words", agentCall(root, "Agent", "software-developer", "GATE-06", "Fix the failing tests, then proceed to GATE-06 and advance."), allow},
		// The agent can still run tests and fix code in the corridor.
		{"bash test run", bashEvent(t, root, "npm test"), allow},
		{"write code", writeToolEvent(root, "Write", "src/cart.js", map[string]any{"content": "export const total = () => 0\n"}), allow},
		{"edit code", writeToolEvent(root, "Edit", "src/cart.js", map[string]any{"old_string": "0", "new_string": "1"}), allow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := check(t, root, nil, c.ev, c.w)
			if len(c.w.deny) == 2 && len(codeLines(o.deny, "DES-GATE-BLOCKED")) != 1 {
				t.Errorf("want exactly one DES-GATE-BLOCKED line (one unmet requirement):\n%s", o.deny)
			}
		})
	}

	t.Run("tests pass, constitution pending: the constitutional corridor", func(t *testing.T) {
		t.Parallel()
		s := readyToAdvance(featurePhases, 5)
		set(s, "phases.06-implementation.constitutional_validation", doc{"completed": false, "iterations_used": 2, "max_iterations": 5, "status": "in_progress"})
		root := newProject(t, s)
		check(t, root, nil, agentCall(root, "Agent", "general-purpose", "help", "Hand off the review."), denies("DES-ITERATION-CORRIDOR").with("constitutional_validation"))
		check(t, root, nil, advanceCall(root, "Task"), denies("DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR").with(`phases["06-implementation"].constitutional_validation.status`))
	})
	t.Run("escalated tests leave the corridor, not the gate", func(t *testing.T) {
		t.Parallel()
		s := failingTests()
		set(s, "phases.06-implementation.iteration_requirements.test_iteration.status", "escalated")
		root := newProject(t, s)
		check(t, root, nil, advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED"))
		check(t, root, nil, agentCall(root, "Agent", "general-purpose", "help", "Delegate the failing test."), allow)
	})
	t.Run("tests pass: the gate opens", func(t *testing.T) {
		t.Parallel()
		s := failingTests()
		set(s, "phases.06-implementation.iteration_requirements.test_iteration",
			doc{"completed": true, "current_iteration": 3, "max_iterations": 5, "last_test_result": "passed"})
		root := newProject(t, s)
		check(t, root, nil, advanceCall(root, "Agent"), allow)
		check(t, root, nil, skillCall(root, "isdlc", "advance"), allow)
		check(t, root, nil, agentCall(root, "Agent", "general-purpose", "help", "Delegate the docs update."), allow)
		// Both allowed advancements are in the trail; the ad-hoc call is not.
		validated := auditLines(t, root, "TASK_INVOCATION_VALIDATED")
		if len(validated) != 2 {
			t.Fatalf("TASK_INVOCATION_VALIDATED lines = %v, want the two advancements", validated)
		}
		for _, l := range validated {
			if l["advancement"] != true || l["phase"] != "06-implementation" {
				t.Errorf("an allowed advancement is audited as %v", l)
			}
		}
	})
}

// constitutionPending is TS-005's precondition on 01-requirements:
// elicitation done, artifact written, constitution iteration 1 of 5.
func constitutionPending() (doc, []string) {
	s := readyToAdvance(featurePhases, 0)
	set(s, "phases.01-requirements.constitutional_validation",
		doc{"completed": false, "iterations_used": 1, "max_iterations": 5, "status": "in_progress"})
	return s, artifactFiles()
}

// TS-005: the constitutional corridor and DES-CONSTITUTION-PENDING.
func TestPhasesConstitutionalCorridor(t *testing.T) {
	t.Parallel()
	s, files := constitutionPending()
	root := newProject(t, s, files...)
	field := `phases["01-requirements"].constitutional_validation.status`
	cases := []struct {
		name string
		ev   map[string]any
		w    want
	}{
		{"advance", advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR").with(field, "1/5", "01-requirements", "02-impact-analysis")},
		{"skill advance", skillCall(root, "isdlc", "advance"), denies("DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR").with(field)},
		{"hand off", agentCall(root, "Task", "general-purpose", "handoff", "Hand off to the architect."), denies("DES-ITERATION-CORRIDOR").with("01-requirements", "constitutional_validation")},
		{"completion claim", agentCall(root, "Agent", "general-purpose", "review", "Submit for review: the requirements spec."), denies("DES-CONSTITUTION-PENDING").with(field, "in_progress", "01-requirements")},
		{"claim with a corridor phrase", agentCall(root, "Task", "general-purpose", "done", "Requirements phase complete."), denies("DES-CONSTITUTION-PENDING", "DES-ITERATION-CORRIDOR")},
		{"phase delegation with claim words", agentCall(root, "Agent", "requirements-analyst", "reqs", "Finish elicitation; declare complete when the phase complete checklist passes."), allow},
		{"unrelated call", agentCall(root, "Agent", "general-purpose", "read", "Read the constitution and list article IV's rules."), allow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			check(t, root, nil, c.ev, c.w)
		})
	}

	// escalated: the corridor closes; the claim passes only when the
	// escalation is approved. The gate still wants "compliant" (§8:
	// "status must be compliant"; the escalation exemption is written for
	// DES-CONSTITUTION-PENDING only).
	for _, approved := range []bool{true, false} {
		name := "escalated, approved"
		if !approved {
			name = "escalated, not approved"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, files := constitutionPending()
			set(s, "phases.01-requirements.constitutional_validation.status", "escalated")
			if approved {
				set(s, "phases.01-requirements.constitutional_validation.escalation_approved", true)
			}
			root := newProject(t, s, files...)
			claim := agentCall(root, "Agent", "general-purpose", "review", "Submit for review: the requirements spec.")
			if approved {
				check(t, root, nil, claim, allow)
			} else {
				check(t, root, nil, claim, denies("DES-CONSTITUTION-PENDING"))
			}
			check(t, root, nil, agentCall(root, "Task", "general-purpose", "handoff", "Hand off to the architect."), allow)
			check(t, root, nil, advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED"))
		})
	}
}

// Every phase-completion phrase is a claim. Both corridors are closed here
// (06-implementation with no test record: tests are not satisfied, so the
// constitutional corridor is closed, and no failed run opens the test one),
// so the claim is the only thing judged.
func TestPhasesCompletionClaims(t *testing.T) {
	t.Parallel()
	s := workflowState(featurePhases, 5)
	set(s, "phases.06-implementation.constitutional_validation", doc{"completed": false, "iterations_used": 0, "status": "pending"})
	root := newProject(t, s)
	for i, phrase := range []string{"phase complete", "phase done", "phase finished", "ready for gate", "gate validation", "submit for review", "declare complete", "mark as complete"} {
		t.Run(phrase, func(t *testing.T) {
			t.Parallel()
			check(t, root, nil, agentCall(root, tools(i), "general-purpose", "wrap up", "Cart total: "+phrase+"."),
				denies("DES-CONSTITUTION-PENDING").with(`phases["06-implementation"].constitutional_validation.status`))
		})
	}
	t.Run("not a claim", func(t *testing.T) {
		t.Parallel()
		check(t, root, nil, agentCall(root, "Agent", "general-purpose", "list", "Print the complete phase list."), allow)
	})
	// A phase that requires no constitution: the claim is fine.
	quick := []string{"00-quick-scan", "01-requirements"}
	q := newProject(t, workflowState(quick, 0))
	check(t, q, nil, agentCall(q, "Agent", "general-purpose", "wrap up", "Quick scan: phase complete."), allow)
	// A compliant constitution: the claim is fine.
	ok := newProject(t, readyToAdvance(featurePhases, 5))
	check(t, ok, nil, agentCall(ok, "Task", "general-purpose", "wrap up", "Implementation phase complete."), allow)
}

// The gate's requirement kinds, one violation per unmet requirement
// (01-requirements has elicitation, constitution and an artifact).
func TestPhasesGateOneViolationPerRequirement(t *testing.T) {
	t.Parallel()
	s := workflowState(featurePhases, 0)
	set(s, "phases.01-requirements.iteration_requirements.interactive_elicitation", doc{"completed": false, "menu_interactions": 1})
	set(s, "phases.01-requirements.constitutional_validation", doc{"completed": true, "iterations_used": 2, "max_iterations": 5, "status": "compliant"})
	root := newProject(t, s)
	o := check(t, root, nil, advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED").with(
		`phases["01-requirements"].iteration_requirements.interactive_elicitation`, "menu_interactions", "1/3",
		"docs/requirements/"+artifactFolder+"/requirements-spec.md"))
	if n := len(codeLines(o.deny, "DES-GATE-BLOCKED")); n != 2 {
		t.Errorf("%d DES-GATE-BLOCKED lines, want 2 (elicitation, artifact):\n%s", n, o.deny)
	}

	// Enough interactions but not marked completed is still unmet.
	set(s, "phases.01-requirements.iteration_requirements.interactive_elicitation", doc{"completed": false, "menu_interactions": 3})
	root = newProject(t, s, artifactFiles()...)
	check(t, root, nil, skillCall(root, "isdlc", "advance"), denies("DES-GATE-BLOCKED").with("interactive_elicitation"))

	// Everything unmet: three lines. No constitutional corridor yet: the
	// phase has no test iterations and its validation has not started.
	all := workflowState(featurePhases, 0)
	root = newProject(t, all)
	o = check(t, root, nil, advanceCall(root, "Task"), denies("DES-GATE-BLOCKED"))
	if n := len(codeLines(o.deny, "DES-GATE-BLOCKED")); n != 3 {
		t.Errorf("%d DES-GATE-BLOCKED lines, want 3 (elicitation, constitution, artifact):\n%s", n, o.deny)
	}

	// active_workflow.phases[current_phase_index] is not C: blocked.
	skew := readyToAdvance(featurePhases, 5)
	set(skew, "active_workflow.current_phase_index", 4)
	root = newProject(t, skew)
	check(t, root, nil, advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED").with("active_workflow.current_phase_index", "06-implementation"))
}

// TS-013: a missing artifact of the current phase blocks advancement; the
// artifact written, the gate opens. {artifact_folder} is substituted.
func TestPhasesMissingArtifact(t *testing.T) {
	t.Parallel()
	for i, c := range []struct {
		phase, file string
	}{
		{"01-requirements", "requirements-spec.md"},
		{"03-architecture", "architecture-overview.md"},
		{"04-design", "module-design.md"},
		{"05-test-strategy", "test-strategy.md"},
		{"08-code-review", "code-review-report.md"},
	} {
		t.Run(c.phase, func(t *testing.T) {
			t.Parallel()
			idx := slices.Index(featurePhases, c.phase)
			path := "docs/requirements/" + artifactFolder + "/" + c.file
			var others []string
			all := artifactFiles()
			for j := 0; j < len(all); j += 2 {
				if all[j] != path {
					others = append(others, all[j], all[j+1])
				}
			}
			// A file beside it is not the listed artifact (the listed paths
			// are what the tables require; the facts report only them).
			others = append(others, "docs/requirements/"+artifactFolder+"/notes.md", "notes\n")
			root := newProject(t, readyToAdvance(featurePhases, idx), others...)
			check(t, root, nil, advanceCall(root, tools(i)), denies("DES-GATE-BLOCKED").with(path, c.phase))
			writeFile(t, root, path, "# done\n")
			check(t, root, nil, advanceCall(root, tools(i)), allow)
		})
	}
	// A phase with no artifact requirement (02-impact-analysis) does not
	// look at files at all.
	root := newProject(t, readyToAdvance(featurePhases, 1))
	check(t, root, nil, advanceCall(root, "Agent"), allow)
}

// A team's own requirement files (setting phase_requirements_files) replace
// the defaults: only the kinds listed there are required, a phase without an
// entry passes, and one existing file per listed directory suffices.
func TestPhasesTeamRequirementFiles(t *testing.T) {
	t.Parallel()
	paths := []any{"docs/requirements/{artifact_folder}/requirements-spec.md", "docs/requirements/{artifact_folder}/user-stories.json"}
	iter, _ := json.Marshal(doc{"version": "9.9.9", "phase_requirements": doc{
		"01-requirements": doc{
			"interactive_elicitation":   doc{"enabled": false},
			"test_iteration":            doc{"enabled": false},
			"constitutional_validation": doc{"enabled": false},
			"artifact_validation":       doc{"enabled": true, "paths": paths},
			"timeout_minutes":           5,
		},
	}, "workflow_overrides": doc{"feature": doc{"01-requirements": doc{"constitutional_validation": doc{"enabled": true}}}}})
	arts, _ := json.Marshal(doc{"version": "9.9.9", "phases": doc{"01-requirements": doc{"paths": paths}}})
	config := `{"phase_requirements_files": ["config/isdlc/iteration-requirements.json", "config/isdlc/artifact-paths.json"]}`
	team := []string{".des/config.json", config, "config/isdlc/iteration-requirements.json", string(iter), "config/isdlc/artifact-paths.json", string(arts)}

	// Nothing of 01 is filled in: only the artifact is required.
	root := newProject(t, workflowState(featurePhases, 0), team...)
	check(t, root, nil, advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED").with("docs/requirements/"+artifactFolder+"/"))
	writeFile(t, root, "docs/requirements/"+artifactFolder+"/user-stories.json", "[]\n")
	check(t, root, nil, advanceCall(root, "Task"), allow)

	// 06-implementation has no entry in the team's table: it passes.
	root = newProject(t, workflowState(featurePhases, 5), team...)
	check(t, root, nil, advanceCall(root, "Agent"), allow)

	// interactive_elicitation without min_menu_interactions: at least 1.
	elicit, _ := json.Marshal(doc{"phase_requirements": doc{"01-requirements": doc{"interactive_elicitation": doc{"enabled": true}}}})
	noArts, _ := json.Marshal(doc{"phases": doc{}})
	minOne := []string{".des/config.json", config, "config/isdlc/iteration-requirements.json", string(elicit), "config/isdlc/artifact-paths.json", string(noArts)}
	for _, c := range []struct {
		n         int
		completed bool
		w         want
	}{
		{0, true, denies("DES-GATE-BLOCKED").with("menu_interactions")},
		{1, false, denies("DES-GATE-BLOCKED")},
		{1, true, allow},
	} {
		s := workflowState(featurePhases, 0)
		set(s, "phases.01-requirements.iteration_requirements.interactive_elicitation", doc{"completed": c.completed, "menu_interactions": c.n})
		root = newProject(t, s, minOne...)
		check(t, root, nil, advanceCall(root, "Agent"), c.w)
	}

	// A requirement file that does not parse: an error naming the file.
	// Assumption: an advancement is a call DES judges, so the error fails
	// closed with DES-INTERNAL (§5's fail posture for a bad setting).
	broken := slices.Clone(team)
	broken[3] = "{not json"
	root = newProject(t, workflowState(featurePhases, 0), broken...)
	check(t, root, nil, advanceCall(root, "Agent"), denies("DES-INTERNAL").with("config/isdlc/iteration-requirements.json"))
}

// TS-014: a supervised review in progress (reviewing) or rejected blocks
// advancement even with every requirement met; other statuses do not, and
// the review never blocks the phase's own (re)delegation.
func TestPhasesSupervisedReview(t *testing.T) {
	t.Parallel()
	for i, c := range []struct {
		status string
		w      want
	}{
		{"reviewing", denies("DES-GATE-BLOCKED").with("active_workflow.supervised_review.status", "reviewing", "01-requirements")},
		{"rejected", denies("DES-GATE-BLOCKED").with("active_workflow.supervised_review.status", "rejected")},
		{"approved", allow},
		{"redo_pending", allow},
	} {
		t.Run(c.status, func(t *testing.T) {
			t.Parallel()
			s := readyToAdvance(featurePhases, 0)
			set(s, "active_workflow.supervised_review", doc{"status": c.status, "redo_count": 0})
			root := newProject(t, s, artifactFiles()...)
			check(t, root, nil, advanceCall(root, tools(i)), c.w)
			check(t, root, nil, skillCall(root, "isdlc", "advance"), c.w)
			check(t, root, nil, delegation(root, tools(i), "01-requirements"), allow)
		})
	}
}

// auditLines are the audit trail's lines of one event type.
func auditLines(t *testing.T, root, event string) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, ".des", "audit", "audit-*.log"))
	var out []map[string]any
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Errorf("%s: a line that is not JSON: %v", f, err)
				continue
			}
			if line["event"] == event {
				out = append(out, line)
			}
		}
		fh.Close()
	}
	return out
}

// escalationsOf counts PHASE_ESCALATION lines by type/phase and checks
// each line's codes.
func escalationsOf(t *testing.T, root string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, l := range auditLines(t, root, "PHASE_ESCALATION") {
		key, _ := l["type"].(string)
		phase, _ := l["phase"].(string)
		n[key+"/"+phase]++
		cs, _ := l["codes"].([]any)
		wantCode := map[string]string{"gate_blocked": "DES-GATE-BLOCKED", "corridor_blocked": "DES-ITERATION-CORRIDOR", "constitution_blocked": "DES-CONSTITUTION-PENDING"}[key]
		if !slices.Contains(cs, any(wantCode)) {
			t.Errorf("PHASE_ESCALATION %s without %s in codes: %v", key, wantCode, l)
		}
		if _, ok := l["timestamp"].(string); !ok {
			t.Errorf("PHASE_ESCALATION without timestamp: %v", l)
		}
	}
	return n
}

// TS-015: gate, corridor and constitution blocks are audited as
// PHASE_ESCALATION, at most once a minute per type and phase, and
// `hook escalations` lists them.
func TestPhasesEscalations(t *testing.T) {
	t.Parallel()
	root := newProject(t, failingTests())
	if got := escalationsOf(t, root); len(got) != 0 {
		t.Fatalf("escalations before any block: %v", got)
	}
	list := runBinCLI(t, root, "escalations")
	if list.code != 0 || strings.Contains(list.stdout, "gate_blocked") {
		t.Errorf("hook escalations on a fresh project: %+v", list)
	}

	check(t, root, nil, advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"))
	check(t, root, nil, advanceCall(root, "Task"), denies("DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"))
	check(t, root, nil, skillCall(root, "isdlc", "advance"), denies("DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"))
	check(t, root, nil, agentCall(root, "Agent", "general-purpose", "help", "Delegate the failing test."), denies("DES-ITERATION-CORRIDOR"))
	got := escalationsOf(t, root)
	if want := map[string]int{"gate_blocked/06-implementation": 1, "corridor_blocked/06-implementation": 1}; !mapsEqualInt(got, want) {
		t.Errorf("PHASE_ESCALATION lines = %v, want %v (one per type and phase within a minute)", got, want)
	}
	list = runBinCLI(t, root, "escalations")
	if list.code != 0 || !strings.Contains(list.stdout, "gate_blocked") || !strings.Contains(list.stdout, "corridor_blocked") || !strings.Contains(list.stdout, "06-implementation") {
		t.Errorf("hook escalations: %+v", list)
	}
	// Allowed calls add nothing.
	check(t, root, nil, agentCall(root, "Agent", "general-purpose", "tests", "Run npm test."), allow)
	if again := escalationsOf(t, root); !mapsEqualInt(again, got) {
		t.Errorf("an allowed call was escalated: %v", again)
	}
	// The trail stays verifiable with the new event in it.
	if v := runBinCLI(t, root, "audit", "verify"); v.code != 0 {
		t.Errorf("hook audit verify: %+v", v)
	}

	// An escalation is open while its phase is still the current phase
	// and no advancement out of it was allowed since: once the tests pass,
	// the gate allows the advancement, and the escalations of
	// 06-implementation close though the state still names it (the
	// orchestrator writes the next phase after the call).
	writeFile(t, root, ".isdlc/state.json", marshalState(t, readyToAdvance(featurePhases, 5)))
	check(t, root, nil, advanceCall(root, "Agent"), allow)
	if list := runBinCLI(t, root, "escalations"); list.code != 0 || !strings.Contains(list.stdout, "no open escalations") {
		t.Errorf("hook escalations after an allowed advancement out of 06-implementation: %+v", list)
	}
	if list := runBinCLI(t, root, "escalations", "--all"); list.code != 0 || strings.Count(list.stdout, "no (advanced ") != 2 {
		t.Errorf("hook escalations --all after the advancement: %+v", list)
	}
	// Blocked again (the tests fail again, within the minute): open again.
	writeFile(t, root, ".isdlc/state.json", marshalState(t, failingTests()))
	check(t, root, nil, advanceCall(root, "Agent"), denies("DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"))
	if list := runBinCLI(t, root, "escalations"); list.code != 0 || !strings.Contains(list.stdout, "gate_blocked") || !strings.Contains(list.stdout, "yes") {
		t.Errorf("hook escalations after a new block: %+v", list)
	}

	// Once the workflow moved on, it is no longer listed either.
	moved := readyToAdvance(featurePhases, 6)
	writeFile(t, root, ".isdlc/state.json", marshalState(t, moved))
	if list := runBinCLI(t, root, "escalations"); list.code != 0 || strings.Contains(list.stdout, "06-implementation") {
		t.Errorf("hook escalations after the workflow left 06-implementation: %+v", list)
	}

	s, files := constitutionPending()
	croot := newProject(t, s, files...)
	claim := agentCall(croot, "Agent", "general-purpose", "review", "Submit for review: the requirements spec.")
	check(t, croot, nil, claim, denies("DES-CONSTITUTION-PENDING"))
	check(t, croot, nil, claim, denies("DES-CONSTITUTION-PENDING"))
	if got := escalationsOf(t, croot); !mapsEqualInt(got, map[string]int{"constitution_blocked/01-requirements": 1}) {
		t.Errorf("PHASE_ESCALATION lines = %v, want one constitution_blocked for 01-requirements", got)
	}
	if list := runBinCLI(t, croot, "escalations"); list.code != 0 || !strings.Contains(list.stdout, "constitution_blocked") || !strings.Contains(list.stdout, "01-requirements") {
		t.Errorf("hook escalations: %+v", list)
	}
}

func mapsEqualInt(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// planV2 is a v2.0 task plan whose implementation section is complete.
const planV2 = `# Task Plan: REQ-0001-cart-total
Format: v2.0

## Phase 01: Requirements -- COMPLETE
- [x] T0001 Capture the cart total requirements | traces: FR-01

## Phase 06: Implementation -- IN PROGRESS
- [ ] T0002 Add the cart total | traces: FR-01, AC-01a
  files: src/cart.js (CREATE)
- [ ] T0003 Show the total on the cart page | traces: FR-01, AC-01b
  files: src/view.js (MODIFY), src/cart.js (MODIFY)
  blocked_by: [T0002]
`

// DES-PLAN-MISSING for phase delegations past the early phases; the plan
// found at each candidate path; DES-PLAN-FORMAT as a warning only.
func TestPhasesTaskPlan(t *testing.T) {
	t.Parallel()
	all := []string{"00-quick-scan", "01-requirements", "02-impact-analysis", "02-tracing", "03-architecture", "04-design", "05-test-strategy", "06-implementation", "16-quality-loop", "08-code-review"}
	for i, phase := range all {
		t.Run("no plan/"+phase, func(t *testing.T) {
			t.Parallel()
			root := newProjectNoPlan(t, workflowState(all, i))
			w := allow
			if i >= 7 {
				w = denies("DES-PLAN-MISSING").with(phase, "docs/isdlc/tasks.md", ".isdlc/tasks.md")
			}
			check(t, root, nil, delegation(root, tools(i), phase), w)
		})
	}
	t.Run("plan under .isdlc", func(t *testing.T) {
		t.Parallel()
		root := newProjectNoPlan(t, workflowState(featurePhases, 5), ".isdlc/tasks.md", planV1)
		check(t, root, nil, delegation(root, "Agent", "06-implementation"), allow)
	})
	t.Run("no plan and out of order", func(t *testing.T) {
		t.Parallel()
		root := newProjectNoPlan(t, workflowState(featurePhases, 5))
		check(t, root, nil, delegation(root, "Task", "08-code-review"), denies("DES-PHASE-OUT-OF-ORDER", "DES-PLAN-MISSING"))
	})
	t.Run("no plan, no delegation", func(t *testing.T) {
		t.Parallel()
		root := newProjectNoPlan(t, workflowState(featurePhases, 5))
		check(t, root, nil, agentCall(root, "Agent", "general-purpose", "read", "Summarise the README."), allow)
	})

	noImpl := strings.Split(planV2, "## Phase 06")[0]
	noFiles := strings.NewReplacer("  files: src/cart.js (CREATE)\n", "", "  files: src/view.js (MODIFY), src/cart.js (MODIFY)\n", "").Replace(planV2)
	noTraces := strings.NewReplacer(" | traces: FR-01, AC-01a", "", " | traces: FR-01, AC-01b", "").Replace(planV2)
	cycle := strings.Replace(planV2, "  files: src/cart.js (CREATE)\n", "  files: src/cart.js (CREATE)\n  blocked_by: [T0003]\n", 1)
	for i, c := range []struct {
		name, plan, phase string
		w                 want
	}{
		{"v2.0 complete", planV2, "06-implementation", allow},
		{"v2.0 without implementation section", noImpl, "06-implementation", want{warn: []string{"DES-PLAN-FORMAT"}}},
		{"v2.0 without files lines", noFiles, "06-implementation", want{warn: []string{"DES-PLAN-FORMAT"}, has: []string{"files"}}},
		{"v2.0 without traces", noTraces, "06-implementation", want{warn: []string{"DES-PLAN-FORMAT"}, has: []string{"traces"}}},
		{"v2.0 blocked_by cycle", cycle, "06-implementation", want{warn: []string{"DES-PLAN-FORMAT"}, has: []string{"T0002", "T0003"}}},
		{"not v2.0", strings.Replace(noImpl, "Format: v2.0\n", "", 1), "06-implementation", allow},
		{"v2.0 incomplete, phase 16", noImpl, "16-quality-loop", allow},
	} {
		t.Run("format/"+c.name, func(t *testing.T) {
			t.Parallel()
			root := newProjectNoPlan(t, workflowState(featurePhases, slices.Index(featurePhases, c.phase)), planPath, c.plan)
			o := check(t, root, nil, delegation(root, tools(i), c.phase), c.w)
			if c.w.warn != nil && o.event != "PreToolUse" {
				t.Errorf("warning hookEventName = %q, want PreToolUse", o.event)
			}
		})
	}
}

// Parallel hooks blocked on the same gate at the same moment record one
// PHASE_ESCALATION, not one each.
func TestPhasesEscalationsInParallel(t *testing.T) {
	t.Parallel()
	root := newProject(t, failingTests())
	var wg sync.WaitGroup
	outs := make([]hookRun, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := advanceCall(root, tools(i))
			ev["tool_use_id"] = fmt.Sprintf("toolu_01Parallel%d", i)
			outs[i] = runPhaseHook(t, root, nil, ev)
		}()
	}
	wg.Wait()
	for i, r := range outs {
		if got := denyCodes(decide(t, r).deny); !slices.Equal(got, []string{"DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"}) {
			t.Errorf("call %d: codes %v", i, got)
		}
	}
	if got := escalationsOf(t, root); !mapsEqualInt(got, map[string]int{"gate_blocked/06-implementation": 1, "corridor_blocked/06-implementation": 1}) {
		t.Errorf("PHASE_ESCALATION lines after 4 parallel blocks = %v, want one per type", got)
	}
}

// A team waives a phase guard's code the way it waives any other
// (`exception` in the gate package, §3), and the waiver is audited.
func TestPhasesTeamWaivers(t *testing.T) {
	t.Parallel()
	pre := "package des.gates.pre_invocation\n\nexception contains \"DES-PLAN-MISSING\"\n"
	root := newProjectNoPlan(t, workflowState(featurePhases, 5), ".des/policies/isdlc-team.rego", pre)
	check(t, root, nil, delegation(root, "Agent", "06-implementation"), allow)
	check(t, root, nil, delegation(root, "Task", "08-code-review"), denies("DES-PHASE-OUT-OF-ORDER"))
	if n := len(auditLines(t, root, "POLICY_EXCEPTION")); n == 0 {
		t.Error("the waiver of DES-PLAN-MISSING was not audited (POLICY_EXCEPTION)")
	}

	tool := "package des.gates.tool_use\n\nexception contains \"DES-BRANCH-PROTECTED\"\n"
	repo := branchRepo(t, "main")
	withWorkflow(t, repo, workflowState(featurePhases, 5))
	writeFile(t, repo, ".des/policies/isdlc-team.rego", tool)
	check(t, repo, nil, bashEvent(t, repo, "git commit -m wip"), allow)

	// A waived gate block escalates nothing; the corridor block it came
	// with still does.
	waive := "package des.gates.pre_invocation\n\nexception contains \"DES-GATE-BLOCKED\"\n"
	failing := newProject(t, failingTests(), ".des/policies/isdlc-team.rego", waive)
	check(t, failing, nil, advanceCall(failing, "Agent"), denies("DES-ITERATION-CORRIDOR"))
	if got := escalationsOf(t, failing); !mapsEqualInt(got, map[string]int{"corridor_blocked/06-implementation": 1}) {
		t.Errorf("PHASE_ESCALATION lines with DES-GATE-BLOCKED waived = %v, want the corridor's only", got)
	}
}
