package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/internal/proctree"
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
	return testrun.StoreOf(statedir.For(root, lookupEnv))
}

// testRunTable is the test runner table of the policies.
func (h *hookEnv) testRunTable(ctx context.Context) (*des.Engine, testrun.Table, error) {
	eng, err := h.engine(ctx)
	if err != nil {
		return nil, nil, err
	}
	pe, err := eng.Policy(ctx)
	if err != nil {
		return nil, nil, err
	}
	raw, _ := pe.Data(testRunnersData)
	table, err := testrun.ParseTable(raw)
	return eng, table, err
}

// beginTestRun is PreToolUse's part, for a Bash call des allowed: when its
// command runs a test runner of the table, des keeps that it saw the call
// start (testrun.Pending), with the processes above the hook, so that
// only the PostToolUse of this call, sent by Claude Code, records the run.
func (h *hookEnv) beginTestRun(ctx context.Context, ev *Event, command string) {
	runs := shell.Analyze(command).Runs
	if len(runs) == 0 {
		return
	}
	_, table, err := h.testRunTable(ctx)
	if err != nil {
		h.logger.Warn("hook: test run not watched", "err", err)
		return
	}
	if _, ok := table.Recognise(runs); !ok {
		return
	}
	p := testrun.Pending{At: time.Now().UTC()}
	if t := (proctree.Tree{}); t.Supported() {
		since, err := t.Ticks(p.At.Add(-time.Second))
		up, aerr := t.Ancestors(h.clientPID())
		if err == nil && aerr == nil {
			p.Since = since
			for _, q := range up[:min(3, len(up))] {
				if q.PID > 1 {
					p.Origin = append(p.Origin, q.Ref)
				}
			}
		}
	}
	if err := testRunStore(h.root, h.lookupEnv).Begin(ev.ToolUseID, command, p); err != nil {
		h.logger.Warn("hook: test run not watched", "err", err)
	}
}

// recordTestRun records, after a Bash call, the test run its command made
// when it ran a test runner of the table (internal/testrun), with what it
// belongs to, and audits it (TEST_RUN_OBSERVED). Only a call des saw start
// (beginTestRun) with the same command counts, and only when the event
// comes from Claude Code, not from a process the call started: an event
// piped to des-hook by the call itself records nothing. It decides
// nothing: a failure is logged.
//
// In an iSDLC workflow it then has des write the phase's test iterations
// into the state (Engine.WriteTestIteration) and returns a note for the
// agent saying what des saw ("" when there is none).
func (h *hookEnv) recordTestRun(ctx context.Context, ev *Event) (note string) {
	command := bashCommand(ev)
	if strings.TrimSpace(command) == "" {
		return ""
	}
	store := testRunStore(h.root, h.lookupEnv)
	pending, ok := store.Peek(ev.ToolUseID, command)
	if !ok {
		return "" // not a test run des saw start
	}
	if why := eventFromTheCall(h.clientPID(), command, pending); why != "" {
		h.logger.Warn("hook: test run not recorded: the event did not come from Claude Code", "tool_use_id", ev.ToolUseID, "why", why)
		return ""
	}
	if !store.Take(ev.ToolUseID) {
		return "" // another PostToolUse of the call took it
	}
	eng, table, err := h.testRunTable(ctx)
	if err != nil {
		h.logger.Warn("hook: test run not recorded", "err", err)
		return ""
	}
	m, ok := table.Recognise(shell.Analyze(command).Runs)
	if !ok {
		return ""
	}
	exit, interrupted, output := testRunResult(ev)
	r := testrun.NewRecord(command, m, exit, interrupted, output)
	if r.Result == testrun.Passed {
		// The exit status and output are the line's: a pass counts only
		// from a line that runs the runner alone, running tests.
		if why := table.NotAPassIn(command, m, eventDir(ev, h.root), h.root); why != "" {
			r.Result, r.Error, r.Signature = testrun.Inconclusive, why, testrun.NormalizeError(why)
		}
	}
	r.Time, r.Event = time.Now().UTC(), ev.HookEventName
	r.ToolUseID, r.SessionID, r.AgentID, r.AgentType = ev.ToolUseID, ev.SessionID, ev.AgentID, ev.AgentType
	r.Belongs = h.testRunBelongs(ctx, eng, ev)
	if err := store.Append(ctx, r); err != nil {
		h.logger.Warn("hook: test run not recorded", "err", err)
		return ""
	}
	if err := eng.Audit().Append(ctx, audit.Entry{Event: audit.TestRunObserved, Fields: testRunFields(r)}); err != nil {
		h.logger.Warn("hook: TEST_RUN_OBSERVED not audited", "err", err)
	}
	if r.Belongs.Workflow == "" {
		return ""
	}
	upd, err := eng.WriteTestIteration(ctx, eventDir(ev, h.root))
	if err != nil {
		h.logger.Warn("hook: test iterations not written into the workflow state", "err", err)
	}
	return iterationNote(r, upd)
}

