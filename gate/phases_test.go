package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
)

// recorder is an Evaluator that keeps every input and answers with decide:
// these tests are about what Go hands the policy and does with its
// decision, not about the phase rules (rego/des/phases has those).
type recorder struct {
	mu     sync.Mutex
	inputs []map[string]any
	decide func(in map[string]any) policy.Decision
}

func (r *recorder) Evaluate(_ context.Context, g policy.Gate, input any) (policy.Decision, error) {
	in := input.(map[string]any)
	r.mu.Lock()
	r.inputs = append(r.inputs, in)
	r.mu.Unlock()
	if r.decide == nil {
		return policy.Decision{Gate: g}, nil
	}
	d := r.decide(in)
	d.Gate = g
	return d, nil
}

func (r *recorder) last(t *testing.T) map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.inputs) == 0 {
		t.Fatal("the policy was not asked")
	}
	return r.inputs[len(r.inputs)-1]
}

// workflowFacts is a hand-written "workflow" fact object of the seam.
func workflowFacts() map[string]any {
	return map[string]any{
		"state_file": ".isdlc/state.json", "project": "",
		"state": map[string]any{"active_workflow": map[string]any{
			"current_phase": "06-implementation", "phases": []any{"05-test-strategy", "06-implementation", "07-testing"},
			"git_branch": map[string]any{"name": "feature/REQ-1", "status": "active"},
		}},
		"plan": map[string]any{"exists": false, "candidates": []any{"docs/isdlc/tasks.md", ".isdlc/tasks.md"}},
	}
}

func found(facts map[string]any) gate.Workflow {
	return gate.Workflow{Facts: func(context.Context, string) (map[string]any, error) { return facts, nil }}
}

