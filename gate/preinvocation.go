package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/jsonschemas"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/statemachine"
	"github.com/deterministic-exec/des/template"
)

// Invocation is a call Gate 1 judges before it runs: a subagent about to
// start (the Agent, formerly Task, tool call the orchestrator made), or a
// Skill call, which only the phase workflow guards judge.
type Invocation struct {
	Tool        string // ToolAgent, ToolTask or ToolSkill; "" means ToolAgent
	Prompt      string
	Description string // the Agent call's description
	ToolUseID   string // Claude Code's tool_use_id, the key of the invocation record
	SessionID   string
	AgentType   string // subagent_type
	Skill, Args string // the Skill call's skill and arguments
	// Cwd is the event's cwd as Claude Code sent it (absolute, possibly a
	// Windows path; "" = the project root): in a monorepo it chooses the
	// project whose workflow state applies.
	Cwd string
	// AgentID is the event's agent_id: set when a subagent makes the call,
	// "" in the main thread (the orchestrator).
	AgentID string
}

// PhaseSection is the prompt section whose words the phase check reads.
const PhaseSection = "TDD_14_PHASES"

// LevelNone is the validation level that needs no step file.
const LevelNone = "none"

// InvocationResult is Gate 1's result and what DES did about it.
type InvocationResult struct {
	Result
	Level    string // validation level the policy derived ("" when not evaluated)
	StepFile string // the step file, relative to the root when inside it ("" when none)
	Moved    string // the task's status before DES moved it to IN_PROGRESS ("" when not moved)
	// Workflow reports that a multi-phase workflow state was found: the
	// phase guards were in charge of the call, as nWave markers put Gate 1
	// in charge of a prompt.
	Workflow bool
	// NWave reports that the prompt carried nWave (non-routing) DES markers.
	NWave bool
	// Orchestration reports that the orchestration rules were in charge:
	// the prompt names a phase of an existing task graph, or the
	// concurrency limit applies to a main-thread call.
	Orchestration bool
	// TaskPhase is the task graph phase the prompt names ("" when none).
	TaskPhase string
}

// PreInvocation is Gate 1. It judges a subagent's prompt and step file
// before the subagent starts (des.gates.pre_invocation) and, when it allows,
// moves the step's task to IN_PROGRESS and records the invocation.
type PreInvocation struct {
	Root      string           // absolute project root
	Protected []string         // DES's protected directories (as for ToolUse): never a step file
	Audit     *audit.Log       // the audit trail; nil records nothing
	Timeout   time.Duration    // evaluation budget; 0 means none
	Now       func() time.Time // clock; nil means time.Now
	RunsDir   string           // where invocations are recorded for Gate 2; "" records none
	// EvidenceDir is where the records are also kept, outside the project
	// (the per-user state directory), and the only copy the gates read
	// when set: sandboxed Bash may write RunsDir (see SubagentStop).
	EvidenceDir string
	Writes      Writes    // told of the step rewrite and the records; nil tells nothing
	Workflow    Workflow  // finds the multi-phase workflow state; zero finds none
	Graph       TaskGraph // the orchestrator's task graph; zero has none
	Registry    Registry  // the running subagents, when the concurrency limit is set; nil: no limit
}

