package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/shell"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/testrun"
	"github.com/deterministic-exec/des/statemachine"
)

// testRunnersData is where the policies hold the test runner table.
const testRunnersData = "des.evidence.test_runners"

// testRunStore is the project's store of the test runs des saw, in its
// evidence directory (per-user state, outside the sandbox's reach).
func testRunStore(root string, lookupEnv func(string) (string, bool)) testrun.Store {
	return testrun.Store{Dir: testrun.DirIn(des.EvidenceDir(statedir.For(root, lookupEnv)))}
}

// recordTestRun records, after a Bash call, the test run its command made
// when it ran a test runner of the table (internal/testrun), with what it
// belongs to, and audits it (TEST_RUN_OBSERVED). It decides nothing: a
// failure is logged.
func (h *hookEnv) recordTestRun(ctx context.Context, ev *Event) {
	command := bashCommand(ev)
	if strings.TrimSpace(command) == "" {
		return
	}
	runs := shell.Analyze(command).Runs
	if len(runs) == 0 {
		return
	}
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Warn("hook: test run not recorded: DES does not start", "err", err)
		return
	}
	pe, err := eng.Policy(ctx)
	if err != nil {
		h.logger.Warn("hook: test run not recorded: no policies", "err", err)
		return
	}
	raw, _ := pe.Data(testRunnersData)
	table, err := testrun.ParseTable(raw)
	if err != nil {
		h.logger.Warn("hook: test run not recorded", "err", err)
		return
	}
	m, ok := table.Recognise(runs)
	if !ok {
		return
	}
	exit, interrupted, output := testRunResult(ev)
	r := testrun.NewRecord(command, m, exit, interrupted, output)
	r.Time, r.Event = time.Now().UTC(), ev.HookEventName
	r.ToolUseID, r.SessionID, r.AgentID, r.AgentType = ev.ToolUseID, ev.SessionID, ev.AgentID, ev.AgentType
	r.Belongs = h.testRunBelongs(ctx, eng, ev)
	if err := testRunStore(h.root, h.lookupEnv).Append(ctx, r); err != nil {
		h.logger.Warn("hook: test run not recorded", "err", err)
		return
	}
	if err := eng.Audit().Append(ctx, audit.Entry{Event: audit.TestRunObserved, Fields: testRunFields(r)}); err != nil {
		h.logger.Warn("hook: TEST_RUN_OBSERVED not audited", "err", err)
	}
}

// testRunResult is a Bash call's exit status, interruption and output as
// the event gives them: PostToolUse's tool_response (stdout, stderr,
// interrupted; Claude Code sends it for a command that exited 0),
// PostToolUseFailure's error ("Exit code N" and the output) and
// is_interrupt.
func testRunResult(ev *Event) (exit *int, interrupted bool, output string) {
	if ev.HookEventName == eventPostToolUseFailure {
		first, rest, _ := strings.Cut(ev.Error, "\n")
		if n, ok := strings.CutPrefix(strings.TrimSpace(first), "Exit code "); ok {
			if code, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
				return &code, ev.IsInterrupt, rest
			}
		}
		return testrun.ExitInText(ev.Error), ev.IsInterrupt, ev.Error
	}
	var resp struct {
		Stdout      string `json:"stdout"`
		Stderr      string `json:"stderr"`
		Interrupted bool   `json:"interrupted"`
		ExitCode    *int   `json:"exitCode"`
		ExitCode2   *int   `json:"exit_code"`
	}
	_ = json.Unmarshal(ev.ToolResponse, &resp)
	output = resp.Stdout
	if resp.Stderr != "" {
		output = strings.TrimSuffix(output, "\n") + "\n" + resp.Stderr
	}
	exit = resp.ExitCode
	if exit == nil {
		exit = resp.ExitCode2
	}
	if exit == nil {
		zero := 0
		exit = &zero
	}
	return exit, resp.Interrupted, output
}