func openAudit(t *testing.T, dir string) *audit.Log {
	t.Helper()
	l, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readAudit(t *testing.T, dir string, ev audit.EventType) []audit.Entry {
	t.Helper()
	es, err := openAudit(t, dir).Read(context.Background(), audit.Query{Events: []audit.EventType{ev}})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestGate1AsksThePolicyWhenAWorkflowIsFound(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cases := []struct {
		name     string
		inv      gate.Invocation
		wf       gate.Workflow
		asked    bool
		wantKeys []string
		call     map[string]any
	}{
		{name: "ad hoc, no workflow", inv: gate.Invocation{Prompt: "fix it"}},
		{name: "routing marker only, no workflow", inv: gate.Invocation{Prompt: "<!-- DES-PHASE: 06-implementation -->"}},
		{
			name: "ad hoc delegation in a workflow", wf: found(workflowFacts()), asked: true,
			inv:      gate.Invocation{Tool: gate.ToolTask, AgentType: "software-developer", Prompt: "implement", Description: "phase 06"},
			wantKeys: []string{"call", "tool", "workflow"},
			call:     map[string]any{"subagent_type": "software-developer", "prompt": "implement", "description": "phase 06"},
		},
		{
			name: "routing marker in a workflow", wf: found(workflowFacts()), asked: true,
			inv:      gate.Invocation{Prompt: "<!-- DES-PHASE: 06-implementation --> go"},
			wantKeys: []string{"call", "tool", "workflow"},
			call:     map[string]any{"subagent_type": "", "prompt": "<!-- DES-PHASE: 06-implementation --> go", "description": ""},
		},
		{
			name: "skill in a workflow", wf: found(workflowFacts()), asked: true,
			inv:      gate.Invocation{Tool: gate.ToolSkill, Skill: "isdlc", Args: "advance", Prompt: "<!-- DES-VALIDATION: required -->"},
			wantKeys: []string{"call", "tool", "workflow"},
			call:     map[string]any{"skill": "isdlc", "args": "advance"},
		},
		{name: "skill, no workflow", inv: gate.Invocation{Tool: gate.ToolSkill, Skill: "isdlc", Args: "advance"}},
		{
			name: "nWave markers without a workflow", asked: true,
			inv:      gate.Invocation{Prompt: "<!-- DES-VALIDATION: required -->"},
			wantKeys: []string{"call", "prompt", "tool"},
		},
		{
			name: "nWave markers in a workflow", wf: found(workflowFacts()), asked: true,
			inv:      gate.Invocation{Prompt: "<!-- DES-VALIDATION: none --><!-- DES-PHASE: 06-implementation -->"},
			wantKeys: []string{"call", "prompt", "tool", "workflow"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			g := gate.PreInvocation{Root: root, Workflow: tc.wf}
			res, err := g.Check(context.Background(), rec, tc.inv)
			if err != nil {
				t.Fatal(err)
			}
			if res.Evaluated != tc.asked || (len(rec.inputs) > 0) != tc.asked {
				t.Fatalf("evaluated %v after %d evaluations, want %v", res.Evaluated, len(rec.inputs), tc.asked)
			}
			if !tc.asked {
				return
			}
			in := rec.last(t)
			var keys []string
			for _, k := range []string{"call", "in_progress", "prompt", "step", "tool", "workflow"} {
				if _, ok := in[k]; ok {
					keys = append(keys, k)
				}
			}
			if diff := cmp.Diff(tc.wantKeys, keys); diff != "" {
				t.Errorf("input keys (-want +got):\n%s", diff)
			}
			wantTool := tc.inv.Tool
			if wantTool == "" {
				wantTool = gate.ToolAgent
			}
			if in["tool"] != wantTool {
				t.Errorf("tool = %v, want %s", in["tool"], wantTool)
			}
			if tc.call != nil {
				if diff := cmp.Diff(tc.call, in["call"]); diff != "" {
					t.Errorf("call (-want +got):\n%s", diff)
				}
			}
			if res.Workflow != (tc.wf.Facts != nil) {
				t.Errorf("Result.Workflow = %v", res.Workflow)
			}
		})
	}
}

func TestGate1WorkflowErrorIsInCharge(t *testing.T) {
	t.Parallel()
	boom := errors.New("phase_requirements_files: team/req.json: no such file")
	g := gate.PreInvocation{Root: t.TempDir(), Workflow: gate.Workflow{Facts: func(context.Context, string) (map[string]any, error) { return nil, boom }}}
	res, err := g.Check(context.Background(), &recorder{}, gate.Invocation{Prompt: "hello"})
	if !errors.Is(err, boom) || !res.Workflow || res.Evaluated {
		t.Fatalf("res %+v, err %v: want the error, Workflow set, nothing evaluated", res, err)
	}
}

// The monorepo is chosen by the event's cwd: Gate 1 passes it on.
func TestGate1PassesTheCwd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var got []string
	wf := gate.Workflow{Facts: func(_ context.Context, cwd string) (map[string]any, error) { got = append(got, cwd); return nil, nil }}
	g := gate.PreInvocation{Root: root, Workflow: wf}
	for _, cwd := range []string{"", filepath.Join(root, "apps", "api")} {
		if _, err := g.Check(context.Background(), &recorder{}, gate.Invocation{Prompt: "x", Cwd: cwd}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{root, filepath.Join(root, "apps", "api")}, got); diff != "" {
		t.Errorf("cwds (-want +got):\n%s", diff)
	}
}

// blocked is the decision of a gate-blocked advancement: a deny and its
// escalation in info.phases.
func blocked(map[string]any) policy.Decision {
	return policy.Decision{
		Deny: []policy.Violation{{Code: "DES-GATE-BLOCKED", Severity: policy.Deny, Message: "phase 06-implementation: 2/5 test iterations"}},
		Info: map[string]any{"phases": map[string]any{
			"current": "06-implementation", "target": nil, "delegation": false,
			"escalations": []any{map[string]any{"type": "gate_blocked", "phase": "06-implementation", "codes": []any{"DES-GATE-BLOCKED"}}},
		}},
	}
}

// Many hook processes blocked at once record the escalation once; each
// decision is still audited.
func TestEscalationRecordedOnceUnderParallelCalls(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".des", "audit")
	now := time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC)
	const calls = 24
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A Log and a gate per call, as separate hook processes have.
			g := gate.PreInvocation{Root: root, Audit: openAudit(t, dir), Now: func() time.Time { return now }, Workflow: found(workflowFacts())}
			inv := gate.Invocation{Tool: gate.ToolSkill, Skill: "isdlc", Args: "advance", ToolUseID: "toolu_" + string(rune('a'+i))}
			res, err := g.Check(context.Background(), &recorder{decide: blocked}, inv)
			if err != nil || !res.Denied() {
				t.Errorf("call %d: denied %v, err %v", i, res.Denied(), err)
			}
		}()
	}
	wg.Wait()
	esc := readAudit(t, dir, audit.PhaseEscalation)
	if len(esc) != 1 {
		t.Fatalf("%d PHASE_ESCALATION entries, want 1: %+v", len(esc), esc)
	}
	want := map[string]any{"type": "gate_blocked", "phase": "06-implementation", "codes": []any{"DES-GATE-BLOCKED"}, "state_file": ".isdlc/state.json", "tool": "Skill"}
	for k, v := range want {
		if diff := cmp.Diff(v, esc[0].Fields[k]); diff != "" {
			t.Errorf("field %s (-want +got):\n%s", k, diff)
		}
	}
	if rej := readAudit(t, dir, audit.TaskInvocationRejected); len(rej) != calls {
		t.Errorf("%d TASK_INVOCATION_REJECTED, want %d", len(rej), calls)
	} else if rej[0].Fields["phase"] != "06-implementation" || rej[0].Fields["tool"] != "Skill" {
		t.Errorf("rejection fields: %v", rej[0].Fields)
	}

	// A minute later the same escalation is recorded again.
	later := now.Add(gate.EscalationWindow)
	g := gate.PreInvocation{Root: root, Audit: openAudit(t, dir), Now: func() time.Time { return later }, Workflow: found(workflowFacts())}
	if _, err := g.Check(context.Background(), &recorder{decide: blocked}, gate.Invocation{Tool: gate.ToolSkill, Skill: "isdlc", Args: "gate"}); err != nil {
		t.Fatal(err)
	}
	if esc := readAudit(t, dir, audit.PhaseEscalation); len(esc) != 2 {
		t.Errorf("a minute later: %d PHASE_ESCALATION entries, want 2", len(esc))
	}

	// An allowed advancement out of the phase closes the escalation
	// (des.Engine.Escalations): blocked again within the minute, it is
	// recorded again.
	advanced := func(map[string]any) policy.Decision {
		return policy.Decision{Info: map[string]any{"phases": map[string]any{
			"current": "06-implementation", "target": "16-quality-loop", "delegation": true, "advancement": true, "escalations": []any{},
		}}}
	}
	if _, err := g.Check(context.Background(), &recorder{decide: advanced}, gate.Invocation{Tool: gate.ToolSkill, Skill: "isdlc", Args: "advance"}); err != nil {
		t.Fatal(err)
	}
	if v := readAudit(t, dir, audit.TaskInvocationValidated); len(v) != 1 || v[0].Fields["advancement"] != true {
		t.Fatalf("the allowed advancement: %+v", v)
	}
	if _, err := g.Check(context.Background(), &recorder{decide: blocked}, gate.Invocation{Tool: gate.ToolSkill, Skill: "isdlc", Args: "advance"}); err != nil {
		t.Fatal(err)
	}
	if esc := readAudit(t, dir, audit.PhaseEscalation); len(esc) != 3 {
		t.Errorf("blocked again after an allowed advancement: %d PHASE_ESCALATION entries, want 3", len(esc))
	}
	if rep, err := audit.Verify(context.Background(), dir); err != nil || rep.Break != nil {
		t.Errorf("trail: %+v, %v", rep.Break, err)
	}
}

