package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/template"
)

// One handler per route of defaultRoutes. Each gathers what its gate needs
// from the event, asks the library (h.engine) and maps the decision to a
// response with the constructors of output.go; the decision itself belongs
// to the library.

// preToolUseSubagent is Gate 1: PreToolUse for Agent/Task. nWave markers
// in the prompt put DES in charge; so does a multi-phase workflow state,
// which the library looks for.
func preToolUseSubagent(ctx context.Context, h *hookEnv, ev *Event) response {
	// Only the prompt decides whether DES is in charge: another field of an
	// unexpected type (a future Claude Code's) must not switch Gate 1 off.
	prompt, err := subagentPrompt(ev)
	if err != nil {
		if bytes.Contains(ev.ToolInput, []byte("DES-")) {
			h.requireValidation()
			return h.internalError(true, fmt.Errorf("cannot read the prompt of the %s call: %w", ev.ToolName, err))
		}
		h.logger.Warn("hook: no prompt in the subagent call; no opinion", "err", err)
		return noOpinion()
	}
	inv := gate.Invocation{Tool: ev.ToolName, Prompt: prompt, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, Cwd: workflowCwd(ev, h.root), AgentID: ev.AgentID}
	fields := ev.SubagentStrings() // each on its own: a mistyped field loses only itself
	inv.AgentType, inv.Description = fields.SubagentType, fields.Description
	nwave := template.Parse(prompt).HasMarkers
	if nwave {
		h.requireValidation()
	} else if !isdlc.HasState(h.root, inv.Cwd, h.lookupEnv) {
		// A task graph phase or the concurrency limit may still apply.
		orch, err := orchestrationApplies(h.root, prompt, ev.AgentID, h.lookupEnv)
		if err != nil {
			return h.internalError(orch, err)
		}
		if !orch {
			return noOpinion() // ad hoc: DES has no opinion, and builds nothing
		}
		h.requireValidation()
	}
	return invocationResponse(ctx, h, func(eng *des.Engine) (gate.InvocationResult, error) {
		return eng.PreInvocation(ctx, inv)
	})
}

// preToolUseSkill is Gate 1 for a Skill call: only the phase guards judge
// it (an `/isdlc advance` while the phase's gate is unmet, say), and only
// where a workflow state is found.
func preToolUseSkill(ctx context.Context, h *hookEnv, ev *Event) response {
	var in struct {
		Skill string `json:"skill"`
		Args  string `json:"args"`
	}
	if err := ev.toolInput(&in); err != nil {
		h.logger.Warn("hook: cannot read the Skill call; no opinion", "err", err)
		return noOpinion()
	}
	inv := gate.Invocation{Skill: in.Skill, Args: in.Args, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, Cwd: workflowCwd(ev, h.root)}
	if !isdlc.HasState(h.root, inv.Cwd, h.lookupEnv) {
		return noOpinion() // no workflow: nothing judges a Skill call, and nothing is built
	}
	return invocationResponse(ctx, h, func(eng *des.Engine) (gate.InvocationResult, error) {
		return eng.CheckSkill(ctx, inv)
	})
}

// invocationResponse runs a Gate 1 check and maps it to PreToolUse output.
// DES is in charge, and an error fails closed, when the prompt carried
// nWave markers or a workflow state was found.
func invocationResponse(ctx context.Context, h *hookEnv, check func(*des.Engine) (gate.InvocationResult, error)) response {
	h.requireValidation() // nWave markers, or a workflow state the caller found
	eng, err := h.engine(ctx)
	if err != nil {
		return h.internalError(true, err)
	}
	res, err := check(eng)
	if err != nil && (!res.Evaluated || !res.Denied()) {
		// An allow DES could not carry out or record fails closed; so does
		// an error when the state found a moment ago has gone (it was there).
		return h.internalError(true, err)
	}
	if err != nil {
		h.logger.Error("hook: the deny stands but was not recorded", "err", err)
	}
	return preToolUseResponse(res.Result)
}

