package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/glob"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/statemachine"
	"github.com/deterministic-exec/des/template"
)

// Stop is a subagent that has stopped: Claude Code's SubagentStop event, or
// a Go caller that names the step file itself.
type Stop struct {
	// StepFile is the step to judge, relative to the root or absolute. When
	// empty, Gate 2 finds it from the transcript's prompt, else from Gate
	// 1's record of the invocation.
	StepFile       string
	TranscriptPath string // agent_transcript_path
	AgentID        string
	AgentType      string
	SessionID      string
	ToolUseID      string // the Agent/Task call that started the subagent, when known
	StopHookActive bool   // stop_hook_active: the subagent already continued once because of a block
}

// Actions Gate 2 takes on a stop.
const (
	StopActionNone   = "none"   // passed, or nothing to act on
	StopActionBlock  = "block"  // the subagent is sent back to fix its work, the step reopened for it (see reopening)
	StopActionRecord = "record" // the step file is marked FAILED with its recovery suggestions
)

// Gate 2 failure modes (the gate2_on_failure setting).
const (
	OnFailureRecord = "record"
	OnFailureBlock  = "block"
)

// StopResult is Gate 2's result and what DES did about it.
type StopResult struct {
	Result
	StepFile string // the step judged, relative to the root ("" when none was found)
	// Found tells how the step was found: "caller", "transcript" (its
	// prompt), "record" (Gate 1's record of the invocation, by the call's
	// id) or "session" (the one open run of the session); "" when it was
	// not.
	Found string
	// TranscriptState is what the transcript says against Gate 1's record
	// of the run: one of the Transcript constants ("" when no step was
	// found).
	TranscriptState string
	// NoOpinion says why Gate 2 did not judge a stop it could not place;
	// "" when it judged, or when the subagent was not DES's (no markers).
	NoOpinion string
	Action    string // one of the StopAction constants
	Marked    bool   // the step file was marked FAILED
	// Reopened are the phases DES set back to NOT_EXECUTED when it sent the
	// subagent back (block), and ReopenedTask whether it moved the task
	// from DONE back to IN_PROGRESS.
	Reopened     []string
	ReopenedTask bool
	Recovery     []string // the recovery suggestions (written to the step file when marked FAILED)
	OutOfScope   []string // changed files outside allowed_file_patterns
	Transcript   string   // the transcript path, when known
}

// Reason is the text for Claude Code and people (docs/reference.md, "Hook output"): each
// violation, denies then warnings, as "[CODE] message" on its own line, then
// the recovery suggestions (Recovery: the gate's own, then the rules',
// deduplicated) under "Recovery:". Without a deny it is Result.Reason.
func (r StopResult) Reason() string {
	if !r.Denied() || len(r.Recovery) == 0 {
		return r.Result.Reason()
	}
	var b strings.Builder
	b.WriteString(violationLines(append(slices.Clone(r.Decision.Deny), r.Decision.Warn...)))
	b.WriteString("\nRecovery:")
	var seen []string
	for _, s := range r.Recovery {
		// Each step once, in first-seen order, as Text gives them.
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(seen, s) {
			seen = append(seen, s)
			b.WriteString("\n- " + indentContinuation(s))
		}
	}
	return b.String()
}

// violationLines renders violations as Text does, without their recovery.
func violationLines(vs []policy.Violation) string {
	bare := make([]policy.Violation, len(vs))
	for i, v := range vs {
		v.Recovery = nil
		bare[i] = v
	}
	return Text(bare...)
}

// SubagentStop is Gate 2. It judges the step a subagent worked on once the
// subagent stops (des.gates.subagent_stop): the step file as the subagent
// left it, the phase changes the audit trail recorded during the run, and
// the files it changed. A failed stop is sent back to the subagent
// (OnFailure "block", once, with the step reopened so that its
// instructions are legal writes, and only when it can put the failure
// right) or marked FAILED in the step file with recovery suggestions; every
// stop DES judges is audited.
type SubagentStop struct {
	Root      string   // absolute project root
	Protected []string // DES's protected directories, never a step file and always in scope
	Audit     *audit.Log
	RunsDir   string // Gate 1's invocation records, and where Gate 2 leaves its verdicts
	// EvidenceDir holds DES's own copy of the records of RunsDir, outside
	// the project (the per-user state directory, which Claude Code's
	// sandbox denies). When set, records are read from it alone: RunsDir,
	// which sandboxed Bash may write and a background process may rewrite
	// after the effect check, is then a copy for people, never evidence.
	EvidenceDir string
	// ClaudeDirs are the directories besides Root a transcript may be read
	// from (the user's Claude directory); a path elsewhere is refused.
	ClaudeDirs []string
	OnFailure  string           // OnFailureRecord (default) or OnFailureBlock
	Now        func() time.Time // clock; nil means time.Now
	// TranscriptWait bounds the retries for a transcript not flushed yet;
	// 0 means 200ms.
	TranscriptWait time.Duration
	Logger         *slog.Logger // nil discards
	Writes         Writes       // told of the step rewrite and the verdict; nil tells nothing
	// Locks are root-relative globs of the files DES itself leaves in the
	// project beside the documents it writes (the task graph's and a
	// workflow state's ".lock", see DocumentLocks): never the subagent's
	// change, so never out of its scope.
	Locks []string
	// TestRuns returns the test runs DES saw in the run Gate 1 recorded
	// under a tool_use_id (internal/testrun's attested records), oldest
	// first, as facts {time, result, phase, command, failed}; ok false when
	// DES cannot tell (its records unreadable). nil: no TDD evidence is
	// judged.
	TestRuns func(run string) (runs []any, ok bool)
}