// Check runs Gate 1. The policy is asked when the prompt carries nWave
// (non-routing) DES markers or a workflow state is found; otherwise the
// call is ad hoc: Check returns a result with Evaluated false. A Skill call
// carries no prompt: only the phase guards judge it. Where DES is in
// charge, an error means it could not decide (or could not carry out an
// allow), and a caller should fail closed (Result.NWave or
// Result.Workflow tells). When the decision was made but not recorded, the
// result comes with an error wrapping ErrNotRecorded.
//
// The input holds tool and call always, workflow when a state was found,
// and prompt, step and in_progress only with nWave markers. The nWave
// bookkeeping (the task to IN_PROGRESS, the run record) happens only with
// nWave markers. Escalations in the decision's info ("phases") are audited
// as PHASE_ESCALATION, once per type and phase within EscalationWindow.
func (g PreInvocation) Check(ctx context.Context, ev Evaluator, inv Invocation) (InvocationResult, error) {
	res := InvocationResult{Result: Result{Gate: policy.PreInvocation}}
	prompt := template.Parse(inv.Prompt)
	if inv.tool() == ToolSkill {
		prompt = template.Prompt{}
	}
	res.NWave = prompt.HasMarkers
	cwd := inv.Cwd
	if cwd == "" {
		cwd = g.Root
	}
	wf, err := g.Workflow.find(ctx, cwd)
	if err != nil {
		res.Workflow = true // a state exists: the guards are in charge of it
		return res, fmt.Errorf("gate 1: workflow state: %w", err)
	}
	res.Workflow = wf != nil
	orch, err := g.orchestration(ctx, inv)
	res.Orchestration, res.TaskPhase = orch.inCharge, orch.phase
	if err != nil {
		return res, fmt.Errorf("gate 1: %w", err)
	}
	if !res.NWave && !res.Workflow && !res.Orchestration {
		return res, nil
	}
	now := g.now()
	in := map[string]any{"tool": inv.tool(), "call": inv.callFacts()}
	if wf != nil {
		in["workflow"] = wf
	}
	for k, v := range orch.facts {
		in[k] = v
	}
	var step stepRead
	if res.NWave {
		step = g.readStep(prompt.StepFile)
		res.StepFile = step.rel
		in["prompt"] = promptFacts(prompt)
	}
	if prompt.StepFile != "" {
		in["step"] = step.facts()
	}
	if step.doc != nil {
		inProgress, err := inProgressFacts(filepath.Dir(step.abs), g.Root, now)
		if err != nil {
			return res, fmt.Errorf("gate 1: scan %s for stale work: %w", filepath.Dir(step.rel), err)
		}
		in["in_progress"] = inProgress
	}

	evalCtx := ctx
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		evalCtx, cancel = context.WithTimeout(ctx, g.Timeout)
		defer cancel()
	}
	start := time.Now()
	d, err := ev.Evaluate(evalCtx, policy.PreInvocation, in)
	if err != nil {
		// OPA's cancellation error does not wrap the context's: ask the context.
		if errors.Is(evalCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = budgetError{fmt.Errorf("evaluation took longer than the %v budget (setting validation_timeout_ms): %w", g.Timeout, err)}
		}
		return res, fmt.Errorf("gate 1: %w", err)
	}
	res.Decision, res.Evaluated = d, true
	if res.NWave { // the level is the nWave rules' business; without their markers it means nothing
		res.Level, _ = d.Info["level"].(string)
	}

	phases, hasPhases := readPhasesInfo(d)
	var entries []audit.Entry
	if res.NWave || hasPhases && (phases.Delegation || phases.Advancement || len(d.Deny)+len(d.Warn) > 0) ||
		res.Orchestration && (res.TaskPhase != "" || len(d.Deny)+len(d.Warn) > 0) {
		entries = g.decisionEntries(inv, res, prompt, time.Since(start))
		if hasPhases {
			for k, v := range workflowPhaseFields(phases) {
				entries[0].Fields[k] = v
			}
		}
		if res.TaskPhase != "" {
			entries[0].Fields["task_phase"] = res.TaskPhase
		}
	}
	canStart, _ := d.Info["can_start"].(bool)
	starting := !res.Denied() && res.Level != LevelNone && step.doc != nil && canStart
	var from string
	var resets []string // the phases Gate 2 named when it failed the task: done again
	if starting {
		from = cmpOr(step.step.Status, statemachine.TaskTodo)
		if from == statemachine.TaskFailed {
			named, _, err := Gate2Resets(ctx, g.Audit, g.EvidenceDir, step.rel)
			if err != nil {
				return res, fmt.Errorf("gate 1: read the Gate 2 failure of %s: %w", step.rel, err)
			}
			for _, p := range step.step.Phases {
				if slices.Contains(named, p.Name) && p.Status != statemachine.PhaseNotExecuted {
					resets = append(resets, p.Name)
				}
			}
		}
		entries = append(entries, audit.Entry{Event: audit.TaskInvocationStarted, Fields: map[string]any{
			"step_file": step.rel, "tool_use_id": inv.ToolUseID, "session_id": inv.SessionID, "agent_type": inv.AgentType, "status": statemachine.TaskInProgress,
		}})
		if from != statemachine.TaskInProgress {
			entries = append(entries, audit.Entry{Event: audit.TaskStateChanged, Fields: map[string]any{
				"step_file": step.rel, "from": from, "to": statemachine.TaskInProgress, "by": "gate1", "tool_use_id": inv.ToolUseID,
			}})
		}
	}
	// Write-ahead: the trail records the move before the step file shows it,
	// so no status change DES makes can go unrecorded. If recording fails,
	// nothing has changed and the caller fails closed.
	if g.Audit != nil {
		if err := g.Audit.Append(ctx, entries...); err != nil {
			return res, fmt.Errorf("gate 1: %w: %w", ErrNotRecorded, err)
		}
		state, _ := wf["state_file"].(string)
		fields := map[string]any{"state_file": state, "tool": inv.tool(), "tool_use_id": inv.ToolUseID, "session_id": inv.SessionID}
		if err := recordEscalations(ctx, g.Audit, now, deniedEscalations(phases.Escalations, d), fields); err != nil {
			return res, fmt.Errorf("gate 1: %w: %w", ErrNotRecorded, err)
		}
	}
	if starting {
		if err := g.start(step, now, resets); err != nil {
			if g.Audit != nil { // say that the recorded move did not happen
				_ = g.Audit.Append(ctx, audit.Entry{Event: audit.HookError, Fields: map[string]any{
					"step_file": step.rel, "tool_use_id": inv.ToolUseID, "error": err.Error(),
					"msg": "the TASK_STATE_CHANGED recorded just before was not applied: the step file could not be rewritten",
				}})
			}
			return res, fmt.Errorf("gate 1: allowed, but could not start the task: %w", err)
		}
		if from != statemachine.TaskInProgress {
			res.Moved = from
		}
		if err := g.recordRun(inv, step, prompt.Origin, res.TaskPhase, now); err != nil {
			return res, fmt.Errorf("gate 1: allowed, but could not record the invocation: %w", err)
		}
	} else if res.TaskPhase != "" && res.Orchestration && !res.Denied() {
		// Wave sync finds the phase of the subagent when it stops.
		if err := g.recordTaskRun(inv, res.TaskPhase, now); err != nil {
			return res, fmt.Errorf("gate 1: allowed, but could not record the task phase of the invocation: %w", err)
		}
	}
	return res, nil
}