// preToolUseWrite guards Write/Edit/MultiEdit before they land (writeGuard),
// beside the delegation rules.
func preToolUseWrite(ctx context.Context, h *hookEnv, ev *Event) response {
	return withDelegation(ctx, h, ev, writeGuard)
}

// writeGuard guards Write/Edit/MultiEdit before they land: workflow
// documents (document_write) and DES's own files (protected paths).
func writeGuard(ctx context.Context, h *hookEnv, ev *Event) response {
	call, err := readWriteCall(ev, h)
	if err != nil {
		return unreadableCall(h, ev, err)
	}
	if call.Path == "" {
		return noOpinion() // no file named: Claude Code refuses the call itself
	}
	tool := gate.ToolCall{Tool: ev.ToolName, Paths: []string{call.Path}, Facts: h.partialFacts(call), ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID}
	eng, err := h.engine(ctx)
	if err != nil {
		// Without settings only .des itself, and the default guarded
		// documents, are known to be DES's.
		defaults := des.DefaultConfig()
		guard := gate.DocumentWrite{Root: h.root, StepGlobs: defaults.GuardedStepFiles, StateGlobs: defaults.GuardedStateFiles, Graph: gate.TaskGraph{File: defaults.TaskGraphFile}}
		kind, _, kerr := guard.WriteKind(call)
		return h.internalError(kind != "" || kerr != nil || gate.ToolUse{Root: h.root, Self: h.self}.Concerns(tool), err)
	}
	kind, _, err := eng.DocumentWriteGate().WriteKind(call)
	if err != nil {
		h.requireValidation()
		return h.internalError(true, err) // it may be a guarded document: DES cannot tell
	}
	var res gate.Result
	switch {
	case kind != "":
		h.requireValidation()
		res, err = eng.CheckWrite(ctx, call)
	case eng.ToolUseGate().Concerns(tool):
		h.requireValidation()
		res, err = eng.CheckToolUse(ctx, tool)
	default:
		return noOpinion() // not DES's file: no policy is compiled or asked
	}
	if err != nil && !res.Evaluated {
		return h.internalError(true, err)
	}
	if err != nil {
		h.logger.Error("hook: the decision stands but was not recorded", "err", err)
	}
	return preToolUseResponse(res)
}

// subagentPrompt reads only tool_input.prompt of an Agent or Task call.
func subagentPrompt(ev *Event) (string, error) {
	var in struct {
		Prompt *string `json:"prompt"`
	}
	if err := ev.toolInput(&in); err != nil {
		return "", err
	}
	if in.Prompt == nil {
		return "", errors.New("tool_input has no prompt string")
	}
	return *in.Prompt, nil
}

// writeCall reads a Write, Edit or MultiEdit call. A relative file_path is
// taken against the event's cwd, where Claude Code resolves it, not the
// project root: the two differ once the session has cd'd.
func writeCall(ev *Event, h *hookEnv) (gate.WriteCall, bool) {
	call, err := readWriteCall(ev, h)
	return call, err == nil && call.Path != ""
}

// readWriteCall is writeCall with the decoding error, for the guard: a
// call Claude Code may run but des cannot read is denied, not passed.
func readWriteCall(ev *Event, h *hookEnv) (gate.WriteCall, error) {
	call := gate.WriteCall{Tool: ev.ToolName, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID, Cwd: ev.Cwd}
	switch ev.ToolName {
	case toolWrite:
		in, err := ev.WriteInput()
		if err != nil {
			return call, err
		}
		call.Path, call.Content = in.FilePath, &in.Content
	case toolEdit:
		in, err := ev.EditInput()
		if err != nil {
			return call, err
		}
		call.Path, call.Edits = in.FilePath, []gate.Edit{{Old: in.OldString, New: in.NewString, ReplaceAll: in.ReplaceAll}}
	case toolMultiEdit:
		in, err := ev.MultiEditInput()
		if err != nil {
			return call, err
		}
		call.Path = in.FilePath
		for _, e := range in.Edits {
			call.Edits = append(call.Edits, gate.Edit{Old: e.OldString, New: e.NewString, ReplaceAll: e.ReplaceAll})
		}
	}
	call.Path = toolFilePath(ev, h, call.Path)
	return call, nil
}