// DocumentLocks are the globs of the lock files DES's writers leave beside
// the task graph (internal/taskgraph.Sync) and the workflow states
// (statemachine.WriteState): the document's path + ".lock".
func DocumentLocks(taskGraph string, stateGlobs []string) []string {
	var out []string
	if taskGraph != "" {
		out = append(out, taskGraph+".lock")
	}
	for _, g := range stateGlobs {
		out = append(out, g+".lock")
	}
	return out
}

// Check runs Gate 2. A stop whose transcript has no DES markers is not
// DES's: the result has Evaluated false and nothing is recorded. Once a step
// file is known, DES is in charge: an error with Evaluated false means it
// could not decide, and a caller should fail closed (the failure is recorded
// in the trail, where Gate 3 finds it, and in the verdict PostToolUse
// reads); an error with Evaluated true means it decided but could not carry
// the decision out (not recorded, or the step not marked), and the result
// says what was done. A stop DES cannot place at all (no readable transcript,
// no record of the invocation) gets no opinion, with the reason in
// NoOpinion and in the trail.
func (g SubagentStop) Check(ctx context.Context, ev Evaluator, s Stop) (StopResult, error) {
	res := StopResult{Result: Result{Gate: policy.SubagentStop}, Action: StopActionNone, Transcript: s.TranscriptPath}
	start := time.Now()
	loc, err := g.locate(ctx, s)
	if err != nil {
		res.NoOpinion = err.Error()
		return res, g.record(ctx, s, res, start)
	}
	if loc.stepFile == "" {
		return res, nil // not a DES subagent
	}
	res.Found, res.TranscriptState = loc.found, loc.transcript.state
	if s.ToolUseID == "" {
		s.ToolUseID = loc.toolUseID
	}
	step := readStepFile(g.Root, g.Protected, loc.stepFile)
	res.StepFile = step.rel

	in, outside, err := g.input(ctx, step, loc)
	if err == nil {
		res.OutOfScope = outside
		res.Decision, err = ev.Evaluate(ctx, policy.SubagentStop, in)
	}
	if err != nil {
		err = fmt.Errorf("gate 2: %w", err)
		res.Result = Internal(policy.SubagentStop, err)
		res.Evaluated = false // nothing was decided: the caller fails closed
		// The trail (for Gate 3) and the verdict (for the orchestrator, at
		// PostToolUse) say that the step was not judged.
		_ = g.record(ctx, s, res, start)
		_ = g.keepVerdict(s, res, loc)
		return res, err
	}
	res.Evaluated = true
	if res.Denied() {
		res.Action = StopActionRecord
		// Block once: stop_hook_active says the subagent already went back,
		// and so does an earlier block of the same run, should a Claude
		// Code version not send stop_hook_active.
		if g.OnFailure == OnFailureBlock && !s.StopHookActive && fixableInRun(res.Decision.Deny) && !g.blockedBefore(s, loc) {
			res.Action = StopActionBlock
		}
		res.Recovery = g.recovery(res, s, step.taskStatus())
	}
	if err := g.apply(ctx, s, &res, step, loc, start); err != nil {
		return res, err
	}
	return res, nil
}

// fixableInRun reports whether the subagent could put every deny right if
// sent back: a rule marks with fixable_in_run false what it cannot (a
// missing step file, a tampered transcript, a bad move already in the
// run's trail), and a block would send it back to work it cannot fix.
func fixableInRun(deny []policy.Violation) bool {
	for _, v := range deny {
		if f, ok := v.Details["fixable_in_run"].(bool); ok && !f {
			return false
		}
	}
	return true
}

// location is where a stop's step was found.
type location struct {
	stepFile  string
	found     string
	run       *Run   // Gate 1's record, nil when there is none
	toolUseID string // the Agent/Task call, when known
	// transcript is what the transcript says against the run record.
	transcript transcriptCheck
}

// States of a transcript checked against Gate 1's record of the run
// (input.transcript.state).
const (
	TranscriptAgrees     = "agrees"     // its prompt names the run's step file
	TranscriptMissing    = "missing"    // the file is not there
	TranscriptUnreadable = "unreadable" // it cannot be read, or holds no prompt
	TranscriptNoMarkers  = "no_markers" // its prompt has no DES markers, or no step file
	TranscriptOtherStep  = "other_step" // its prompt names another step file
	// TranscriptPromptChanged: its prompt names the run's step file but is
	// not the prompt Gate 1 allowed (Claude Code writes the Agent/Task
	// prompt verbatim as the transcript's first user message).
	TranscriptPromptChanged = "prompt_changed"
	TranscriptNotChecked    = "not_checked" // no run record to check it against
)