// orchestrationFacts is what the orchestration rules read of a call, and
// whether they are in charge of it.
type orchestrationFacts struct {
	inCharge bool
	phase    string
	facts    map[string]any // task_phase, task_graph, main_thread, registry
}

// orchestration gathers input.task_phase, task_graph, main_thread and
// registry. The rules are in charge when the prompt names a phase and a
// graph exists, or when the concurrency limit is set and the call is made
// in the main thread. Skill calls start no subagent: none of this applies.
func (g PreInvocation) orchestration(ctx context.Context, inv Invocation) (orchestrationFacts, error) {
	var o orchestrationFacts
	if inv.tool() == ToolSkill {
		return o, nil
	}
	main := inv.AgentID == ""
	o.phase = g.Graph.phaseID(inv.Prompt)
	o.facts = map[string]any{"main_thread": main}
	if o.phase != "" {
		o.facts["task_phase"] = o.phase
	}
	graph, err := g.Graph.Facts(g.Root)
	if err != nil {
		o.inCharge = o.phase != "" // the prompt names a phase of a graph DES cannot read
		return o, err
	}
	if graph != nil {
		o.facts["task_graph"] = graph
		o.inCharge = o.phase != ""
	}
	if g.Registry != nil {
		if main {
			o.inCharge = true
		}
		reg, err := g.Registry(ctx)
		if err != nil {
			return o, fmt.Errorf("subagent registry: %w", err)
		}
		o.facts["registry"] = reg
	}
	return o, nil
}

