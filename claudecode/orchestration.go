package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/internal/taskgraph"
	"github.com/deterministic-exec/des/policy"
)

// Orchestration governance in hook mode: the delegation check beside the
// work tools' own guards, the subagent registry kept by SubagentStart,
// SubagentStop and UserPromptSubmit, the wave sync at SubagentStop and what
// to run next at PostToolUse. The library gathers the facts and decides;
// these handlers map Claude Code's events onto it.

// withDelegation runs the delegation rules (delegation_mode) beside guard,
// a work tool's own PreToolUse guard: the call is denied when either
// denies, with every violation listed; a nudge reaches the model as
// additionalContext.
func withDelegation(ctx context.Context, h *hookEnv, ev *Event, guard handlerFunc) response {
	r := guard(ctx, h, ev)
	d := delegationResponse(ctx, h, ev)
	merged := mergePreToolUse(r, d)
	if merged.permissionDecision == "deny" && r.permissionDecision != "deny" {
		h.cancelEffects(ev) // the call will not run: its effects are not waited for
	}
	return merged
}

// delegationResponse judges main-thread work (DES-DELEGATION-REQUIRED).
// With the settings unreadable the work tool's own handler has reported
// what it must; the mode is unknown, so there is nothing to add.
func delegationResponse(ctx context.Context, h *hookEnv, ev *Event) response {
	eng, err := h.engine(ctx)
	if err != nil {
		return noOpinion()
	}
	mode := eng.Config().DelegationMode
	if mode == des.DelegationOff {
		return noOpinion()
	}
	call := gate.DelegationCall{Tool: ev.ToolName, AgentID: ev.AgentID, SessionID: ev.SessionID, Paths: delegationPaths(ev, h)}
	res, err := eng.DelegationGate(h.lookupEnv).Check(ctx, eng, call)
	switch {
	case err != nil && !res.Evaluated:
		// Enforced delegation is DES's to decide for the main thread: it
		// fails closed there. A nudge only warns, and subagents are never
		// affected, so elsewhere the error is logged.
		if mode == des.DelegationEnforce && ev.AgentID == "" {
			h.requireValidation()
			return preToolUseResponse(h.internalResult(policy.ToolUse, err))
		}
		h.logger.Error("hook: the delegation rules could not run; no opinion", "err", err)
		return noOpinion()
	case err != nil:
		h.logger.Warn("hook: the direct call was judged but not counted", "err", err)
	}
	if len(res.Decision.Deny) > 0 {
		h.requireValidation()
		return preToolUseResponse(res)
	}
	if len(res.Decision.Warn) > 0 {
		// For the model, which must learn to delegate; the user is not told
		// at every call.
		return warnPreToolUse(gate.Text(res.Decision.Warn...), "")
	}
	return noOpinion()
}

// delegationPaths are the files a file tool writes, absolute (relative
// paths taken against the event's cwd, as Claude Code takes them); none for
// Bash, whose writes DES cannot list for this purpose.
func delegationPaths(ev *Event, h *hookEnv) []string {
	switch ev.ToolName {
	case toolWrite, toolEdit, toolMultiEdit:
		if call, ok := writeCall(ev, h); ok {
			return []string{call.Path}
		}
	case toolNotebook:
		var in struct {
			Path string `json:"notebook_path"`
		}
		if ev.toolInput(&in) == nil {
			if p := toolFilePath(ev, h, in.Path); p != "" {
				return []string{p}
			}
		}
	default:
		// An MCP file tool's path, when absolute (a relative one is the
		// server's business): a scratch file in the temporary directory
		// stays free, as with Write.
		if strings.HasPrefix(ev.ToolName, "mcp__") {
			var in struct {
				Path string `json:"path"`
			}
			if ev.toolInput(&in) == nil && filepath.IsAbs(in.Path) {
				return []string{filepath.Clean(in.Path)}
			}
		}
	}
	return nil
}

// mergePreToolUse combines two PreToolUse responses: a deny when either
// denies, its reason holding both parts; otherwise both warnings.
func mergePreToolUse(a, b response) response {
	switch {
	case a.isNoOpinion():
		return b
	case b.isNoOpinion():
		return a
	}
	text := func(r response) string {
		if r.permissionDecision == "deny" {
			return r.decisionReason
		}
		return r.additionalContext
	}
	if a.permissionDecision == "deny" || b.permissionDecision == "deny" {
		return denyPreToolUse(joinNonEmpty("\n", text(a), text(b)))
	}
	return warnPreToolUse(joinNonEmpty("\n", a.additionalContext, b.additionalContext), joinNonEmpty("\n", a.systemMessage, b.systemMessage))
}

func joinNonEmpty(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}