// testRunBelongs is what a test run belongs to: the iSDLC workflow's
// current phase when a workflow state applies where the call ran, and for
// a subagent the nWave step and phase, or the task graph phase, of the run
// Gate 1 recorded for it (its binding in the evidence directory).
func (h *hookEnv) testRunBelongs(ctx context.Context, eng *des.Engine, ev *Event) testrun.Belongs {
	var b testrun.Belongs
	cwd := eventDir(ev, h.root)
	if des.HasWorkflowState(h.root, cwd, h.lookupEnv) {
		if facts, err := eng.WorkflowFacts(ctx, cwd); err == nil && facts != nil {
			b.StateFile, _ = facts["state_file"].(string)
			b.ISDLCPhase = workflowPhase(ctx, eng, facts)
		}
	}
	if ev.AgentID == "" {
		return b
	}
	evidence := des.EvidenceDir(statedir.For(h.root, h.lookupEnv))
	var bind struct {
		ToolUseID string `json:"tool_use_id"`
	}
	if !readEvidence(evidence, "agent-"+ev.AgentID+".run.json", &bind) || bind.ToolUseID == "" {
		return b
	}
	var run gate.Run
	if !readEvidence(evidence, bind.ToolUseID+".json", &run) {
		return b
	}
	b.Run, b.TaskPhase, b.StepFile = run.ToolUseID, run.TaskPhase, run.StepFile
	if run.StepFile != "" && filepath.IsLocal(filepath.FromSlash(run.StepFile)) {
		if s, _, err := statemachine.ReadStep(filepath.Join(h.root, filepath.FromSlash(run.StepFile))); err == nil {
			for _, p := range s.Phases {
				if p.Status == "IN_PROGRESS" {
					b.StepPhase = p.Name
				}
			}
		}
	}
	return b
}

// readEvidence reads a record des keeps in its evidence directory.
func readEvidence(dir, name string, v any) bool {
	if strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return false
	}
	data, err := fileio.ReadBounded(filepath.Join(dir, name), 1<<20)
	return err == nil && json.Unmarshal(data, v) == nil
}

// workflowPhase is the workflow's current phase as the state holds it
// (active_workflow.current_phase, else current_phase), a legacy key mapped
// through data.des.phases.phase_aliases as the guards map it.
func workflowPhase(ctx context.Context, eng *des.Engine, facts map[string]any) string {
	state, _ := facts["state"].(map[string]any)
	aw, _ := state["active_workflow"].(map[string]any)
	phase, _ := aw["current_phase"].(string)
	if phase == "" {
		phase, _ = state["current_phase"].(string)
	}
	if pe, err := eng.Policy(ctx); err == nil && phase != "" {
		if raw, ok := pe.Data("des.phases.phase_aliases"); ok {
			if m, ok := raw.(map[string]any); ok {
				if to, ok := m[strings.TrimSpace(phase)].(string); ok {
					return to
				}
			}
		}
	}
	return phase
}

// testRunFields are TEST_RUN_OBSERVED's fields.
func testRunFields(r testrun.Record) map[string]any {
	f := map[string]any{"runner": r.Runner, "command": r.Command, "result": r.Result, "interrupted": r.Interrupted}
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	if r.ExitCode != nil {
		f["exit_code"] = *r.ExitCode
	}
	for k, v := range map[string]*int{"passed": r.Passed, "failed": r.Failed, "skipped": r.Skipped} {
		if v != nil {
			f[k] = *v
		}
	}
	if r.Coverage != nil {
		f["coverage"] = *r.Coverage
	}
	set("signature", r.Signature)
	set("tool_use_id", r.ToolUseID)
	set("session_id", r.SessionID)
	set("agent_id", r.AgentID)
	set("state_file", r.Belongs.StateFile)
	set("isdlc_phase", r.Belongs.ISDLCPhase)
	set("step_file", r.Belongs.StepFile)
	set("step_phase", r.Belongs.StepPhase)
	set("task_phase", r.Belongs.TaskPhase)
	return f
}