func (g PreInvocation) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// promptFacts is what the policy reads of a prompt.
func promptFacts(p template.Prompt) map[string]any {
	conflicts := make([]any, len(p.Conflicts))
	for i, c := range p.Conflicts {
		conflicts[i] = map[string]any{"marker": c.Marker, "values": strings2any(c.Values)}
	}
	var words []string
	if s, ok := p.Section(PhaseSection); ok {
		words = template.Words(s.Body)
	}
	return map[string]any{
		"validation":  p.Validation,
		"origin":      p.Origin,
		"step_file":   p.StepFile,
		"conflicts":   conflicts,
		"unknown":     strings2any(p.Unknown),
		"sections":    strings2any(p.SectionNames()),
		"phase_words": strings2any(words),
	}
}

func strings2any(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// stepRead is what reading a DES-STEP-FILE found.
type stepRead struct {
	rel, abs string
	raw      []byte // the file as read
	problem  string // "", "missing", "unreadable", "outside", "invalid_json", "not_object"
	err      string
	step     *statemachine.Step
	doc      map[string]any
	schema   []statemachine.SchemaError
}

func (s stepRead) facts() map[string]any {
	f := map[string]any{"path": s.rel}
	if s.problem != "" {
		f["problem"], f["error"] = s.problem, s.err
		return f
	}
	f["document"], f["schema_errors"] = s.doc, jsonschemas.Facts(s.schema)
	return f
}

// readStep resolves and reads the step file a prompt names. Anything that
// resolves outside the root, by .., an absolute path or a symbolic link, is
// not read at all.
func (g PreInvocation) readStep(marked string) stepRead {
	return readStepFile(g.Root, g.Protected, marked)
}

// readStepFile resolves marked against root and reads it, refusing what
// resolves outside root or into DES's protected directories.
func readStepFile(rootDir string, protected []string, marked string) stepRead {
	if marked == "" {
		return stepRead{}
	}
	s, abs := locateStepFile(rootDir, marked)
	if s.problem != "" {
		return s
	}
	if (ToolUse{Root: rootDir, Protected: protected}).Concerns(ToolCall{Paths: []string{abs}}) {
		s.problem, s.err = "outside", "it is one of DES's own protected files (.des, the policy and audit directories), never a step file"
		return s
	}
	step, raw, err := statemachine.ReadStep(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.problem, s.err = "missing", "no such file"
	case errors.Is(err, statemachine.ErrNotObject):
		s.problem, s.err = "not_object", err.Error()
	case err != nil && raw != nil: // read, but did not parse
		s.problem, s.err = "invalid_json", err.Error()
	case err != nil:
		s.problem, s.err = "unreadable", err.Error()
	default:
		s.step, s.doc, s.schema, s.raw = step, step.Document(), step.Validate(), raw
	}
	return s
}

// locateStepFile is where marked leads: s.rel and s.abs, or s.problem
// "outside"; abs is the path as named, cleaned.
func locateStepFile(rootDir, marked string) (s stepRead, abs string) {
	abs = marked
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(rootDir, filepath.FromSlash(marked))
	}
	abs = filepath.Clean(abs)
	s = stepRead{rel: filepath.ToSlash(marked), abs: abs}
	if rel, ok := within(rootDir, abs); ok {
		s.rel = rel
	} else {
		s.problem, s.err = "outside", fmt.Sprintf("it names %s, outside %s", abs, rootDir)
		return s, abs
	}
	root, err := filepath.EvalSymlinks(rootDir)
	if err != nil {
		root = rootDir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		rel, ok := within(root, real)
		if !ok {
			s.problem, s.err = "outside", fmt.Sprintf("a symbolic link leads to %s, outside %s", real, rootDir)
			return s, abs
		}
		s.abs = real // read and rewrite what was checked, not whatever the link names later
		// Named as the write guard and Gate 3 name it: every record of the
		// run (Gate 1's, Gate 2's verdict) is under the step's own path,
		// so a marker naming it through a link cannot keep a failure
		// from the commit gate.
		s.rel = rel
	}
	return s, abs
}

