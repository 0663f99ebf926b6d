package gate_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
	"github.com/google/go-cmp/cmp"
)

// stopProject is a project whose step was started through Gate 1, with the
// subagent's transcript in a Claude directory outside the project.
type stopProject struct {
	*project
	claude     string // the user's Claude directory
	transcript string
	prompt     string
}

func newStopProject(t *testing.T) *stopProject {
	t.Helper()
	p := newProject(t, nil)
	step := todoStep()
	step["allowed_file_patterns"] = []any{"src/**"}
	p.writeStep(stepRel, step)
	prompt := render(t, "execute-step", step)
	if res := p.check(prompt); res.Denied() {
		t.Fatalf("Gate 1 denied the fixture: %s", res.Reason())
	}
	sp := &stopProject{project: p, claude: t.TempDir(), prompt: prompt}
	sp.transcript = filepath.Join(sp.claude, "projects", "p", "sess", "subagents", "agent-a1.jsonl")
	sp.writeTranscript(prompt)
	return sp
}

func (p *stopProject) writeTranscript(prompt string) {
	p.t.Helper()
	line, err := json.Marshal(map[string]any{
		"parentUuid": nil, "isSidechain": true, "agentId": "a1", "type": "user",
		"message": map[string]any{"role": "user", "content": prompt}, "timestamp": "2026-11-22T12:00:01Z",
	})
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p.transcript), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(p.transcript, append(line, '\n'), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *stopProject) gate() gate.SubagentStop {
	g := p.eng.SubagentStopGate()
	g.ClaudeDirs = []string{p.claude}
	g.TranscriptWait = 10 * time.Millisecond
	return g
}

func (p *stopProject) stop() gate.Stop {
	return gate.Stop{TranscriptPath: p.transcript, AgentID: "a1", AgentType: "software-crafter", SessionID: "sess"}
}

func denyAbandoned() policy.Decision {
	return policy.Decision{Gate: policy.SubagentStop, Deny: []policy.Violation{{
		Code: "DES-PHASE-ABANDONED", Severity: policy.Deny, Message: "phase PREPARE is left IN_PROGRESS",
		Recovery: []string{"Finish or reset PREPARE."}, Details: map[string]any{"phase": "PREPARE"},
	}}}
}

func lastEvent(t *testing.T, entries []audit.Entry, ev audit.EventType) audit.Entry {
	t.Helper()
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Event == ev {
			return entries[i]
		}
	}
	t.Fatalf("no %s in the trail", ev)
	return audit.Entry{}
}

func TestGate2FindsTheStepAndGathersTheRun(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	ev := &fakeEvaluator{}
	res, err := p.gate().Check(t.Context(), ev, p.stop())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Evaluated || res.StepFile != stepRel || res.Found != "transcript" {
		t.Fatalf("result = %+v; want evaluated, %s found from the transcript", res, stepRel)
	}
	in := ev.calls[0].(map[string]any)
	run := in["run"].(map[string]any)
	if run["source"] != "gate1" || run["task_status_at_start"] != "IN_PROGRESS" {
		t.Errorf("run = %v; want Gate 1's record with the task IN_PROGRESS", run)
	}
	if diff := cmp.Diff(map[string]any{"PREPARE": "NOT_EXECUTED"}, run["phases_at_start"]); diff != "" {
		t.Errorf("phases_at_start (-want +got):\n%s", diff)
	}
	events := run["events"].([]any)
	if len(events) != 1 || events[0].(map[string]any)["by"] != "gate1" {
		t.Errorf("events = %v; want Gate 1's move of the task", events)
	}
	step := in["step"].(map[string]any)
	if step["task_status"] != "IN_PROGRESS" || len(step["phases"].([]any)) != 1 {
		t.Errorf("step facts = %v", step)
	}
	// The project is no git repository: scope is unchecked, with the reason.
	if scope := in["scope"].(map[string]any); scope["checked"] != false || scope["error"] == "" {
		t.Errorf("scope = %v; want unchecked with a reason", scope)
	}
	if e := lastEvent(t, p.auditEvents(), audit.SubagentStopValidation); e.Fields["outcome"] != "PASS" || e.Fields["tool_use_id"] != "toolu_01" {
		t.Errorf("audit = %v; want PASS with the tool_use_id from Gate 1's record", e.Fields)
	}
}