// An unrelated call in a workflow project (no delegation, nothing found)
// leaves no trace in the trail.
func TestUnjudgedCallNotAudited(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "audit")
	g := gate.PreInvocation{Root: root, Audit: openAudit(t, dir), Workflow: found(workflowFacts())}
	quiet := func(map[string]any) policy.Decision {
		return policy.Decision{Info: map[string]any{"phases": map[string]any{"current": "06-implementation", "target": nil, "delegation": false, "escalations": []any{}}}}
	}
	if _, err := g.Check(context.Background(), &recorder{decide: quiet}, gate.Invocation{AgentType: "Explore", Prompt: "find the config"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		es, _ := openAudit(t, dir).Read(context.Background(), audit.Query{})
		t.Errorf("trail written for an unjudged call: %+v", es)
	}
	delegation := func(map[string]any) policy.Decision {
		return policy.Decision{Info: map[string]any{"phases": map[string]any{"current": "06-implementation", "target": "06-implementation", "delegation": true, "escalations": []any{}}}}
	}
	if _, err := g.Check(context.Background(), &recorder{decide: delegation}, gate.Invocation{AgentType: "software-developer", Prompt: "implement"}); err != nil {
		t.Fatal(err)
	}
	v := readAudit(t, dir, audit.TaskInvocationValidated)
	if len(v) != 1 || v[0].Fields["target"] != "06-implementation" || v[0].Fields["delegation"] != true {
		t.Errorf("an allowed delegation is audited with its phases: %+v", v)
	}
}