// eventFromTheCall says why a PostToolUse event of the call p describes
// did not come from Claude Code, "" when it did (or when the process tree
// cannot be read, where only the pending record vouches for it). Claude
// Code runs a hook as its own child, through a shell wrapper at most: the
// processes above the hook, up to one that was above the call's PreToolUse
// hook (p.Origin), all started after the call began and none runs the
// call's command. A hook run by the call itself has the call's shell above
// it (whose command line holds the command); one run by a process the
// call left in the background has no Origin above it (its parents ended:
// pid 1 or a subreaper adopted it); one run by an older process (an MCP
// server) has a process older than the call between.
func eventFromTheCall(client int, command string, p testrun.Pending) string {
	t := proctree.Tree{}
	if p.Since == 0 || len(p.Origin) == 0 || !t.Supported() {
		return ""
	}
	up, err := t.Ancestors(client)
	if err != nil {
		return ""
	}
	want := unquotedCommand(command)
	for _, q := range up {
		if slices.Contains(p.Origin, q.Ref) {
			return ""
		}
		if q.Start < p.Since {
			return fmt.Sprintf("process %d (%s) above the hook is older than the call and is not Claude Code", q.PID, q.Comm)
		}
		data, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(q.PID), "cmdline"))
		if want != "" && strings.Contains(unquotedCommand(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '}))), want) {
			return fmt.Sprintf("process %d (%s) above the hook runs the call's command", q.PID, q.Comm)
		}
	}
	return "no process above the hook is Claude Code's"
}

// unquotedCommand drops quotes and backslashes, as proctree compares
// command lines: a shell that runs a command through eval '...' holds it
// with its quotes escaped.
func unquotedCommand(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\'' || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
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
	if isdlc.HasState(h.root, cwd, h.lookupEnv) {
		if facts, err := eng.WorkflowFacts(ctx, cwd); err == nil && facts != nil {
			b.StateFile, _ = facts["state_file"].(string)
			b.ISDLCPhase = workflowPhase(ctx, eng, facts)
			state, _ := facts["state"].(map[string]any)
			b.Workflow = isdlc.WorkflowID(state)
		}
	}
	if ev.AgentID == "" {
		return b
	}
	evidence := statedir.Evidence(statedir.For(h.root, h.lookupEnv))
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
	set("workflow", r.Belongs.Workflow)
	set("step_file", r.Belongs.StepFile)
	set("step_phase", r.Belongs.StepPhase)
	set("task_phase", r.Belongs.TaskPhase)
	return f
}

// iterationNote tells the agent what des made of a test run in an iSDLC
// phase, as iSDLC's test-watcher tells it: the iteration, the result, and
// what comes next.
func iterationNote(r testrun.Record, upd des.TestIterationUpdate) string {
	ti := upd.TestIteration
	if upd.StateFile == "" || ti == nil {
		return ""
	}
	n, _ := ti["current_iteration"].(int)
	limit, _ := ti["max_iterations"].(int)
	head := fmt.Sprintf("des saw this test run: phase %s, test iteration %d/%d, %s", upd.Phase, n, limit, r.Result)
	if r.Failed != nil && *r.Failed > 0 {
		head += fmt.Sprintf(" (%d failed)", *r.Failed)
	}
	var next string
	switch status, _ := ti["status"].(string); {
	case status == "escalated":
		details, _ := ti["escalation_details"].(string)
		next = fmt.Sprintf("Escalated: %s. Stop iterating and ask the user: the phase advances once the tests pass, or once the user approves going on with `des-hook escalations approve %s` in a terminal of their own.", details, upd.Phase)
	case ti["completed"] == true:
		next = "The phase's test iteration requirement is met."
	case r.Result == testrun.Failed:
		next = fmt.Sprintf("Fix the failing code or tests and run the same command again (%d iterations left); the phase does not advance until des sees the tests pass.", limit-n)
	case strings.HasPrefix(r.Error, "Not a pass:"):
		next = r.Error + "."
	default:
		next = "des could not tell whether the tests passed; run them so that the output or the exit status says."
	}
	return fmt.Sprintf("%s. des wrote phases[%q].iteration_requirements.test_iteration in %s. %s", head, upd.Phase, upd.StateFile, next)
}