// toolFilePath is the file a file tool's path names, as Claude Code takes
// it (its expandPath): white space around it trimmed (JavaScript's trim), a
// leading ~ or ~/ the home directory (HOME, else the user's entry in the
// password database, as Node's os.homedir), a relative path taken against
// the event's cwd; "" stays "". ~user is not expanded: Claude Code does not.
func toolFilePath(ev *Event, h *hookEnv, p string) string {
	p = strings.TrimFunc(p, jsSpace)
	switch {
	case p == "":
		return ""
	case p == "~" || strings.HasPrefix(p, "~/"):
		return filepath.Join(homeDir(h.lookupEnv), p[1:])
	case filepath.IsAbs(p):
		return p
	}
	return eventDir(ev, h.root) + string(filepath.Separator) + p // not Join: "link/.." is taken after the link
}

// homeDir is the home directory Claude Code, and so the hook, has: HOME
// when set, else the user's entry in the password database (os/user reads
// /etc/passwd without cgo).
func homeDir(lookupEnv func(string) (string, bool)) string {
	if home, ok := lookupEnv("HOME"); ok && home != "" {
		return home
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return "/"
}

// jsSpace reports whether JavaScript's String.prototype.trim removes r:
// white space and line terminators (Unicode Zs, and U+FEFF).
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// unreadableCall denies a call des must judge but cannot read: a field of
// tool_input of a type des does not expect. Passing it would switch the
// guard off for whatever the call does.
func unreadableCall(h *hookEnv, ev *Event, err error) response {
	h.requireValidation()
	h.logger.Error("DES internal error: the tool call cannot be read", "tool", ev.ToolName, "err", err)
	return denyPreToolUse(gate.Internal("", fmt.Errorf("cannot read the %s call: %w", ev.ToolName, err),
		"Claude Code sent a "+ev.ToolName+" call whose tool_input DES cannot read (the field named above): retry the call with that field left out or as a plain value.",
		"If Claude Code itself sends this form, report it with the hook's stderr (DES_LOG_LEVEL=debug): DES must learn to read it.").Reason())
}

// workflowCwd is the event's cwd as Claude Code sent it, for choosing a
// monorepo project by path prefix: on Windows it comes with backslashes and
// a drive letter, which state discovery compares itself (slash-normalised,
// the drive letter case-insensitive); eventDir would take such a path as
// relative on another system. The root when the event has none.
func workflowCwd(ev *Event, root string) string {
	if ev.Cwd == "" {
		return root
	}
	return ev.Cwd
}

// eventDir is the event's cwd, absolute: the root when the event has none.
func eventDir(ev *Event, root string) string {
	switch {
	case ev.Cwd == "":
		return root
	case !filepath.IsAbs(ev.Cwd):
		return filepath.Join(root, ev.Cwd)
	}
	return ev.Cwd
}

// preToolUseResponse maps gate results to PreToolUse output: a deny with
// every violation of them all, or the warnings for Claude and the user, or
// nothing.
func preToolUseResponse(results ...gate.Result) response {
	var deny, warn []policy.Violation
	for _, r := range results {
		deny = append(deny, r.Decision.Deny...)
		warn = append(warn, r.Decision.Warn...)
	}
	switch {
	case len(deny) > 0:
		return denyPreToolUse(gate.Text(append(deny, warn...)...))
	case len(warn) > 0:
		w := gate.Text(warn...)
		return warnPreToolUse(w, w)
	default:
		return noOpinion()
	}
}

// preToolUseBash guards Bash: writes to guarded documents and DES's files
// (tool_use), and `git commit`, which runs Gate 3 on the step files the
// commit would hold. Both may apply to one command: it is denied when either
// denies, with every violation listed.
func preToolUseBash(ctx context.Context, h *hookEnv, ev *Event) response {
	return withDelegation(ctx, h, ev, bashGuard)
}

// bashGuard is preToolUseBash without the delegation rules.
func bashGuard(ctx context.Context, h *hookEnv, ev *Event) response {
	in, err := ev.BashInput()
	if err != nil {
		return unreadableCall(h, ev, err)
	}
	if in.Command == "" {
		return noOpinion() // nothing to run: Claude Code refuses the call itself
	}
	// Whatever the reading of the command below finds, its effect on DES's
	// files is checked after it runs: the baseline is taken now.
	if err := h.beginEffects(ctx, ev); err != nil {
		h.requireValidation()
		return h.internalError(true, err)
	}
	r := preToolUseBashGuard(ctx, h, ev, in.Command)
	if r.permissionDecision == "deny" {
		h.cancelEffects(ev) // the command will not run
	} else {
		h.beginRefs(ctx, ev)                // the branches and tags it may move (gitrefs.go)
		h.beginTestRun(ctx, ev, in.Command) // a test runner it runs (testruns.go)
	}
	return r
}

// preToolUseBashGuard reads the command for writes to guarded documents
// and DES's files, and for git commits.
func preToolUseBashGuard(ctx context.Context, h *hookEnv, ev *Event, command string) response {
	in := struct{ Command string }{command}
	call := gate.BashCall{Command: in.Command, Cwd: eventDir(ev, h.root), ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID}
	// The Bash tool's shell inherits Claude Code's environment, as the hook
	// does: ~, $HOME and $OLDPWD in the command are these.
	call.Home, _ = h.lookupEnv("HOME")
	call.OldPwd, _ = h.lookupEnv("OLDPWD")
	call.Env = h.lookupEnv
	commitFiles, unreadable := bashCommitFiles(ctx, h, ev, in.Command)
	if unreadable != nil {
		h.requireValidation()
		return h.internalError(true, unreadable)
	}
	eng, err := h.engine(ctx)
	if err != nil {
		defaults := des.DefaultConfig()
		guard := gate.DocumentWrite{Root: h.root, StepGlobs: defaults.GuardedStepFiles, StateGlobs: defaults.GuardedStateFiles, Graph: gate.TaskGraph{File: defaults.TaskGraphFile}}
		inside, _ := gate.PreCommit{Root: h.root}.InProject(commitFiles)
		tu := gate.ToolUse{Root: h.root, Self: h.self}
		// A commit where a workflow state applies is the branch guard's.
		branchGuard := tu.MakesCommits(call) && isdlc.HasState(h.root, call.Cwd, h.lookupEnv)
		return h.internalError(len(inside) > 0 || tu.ConcernsBash(guard, call) || branchGuard, err)
	}
	var results []gate.Result
	// The branch guard judges the same command's commits
	// when a workflow state is found.
	bres, err := eng.CheckCommitBranches(ctx, call)
	switch {
	case err != nil && !bres.Evaluated:
		h.requireValidation() // a workflow state was found, or the command could not be read
		results = append(results, h.internalResult(policy.ToolUse, err))
	case err != nil:
		h.requireValidation()
		h.logger.Error("hook: the branch guard's deny stands but was not recorded", "err", err)
		results = append(results, bres)
	case bres.Evaluated:
		h.requireValidation()
		results = append(results, bres)
	}
	res, err := eng.CheckBash(ctx, call)
	switch {
	case err != nil && !res.Evaluated:
		if eng.ToolUseGate().ConcernsBash(eng.DocumentWriteGate(), call) {
			h.requireValidation()
			results = append(results, h.internalResult(policy.ToolUse, err))
		} else {
			h.logger.Error("DES internal error; no opinion on the command's writes because validation is not required here", "err", err)
		}
	case err != nil:
		h.requireValidation()
		h.logger.Error("hook: the decision stands but was not recorded", "err", err)
		results = append(results, res)
	case res.Evaluated:
		h.requireValidation()
		results = append(results, res)
	}
	// DES is in charge of a commit that holds step files of the project.
	if inside, _ := eng.PreCommitGate().InProject(commitFiles); len(inside) > 0 {
		h.requireValidation()
		cres, err := eng.CheckCommit(ctx, gate.Commit{Files: inside, Source: gate.SourceClaudeCode, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID})
		switch {
		case err != nil && (!errors.Is(err, gate.ErrNotRecorded) || !cres.Denied()):
			results = append(results, h.internalResult(policy.PreCommit, err)) // an allow not recorded is not given
		case err != nil:
			h.logger.Error("hook: the Gate 3 deny stands but was not recorded", "err", err)
			fallthrough
		default:
			for _, f := range cres.Files {
				results = append(results, f.Result)
			}
		}
	}
	return preToolUseResponse(results...)
}

// bashCommitFiles lists the step files the `git commit`s of a command would
// commit (gate.StepFiles.BashCommit), its directories taken against the event's
// cwd. An error means DES is in charge and could not tell what the commit
// holds: a step file it found but cannot read, or git failing (or running
// out of time) while DES lists what is staged in a project that holds step
// files (gate.StepFiles.OnDisk). git failing in a project without step files is
// logged, and Gate 3 gives no opinion.
func bashCommitFiles(ctx context.Context, h *hookEnv, ev *Event, command string) ([]gate.CommitFile, error) {
	// The write guard's setting says which files are step files; with a
	// bad setting, the default (the engine's error is reported after).
	steps := gate.StepFiles{Root: h.root, Globs: des.DefaultConfig().GuardedStepFiles}
	if eng, err := h.engine(ctx); err == nil {
		steps = eng.StepFilesGate()
	}
	steps.Home, _ = h.lookupEnv("HOME")
	files, err := steps.BashCommit(ctx, eventDir(ev, h.root), command)
	if err == nil {
		return files, nil
	}
	if errors.Is(err, gate.ErrStepFileUnreadable) {
		return nil, err // the commit holds step files: DES is in charge
	}
	has, why := steps.OnDisk(ctx)
	if has {
		if why != nil {
			h.logger.Warn("hook: cannot show that the project holds no step file", "err", why)
		}
		return nil, fmt.Errorf("cannot tell which step files the git commit would hold: %w", err)
	}
	h.logger.Warn("hook: cannot tell which step files the git commit holds; Gate 3 gives no opinion, the project holds no step file", "err", err)
	return nil, nil
}

// internalResult is the fail-closed result of an error where validation is
// required, for merging with other results.
func (h *hookEnv) internalResult(g policy.Gate, err error) gate.Result {
	h.logger.Error("DES internal error where validation is required", "event", h.event, "err", err)
	return gate.Internal(g, err, internalRecovery(err)...)
}

// postToolUseWrite confirms that a guarded write landed; after a write of
// the workflow state it writes des's test iterations of the current phase
// back when the write left them out (Engine.WriteTestIteration).
func postToolUseWrite(ctx context.Context, h *hookEnv, ev *Event) response {
	call, ok := writeCall(ev, h)
	if !ok || ev.ToolUseID == "" {
		return noOpinion()
	}
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Error("hook: cannot confirm a guarded write", "err", err)
		return noOpinion() // the write has happened; there is nothing to block
	}
	kind, rel := eng.DocumentWriteGate().Kind(call.Path)
	if kind == "" {
		return noOpinion()
	}
	h.settleWrite(ctx, rel) // the path as the write guard announced it
	c, err := eng.ConfirmWriteResult(ctx, ev.ToolUseID)
	if err != nil {
		h.logger.Error("hook: cannot confirm a guarded write", "tool_use_id", ev.ToolUseID, "err", err)
	}
	if c.Reformatted != nil {
		// A formatter hook rewrote the allowed content (same JSON value):
		// those bytes are the allowed write, for the effect check too, or
		// the check of a call running beside this one would undo them.
		h.settleReformatted(ctx, c.Path, c.Reformatted)
	}
	if c.Mismatch != "" {
		// Said now, not at the subagent's stop as a DES-PHASE-JUMP.
		msg := fmt.Sprintf("DES could not confirm the write to %s: %s. Another hook (a formatter?) or a command changed its content after the write, so DES did not record this write's phase changes. "+
			"Read %s and write the change again with Write or Edit; a formatter may change white space, key order and a trailing newline, not values.", c.Path, c.Mismatch, c.Path)
		return warnAfterTool(msg, msg)
	}
	if kind == gate.KindState {
		// A write made from a copy read before des's last write (or one
		// that leaves test_iteration out) lands without des's values: the
		// write guard judges only the values a write states. des writes
		// them back, so that the state the orchestrator reads next says
		// what des saw (nothing when it says so already).
		upd, err := eng.WriteTestIteration(ctx, eventDir(ev, h.root))
		if err != nil {
			h.logger.Warn("hook: test iterations not written back into the workflow state", "err", err)
		}
		if upd.StateFile != "" {
			return warnAfterTool(fmt.Sprintf("This write left out des's phases[%q].iteration_requirements.test_iteration (or some of its values); des wrote it back into %s from the test runs it saw. Read %s again before editing it.", upd.Phase, upd.StateFile, upd.StateFile), "")
		}
	}
	return noOpinion()
}