// within reports whether path is inside root, and its slash-separated path
// relative to root.
func within(root, path string) (string, bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// inProgressFacts lists every phase IN_PROGRESS in the steps directory with
// its age; the policy applies the stale threshold.
func inProgressFacts(dir, root string, now time.Time) ([]any, error) {
	work, err := statemachine.ScanStale(dir, now, 0)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(work))
	for _, w := range work {
		file := w.File
		if rel, ok := within(root, w.File); ok {
			file = rel
		}
		out = append(out, map[string]any{
			"file":        file,
			"phase":       w.Phase,
			"started_at":  w.StartedAt.UTC().Format(time.RFC3339),
			"age_minutes": math.Round(w.Age.Minutes()*10) / 10,
		})
	}
	return out, nil
}

// decisionEntries are the audit entries of a decision: validated or
// rejected, and the safety check's outcome when it applied.
func (g PreInvocation) decisionEntries(inv Invocation, res InvocationResult, p template.Prompt, took time.Duration) []audit.Entry {
	base := map[string]any{
		"step_file": res.StepFile, "tool_use_id": inv.ToolUseID, "session_id": inv.SessionID,
		"origin": p.Origin, "level": res.Level, "codes": res.Decision.Codes(), "duration_ms": took.Milliseconds(),
		"tool": inv.tool(),
	}
	event := audit.TaskInvocationValidated
	if res.Denied() {
		event = audit.TaskInvocationRejected
	}
	entries := []audit.Entry{{Event: event, Fields: base}}
	if applies, _ := res.Decision.Info["safety_applies"].(bool); applies {
		codes := []string{}
		blocked := false
		for _, v := range append(res.Decision.Deny, res.Decision.Warn...) {
			if strings.HasPrefix(v.Code, "DES-SAFETY-") {
				codes = append(codes, v.Code)
				blocked = blocked || v.Severity == policy.Deny
			}
		}
		event := audit.PreExecuteSafetyPassed
		if blocked {
			event = audit.PreExecuteSafetyBlocked
		}
		entries = append(entries, audit.Entry{Event: event, Fields: map[string]any{
			"step_file": res.StepFile, "tool_use_id": inv.ToolUseID, "codes": codes,
		}})
	}
	return entries
}

// start moves the task to IN_PROGRESS (setting state.started_at when empty)
// and rewrites the step file atomically; a resume with a start time already
// set writes nothing. A task restarted after a failure (FAILED or PARTIAL)
// loses the failure text Gate 2 wrote, which no longer holds, and the
// phases in resets (those Gate 2 named when it failed the task, as `des-hook
// stale --resolve` resets them) go back to NOT_EXECUTED: left EXECUTED, the
// run would find them done at its start and Gate 2 would pass them.
func (g PreInvocation) start(s stepRead, now time.Time, resets []string) error {
	if s.step.Status == statemachine.TaskInProgress && s.step.StartedAt != "" {
		return nil
	}
	if s.step.Status == statemachine.TaskFailed || s.step.Status == statemachine.TaskPartial {
		s.step.ClearFailure()
	}
	if len(resets) > 0 {
		s.step.ResetPhases(resets, now, "reset by Gate 1: named by Gate 2 when it failed the task, restarted without des-hook stale --resolve")
	}
	s.step.SetTaskStatus(statemachine.TaskInProgress, now)
	data, err := s.step.Marshal()
	if err != nil {
		return err
	}
	return Announced(context.Background(), g.Writes, s.abs, data, func() error { return writeStepFile(g.Root, s.abs, data) })
}

