package des

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
)

// stateFacts are hand-written "workflow" facts whose current phase is
// current.
func stateFacts(current string) map[string]any {
	return map[string]any{
		"state_file": ".des/state.json", "project": "",
		"state": map[string]any{"active_workflow": map[string]any{"current_phase": current, "phases": []any{"05-test-strategy", current}}},
		"plan":  map[string]any{"exists": false, "candidates": []any{}},
	}
}

func phaseEngine(t *testing.T, facts map[string]any, opts ...Option) *Engine {
	t.Helper()
	root := t.TempDir()
	wf := gate.Workflow{}
	if facts != nil {
		wf.Facts = func(context.Context, string) (map[string]any, error) { return facts, nil }
	}
	opts = append([]Option{WithRoot(root), WithEnv(env(map[string]string{"DES_STATE_DIR": t.TempDir()})), WithWorkflow(wf)}, opts...)
	e, err := New(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEscalationsOpenAndAll(t *testing.T) {
	t.Parallel()
	e := phaseEngine(t, stateFacts("13-test-deploy")) // a legacy key: normalised as the guards normalise it
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	esc := func(at time.Duration, typ, phase string, codes ...string) audit.Entry {
		return audit.Entry{Time: t0.Add(at), Event: audit.PhaseEscalation, Fields: map[string]any{"type": typ, "phase": phase, "codes": codes}}
	}
	if err := e.Audit().Append(t.Context(),
		esc(0, "gate_blocked", "05-test-strategy", "DES-GATE-BLOCKED"),
		esc(time.Minute, "gate_blocked", "12-test-deploy", "DES-GATE-BLOCKED"),
		esc(2*time.Minute, "corridor_blocked", "12-test-deploy", "DES-ITERATION-CORRIDOR"),
		esc(5*time.Minute, "gate_blocked", "12-test-deploy", "DES-GATE-BLOCKED", "DES-CUSTOM"),
	); err != nil {
		t.Fatal(err)
	}
	open, err := e.Escalations(t.Context(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []Escalation{
		{Type: "corridor_blocked", Phase: "12-test-deploy", Count: 1, First: t0.Add(2 * time.Minute), Last: t0.Add(2 * time.Minute), Codes: []string{"DES-ITERATION-CORRIDOR"}, Open: true},
		{Type: "gate_blocked", Phase: "12-test-deploy", Count: 2, First: t0.Add(time.Minute), Last: t0.Add(5 * time.Minute), Codes: []string{"DES-CUSTOM", "DES-GATE-BLOCKED"}, Open: true},
	}
	if diff := cmp.Diff(want, open); diff != "" {
		t.Errorf("open escalations (-want +got):\n%s", diff)
	}
	all, err := e.Escalations(t.Context(), "", true)
	if err != nil || len(all) != 3 || all[0].Phase != "05-test-strategy" || all[0].Open {
		t.Errorf("all escalations: %+v, %v", all, err)
	}

	// No workflow state: nothing is open, everything is still listed.
	none := phaseEngine(t, nil, WithAuditDir(e.Audit().Dir()))
	if open, err := none.Escalations(t.Context(), "", false); err != nil || len(open) != 0 {
		t.Errorf("without a state: %+v, %v", open, err)
	}
	if all, err := none.Escalations(t.Context(), "", true); err != nil || len(all) != 3 {
		t.Errorf("without a state, --all: %+v, %v", all, err)
	}
}

// An allowed advancement out of a phase (TASK_INVOCATION_VALIDATED with
// advancement) closes the escalations of that phase recorded before it,
// though the state still names the phase as current; escalated again, a
// group is open again. A validated call that is no advancement, or an
// advancement out of another phase, closes nothing.
func TestEscalationsClosedByAdvancement(t *testing.T) {
	t.Parallel()
	e := phaseEngine(t, stateFacts("06-implementation"))
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	esc := func(at time.Duration, typ string) audit.Entry {
		return audit.Entry{Time: t0.Add(at), Event: audit.PhaseEscalation, Fields: map[string]any{"type": typ, "phase": "06-implementation", "codes": []string{"DES-GATE-BLOCKED"}}}
	}
	validated := func(at time.Duration, phase string, advancement bool) audit.Entry {
		f := map[string]any{"phase": phase, "target": "16-quality-loop", "delegation": true,
			"step_file": "", "tool_use_id": "toolu_1", "session_id": "s", "origin": "", "level": "", "codes": []string{}, "duration_ms": 1}
		if advancement {
			f["advancement"] = true
		}
		return audit.Entry{Time: t0.Add(at), Event: audit.TaskInvocationValidated, Fields: f}
	}
	if err := e.Audit().Append(t.Context(),
		esc(0, "gate_blocked"),
		esc(time.Minute, "corridor_blocked"),
		validated(2*time.Minute, "06-implementation", false),
		validated(3*time.Minute, "05-test-strategy", true),
	); err != nil {
		t.Fatal(err)
	}
	if open, err := e.Escalations(t.Context(), "", false); err != nil || len(open) != 2 {
		t.Fatalf("before an advancement out of 06: %+v, %v", open, err)
	}
	if err := e.Audit().Append(t.Context(), validated(4*time.Minute, "06-implementation", true)); err != nil {
		t.Fatal(err)
	}
	if open, err := e.Escalations(t.Context(), "", false); err != nil || len(open) != 0 {
		t.Errorf("after an allowed advancement out of 06: open %+v, %v", open, err)
	}
	all, err := e.Escalations(t.Context(), "", true)
	if err != nil || len(all) != 2 || all[0].Open || all[1].Open || !all[0].Advanced.Equal(t0.Add(4*time.Minute)) || !all[1].Advanced.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("all after the advancement: %+v, %v", all, err)
	}
	// Blocked again: that group is open again, the other stays closed.
	if err := e.Audit().Append(t.Context(), esc(6*time.Minute, "gate_blocked")); err != nil {
		t.Fatal(err)
	}
	open, err := e.Escalations(t.Context(), "", false)
	if err != nil || len(open) != 1 || open[0].Type != "gate_blocked" || open[0].Count != 2 || !open[0].Advanced.IsZero() {
		t.Errorf("escalated again: open %+v, %v", open, err)
	}
}

// A team rule in des.gates.pre_invocation sees a Skill call with its
// workflow, through the public API; without a workflow nothing is asked.
func TestCheckSkillThroughATeamRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rule := `package des.gates.pre_invocation

deny contains {"code": "TEAM-NO-DEPLOY", "msg": "no deploy skill inside a workflow"} if {
	input.tool == "Skill"
	input.call.skill == "deploy"
	input.workflow.state_file == ".des/state.json"
	not input.prompt
}
`
	if err := os.WriteFile(filepath.Join(dir, "team.rego"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	e := phaseEngine(t, stateFacts("06-implementation"), WithPolicyDirs(dir))
	res, err := e.CheckSkill(t.Context(), gate.Invocation{Skill: "deploy", Args: "prod", ToolUseID: "toolu_1"})
	if err != nil || !res.Denied() || !res.Workflow || res.Decision.Codes()[0] != "TEAM-NO-DEPLOY" {
		t.Fatalf("CheckSkill: %+v, %v", res, err)
	}
	rej, err := e.Audit().Read(t.Context(), audit.Query{Events: []audit.EventType{audit.TaskInvocationRejected}})
	if err != nil || len(rej) != 1 || rej[0].Fields["tool"] != "Skill" {
		t.Errorf("the deny is audited like Gate 1's: %+v, %v", rej, err)
	}

	off := phaseEngine(t, nil, WithPolicyDirs(dir))
	res, err = off.CheckSkill(t.Context(), gate.Invocation{Skill: "deploy"})
	if err != nil || res.Evaluated || res.Workflow {
		t.Errorf("without a workflow: %+v, %v", res, err)
	}
}

// A team requirement file that cannot be used is a bad setting, named as
// such, on every call the guards are in charge of.
func TestRequirementFileErrorNamesTheSetting(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".isdlc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".isdlc", "state.json"), []byte(`{"active_workflow": {"current_phase": "06-implementation"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{
		"DES_STATE_DIR": t.TempDir(), "DES_PHASE_REQUIREMENTS_FILES": "team/missing.json",
	})))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.CheckSkill(t.Context(), gate.Invocation{Skill: "isdlc", Args: "advance"})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Setting != "phase_requirements_files" || !res.Workflow || res.Evaluated {
		t.Errorf("res %+v, err %v: want a ConfigError naming phase_requirements_files, the workflow in charge", res, err)
	}
}