// postToolUseSubagent tells the orchestrator when Gate 2 failed the step the
// subagent ran (PostToolUse for Agent/Task): the user saw Gate 2's message,
// but the orchestrator would otherwise go on to the next step. In a
// multi-phase workflow the observers add their warnings; both
// go into one additionalContext.
func postToolUseSubagent(ctx context.Context, h *hookEnv, ev *Event) response {
	out, _ := ev.SubagentResponse() // an odd response still has a tool_use_id
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Error("hook: cannot read Gate 2's verdict", "err", err)
		return noOpinion() // the subagent has run; there is nothing to block
	}
	var parts []string
	rec, err := eng.StopVerdict(ev.ToolUseID, out.AgentID)
	switch {
	case err != nil:
		h.logger.Error("hook: cannot read Gate 2's verdict", "tool_use_id", ev.ToolUseID, "err", err)
	case rec != nil && rec.Failed:
		h.requireValidation()
		parts = append(parts, stopContext(rec))
	case rec == nil && out.Status == "async_launched" && template.Parse(ev.SubagentStrings().Prompt).HasMarkers:
		// The subagent runs in the background: this event comes at its
		// launch, before Gate 2 can judge it. Its verdict comes with the
		// task notification (userPromptSubmit).
		parts = append(parts, backgroundNote(ev.ToolUseID))
	}
	call := gate.SubagentResult{Tool: ev.ToolName, Cwd: workflowCwd(ev, h.root), Response: ev.ToolResponse}
	in := ev.SubagentStrings()
	call.SubagentType, call.Prompt, call.Description = in.SubagentType, in.Prompt, in.Description
	obs, err := eng.ObserveSubagent(ctx, call)
	switch {
	case err != nil:
		// Observers only warn, and the call has run: nothing to fail closed on.
		h.logger.Error("hook: the phase observers could not run", "tool_use_id", ev.ToolUseID, "err", err)
	case len(obs.Decision.Warn) > 0 || len(obs.Decision.Deny) > 0:
		parts = append(parts, obs.Reason())
	}
	// A task graph phase: what the orchestrator runs next.
	if next := nextSteps(ctx, h, eng, ev, out.Status); next != "" {
		parts = append(parts, next)
	}
	return postToolContext(strings.Join(parts, "\n\n"))
}