// transcriptCheck is input.transcript of des.gates.subagent_stop.
type transcriptCheck struct {
	path     string // as the event names it
	state    string
	stepFile string // the step file the transcript's prompt names
	err      string
}

func (c transcriptCheck) facts() map[string]any {
	return map[string]any{
		"checked": c.state != TranscriptNotChecked, "state": c.state, "path": c.path,
		"step_file": c.stepFile, "error": c.err,
	}
}

// locate finds the step of a stop, trusting what DES recorded over the
// transcript, which the subagent can edit or delete: the caller's step;
// else Gate 1's record of the run, found by the Agent/Task call's id (the
// caller's, the agent-<id>.meta.json beside the transcript, or the binding
// Bind made at the subagent's first tool call), by the
// transcript's prompt, or, when the transcript cannot be read, as the one
// run of the session still open (same agent type); else the transcript's
// DES-STEP-FILE marker. With a run record the transcript is checked
// against it (location.transcript). An empty stepFile with a nil error
// means the subagent is not DES's.
func (g SubagentStop) locate(ctx context.Context, s Stop) (location, error) {
	transcript, terr := g.transcript(s.TranscriptPath)
	toolUseID := s.ToolUseID
	if toolUseID == "" && terr == nil {
		toolUseID = metaToolUseID(transcript)
	}
	if toolUseID == "" {
		toolUseID = g.boundToolUseID(s.AgentID)
	}
	run := g.readRun(toolUseID)
	if s.StepFile != "" {
		return location{stepFile: s.StepFile, found: "caller", run: run, toolUseID: toolUseID, transcript: transcriptCheck{path: s.TranscriptPath, state: TranscriptNotChecked}}, nil
	}
	var prompt string
	if terr == nil {
		wait := g.TranscriptWait
		if wait == 0 {
			wait = 200 * time.Millisecond
		}
		prompt, terr = readTranscriptPrompt(ctx, transcript, wait)
	}
	if terr == nil {
		p := template.Parse(prompt)
		marked := p.HasMarkers && p.StepFile != ""
		found := "record"
		if run == nil && marked {
			run, found = g.readRun("prompt-"+promptKey(prompt)), "transcript"
		}
		if run == nil || run.StepFile == "" {
			if !marked {
				return location{}, nil // not a DES subagent, as far as DES recorded
			}
			return location{stepFile: p.StepFile, found: "transcript", toolUseID: toolUseID, transcript: transcriptCheck{path: s.TranscriptPath, state: TranscriptNotChecked, stepFile: p.StepFile}}, nil
		}
		check := transcriptCheck{path: s.TranscriptPath, state: TranscriptAgrees, stepFile: p.StepFile}
		switch {
		case !marked:
			check.state = TranscriptNoMarkers
		case markedRel(g.Root, p.StepFile) != run.StepFile:
			check.state = TranscriptOtherStep
		case run.PromptSHA256 != "" && promptKey(prompt) != run.PromptSHA256:
			check.state = TranscriptPromptChanged
		}
		return location{stepFile: run.StepFile, found: found, run: run, toolUseID: cmpOr(toolUseID, run.ToolUseID), transcript: check}, nil
	}
	found := "record"
	if run == nil || run.StepFile == "" {
		run, found = g.openSessionRun(s), "session"
	}
	if run != nil && run.StepFile != "" {
		check := transcriptCheck{path: s.TranscriptPath, state: TranscriptUnreadable, err: terr.Error()}
		if errors.Is(terr, errTranscriptMissing) {
			check.state = TranscriptMissing
		}
		return location{stepFile: run.StepFile, found: found, run: run, toolUseID: cmpOr(toolUseID, run.ToolUseID), transcript: check}, nil
	}
	return location{}, fmt.Errorf("cannot tell which step the subagent worked on: transcript %s: %w; and no record of its invocation", cmpOr(s.TranscriptPath, `""`), terr)
}

// markedRel is a DES-STEP-FILE marker as Gate 1 records it (readStepFile):
// relative to the root, slash-separated, when it is inside the root, and
// through any symbolic link to the file it names.
func markedRel(root, marked string) string {
	s, _ := locateStepFile(root, marked)
	return s.rel
}

// Bounds of the search for a session's open run.
const (
	sessionRunAge   = RunRetention // runs started earlier are not looked at
	sessionRunFiles = 1000         // run records read at most
)