func TestGate2FailureMarksTheStepFailed(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	res, err := p.gate().Check(t.Context(), &fakeEvaluator{answer: denyAbandoned()}, p.stop())
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != gate.StopActionRecord {
		t.Fatalf("action = %q, want record", res.Action)
	}
	doc := p.readStep(stepRel)
	state := doc["state"].(map[string]any)
	if state["status"] != "FAILED" || !strings.Contains(state["failure_reason"].(string), "DES-PHASE-ABANDONED") {
		t.Errorf("state = %v; want FAILED with the code in the reason", state)
	}
	sugg := state["recovery_suggestions"].([]any)
	if len(sugg) < 3 {
		t.Fatalf("recovery_suggestions = %v; want at least three", sugg)
	}
	// The transcript to read, the phase to reset, the command to resume.
	for i, want := range []string{p.transcript, "resumable from phase PREPARE", "des-hook stale --resolve " + stepRel} {
		if i > 1 {
			i = 1
		}
		if !strings.Contains(sugg[i].(string), want) {
			t.Errorf("suggestion %d %q lacks %q", i, sugg[i], want)
		}
	}
	if !strings.Contains(sugg[2].(string), "Resume") || sugg[3] != "Finish or reset PREPARE." {
		t.Errorf("suggestions %v: want the resume step, then the rule's own", sugg)
	}
	if doc["custom_field"] == nil || doc["description"] != "Add a cart total" {
		t.Errorf("unknown fields lost: %v", doc)
	}
	entries := p.auditEvents()
	if e := lastEvent(t, entries, audit.TaskStateChanged); e.Fields["to"] != "FAILED" || e.Fields["by"] != "gate2" {
		t.Errorf("task change = %v", e.Fields)
	}
	if e := lastEvent(t, entries, audit.SubagentStopValidation); e.Fields["outcome"] != "FAIL" || e.Fields["action"] != "record" {
		t.Errorf("validation = %v", e.Fields)
	}
	rec, err := p.eng.StopVerdict("toolu_01", "")
	if err != nil || rec == nil || !rec.Failed || !strings.Contains(rec.Reason, "[DES-PHASE-ABANDONED]") {
		t.Fatalf("verdict = %+v, %v; want the failure kept for PostToolUse", rec, err)
	}
}

func TestGate2BlockModeSendsTheSubagentBackOnce(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	g := p.gate()
	g.OnFailure = gate.OnFailureBlock
	before, err := os.ReadFile(filepath.Join(p.root, stepRel))
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Check(t.Context(), &fakeEvaluator{answer: denyAbandoned()}, p.stop())
	if err != nil || res.Action != gate.StopActionBlock {
		t.Fatalf("first stop: action %q, err %v; want block", res.Action, err)
	}
	after, _ := os.ReadFile(filepath.Join(p.root, stepRel))
	if string(before) != string(after) {
		t.Error("a blocked stop rewrote the step file")
	}
	s := p.stop()
	s.StopHookActive = true
	res, err = g.Check(t.Context(), &fakeEvaluator{answer: denyAbandoned()}, s)
	if err != nil || res.Action != gate.StopActionRecord {
		t.Fatalf("second stop: action %q, err %v; want record (never block twice)", res.Action, err)
	}
	if p.readStep(stepRel)["state"].(map[string]any)["status"] != "FAILED" {
		t.Error("second failed stop did not mark the step FAILED")
	}
}

func TestGate2NotDESAndNoOpinion(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	p.writeTranscript("Explore the code base and summarise it.")
	ev := &fakeEvaluator{}
	res, err := p.gate().Check(t.Context(), ev, p.stop())
	if err != nil || res.Evaluated || res.StepFile != "" || res.NoOpinion != "" || len(ev.calls) != 0 {
		t.Fatalf("ad hoc subagent: %+v, %v; want nothing judged", res, err)
	}
	n := len(p.auditEvents())

	// No transcript and no record (the session's run is another
	// session's): no opinion, and the trail says why.
	s := p.stop()
	s.TranscriptPath, s.SessionID = filepath.Join(p.claude, "missing.jsonl"), "other-session"
	res, err = p.gate().Check(t.Context(), ev, s)
	if err != nil || res.Evaluated || !strings.Contains(res.NoOpinion, "cannot tell which step") {
		t.Fatalf("missing transcript: %+v, %v", res, err)
	}
	entries := p.auditEvents()
	if len(entries) != n+1 || entries[n].Fields["outcome"] != "NO_OPINION" || entries[n].Fields["reason"] == "" {
		t.Errorf("trail after a stop DES cannot place: %v", entries[n:])
	}
}