// writeStepFile replaces the step file abs, found inside root, without
// following a link: DES writes outside Claude Code's sandbox, and the agent
// can swap a link in for the step file (or a directory above it) after it
// was read, to carry the write to a file outside the project (~/.bashrc).
// Such a link is refused (fileio.WriteAtomicIn).
func writeStepFile(root, abs string, data []byte) error {
	if real, err := filepath.EvalSymlinks(root); err == nil {
		if rel, ok := within(real, abs); ok {
			return fileio.WriteAtomicIn(real, rel, data, false)
		}
	}
	if rel, ok := within(root, abs); ok {
		return fileio.WriteAtomicIn(root, rel, data, false)
	}
	return fmt.Errorf("write %s: outside the project %s, where DES never rewrites a step file", abs, root)
}

// Run is the record of one allowed invocation, kept so that Gate 2 can find
// the step of a subagent and know what the step looked like when it started.
// It is written to the runs directory twice, as "<tool_use_id>.json" and as
// "prompt-<prompt_sha256>.json": the first is found through the
// agent-<id>.meta.json file newer Claude Code versions write beside a
// transcript, the second from the transcript's first line, which is the
// prompt itself.
type Run struct {
	ToolUseID    string    `json:"tool_use_id"`
	SessionID    string    `json:"session_id,omitempty"`
	AgentType    string    `json:"agent_type,omitempty"`
	StepFile     string    `json:"step_file"`
	Origin       string    `json:"origin,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	PromptSHA256 string    `json:"prompt_sha256"`
	// TaskStatus is the task's status once Gate 1 started it (IN_PROGRESS).
	TaskStatus string `json:"task_status_at_start,omitempty"`
	// Phases maps each phase of the log to its status at the start, so that
	// Gate 2 can tell work done in this run from work done before it.
	Phases map[string]string `json:"phases_at_start,omitempty"`
	// TaskPhase is the task graph phase the prompt named, for the wave
	// sync when the subagent stops. A run of a task phase alone has no
	// step file.
	TaskPhase string `json:"task_phase,omitempty"`
}

// safeID reports whether a tool_use_id can name a file. A loop, not a
// regexp: `{1,200}` compiles to 200 states at every process start.
func safeID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// promptKey is the name under which a run is found from its prompt.
func promptKey(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])
}

func (g PreInvocation) recordRun(inv Invocation, s stepRead, origin, taskPhase string, now time.Time) error {
	run := Run{
		ToolUseID: inv.ToolUseID, SessionID: inv.SessionID, AgentType: inv.AgentType,
		StepFile: s.rel, Origin: origin, StartedAt: now.UTC(), PromptSHA256: promptKey(inv.Prompt),
		TaskStatus: s.step.Status, Phases: map[string]string{}, TaskPhase: taskPhase,
	}
	for _, p := range s.step.Phases {
		run.Phases[p.Name] = p.Status
	}
	return g.writeRun(inv, run)
}

// recordTaskRun records the invocation of a task phase without a step
// file, so that the wave sync finds the phase when the subagent stops.
func (g PreInvocation) recordTaskRun(inv Invocation, phase string, now time.Time) error {
	return g.writeRun(inv, Run{
		ToolUseID: inv.ToolUseID, SessionID: inv.SessionID, AgentType: inv.AgentType,
		StartedAt: now.UTC(), PromptSHA256: promptKey(inv.Prompt), TaskPhase: phase,
	})
}

func (g PreInvocation) writeRun(inv Invocation, run Run) error {
	if g.RunsDir == "" || !safeID(inv.ToolUseID) {
		return nil // no key to find it by: Gate 2 falls back to the transcript
	}
	return writeRecord(g.Writes, g.Root, g.RunsDir, g.EvidenceDir, run, inv.ToolUseID+".json", "prompt-"+run.PromptSHA256+".json")
}

// readRecord decodes the record dir/name, written by writeRecord, into v;
// false when there is none.
func readRecord(dir, name string, v any) (bool, error) {
	// Regular files only, opened without blocking: a FIFO at a record's
	// name would hold the gate.
	data, err := fileio.ReadBounded(filepath.Join(dir, name), maxRecordSize)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("read %s: %w", name, err)
	}
	return true, nil
}

// maxRecordSize bounds a run record read: DES writes a few hundred bytes.
const maxRecordSize = 1 << 20

// writeRecord writes v as indented JSON to dir/name for each of names, and
// first to evidence/name when evidence is set (outside the project: not
// announced to w, and where the gates read it back: see SubagentStop),
// atomically (rename) but not fsynced: run records only help the gates find
// a step, which they can also do from the transcript, so a record lost in a
// crash costs little, while an fsync here would cost every invocation. The
// files are announced to w together, so a baseline is updated once. A dir
// inside root is reached without following links (putRecord).
func writeRecord(w Writes, root, dir, evidence string, v any, names ...string) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if evidence != "" {
		if err := putRecords("", evidence, names, data); err != nil {
			return err
		}
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
	}
	return announcedAll(context.Background(), w, paths, data, func() error {
		return putRecords(root, dir, names, data)
	})
}

// putRecords writes data to dir/name for each of names, each through a
// temporary file renamed into place. DES runs outside Claude Code's
// sandbox, and the agent can replace a directory of the project by a link:
// a dir inside root is opened from root without following a link at it or
// a parent (and created so), and the files are made and renamed within it.
func putRecords(root, dir string, names []string, data []byte) error {
	d, err := fileio.OpenDirBelow(root, dir, true)
	if err != nil {
		return fmt.Errorf("record in %s: %w", dir, err)
	}
	defer d.Close()
	for i, name := range names {
		// The other names are links to the first record's file: on some
		// disks creating a file costs fifty times what naming one does.
		if i > 0 && linkRecord(d, names[0], name) == nil {
			continue
		}
		if err := putRecord(d, name, data); err != nil {
			return err
		}
	}
	return nil
}

// linkRecord gives the record first the name name too, replacing whatever
// name was (a temporary link renamed over it, as putRecord's file is).
func linkRecord(d *os.Root, first, name string) error {
	tmp := fmt.Sprintf(".run-%d", rand.Uint64())
	if err := d.Link(first, tmp); err != nil {
		return err
	}
	if err := d.Rename(tmp, name); err != nil {
		d.Remove(tmp)
		return err
	}
	return nil
}

func putRecord(d *os.Root, name string, data []byte) error {
	var tmp string
	var f *os.File
	for range 100 {
		tmp = fmt.Sprintf(".run-%d", rand.Uint64())
		var err error
		if f, err = d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			break
		} else if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if f == nil {
		return fmt.Errorf("record %s: no free temporary name", name)
	}
	defer d.Remove(tmp) // after a successful rename this finds nothing
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return d.Rename(tmp, name)
}

// ErrBudget is matched (errors.Is) by a Gate 1 evaluation that took longer
// than its budget (setting validation_timeout_ms): the policies had more to
// judge than the budget allows (a very large task graph, say), which the
// user fixes with that setting, not git or the file system.
var ErrBudget = errors.New("the policies took longer than the validation budget")

type budgetError struct{ error }

func (e budgetError) Is(target error) bool { return target == ErrBudget }
func (e budgetError) Unwrap() error        { return e.error }