// openSessionRun is the run of the stop's session that Gate 1 started and
// Gate 2 has not judged yet (no verdict, or a block the subagent went back
// to work after), of the stop's agent type when both are known; nil when
// there is none or more than one, since DES cannot tell which of them
// stopped.
func (g SubagentStop) openSessionRun(s Stop) *Run {
	if g.RunsDir == "" || s.SessionID == "" {
		return nil
	}
	ents, err := os.ReadDir(g.records())
	if err != nil {
		return nil
	}
	var found *Run
	read := 0
	for _, e := range ents {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || strings.HasPrefix(name, "prompt-") || strings.HasPrefix(name, "agent-") || strings.HasSuffix(id, ".stop") || !safeID(id) {
			continue
		}
		if info, err := e.Info(); err != nil || g.now().Sub(fileio.LastChange(info)) > sessionRunAge {
			continue
		}
		if read++; read > sessionRunFiles {
			return nil // too many to tell
		}
		r := g.readRun(id)
		if r == nil || r.SessionID != s.SessionID || r.ToolUseID != id || r.StepFile == "" {
			continue // a task phase's run without a step is not Gate 2's
		}
		if s.AgentType != "" && r.AgentType != "" && s.AgentType != r.AgentType {
			continue
		}
		if v, err := ReadStopRecord(g.records(), r.ToolUseID, ""); err != nil || (v != nil && v.Action != StopActionBlock) {
			continue
		}
		if found != nil {
			return nil // two open runs: either could be this one
		}
		found = r
	}
	return found
}

// transcript resolves a transcript path against the root and refuses one
// outside the project and the user's Claude directory.
func (g SubagentStop) transcript(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("the event names none: %w", errTranscriptMissing)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(g.Root, path)
	}
	if !inside(path, append([]string{g.Root}, g.ClaudeDirs...)...) {
		return "", errors.New("refused: it is outside the project and the user's Claude directory")
	}
	return path, nil
}

// records is the directory records are read from: EvidenceDir when set,
// else RunsDir.
func (g SubagentStop) records() string { return cmpOr(g.EvidenceDir, g.RunsDir) }

// readRun reads the run record of key (a tool_use_id, or "prompt-" and the
// prompt's hash); nil when there is none.
func (g SubagentStop) readRun(key string) *Run {
	if g.RunsDir == "" || !safeID(key) {
		return nil
	}
	var r Run
	if ok, err := readRecord(g.records(), key+".json", &r); !ok || err != nil {
		return nil // no record to go by: Gate 2 does without
	}
	return &r
}

// runEvents are the trail's events of a step's status changes.
var runEvents = []audit.EventType{audit.PhaseStarted, audit.PhaseCompleted, audit.PhaseSkipped, audit.PhaseFailed, audit.TaskStateChanged}

// input builds des.gates.subagent_stop's input document (docs/policies.md)
// and returns the out-of-scope files with it.
func (g SubagentStop) input(ctx context.Context, step stepRead, loc location) (map[string]any, []string, error) {
	in := map[string]any{"step": stopStepFacts(step), "transcript": loc.transcript.facts()}
	if step.step == nil {
		return in, nil, nil
	}
	run := map[string]any{"source": "transcript"}
	q := audit.Query{StepFile: step.rel, Events: runEvents}
	if r := loc.run; r != nil && r.StepFile == step.rel {
		run["source"], run["started_at"] = "gate1", r.StartedAt.UTC().Format(time.RFC3339Nano)
		if r.TaskStatus != "" {
			run["task_status_at_start"] = r.TaskStatus
		}
		if r.Phases != nil {
			phases := make(map[string]any, len(r.Phases))
			for k, v := range r.Phases {
				phases[k] = v
			}
			run["phases_at_start"] = phases
		}
		q.Since = r.StartedAt
	}
	events := []any{}
	if g.Audit != nil {
		entries, err := g.Audit.Read(ctx, q)
		if err != nil {
			return nil, nil, fmt.Errorf("read the run's events: %w", err)
		}
		for _, e := range entries {
			events = append(events, eventFacts(e))
		}
	}
	run["events"] = events
	in["run"] = run
	if r := loc.run; r != nil && r.StepFile == step.rel && g.TestRuns != nil {
		runs, ok := g.TestRuns(r.ToolUseID)
		if runs == nil {
			runs = []any{}
		}
		in["tests"] = map[string]any{"checked": ok, "runs": runs}
	}
	scope, outside := g.scope(ctx, step)
	in["scope"] = scope
	return in, outside, nil
}

func eventFacts(e audit.Entry) map[string]any {
	f := map[string]any{"event": string(e.Event), "by": "write", "confirmed": false}
	for _, k := range []string{"phase", "from", "to", "by"} {
		if v, ok := e.Fields[k].(string); ok {
			f[k] = v
		}
	}
	if c, ok := e.Fields["confirmed"].(bool); ok {
		f["confirmed"] = c
	}
	f["attested"] = e.Attested
	return f
}

// stopStepFacts are the step facts Gate 2's rules read.
func stopStepFacts(s stepRead) map[string]any {
	f := s.facts()
	st := s.step
	if st == nil {
		return f
	}
	// The write guard's status facts, and what the stop rules read besides.
	for k, v := range stepStatusFacts(st) {
		f[k] = v
	}
	for i, p := range st.Phases {
		pf := f["phases"].([]any)[i].(map[string]any)
		pf["index"], pf["outcome_details"] = p.Pos, p.OutcomeDetails
		setNum(pf, "turn_count", p.TurnCount)
		setNum(pf, "max_turns", p.MaxTurns)
		setNum(pf, "duration_seconds", p.DurationSeconds)
	}
	budget := map[string]any{}
	setNum(budget, "max_turns", st.MaxTurns)
	setNum(budget, "duration_minutes", st.DurationMinutes)
	setNum(budget, "total_extensions_minutes", st.TotalExtensionsMinutes)
	f["workflow_type"], f["budget"] = st.WorkflowType, budget
	f["validation_output"], f["documentation"] = st.ValidationOutput, st.Documentation
	if len(st.PhaseLogPath) > 0 {
		f["phase_log"] = "/" + strings.Join(st.PhaseLogPath, "/")
	}
	if sf := st.Safety; sf != nil {
		f["safety"] = map[string]any{"is_destructive": sf.IsDestructive, "rollback_plan": sf.RollbackPlan, "affects_production": sf.AffectsProduction}
	}
	return f
}