func TestGate2FallsBackToGate1Record(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	// The transcript is missing, but the meta file beside it names the call.
	if err := os.Remove(p.transcript); err != nil {
		t.Fatal(err)
	}
	meta := strings.TrimSuffix(p.transcript, ".jsonl") + ".meta.json"
	if err := os.WriteFile(meta, []byte(`{"agentType":"software-crafter","toolUseId":"toolu_01"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := p.gate().Check(t.Context(), &fakeEvaluator{}, p.stop())
	if err != nil || res.Found != "record" || res.StepFile != stepRel {
		t.Fatalf("result = %+v, %v; want the step from Gate 1's record", res, err)
	}
}

func TestGate2RefusesTranscriptsElsewhere(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	g := p.gate()
	g.ClaudeDirs = nil // the transcript's directory is no longer the user's Claude directory
	s := p.stop()
	s.SessionID = "other-session" // and no open run of the session to fall back on
	res, err := g.Check(t.Context(), &fakeEvaluator{}, s)
	if err != nil || res.Evaluated || !strings.Contains(res.NoOpinion, "outside the project") {
		t.Fatalf("result = %+v, %v; want the transcript refused", res, err)
	}
}

func TestGate2CallerNamesTheStep(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	res, err := p.eng.CheckStop(t.Context(), gate.Stop{StepFile: stepRel})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Evaluated || res.Found != "caller" {
		t.Fatalf("result = %+v", res)
	}
}

func TestGate2EvaluationErrorFailsClosed(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	res, err := p.gate().Check(t.Context(), &fakeEvaluator{err: errors.New("policy exploded")}, p.stop())
	if err == nil || !res.Denied() || res.Decision.Deny[0].Code != gate.CodeInternal {
		t.Fatalf("result = %+v, err %v; want DES-INTERNAL", res, err)
	}
	e := lastEvent(t, p.auditEvents(), audit.SubagentStopValidation)
	if e.Fields["outcome"] != "FAIL" || !strings.Contains(strings.Join(anyStrings(e.Fields["codes"]), ","), gate.CodeInternal) {
		t.Errorf("trail = %v; want a FAIL with DES-INTERNAL so that Gate 3 refuses the step", e.Fields)
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestGate2ScopeWithGit(t *testing.T) {
	t.Parallel()
	p := newStopProject(t) // allowed_file_patterns: src/**
	initRepo(t, p.root)
	testenv.WriteFile(t, p.root, "README.md", "base\n")
	testenv.WriteFile(t, p.root, ".gitignore", "*.tmp\n")
	runGit(t, p.root, "add", ".")
	runGit(t, p.root, "commit", "-q", "-m", "base")
	testenv.WriteFile(t, p.root, "src/cart/total.go", "package cart\n") // in scope, nested under **
	testenv.WriteFile(t, p.root, "README.md", "changed\n")              // out of scope
	testenv.WriteFile(t, p.root, "scratch.tmp", "ignored\n")            // ignored: not a change
	// DES's own files, which its writers leave beside the documents they
	// write: never the subagent's change.
	for _, own := range []string{".claude/state/active_task_graph.json.lock", ".isdlc/state.json.lock",
		".isdlc/projects/p1/state.json.lock", ".des/runs/toolu_x.json", ".des/audit/.lock", ".des/state.json.lock"} {
		testenv.WriteFile(t, p.root, own, "")
	}
	testenv.WriteFile(t, p.root, "notes.json.lock", "") // another lock is a change

	res, err := p.gate().Check(t.Context(), p.eng, p.stop())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"README.md", "notes.json.lock"}, res.OutOfScope); diff != "" {
		t.Errorf("out of scope (-want +got):\n%s", diff)
	}
	if w := res.Decision.Warn; len(w) != 1 || w[0].Code != "DES-SCOPE-VIOLATION" || !strings.Contains(w[0].Message, "README.md") {
		t.Errorf("warnings = %+v", w)
	}
	if e := lastEvent(t, p.auditEvents(), audit.ScopeViolation); !cmp.Equal(anyStrings(e.Fields["files"]), []string{"README.md", "notes.json.lock"}) {
		t.Errorf("SCOPE_VIOLATION = %v", e.Fields)
	}
}

func TestGate2KeepsTheSubagentsOwnFailureReason(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	doc := p.readStep(stepRel)
	doc["state"] = map[string]any{"status": "FAILED", "failure_reason": "the database was down", "recovery_suggestions": []any{"start the database"}}
	p.writeStep(stepRel, doc)
	n := len(p.auditEvents())
	res, err := p.gate().Check(t.Context(), &fakeEvaluator{answer: denyAbandoned()}, p.stop())
	if err != nil || !res.Marked {
		t.Fatalf("result %+v, err %v", res, err)
	}
	state := p.readStep(stepRel)["state"].(map[string]any)
	if !strings.Contains(state["failure_reason"].(string), "The subagent's own reason: the database was down") {
		t.Errorf("failure_reason = %q", state["failure_reason"])
	}
	if sugg := anyStrings(state["recovery_suggestions"]); sugg[len(sugg)-1] != "start the database" {
		t.Errorf("recovery_suggestions = %v; want the subagent's own kept last", sugg)
	}
	for _, e := range p.auditEvents()[n:] {
		if e.Event == audit.TaskStateChanged {
			t.Errorf("a FAILED→FAILED move was recorded: %v", e.Fields)
		}
	}
}

func TestGate2UnusableStepIsNotClaimedMarked(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	p.writeStep(stepRel, "[1, 2]")
	res, err := p.gate().Check(t.Context(), &fakeEvaluator{answer: denyAbandoned()}, p.stop())
	if err != nil || res.Marked || res.Action != gate.StopActionNone {
		t.Fatalf("result %+v, err %v; want a failure with nothing marked", res, err)
	}
	rec, err := p.eng.StopVerdict("toolu_01", "")
	if err != nil || rec == nil || !rec.Failed || rec.Marked {
		t.Errorf("verdict = %+v, %v", rec, err)
	}
	if got, _ := os.ReadFile(filepath.Join(p.root, stepRel)); string(got) != "[1, 2]" {
		t.Errorf("the unusable step was rewritten: %q", got)
	}
}

func TestGate2InternalErrorLeavesAVerdict(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	if _, err := p.gate().Check(t.Context(), &fakeEvaluator{err: errors.New("policy exploded")}, p.stop()); err == nil {
		t.Fatal("no error")
	}
	rec, err := p.eng.StopVerdict("", "a1") // found by the agent alone as well
	if rec == nil {
		rec, err = p.eng.StopVerdict("toolu_01", "")
	}
	if err != nil || rec == nil || !rec.Failed || !strings.Contains(rec.Reason, gate.CodeInternal) {
		t.Errorf("verdict = %+v, %v; want a failure naming DES-INTERNAL for the orchestrator", rec, err)
	}
}

func TestGate2BlocksOnceEvenWithoutStopHookActive(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	g := p.gate()
	g.OnFailure = gate.OnFailureBlock
	for i, want := range []string{gate.StopActionBlock, gate.StopActionRecord} {
		res, err := g.Check(t.Context(), &fakeEvaluator{answer: denyAbandoned()}, p.stop()) // stop_hook_active never set
		if err != nil || res.Action != want {
			t.Fatalf("stop %d: action %q, err %v; want %q", i, res.Action, err, want)
		}
	}
}

// A deny the subagent cannot put right in the same run (fixable_in_run
// false) is recorded even in block mode: sending it back would ask for
// work it cannot do.
func TestGate2BlockModeRecordsWhatCannotBeFixedInTheRun(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	g := p.gate()
	g.OnFailure = gate.OnFailureBlock
	d := denyAbandoned()
	d.Deny = append(d.Deny, policy.Violation{
		Code: "DES-TRANSCRIPT-TAMPERED", Severity: policy.Deny, Message: "the transcript changed",
		Details: map[string]any{"fixable_in_run": false},
	})
	res, err := g.Check(t.Context(), &fakeEvaluator{answer: d}, p.stop())
	if err != nil || res.Action != gate.StopActionRecord {
		t.Fatalf("action %q, err %v; want record", res.Action, err)
	}
	if p.readStep(stepRel)["state"].(map[string]any)["status"] != "FAILED" {
		t.Error("the step was not marked FAILED")
	}
}

// The rendered Recovery: of a failed stop lists each step once, in
// first-seen order, however many violations share it.
func TestStopReasonListsEachRecoveryStepOnce(t *testing.T) {
	t.Parallel()
	var deny []policy.Violation
	for _, name := range []string{"PREPARE", "RED_UNIT", "GREEN_UNIT"} {
		deny = append(deny, policy.Violation{Code: "DES-PHASE-JUMP", Severity: policy.Deny, Message: "phase " + name + " jumped", Recovery: []string{"Redo phases PREPARE, RED_UNIT, GREEN_UNIT."}})
	}
	r := gate.StopResult{
		Result:   gate.Result{Decision: policy.Decision{Deny: deny}},
		Recovery: []string{"Run the command.", "Redo phases PREPARE, RED_UNIT, GREEN_UNIT.", " Run the command. ", "Redo phases PREPARE, RED_UNIT, GREEN_UNIT."},
	}
	_, rec, _ := strings.Cut(r.Reason(), "\nRecovery:")
	if want := "\n- Run the command.\n- Redo phases PREPARE, RED_UNIT, GREEN_UNIT."; rec != want {
		t.Errorf("Recovery: part =\n%q\nwant\n%q", rec, want)
	}
}