func TestBranchGuardFacts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var asked []string
	wf := found(workflowFacts())
	wf.Branch = func(dir, want string) map[string]any {
		asked = append(asked, dir+"|"+want)
		return map[string]any{"readable": true, "current": "main", "detached": false, "workflow_branch_exists": true}
	}
	deny := func(in map[string]any) policy.Decision {
		return policy.Decision{Deny: []policy.Violation{{Code: "DES-BRANCH-PROTECTED", Severity: policy.Deny, Message: "main"}}}
	}
	auditDir := filepath.Join(root, "audit")
	tu := gate.ToolUse{Root: root, Audit: openAudit(t, auditDir)}
	for _, tc := range []struct {
		command string
		wf      gate.Workflow
		dirs    []string
	}{
		{command: "ls && git status", wf: wf},
		{command: `git commit -m "x"`},
		{command: `git commit -m "x"`, wf: wf, dirs: []string{"."}},
		{command: `git -C svc ci -m x`, wf: wf, dirs: []string{"svc"}}, // an alias
		{command: `$G commit -m x; cd /elsewhere && git commit`, wf: wf, dirs: []string{".", "/elsewhere"}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			rec := &recorder{decide: deny}
			asked = nil
			res, err := tu.CheckCommitBranches(context.Background(), rec, tc.wf, gate.BashCall{Command: tc.command, Cwd: root, ToolUseID: "toolu_1"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Evaluated != (tc.dirs != nil) {
				t.Fatalf("evaluated = %v", res.Evaluated)
			}
			if tc.dirs == nil {
				return
			}
			in := rec.last(t)
			commits := in["commits"].([]any)
			var dirs []string
			for _, c := range commits {
				m := c.(map[string]any)
				dirs = append(dirs, m["dir"].(string))
				if _, ok := m["subcommand"].(string); !ok || m["alias"] == nil || m["dynamic"] == nil {
					t.Errorf("commit facts without subcommand, alias, dynamic: %v", m)
				}
				if m["branch"].(map[string]any)["current"] != "main" {
					t.Errorf("branch facts: %v", m)
				}
			}
			if diff := cmp.Diff(tc.dirs, dirs); diff != "" {
				t.Errorf("commit dirs (-want +got):\n%s", diff)
			}
			if in["workflow"] == nil || in["tool"] != "Bash" || len(in["writes"].([]any)) != 0 {
				t.Errorf("input: %v", in)
			}
			if len(asked) == 0 || filepath.Base(filepath.Dir(asked[0])) == "" || asked[0][len(asked[0])-len("|feature/REQ-1"):] != "|feature/REQ-1" {
				t.Errorf("branch reader asked %v", asked)
			}
		})
	}
	if n := len(readAudit(t, auditDir, audit.CommitValidationFailed)); n != 3 {
		t.Errorf("%d COMMIT_VALIDATION_FAILED, want 3", n)
	}
}

func TestResponseText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw     string
		present bool
		text    string
	}{
		{raw: ``},
		{raw: `null`},
		{raw: `"menu: 1. New Project"`, present: true, text: "menu: 1. New Project"},
		{raw: `{"content":[{"type":"text","text":"a"},{"type":"image","text":"no"},{"type":"text","text":"b"}],"totalTokens":3}`, present: true, text: "a\nb"},
		{raw: `[{"type":"text","text":"a"}]`, present: true, text: "a"},
		{raw: `{"status":"async_launched","agentId":"a1","prompt":"p"}`, present: true},
		{raw: `{"result":"done"}`, present: true, text: "done"},
		{raw: `{"text":"t"}`, present: true, text: "t"},
	} {
		present, text := gate.ResponseText(json.RawMessage(tc.raw))
		if present != tc.present || text != tc.text {
			t.Errorf("ResponseText(%s) = %v, %q; want %v, %q", tc.raw, present, text, tc.present, tc.text)
		}
	}
}

func TestObserveSubagent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tu := gate.ToolUse{Root: root}
	warn := func(map[string]any) policy.Decision {
		return policy.Decision{Warn: []policy.Violation{{Code: "DES-WALKTHROUGH-MISSING", Severity: policy.Warn, Message: "walk"}}}
	}
	r := gate.SubagentResult{Tool: gate.ToolTask, SubagentType: "discover-orchestrator", Prompt: "discover", Response: json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)}
	rec := &recorder{decide: warn}
	// Discover runs before there is a state: the observers are asked anyway.
	res, err := tu.ObserveSubagent(context.Background(), rec, gate.Workflow{}, r)
	if err != nil || !res.Evaluated {
		t.Fatalf("no workflow: evaluated %v, %v", res.Evaluated, err)
	}
	if _, ok := rec.last(t)["workflow"]; ok {
		t.Error("no state, yet a workflow in the input")
	}
	res, err = tu.ObserveSubagent(context.Background(), rec, found(workflowFacts()), r)
	if err != nil || !res.Evaluated || len(res.Decision.Warn) != 1 {
		t.Fatalf("res %+v, err %v", res, err)
	}
	in := rec.last(t)
	want := map[string]any{"present": true, "text": "done"}
	if diff := cmp.Diff(want, in["response"]); diff != "" || in["event"] != "PostToolUse" || in["tool"] != "Task" {
		t.Errorf("input %v (-want +got response):\n%s", in, diff)
	}
}