func setNum[T int | float64](m map[string]any, k string, v *T) {
	if v != nil {
		m[k] = *v
	}
}

// scope gathers the scope facts: the changed files outside the step's
// allowed_file_patterns. Without patterns everything is in scope and git is
// not asked.
func (g SubagentStop) scope(ctx context.Context, step stepRead) (map[string]any, []string) {
	patterns := step.step.AllowedFilePatterns
	f := map[string]any{"checked": true, "patterns": strings2any(patterns), "changed": 0, "outside": []any{}, "error": ""}
	if len(patterns) == 0 {
		return f, nil
	}
	files, err := changedFiles(ctx, g.Root)
	if err != nil {
		f["checked"], f["error"] = false, err.Error()
		return f, nil
	}
	var always []string
	for _, p := range append([]string{DESDir}, g.Protected...) {
		if rel, ok := within(g.Root, absUnder(g.Root, p)); ok {
			always = append(always, rel)
		}
	}
	files = slices.DeleteFunc(files, func(f string) bool {
		return slices.ContainsFunc(g.Locks, func(l string) bool { return glob.Match(l, f) })
	})
	outside := outOfScope(files, patterns, always, step.rel)
	f["changed"], f["outside"] = len(files), strings2any(outside)
	return f, outside
}

func absUnder(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, filepath.FromSlash(p))
}

// recovery composes the suggestions for a failed stop: the transcript to
// read, the phase to reset, the command to resume, then the rules' own.
func (g SubagentStop) recovery(res StopResult, s Stop, task string) []string {
	var out []string
	if res.Action == StopActionBlock {
		// The subagent goes back to work: the rules' own steps are its
		// instructions, once DES has reopened the step (reopen); resetting
		// with stale --resolve is for after a recorded failure.
		return append(reopenRecovery(res, task), ruleRecovery(res, notResolution)...)
	}
	if s.TranscriptPath != "" {
		out = append(out, fmt.Sprintf("Read the subagent's transcript %s to see where and why it stopped.", s.TranscriptPath))
	} else {
		out = append(out, fmt.Sprintf("Read the audit trail's events for %s (step_file) to see which phases the subagent recorded.", res.StepFile))
	}
	phase, _ := res.Decision.Info["reset_phase"].(string)
	if phase == "" {
		for _, v := range res.Decision.Deny {
			if p, ok := v.Details["phase"].(string); ok && p != "" {
				phase = p
				break
			}
		}
	}
	resets := stringList(res.Decision.Info["reset_phases"])
	resolve := fmt.Sprintf("`des-hook stale --resolve %s`", res.StepFile)
	switch {
	case slices.Contains(res.Decision.Codes(), "DES-STEPFILE-MISSING"):
		// Nothing to reset until the file is back (the rule says how).
	case len(resets) > 0:
		out = append(out, fmt.Sprintf("Reset %s to NOT_EXECUTED (resume from %s): run %s, which resets them, makes the task PARTIAL and records it in the audit trail.", phaseList(resets), cmpOr(phase, resets[0]), resolve))
	case phase != "":
		out = append(out, fmt.Sprintf("Make the step resumable from phase %s: run %s, which resets any unfinished phase to NOT_EXECUTED, makes the task PARTIAL and records it in the audit trail.", phase, resolve))
	default:
		out = append(out, fmt.Sprintf("Make the step resumable: run %s, which resets any unfinished phase to NOT_EXECUTED, makes the task PARTIAL and records it in the audit trail.", resolve))
	}
	out = append(out, fmt.Sprintf("Resume: start the subagent again on %s with the same DES prompt; Gate 1 moves the task back to IN_PROGRESS.", res.StepFile))
	// The reset above covers the rules' own resolution advice.
	return append(out, ruleRecovery(res, notResolution)...)
}

// notResolution keeps a rule's recovery step unless it is the advice to run
// stale --resolve, which Gate 2 gives itself (record) or makes moot (block).
func notResolution(r string) bool { return !strings.Contains(r, "stale --resolve") }

// reopenRecovery tells a subagent sent back what DES changed in its step
// (reopen), so that the rules' steps that follow are legal writes.
func reopenRecovery(res StopResult, taskStatus string) []string {
	phases, task := reopening(res, taskStatus)
	switch {
	case len(phases) > 0 && task:
		return []string{fmt.Sprintf("DES set %s of %s back to NOT_EXECUTED and the task back to IN_PROGRESS, so that the work can be redone through the write guard: re-read the step file before writing it, and write state.status DONE again once every phase is finished.", phaseList(phases), res.StepFile)}
	case len(phases) > 0:
		return []string{fmt.Sprintf("DES set %s of %s back to NOT_EXECUTED, so that the work can be redone through the write guard; re-read the step file before writing it.", phaseList(phases), res.StepFile)}
	case task:
		return []string{fmt.Sprintf("DES set the task of %s back to IN_PROGRESS: write state.status DONE again once every phase is finished, or FAILED or PARTIAL if the work stops here; re-read the step file before writing it.", res.StepFile)}
	}
	return nil
}