// subagentStart records the subagent in the registry. DES says nothing
// here, unless the record fails where the concurrency limit counts on it.
func subagentStart(ctx context.Context, h *hookEnv, ev *Event) response {
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Error("hook: the subagent is not recorded in the registry", "agent_id", ev.AgentID, "err", err)
		return noOpinion()
	}
	if err := eng.SubagentStarted(ctx, ev.AgentID, ev.AgentType, ev.SessionID); err != nil {
		return h.internalError(eng.Config().MaxConcurrentAgents > 0, err)
	}
	return noOpinion()
}

// userPromptSubmit starts a new turn: the count of direct calls goes back
// to zero, and the registry drops entries past their lifetime. DES says
// nothing here, unless that fails where delegation counts on it.
func userPromptSubmit(ctx context.Context, h *hookEnv, ev *Event) response {
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Error("hook: the turn's counters are not reset", "err", err)
		return noOpinion()
	}
	if err := eng.UserPrompt(ctx, ev.SessionID); err != nil {
		return h.internalError(eng.Config().DelegationMode != des.DelegationOff, err)
	}
	if !strings.Contains(ev.Prompt, "<task-notification>") { // Claude Code's, not the user's
		observeWorkflow(ctx, h, eng, ev, des.WorkflowObservation{UserReply: true, Via: "prompt", SessionID: ev.SessionID})
	}
	return taskNotification(h, eng, ev.Prompt)
}

// observeWorkflow records o for the iSDLC workflow in effect where ev was
// made, when there is one (des.Engine.ObserveWorkflow, which looks for the
// state first). It decides nothing: a failure is logged.
func observeWorkflow(ctx context.Context, h *hookEnv, eng *des.Engine, ev *Event, o des.WorkflowObservation) {
	if err := eng.ObserveWorkflow(ctx, eventDir(ev, h.root), o); err != nil {
		h.logger.Warn("hook: workflow observation not recorded", "err", err)
	}
}

// postToolUseQuestion records the user's answer to AskUserQuestion in an
// iSDLC phase: an elicitation des saw. No opinion.
func postToolUseQuestion(ctx context.Context, h *hookEnv, ev *Event) response {
	if !isdlc.HasState(h.root, eventDir(ev, h.root), h.lookupEnv) {
		return noOpinion()
	}
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Warn("hook: workflow observation not recorded", "err", err)
		return noOpinion()
	}
	observeWorkflow(ctx, h, eng, ev, des.WorkflowObservation{UserReply: true, Via: toolAskUserQuestion, SessionID: ev.SessionID, AgentID: ev.AgentID})
	return noOpinion()
}

// observeAgentStop records, in an iSDLC phase, the subagent that stopped
// and the constitutional verdict its last message states.
func observeAgentStop(ctx context.Context, h *hookEnv, ev *Event) {
	if ev.AgentType == "" || !isdlc.HasState(h.root, eventDir(ev, h.root), h.lookupEnv) {
		return
	}
	eng, err := h.engine(ctx)
	if err != nil {
		return
	}
	observeWorkflow(ctx, h, eng, ev, des.WorkflowObservation{
		AgentType: ev.AgentType, Constitutional: constitutionalVerdict(ev.LastAssistantMessage),
		SessionID: ev.SessionID, AgentID: ev.AgentID,
	})
}

// constitutionalVerdict is the constitutional validation verdict a
// message states ("Constitutional validation: COMPLIANT", "constitutional
// status = escalated"), the last one; "" when it states none.
func constitutionalVerdict(msg string) string {
	ms := constitutionalRE().FindAllStringSubmatch(msg, -1)
	if len(ms) == 0 {
		return ""
	}
	v := strings.ToLower(ms[len(ms)-1][1])
	if strings.HasPrefix(v, "non") {
		return "non_compliant"
	}
	return v
}

var constitutionalRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bconstitutional(?:[ _](?:validation|compliance))?(?:[ _]status)?\W{0,4}(?:is\s+)?(non[-_ ]?compliant|compliant|escalated|iterating)\b`)
})

// taskNotification gives the orchestrator Gate 2's failure of a subagent
// that ran in the background: Claude Code delivers such a subagent's
// result as a new prompt, a <task-notification> naming the Agent call
// (tool-use-id) and the subagent (task-id), after its SubagentStop. The
// PostToolUse of the call came at its launch, before Gate 2 judged it.
// A prompt anyone wrote in that shape can only bring a verdict des recorded.
func taskNotification(h *hookEnv, eng *des.Engine, prompt string) response {
	if !strings.Contains(prompt, "<task-notification>") {
		return noOpinion()
	}
	var parts []string
	for _, m := range taskNotificationRE().FindAllStringSubmatch(prompt, -1) {
		body := m[1]
		toolUseID, agentID := xmlField(body, "tool-use-id"), xmlField(body, "task-id")
		rec, err := eng.StopVerdict(toolUseID, agentID)
		if err != nil {
			h.logger.Error("hook: cannot read Gate 2's verdict", "tool_use_id", toolUseID, "err", err)
			continue
		}
		if rec != nil && rec.Failed {
			parts = append(parts, stopContext(rec))
		}
	}
	if len(parts) == 0 {
		return noOpinion()
	}
	return response{specificEvent: eventUserPromptSubmit, additionalContext: strings.Join(parts, "\n\n")}
}

var taskNotificationRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)<task-notification>(.*?)</task-notification>`)
})