// backgroundNote tells the orchestrator where Gate 2's verdict on a
// subagent running in the background will reach it.
func backgroundNote(toolUseID string) string {
	return "DES Gate 2 judges this subagent's step when the subagent stops. It runs in the background, so the verdict is not here: " +
		"it comes with the subagent's task notification (tool-use-id " + toolUseID + "). Read it before you start the next step."
}

// stopContext is what the orchestrator is told about a failed stop.
func stopContext(rec *gate.StopRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "DES Gate 2 failed the subagent's work on %s", rec.StepFile)
	if rec.Marked {
		b.WriteString("; the step is marked FAILED")
	}
	b.WriteString(". Do not start the next step.\n")
	b.WriteString(rec.Reason)
	return b.String()
}

// subagentStop is Gate 2, then the subagent registry and the wave sync
// (orchestration.go), which go by Gate 2's verdict.
func subagentStop(ctx context.Context, h *hookEnv, ev *Event) response {
	observeAgentStop(ctx, h, ev)
	r, g2 := gate2Stop(ctx, h, ev)
	return withStopNote(r, orchestrateStop(ctx, h, ev, g2))
}

// gate2Stop is Gate 2: its response, and its result when it judged the
// stop (nil otherwise).
func gate2Stop(ctx context.Context, h *hookEnv, ev *Event) (response, *gate.StopResult) {
	stop := gate.Stop{
		TranscriptPath: ev.AgentTranscriptPath, AgentID: ev.AgentID, AgentType: ev.AgentType,
		SessionID: ev.SessionID, StopHookActive: ev.StopHookActive,
	}
	eng, err := h.engine(ctx)
	if err != nil {
		// Without an engine the gate still finds the step, and leaves the
		// verdict "not judged" for the orchestrator at PostToolUse.
		g := gate.SubagentStop{Root: h.root, ClaudeDirs: gate.ClaudeDirs(h.lookupEnv), RunsDir: filepath.Join(h.root, des.RunsDir), EvidenceDir: statedir.Evidence(statedir.For(h.root, h.lookupEnv))}
		res, _ := g.Check(ctx, failedEvaluator{err}, stop)
		return h.internalError(res.StepFile != "", err), nil
	}
	res, err := eng.CheckStop(ctx, stop)
	if res.StepFile != "" {
		h.requireValidation()
	}
	if res.NoOpinion != "" {
		h.logger.Info("hook: no opinion on the stop", "agent_id", ev.AgentID, "why", res.NoOpinion)
	}
	if err != nil && !res.Evaluated {
		return h.internalError(res.StepFile != "", err), &res
	}
	var note string
	if err != nil {
		h.logger.Error("hook: Gate 2 decided but could not carry it out", "err", err)
		note = "\nDES could not complete its bookkeeping: " + err.Error()
	}
	switch {
	case res.Action == gate.StopActionBlock:
		return blockStop(res.Reason() + note), &res
	case res.Denied():
		msg := res.Reason()
		if res.Marked {
			msg += "\nDES marked " + res.StepFile + " FAILED."
		}
		return stopMessage(msg + note), &res
	case len(res.Decision.Warn) > 0:
		return stopMessage(res.Warnings() + note), &res
	case note != "":
		return stopMessage(strings.TrimPrefix(note, "\n")), &res
	}
	return noOpinion(), &res
}

// failedEvaluator answers every evaluation with the error that kept the
// engine from being built.
type failedEvaluator struct{ err error }

func (f failedEvaluator) Evaluate(context.Context, policy.Gate, any) (policy.Decision, error) {
	return policy.Decision{}, f.err
}
