package main

// iSDLC's test iterations from des's evidence (setting phase_evidence
// "des", the default): real go test runs in a real Go module, through the
// built hook. des records each run, writes the phase's test_iteration into
// the state itself, and decides the gate and state writes on what it saw,
// not on what the orchestrator wrote.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestE2EISDLCTestIterationsFromEvidence(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	st := workflowState(featurePhases, 5) // 06-implementation, then 16-quality-loop
	set(st, "active_workflow.started_at", "2026-11-29T09:00:00Z")
	set(st, "team_notes", doc{"owner": "ana", "ticket": "SHOP-12"})
	root := newProject(t, st, ".des/config.json", `{"phase_evidence": "des"}`)
	writeFile(t, root, "shop/go.mod", "module example.com/shop\n\ngo 1.22\n")
	writeFile(t, root, "shop/cart.go", "package shop\n\nfunc Total(a, b int) int { return a - b }\n")
	writeFile(t, root, "shop/cart_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif got := Total(2, 3); got != 5 {\n\t\tt.Fatalf(\"Total(2, 3) = %d, want 5\", got)\n\t}\n}\n")
	const testCmd = "cd shop && go test ./..."

	stateNow := func() doc {
		t.Helper()
		var d doc
		if err := json.Unmarshal([]byte(readFileString(t, root, ".isdlc/state.json")), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	testIteration := func(d doc) doc {
		ti, _ := d["phases"].(doc)["06-implementation"].(doc)["iteration_requirements"].(doc)["test_iteration"].(doc)
		return ti
	}
	// writeState runs a Write of the state through the hook: the decision,
	// and for an allowed write the write itself and its PostToolUse.
	writeState := func(d doc, w want) {
		t.Helper()
		content := marshalState(t, d)
		ev := writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": content})
		o := check(t, root, nil, ev, w)
		if w.deny != nil {
			return
		}
		writeFile(t, root, ".isdlc/state.json", content)
		ev["tool_use_id"] = o.id // the call check made: its PostToolUse keeps des's memory of the state
		ev = writtenEv(ev, filepath.Join(root, ".isdlc/state.json"))
		if r := runHookProcess(t, root, nil, ev); r.code != 0 {
			t.Fatalf("PostToolUse of the state write: %+v", r)
		}
	}
	moved := func(d doc) doc {
		d = cloneDoc(t, d)
		set(d, "active_workflow.current_phase", "16-quality-loop")
		set(d, "active_workflow.current_phase_index", 6)
		set(d, "current_phase", "16-quality-loop")
		return d
	}

	// The orchestrator claims the tests passed: des saw no run.
	claim := cloneDoc(t, st)
	set(claim, "phases.06-implementation.iteration_requirements.test_iteration", doc{"completed": true, "current_iteration": 1, "last_test_result": "passed"})
	writeState(claim, denies("DES-EVIDENCE-MISMATCH").with(
		`phases["06-implementation"].iteration_requirements.test_iteration.completed is true in this write, but des's evidence says false`,
		`current_iteration is 1 in this write, but des's evidence says 0`, "re-read .isdlc/state.json"))
	writeState(moved(st), denies("DES-GATE-BLOCKED").with(
		`this write moves the workflow past phase "06-implementation", but des has not seen its tests pass: 0/10 test iterations, no test result recorded (des saw no test run in this phase)`))
	check(t, root, nil, advanceCall(root, "Agent"), want{deny: []string{"DES-GATE-BLOCKED"}, has: []string{"des has not seen its tests pass: 0/10"}})

	// A failing run: des writes what it saw into the state, and says so.
	before := stateNow()
	out, code, note := testRunBashNote(t, root, nil, testCmd, nil)
	if code == 0 {
		t.Fatalf("the failing go test passed: %s", out)
	}
	for _, s := range []string{"des saw this test run: phase 06-implementation, test iteration 1/10, failed (1 failed)", "Fix the failing code or tests"} {
		if !strings.Contains(note, s) {
			t.Errorf("note after the failing run = %q, want %q in it", note, s)
		}
	}
	after := stateNow()
	ti := testIteration(after)
	if ti["current_iteration"] != 1.0 || ti["last_test_result"] != "failed" || ti["completed"] != false || ti["last_test_command"] != testCmd {
		t.Errorf("test_iteration des wrote = %v", ti)
	}
	// Nothing else of the state moved.
	delete(after["phases"].(doc)["06-implementation"].(doc), "iteration_requirements")
	if !reflect.DeepEqual(before, after) {
		t.Errorf("des's write changed more than test_iteration:\nbefore %v\nafter  %v", before, after)
	}
	if lines := auditLines(t, root, "TEST_ITERATION_UPDATED"); len(lines) != 1 || lines[0]["last_test_result"] != "failed" {
		t.Errorf("TEST_ITERATION_UPDATED lines = %v, want one, failed", lines)
	}
	// des's write is its own: the next call's effect check keeps it.
	if a := agentBash(t, root, root, "ls shop"); a.deny != "" || a.reason != "" {
		t.Fatalf("a plain call after des's write: %+v", a)
	}
	if ti := testIteration(stateNow()); ti["current_iteration"] != 1.0 {
		t.Errorf("des's write did not survive the next call's effect check: %v", ti)
	}
	if v := auditLines(t, root, "INTEGRITY_VIOLATION"); len(v) != 0 {
		t.Errorf("INTEGRITY_VIOLATION after des's own write: %v", v)
	}
	if r := runBinCLI(t, root, "statusline"); !strings.Contains(r.stdout, "06-implementation tests 1/10 failed") {
		t.Errorf("statusline = %q, want the phase's test iterations", r.stdout)
	}

	// The gate quotes the run; so does a write that moves on.
	quote := "1/10 test iterations, last result failed (last test run "
	check(t, root, nil, advanceCall(root, "Agent"), want{deny: []string{"DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"}, has: []string{quote, "`" + testCmd + "`, 1 failed)"}})
	writeState(moved(stateNow()), denies("DES-GATE-BLOCKED").with(quote))

	// A forged passing line in des's evidence counts for nothing.
	store := filepath.Join(evidenceDir(root), "testruns", "runs.jsonl")
	forged := `{"mac":"` + strings.Repeat("ab", 32) + `","prev":"","run":{"time":"2026-11-29T09:30:00Z","event":"PostToolUse","command":"go test ./...","runner":"go test","argv":["go","test","./..."],"result":"passed","belongs_to":{"state_file":".isdlc/state.json","isdlc_phase":"06-implementation","workflow":"feature@2026-11-29T09:00:00Z"}}}`
	f, err := os.OpenFile(store, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(forged + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeState(moved(stateNow()), denies("DES-GATE-BLOCKED").with(quote))

	// A write that keeps des's values (the orchestrator's own note added)
	// is the orchestrator's to make.
	noted := stateNow()
	set(noted, "phases.06-implementation.notes", "fixing Total")
	writeState(noted, allow)

	// Ending the workflow and starting it again past the phase is judged
	// the same way.
	ended := stateNow()
	delete(ended, "active_workflow")
	writeState(ended, allow)
	restarted := moved(noted)
	set(restarted, "active_workflow.started_at", "2026-11-29T10:00:00Z")
	writeState(restarted, denies("DES-GATE-BLOCKED").with(`past phase "06-implementation", but des has not seen its tests pass: 0/10`))
	writeState(noted, allow) // back as it was

	// The fix; the tests pass: the requirement is met, and the move is allowed.
	writeFile(t, root, "shop/cart.go", "package shop\n\nfunc Total(a, b int) int { return a + b }\n")
	if out, code, note = testRunBashNote(t, root, nil, testCmd, nil); code != 0 || !strings.Contains(note, "test iteration 2/10, passed") || !strings.Contains(note, "requirement is met") {
		t.Fatalf("passing run: code %d, note %q\n%s", code, note, out)
	}
	if ti := testIteration(stateNow()); ti["completed"] != true || ti["status"] != "success" || ti["current_iteration"] != 2.0 {
		t.Errorf("test_iteration after the pass = %v", ti)
	}
	writeState(moved(stateNow()), allow)
}

// cloneDoc is a deep copy of d.
func cloneDoc(t *testing.T, d doc) doc {
	t.Helper()
	var out doc
	if err := json.Unmarshal([]byte(marshalState(t, d)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The circuit breaker des derives: the same failure three times escalates
// the phase; the agent cannot approve going on (not in the state, not with
// des-hook inside its call), a person can.
func TestE2EISDLCEscalationApprovedByAPerson(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	st := workflowState(featurePhases, 5)
	set(st, "active_workflow.started_at", "2026-11-29T09:00:00Z")
	set(st, "phases.06-implementation.constitutional_validation", doc{"status": "compliant", "completed": true})
	root := newProject(t, st, ".des/config.json", `{"phase_evidence": "des"}`)
	writeFile(t, root, "shop/go.mod", "module example.com/shop\n\ngo 1.22\n")
	writeFile(t, root, "shop/cart.go", "package shop\n\nfunc Total(a, b int) int { return a - b }\n")
	writeFile(t, root, "shop/cart_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif got := Total(2, 3); got != 5 {\n\t\tt.Fatalf(\"Total(2, 3) = %d, want 5\", got)\n\t}\n}\n")

	var note string
	for i := 0; i < 3; i++ {
		_, _, note = testRunBashNote(t, root, nil, "cd shop && go test ./...", nil)
	}
	if !strings.Contains(note, "Escalated: Same error repeated 3 times") || !strings.Contains(note, "des-hook escalations approve 06-implementation") {
		t.Fatalf("note after the third identical failure = %q", note)
	}
	unapproved := want{deny: []string{"DES-GATE-BLOCKED"}, has: []string{"its tests were escalated (circuit_breaker: Same error repeated 3 times) and nobody approved the escalation", "des-hook escalations approve 06-implementation"}}
	check(t, root, nil, advanceCall(root, "Agent"), unapproved)

	// The agent writes the approval into the state: a claim des does not take.
	var claimed doc
	if err := json.Unmarshal([]byte(readFileString(t, root, ".isdlc/state.json")), &claimed); err != nil {
		t.Fatal(err)
	}
	set(claimed, "phases.06-implementation.iteration_requirements.test_iteration.escalation_approved", true)
	check(t, root, nil, writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": marshalState(t, claimed)}),
		denies("DES-EVIDENCE-MISMATCH").with("escalation_approved is true in this write, but des's evidence says absent"))

	// The agent runs the approval itself: refused.
	if r := runIn(t, root, []string{"CLAUDE_PROJECT_DIR=" + root, "CLAUDECODE=1"}, "escalations", "approve", "--reason", "agent says so"); r.code != 2 || !strings.Contains(r.stderr, "refused inside an agent's tool call") {
		t.Fatalf("approve inside Claude Code: %+v", r)
	}
	check(t, root, nil, advanceCall(root, "Agent"), unapproved)

	// A person approves: the gate opens, des wrote the approval into the state.
	if r := runBinCLI(t, root, "escalations", "approve", "--reason", "flaky upstream; ticket SHOP-13"); r.code != 0 || !strings.Contains(r.stdout, "approved: the escalated tests of 06-implementation") {
		t.Fatalf("approve: %+v", r)
	}
	if !strings.Contains(readFileString(t, root, ".isdlc/state.json"), `"escalation_approved": true`) {
		t.Errorf("the state does not hold des's approval:\n%s", readFileString(t, root, ".isdlc/state.json"))
	}
	check(t, root, nil, advanceCall(root, "Agent"), allow)
	if r := runBinCLI(t, root, "escalations", "approve"); r.code != 1 || !strings.Contains(r.stderr, "approved already") {
		t.Errorf("a second approval: %+v", r)
	}

	// A new failure after the approval escalates again, unapproved.
	_, _, note = testRunBashNote(t, root, nil, "cd shop && go test ./...", nil)
	if !strings.Contains(note, "Escalated") {
		t.Fatalf("note after a failure past the approval = %q", note)
	}
	check(t, root, nil, advanceCall(root, "Agent"), unapproved)
}

// What des records of the claims it cannot check: the user's replies (a
// prompt, an AskUserQuestion answer) and the subagent that stopped in the
// phase, with the constitutional verdict it states; listed by des-hook
// evidence and quoted by the gate, which still decides on the state.
func TestE2EISDLCObservationsQuoted(t *testing.T) {
	t.Parallel()
	st := workflowState(featurePhases, 0) // 01-requirements: elicitation and constitution required
	set(st, "active_workflow.started_at", "2026-11-29T09:00:00Z")
	root := newProject(t, st, ".des/config.json", `{"phase_evidence": "des"}`)
	hook := func(ev map[string]any) {
		t.Helper()
		ev["session_id"], ev["cwd"] = "s1", root
		if r := runHookProcess(t, root, nil, ev); r.code != 0 || denyReason(t, r) != "" {
			t.Fatalf("%v: %+v", ev["hook_event_name"], r)
		}
	}
	hook(map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "C"})
	hook(map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "<task-notification><task-id>a1</task-id></task-notification>"})
	hook(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_q1",
		"tool_input":    map[string]any{"questions": []any{map[string]any{"question": "Which scope?", "header": "Scope", "options": []any{}}}},
		"tool_response": map[string]any{"answers": map[string]any{"Which scope?": "MVP"}}})
	hook(map[string]any{"hook_event_name": "SubagentStop", "agent_id": "a7", "agent_type": "requirements-analyst", "stop_hook_active": false,
		"last_assistant_message": "Requirements drafted.\nConstitutional validation: COMPLIANT (articles I, IV, VII)"})

	ev := evidence(t, root)
	var kinds []string
	for _, o := range ev.Observations {
		kinds = append(kinds, o.Event+"/"+o.Runner+o.AgentType+"/"+o.Result)
	}
	if want := []string{"UserReply/prompt/", "UserReply/AskUserQuestion/", "PhaseAgentStopped/requirements-analyst/compliant"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("observations = %q, want %q", kinds, want)
	}
	check(t, root, nil, advanceCall(root, "Agent"), want{deny: []string{"DES-GATE-BLOCKED"}, has: []string{
		"; des saw 2 user replies in this phase",
		`; the last subagent des saw stop in this phase, requirements-analyst at `, `stated "compliant"`,
	}})
}

// An honest walk of the README's iSDLC example project with des's
// evidence: node's own test runner fails, then passes; the orchestrator
// records the constitution, advances with /isdlc advance and moves the
// state on. Not one deny.
func TestE2EISDLCReadmeProjectHonestWalk(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: no real test runner to run")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(root, os.DirFS("testdata/isdlc-project")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "src/login.js", "exports.valid = (user, pass) => user !== '' && pass === '';\n")
	writeFile(t, root, "test/login.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst { valid } = require('../src/login.js');\n\ntest('a user with a password logs in', () => {\n  assert.strictEqual(valid('ana', 's3cret'), true);\n});\n")
	stateNow := func() doc {
		t.Helper()
		var d doc
		if err := json.Unmarshal([]byte(readFileString(t, root, ".isdlc/state.json")), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	writeState := func(d doc) {
		t.Helper()
		content := marshalState(t, d)
		ev := writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": content})
		check(t, root, nil, ev, allow)
		writeFile(t, root, ".isdlc/state.json", content)
		ev = writtenEv(ev, filepath.Join(root, ".isdlc/state.json"))
		if r := runHookProcess(t, root, nil, ev); r.code != 0 || strings.TrimSpace(r.stdout) != "" {
			t.Fatalf("PostToolUse of the state write: %+v", r)
		}
	}

	if _, code, note := testRunBashNote(t, root, nil, "node --test", nil); code == 0 || !strings.Contains(note, "test iteration 1/10, failed") {
		t.Fatalf("the failing node test: code %d, note %q", code, note)
	}
	writeFile(t, root, "src/login.js", "exports.valid = (user, pass) => user !== '' && pass !== '';\n")
	if _, code, note := testRunBashNote(t, root, nil, "node --test", nil); code != 0 || !strings.Contains(note, "test iteration 2/10, passed") {
		t.Fatalf("the passing node test: code %d, note %q", code, note)
	}

	st := stateNow()
	set(st, "phases.06-implementation.constitutional_validation", doc{"completed": true, "iterations_used": 1, "max_iterations": 5, "status": "compliant"})
	writeState(st)
	check(t, root, nil, skillCall(root, "isdlc", "advance"), allow)

	st = stateNow()
	set(st, "current_phase", "16-quality-loop")
	set(st, "active_workflow.current_phase", "16-quality-loop")
	set(st, "active_workflow.current_phase_index", 6)
	set(st, "active_workflow.phase_status.06-implementation", "completed")
	set(st, "active_workflow.phase_status.16-quality-loop", "in_progress")
	set(st, "phases.06-implementation.status", "completed")
	set(st, "phases.16-quality-loop", doc{"status": "in_progress"})
	writeState(st)
	if denied := auditLines(t, root, "DOCUMENT_WRITE_BLOCKED"); len(denied) != 0 {
		t.Errorf("DOCUMENT_WRITE_BLOCKED in an honest walk: %v", denied)
	}
}

// A monorepo project's state written from the root, where another state is
// in effect: judged on its own content and its own evidence.
func TestE2EISDLCProgressInAnotherProjectsState(t *testing.T) {
	t.Parallel()
	st := workflowState(featurePhases, 5)
	set(st, "active_workflow.started_at", "2026-11-29T09:00:00Z")
	root := newProjectNoPlan(t, nil,
		".des/config.json", `{"phase_evidence": "des"}`,
		".isdlc/monorepo.json", `{"projects": {"api": {"path": "apps/api"}, "web": {"path": "apps/web"}}, "default_project": "web"}`,
		".isdlc/projects/api/state.json", marshalState(t, st),
		".isdlc/projects/web/state.json", marshalState(t, workflowState(featurePhases, 0)),
		planPath, planV1)
	moved := cloneDoc(t, st)
	set(moved, "active_workflow.current_phase", "16-quality-loop")
	set(moved, "active_workflow.current_phase_index", 6)
	ev := writeToolEvent(root, "Write", ".isdlc/projects/api/state.json", map[string]any{"content": marshalState(t, moved)})
	check(t, root, nil, ev, denies("DES-GATE-BLOCKED").with(`.isdlc/projects/api/state.json: this write moves the workflow past phase "06-implementation", but des has not seen its tests pass`))
}

// A state moved on in a commit of the agent's own, then checked out: git
// brought it, but it passes the write guard as a Write would, or it is
// undone (and kept). A state the guard accepts is taken as before.
func TestE2EISDLCProgressThroughGitUndone(t *testing.T) {
	t.Parallel()
	st := workflowState(featurePhases, 5)
	set(st, "active_workflow.started_at", "2026-11-29T09:00:00Z")
	root := newProject(t, st, ".des/config.json", `{"phase_evidence": "des"}`)
	commit := []string{"-c", "user.name=des", "-c", "user.email=des@example.com", "commit", "-q", "--no-verify"}
	git(t, root, "init", "-q", "-b", "feature/x")
	git(t, root, "add", "-A")
	git(t, root, append(commit, "-m", "start")...)
	before := readFileString(t, root, ".isdlc/state.json")

	// A script the agent wrote does what the Bash guard would refuse to
	// see done in the command line.
	writeFile(t, root, "skip.sh", `git checkout -q -b skip
sed -i 's/"current_phase": "06-implementation"/"current_phase": "16-quality-loop"/g; s/"current_phase_index": 5/"current_phase_index": 6/' .isdlc/state.json
git -c user.name=a -c user.email=a@example.com commit -q -am skip --no-verify
`)
	a := agentBash(t, root, root, "sh skip.sh")
	if a.deny != "" {
		t.Fatalf("the call was denied before it ran: %s", a.deny)
	}
	if got := readFileString(t, root, ".isdlc/state.json"); got != before {
		t.Errorf("the state git brought was taken:\n%s", got)
	}
	if lines := auditLines(t, root, "GIT_SYNC"); len(lines) != 0 {
		t.Errorf("GIT_SYNC took the state: %v", lines)
	}

	// A branch whose state only adds a note: checked out, taken.
	git(t, root, "checkout", "-q", "-f", "feature/x")
	git(t, root, "checkout", "-q", "-b", "notes")
	noted := cloneDoc(t, st)
	set(noted, "phases.06-implementation.notes", "pairing with ana")
	writeFile(t, root, ".isdlc/state.json", marshalState(t, noted))
	git(t, root, append(commit, "-am", "notes")...)
	git(t, root, "checkout", "-q", "feature/x")
	if a := agentBash(t, root, root, "git checkout -q notes"); a.deny != "" || a.reason != "" {
		t.Fatalf("an honest checkout: %+v", a)
	}
	if got := readFileString(t, root, ".isdlc/state.json"); !strings.Contains(got, "pairing with ana") {
		t.Errorf("the state of an honest checkout was not taken:\n%s", got)
	}
}