// reopening is what Gate 2 changes in a step when it sends the subagent
// back (block): the phases finished around the write guard go back to
// NOT_EXECUTED, since no legal write leads from EXECUTED or SKIPPED to
// redoing them, and a DONE task, terminal in the table, goes back to
// IN_PROGRESS, since the subagent is back at work. Everything else the
// rules ask for is a legal write from where the step stands.
func reopening(res StopResult, taskStatus string) (phases []string, task bool) {
	if ps, ok := res.Decision.Info["redo_phases"].([]any); ok {
		for _, p := range ps {
			if s, ok := p.(string); ok && s != "" {
				phases = append(phases, s)
			}
		}
	}
	return phases, taskStatus == statemachine.TaskDone
}

// ruleRecovery is the rules' recovery steps that keep holds, deduplicated.
func ruleRecovery(res StopResult, keep func(string) bool) []string {
	var out []string
	for _, v := range res.Decision.Deny {
		for _, r := range v.Recovery {
			if keep(r) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// blockedBefore reports whether Gate 2 already sent this run's subagent
// back once.
func (g SubagentStop) blockedBefore(s Stop, loc location) bool {
	rec, err := ReadStopRecord(g.records(), cmpOr(s.ToolUseID, loc.toolUseID), s.AgentID)
	return err == nil && rec != nil && rec.Action == StopActionBlock
}

func phaseList(names []string) string {
	if len(names) == 1 {
		return "phase " + names[0]
	}
	return "phases " + strings.Join(names, ", ")
}

// StopRecord is Gate 2's verdict on a run, kept in the runs directory as
// "<tool_use_id>.stop.json" (or "agent-<agent_id>.stop.json" when the call
// is not known) so that PostToolUse for the Agent/Task call can tell the
// orchestrator.
type StopRecord struct {
	ToolUseID string    `json:"tool_use_id,omitempty"`
	AgentID   string    `json:"agent_id,omitempty"`
	StepFile  string    `json:"step_file"`
	At        time.Time `json:"at"`
	Failed    bool      `json:"failed"`
	Action    string    `json:"action"`
	Marked    bool      `json:"marked"` // the step file was marked FAILED
	Reason    string    `json:"reason,omitempty"`
	// Codes are a failure's codes (codes in the trail), kept here for Gate 3
	// (KeptFailures).
	Codes []string `json:"codes,omitempty"`
	// ResetPhases are the phases a failure names for `des-hook stale
	// --resolve` to reset besides the unfinished ones (reset_phases in the
	// trail), kept here too since sandboxed Bash may rewrite the trail.
	ResetPhases []string `json:"reset_phases,omitempty"`
}

// apply carries out the decision: the audit entries (write-ahead), then the
// step file marked FAILED when the action is to record, then the verdict
// for PostToolUse. The rewrite is prepared before anything is recorded, so
// the trail never claims a move that could not be made.
func (g SubagentStop) apply(ctx context.Context, s Stop, res *StopResult, step stepRead, loc location, start time.Time) error {
	var extra []audit.Entry
	if len(res.OutOfScope) > 0 {
		extra = append(extra, audit.Entry{Event: audit.ScopeViolation, Fields: map[string]any{
			"step_file": res.StepFile, "files": slices.Clone(res.OutOfScope), "patterns": slices.Clone(step.step.AllowedFilePatterns),
			"agent_id": s.AgentID, "session_id": s.SessionID,
		}})
	}
	var rewrite []byte
	if res.Action == StopActionRecord && step.step != nil {
		from := cmpOr(step.step.Status, statemachine.TaskTodo)
		reason, suggestions := gate2Failure(*res), res.Recovery
		if from == statemachine.TaskFailed { // keep what the subagent said when it gave up
			if step.step.FailureReason != "" {
				reason += "\nThe subagent's own reason: " + step.step.FailureReason
			}
			for _, r := range step.step.RecoverySuggestions {
				if !slices.Contains(suggestions, r) {
					suggestions = append(suggestions, r)
				}
			}
		}
		step.step.SetFailure(reason, suggestions)
		data, err := step.step.Marshal()
		if err != nil {
			res.Action = StopActionNone // nothing can be marked; the trail says FAIL all the same
			g.logger().Warn("gate 2: the step cannot be marked FAILED", "step_file", res.StepFile, "err", err)
		} else {
			rewrite = data
			if from != statemachine.TaskFailed {
				extra = append(extra, audit.Entry{Event: audit.TaskStateChanged, Fields: map[string]any{
					"step_file": res.StepFile, "from": from, "to": statemachine.TaskFailed, "by": "gate2",
				}})
			}
		}
	} else if res.Action == StopActionRecord {
		res.Action = StopActionNone // no usable step file to mark
	}
	if res.Action == StopActionBlock && step.step != nil {
		if phases, task := reopening(*res, step.taskStatus()); len(phases) > 0 || task {
			now := g.now()
			step.step.ResetPhases(phases, now, "reset by Gate 2: finished around the write guard; the subagent was sent back to redo it")
			if task {
				step.step.SetTaskStatus(statemachine.TaskInProgress, now)
			}
			data, err := step.step.Marshal()
			if err != nil {
				// Not sent back to instructions it could not follow; the
				// trail still records the failure for Gate 3.
				res.Action = StopActionNone
				g.logger().Warn("gate 2: the step cannot be reopened, so the subagent is not sent back", "step_file", res.StepFile, "err", err)
			} else {
				rewrite, res.Reopened, res.ReopenedTask = data, phases, task
				if task {
					extra = append(extra, audit.Entry{Event: audit.TaskStateChanged, Fields: map[string]any{
						"step_file": res.StepFile, "from": statemachine.TaskDone, "to": statemachine.TaskInProgress, "by": "gate2",
					}})
				}
			}
		}
	}
	if err := g.record(ctx, s, *res, start, extra...); err != nil {
		_ = g.keepVerdict(s, *res, loc)
		return fmt.Errorf("gate 2: %w: %w", ErrNotRecorded, err)
	}
	if rewrite != nil {
		what, done := "marked FAILED", "the TASK_STATE_CHANGED to FAILED recorded just before was not applied"
		if res.Action == StopActionBlock {
			what, done = "reopened", "the reopening recorded just before was not applied"
		}
		if err := g.rewrite(step, rewrite); err != nil {
			res.Action, res.Reopened, res.ReopenedTask = StopActionNone, nil, false
			if g.Audit != nil { // say that the recorded move did not happen
				_ = g.Audit.Append(ctx, audit.Entry{Event: audit.HookError, Fields: map[string]any{
					"step_file": res.StepFile, "error": err.Error(),
					"msg": done + ": the step file could not be rewritten",
				}})
			}
			_ = g.keepVerdict(s, *res, loc)
			return fmt.Errorf("gate 2: the stop failed but %s could not be %s: %w", res.StepFile, what, err)
		}
		res.Marked = res.Action == StopActionRecord
	}
	return g.keepVerdict(s, *res, loc)
}

// errChangedMeanwhile refuses to overwrite a step file that changed while
// Gate 2 judged it (a resolution, an orchestrator): the judgement was of
// the old content.
var errChangedMeanwhile = errors.New("the step file changed while Gate 2 judged it; judge it again")

func (g SubagentStop) rewrite(step stepRead, data []byte) error {
	// A regular file only, opened without blocking: a FIFO swapped in
	// would hold the gate.
	now, err := fileio.ReadBounded(step.abs, statemachine.MaxStepFileSize)
	if err != nil {
		return err
	}
	if !bytes.Equal(now, step.raw) {
		return errChangedMeanwhile
	}
	return Announced(context.Background(), g.Writes, step.abs, data, func() error { return writeStepFile(g.Root, step.abs, data) })
}

func (g SubagentStop) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// gate2Failure is the failure_reason written to the step file.
func gate2Failure(res StopResult) string {
	return "DES Gate 2 failed the subagent's stop: " + strings.Join(res.Decision.Codes(), ", ") + "\n" + violationLines(res.Decision.Deny)
}

// record appends SUBAGENT_STOP_VALIDATION (and extra entries before it).
func (g SubagentStop) record(ctx context.Context, s Stop, res StopResult, start time.Time, extra ...audit.Entry) error {
	if g.Audit == nil {
		return nil
	}
	outcome := "PASS"
	switch {
	case res.NoOpinion != "":
		outcome = "NO_OPINION"
	case res.Denied():
		outcome = "FAIL"
	}
	fields := map[string]any{
		"step_file": res.StepFile, "outcome": outcome, "codes": res.Decision.Codes(), "action": res.Action,
		"agent_id": s.AgentID, "agent_type": s.AgentType, "tool_use_id": s.ToolUseID, "session_id": s.SessionID,
		"transcript": s.TranscriptPath, "duration_ms": time.Since(start).Milliseconds(),
	}
	if res.NoOpinion != "" {
		fields["reason"] = res.NoOpinion
	}
	if res.Found != "" {
		fields["found"], fields["transcript_state"] = res.Found, res.TranscriptState
	}
	if len(res.Reopened) > 0 {
		fields["reopened_phases"] = slices.Clone(res.Reopened) // set NOT_EXECUTED when the subagent was sent back
	}
	if phases, ok := res.Decision.Info["reset_phases"].([]any); ok && res.Denied() {
		fields["reset_phases"] = phases // what `des-hook stale --resolve` resets besides unfinished phases
	}
	return g.Audit.Append(ctx, append(extra, audit.Entry{Event: audit.SubagentStopValidation, Fields: fields})...)
}

// keepVerdict writes the StopRecord for PostToolUse.
func (g SubagentStop) keepVerdict(s Stop, res StopResult, loc location) error {
	if g.RunsDir == "" {
		return nil
	}
	id := s.ToolUseID
	if id == "" && loc.run != nil {
		id = loc.run.ToolUseID
	}
	names := stopRecordNames(id, s.AgentID)
	if len(names) == 0 {
		return nil
	}
	rec := StopRecord{ToolUseID: id, AgentID: s.AgentID, StepFile: res.StepFile, At: g.now().UTC(), Failed: res.Denied(), Action: res.Action, Marked: res.Marked}
	if res.Denied() {
		rec.Reason, rec.Codes = res.Reason(), res.Decision.Codes()
		rec.ResetPhases = stringList(res.Decision.Info["reset_phases"])
	}
	if err := writeRecord(g.Writes, g.Root, g.RunsDir, g.EvidenceDir, rec, names[0]); err != nil {
		return fmt.Errorf("gate 2: keep the verdict for the orchestrator: %w", err)
	}
	return nil
}

func (g SubagentStop) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// ReadStopRecord returns Gate 2's verdict on the run started by the
// Agent/Task call toolUseID, else on the agent agentID; nil when there is
// none (the stop was not DES's, or has not happened).
func ReadStopRecord(runsDir, toolUseID, agentID string) (*StopRecord, error) {
	for _, n := range stopRecordNames(toolUseID, agentID) {
		var r StopRecord
		ok, err := readRecord(runsDir, n, &r)
		if err != nil {
			return nil, err
		}
		if ok {
			return &r, nil
		}
	}
	return nil, nil
}

// stopRecordNames are the names a verdict is kept under, the preferred
// first: the Agent/Task call's id, else the agent's.
func stopRecordNames(toolUseID, agentID string) []string {
	var names []string
	if safeID(toolUseID) {
		names = append(names, toolUseID+".stop.json")
	}
	if safeID(agentID) {
		names = append(names, "agent-"+agentID+".stop.json")
	}
	return names
}

// agentBinding ties a subagent to the Agent/Task call that started it,
// kept as "agent-<agent_id>.run.json" in the runs directory. ToolUseID ""
// records that the subagent is not one Gate 1 started.
type agentBinding struct {
	AgentID   string    `json:"agent_id"`
	ToolUseID string    `json:"tool_use_id"`
	At        time.Time `json:"at"`
}

func bindingName(agentID string) string { return "agent-" + agentID + ".run.json" }

// boundToolUseID is the call Bind tied the agent to; "" when none.
func (g SubagentStop) boundToolUseID(agentID string) string {
	if g.RunsDir == "" || !safeID(agentID) {
		return ""
	}
	var b agentBinding
	if ok, err := readRecord(g.records(), bindingName(agentID), &b); !ok || err != nil || !safeID(b.ToolUseID) {
		return ""
	}
	return b.ToolUseID
}

// Bind ties a subagent to its run the first time DES sees one of its tool
// calls (PreToolUse with agent_id), while its transcript is still as
// Claude Code wrote it: a tool call runs after its PreToolUse hook, so the
// subagent cannot have edited the transcript yet. sessionTranscript is the
// event's transcript_path (the parent session's); the subagent's is
// <session>/subagents/agent-<agent_id>.jsonl beside it. The run is found as
// at the stop (the meta file's call id, else the prompt's hash); a
// subagent Gate 1 did not start is recorded as such, so its later calls
// read nothing. In a project where Gate 1 never ran (no runs directory),
// or once the agent is bound, Bind does nothing.
func (g SubagentStop) Bind(ctx context.Context, agentID, sessionTranscript string) error {
	if g.RunsDir == "" || !safeID(agentID) || sessionTranscript == "" {
		return nil
	}
	if fi, err := os.Stat(g.records()); err != nil || !fi.IsDir() {
		return nil
	}
	name := bindingName(agentID)
	if _, err := os.Stat(filepath.Join(g.records(), name)); err == nil {
		return nil
	}
	path := filepath.Join(strings.TrimSuffix(sessionTranscript, filepath.Ext(sessionTranscript)), "subagents", "agent-"+agentID+".jsonl")
	path, err := g.transcript(path)
	if err != nil {
		return fmt.Errorf("bind agent %s: transcript: %w", agentID, err)
	}
	id := metaToolUseID(path)
	run := g.readRun(id)
	if run == nil {
		prompt, err := readTranscriptPrompt(ctx, path, 0)
		if err != nil {
			return fmt.Errorf("bind agent %s: transcript %s: %w", agentID, path, err)
		}
		if p := template.Parse(prompt); p.HasMarkers {
			run = g.readRun("prompt-" + promptKey(prompt))
		}
	}
	b := agentBinding{AgentID: agentID, At: g.now().UTC()}
	if run != nil {
		b.ToolUseID = run.ToolUseID
	}
	return writeRecord(g.Writes, g.Root, g.RunsDir, g.EvidenceDir, b, name)
}

// taskStatus is the step's task status as read, "" when the step could not be.
func (s stepRead) taskStatus() string {
	if s.step == nil {
		return ""
	}
	return s.step.Status
}

// stringList is the strings of v, a JSON array as a policy or the trail
// gives it ([]any); anything else holds none.
func stringList(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