// xmlField is the trimmed text of <name>...</name> in body, "" when absent.
func xmlField(body, name string) string {
	_, rest, ok := strings.Cut(body, "<"+name+">")
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(rest, "</"+name+">")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// orchestrateStop marks the subagent stopped in the registry and, when it
// ran a phase of the task graph, records the phase's outcome there (the
// wave sync, by Gate 2's verdict g2). It returns what the user must learn:
// "" unless DES, in charge of the graph, could not record the outcome.
func orchestrateStop(ctx context.Context, h *hookEnv, ev *Event, g2 *gate.StopResult) string {
	eng, err := h.engine(ctx)
	if err != nil {
		return "" // Gate 2's handler has reported it where it must
	}
	if g2 != nil && g2.Action == gate.StopActionBlock {
		return "" // sent back to work: it has not stopped, and its phase has not ended
	}
	if err := eng.SubagentStopped(ctx, ev.AgentID); err != nil {
		h.logger.Error("hook: the subagent is not marked stopped in the registry", "agent_id", ev.AgentID, "err", err)
	}
	stop := gate.Stop{TranscriptPath: ev.AgentTranscriptPath, AgentID: ev.AgentID, AgentType: ev.AgentType, SessionID: ev.SessionID}
	res, err := eng.SyncTaskGraph(ctx, stop, ev.LastAssistantMessage, g2)
	if err != nil {
		if res.Phase == "" {
			h.logger.Error("hook: wave sync", "err", err)
			return ""
		}
		h.requireValidation()
		h.logger.Error("DES internal error where validation is required", "event", h.event, "err", err)
		return gate.Internal("", err, internalRecovery(err)...).Reason()
	}
	if res.Phase != "" {
		h.logger.Info("hook: wave sync", "phase", res.Phase, "found", res.Found, "changed", res.Update.Changed, "status", res.Update.Status)
	}
	return ""
}

// withStopNote adds a note for the user to a SubagentStop response: never
// as a block (that would send the subagent back to work), always as
// systemMessage.
func withStopNote(r response, note string) response {
	switch {
	case note == "":
		return r
	case r.decision == "block":
		r.systemMessage = joinNonEmpty("\n", r.systemMessage, note)
		return r
	case r.isNoOpinion():
		return stopMessage(note)
	default:
		r.systemMessage = joinNonEmpty("\n", r.systemMessage, note)
		return r
	}
}

// nextSteps is what the orchestrator is told to run after a subagent of
// a task phase finished; "" when the call named no phase, ran in the
// background (its stop comes later), or there is no graph.
func nextSteps(ctx context.Context, h *hookEnv, eng *des.Engine, ev *Event, status string) string {
	if status == "async_launched" {
		return ""
	}
	text, err := eng.NextSteps(ctx, ev.SubagentStrings().Prompt)
	if err != nil {
		// The phase ran and the graph exists: the orchestrator must not go
		// on blind.
		h.requireValidation()
		h.logger.Error("DES internal error where validation is required", "event", h.event, "err", err)
		return gate.Internal("", err, internalRecovery(err)...).Reason()
	}
	return text
}

// orchestrationApplies reports whether the orchestration rules judge an
// Agent/Task call, the cheap check a caller makes before building an
// Engine: the prompt names a task phase and the task graph exists, or the
// concurrency limit is set and the call is made in the main thread
// (agentID ""). It reads the settings (a bad one is returned, with true
// when the prompt names a phase: DES may be in charge) and stats the
// graph; no policy.
func orchestrationApplies(root, prompt, agentID string, lookupEnv func(string) (string, bool)) (bool, error) {
	_, named := taskgraph.PhaseID(prompt)
	cfg, err := des.LoadConfig(root, lookupEnv)
	if err != nil {
		return named, err
	}
	if cfg.MaxConcurrentAgents > 0 && agentID == "" {
		return true, nil
	}
	if !named {
		return false, nil
	}
	_, err = os.Lstat(filepath.Join(root, filepath.FromSlash(cfg.TaskGraphFile)))
	return err == nil, nil
}
