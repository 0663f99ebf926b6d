package claudecode

import (
	"context"
	"errors"
	"os/exec"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/policy"
)

// response is what a handler tells Claude Code. The zero value is no
// opinion. Build one with the constructors below, never by hand: they are
// what keeps every output inside the documented shapes (never an explicit
// allow, additionalContext never on SubagentStop).
type response struct {
	// specificEvent is the hookSpecificOutput.hookEventName, "" when the
	// response has no hookSpecificOutput.
	specificEvent      string
	permissionDecision string // "deny" or ""
	decisionReason     string // permissionDecisionReason
	additionalContext  string

	decision      string // top-level "block" (Stop/SubagentStop) or ""
	reason        string // top-level reason, with decision
	systemMessage string // shown to the user
}

// noOpinion lets Claude Code carry on as if DES were not installed.
func noOpinion() response { return response{} }

// denyPreToolUse blocks a tool call; reason is shown to Claude.
func denyPreToolUse(reason string) response {
	return response{
		specificEvent:      eventPreToolUse,
		permissionDecision: "deny",
		decisionReason:     nonEmpty(reason, "DES denied this tool call without giving a reason."),
	}
}

// warnPreToolUse lets a tool call go on with warnings: additional reaches
// Claude (additionalContext), sysmsg reaches the user (systemMessage). Either
// may be empty; both empty is no opinion.
func warnPreToolUse(additional, sysmsg string) response {
	r := response{systemMessage: sysmsg}
	if additional != "" {
		r.specificEvent = eventPreToolUse
		r.additionalContext = additional
	}
	return r
}

// blockStop sends a stopping subagent back to work with reason as its
// instructions. Handlers must not use it when the event's stop_hook_active is
// true, or the subagent may never stop.
func blockStop(reason string) response {
	return response{decision: "block", reason: nonEmpty(reason, "DES blocked the stop without giving a reason.")}
}

// stopMessage tells the user something at a stop without blocking it. It is
// also the only way to warn on SubagentStop: additionalContext there would
// restart the subagent.
func stopMessage(msg string) response { return response{systemMessage: msg} }

// postToolContext adds additional context for Claude after a tool call, so
// the orchestrator learns, for instance, that Gate 2 failed the step.
func postToolContext(additional string) response {
	if additional == "" {
		return noOpinion()
	}
	return response{specificEvent: eventPostToolUse, additionalContext: additional}
}

// warnAfterTool tells Claude (additionalContext) and the user
// (systemMessage) after a tool call something DES could not do, without
// blocking.
func warnAfterTool(additional, sysmsg string) response {
	return response{specificEvent: eventPostToolUse, additionalContext: additional, systemMessage: sysmsg}
}

// blockAfterTool tells Claude, after a tool ran, what DES found and undid:
// on PostToolUse decision "block" with the reason, which Claude Code shows
// the model; on PostToolUseFailure, which has no decision, and on
// PostToolBatch, where "block" would end the agent's turn,
// additionalContext. sysmsg reaches the user.
func blockAfterTool(event, reason, sysmsg string) response {
	reason = nonEmpty(reason, "DES blocked after the tool call without giving a reason.")
	if event == eventPostToolUseFailure || event == eventPostToolBatch {
		return response{specificEvent: event, additionalContext: reason, systemMessage: sysmsg}
	}
	return response{decision: "block", reason: reason, systemMessage: sysmsg}
}

// joinAfterTool is what several after-tool responses of one event say
// together (PostToolBatch's calls): their additional contexts and their
// messages to the user, in order.
func joinAfterTool(event string, rs []response) response {
	var ctx, sys []string
	for _, r := range rs {
		if r.additionalContext != "" {
			ctx = append(ctx, r.additionalContext)
		}
		if r.systemMessage != "" {
			sys = append(sys, r.systemMessage)
		}
	}
	out := response{systemMessage: strings.Join(sys, "\n")}
	if len(ctx) > 0 {
		out.specificEvent, out.additionalContext = event, strings.Join(ctx, "\n\n")
	}
	return out
}

func nonEmpty(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

// isNoOpinion reports whether r writes nothing.
func (r response) isNoOpinion() bool { return r == response{} }

var errWrongEvent = errors.New("response's hookSpecificOutput is for another event")

// outputOf is the Output of r for an event: a response whose
// hookSpecificOutput names another event is a bug, refused rather than
// sent (Claude Code would reject it).
func outputOf(event string, r response) (Output, error) {
	if r.isNoOpinion() {
		return Output{}, nil
	}
	if r.specificEvent != "" && r.specificEvent != event {
		return Output{}, errWrongEvent
	}
	out := Output{Decision: r.decision, Reason: r.reason, SystemMessage: r.systemMessage}
	if r.specificEvent != "" {
		out.HookSpecificOutput = &HookSpecificOutput{
			HookEventName:            r.specificEvent,
			PermissionDecision:       r.permissionDecision,
			PermissionDecisionReason: r.decisionReason,
			AdditionalContext:        r.additionalContext,
		}
	}
	return out, nil
}

// internalError applies the fail posture (docs/reference.md, "Hook output")
// to err. Where DES validation is not required it gives no opinion: DES
// must not get in the way of work it does not govern. Where it is required it reports
// DES-INTERNAL, with how to fix the cause, in the strongest form the event
// allows: a deny on PreToolUse; on SubagentStop a systemMessage (a block
// would send the subagent back to work it cannot fix); on PostToolUse
// additionalContext (the tool already ran). The error is logged either way.
func (h *hookEnv) internalError(required bool, err error) response {
	if err == nil {
		err = errors.New("unknown internal error")
	}
	if !required {
		h.logger.Error("DES internal error; no opinion because validation is not required here", "event", h.event, "err", err)
		return noOpinion()
	}
	h.logger.Error("DES internal error where validation is required", "event", h.event, "err", err)
	text := gate.Internal("", err, internalRecovery(err)...).Reason()
	switch h.event {
	case eventPreToolUse:
		return denyPreToolUse(text)
	case eventSubagentStop:
		return stopMessage(text)
	case eventPostToolUse:
		return postToolContext(text)
	case eventPostToolBatch:
		return response{specificEvent: eventPostToolBatch, additionalContext: text}
	case eventSubagentStart, eventUserPromptSubmit:
		return stopMessage(text) // the user's to fix: nothing here blocks
	default:
		return noOpinion()
	}
}

// internalRecovery suggests the fix for the kinds of internal error a user
// can fix: a bad setting, a policy that does not compile, a lock another
// process holds, a wait that ran out of time, git failing.
func internalRecovery(err error) []string {
	var cfgErr *des.ConfigError
	var polErr policy.Errors
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &cfgErr):
		return []string{
			"Fix the setting named above in " + des.ConfigFile + " or its DES_* environment variable, then retry.",
			"Run `des-hook policies` from the project root to check that DES starts.",
		}
	case errors.Is(err, filelock.ErrHeld):
		return []string{
			"Another process holds the lock named above and did not release it before the hook's deadline: wait for it to finish, or find it (`fuser FILE` or `lsof FILE`) and end it if it is stuck, then retry.",
		}
	case errors.Is(err, gate.ErrBudget):
		return []string{
			"The policies needed longer than the setting validation_timeout_ms allows to judge this call (a very large task graph or workflow document, say): make the document smaller, or ask the user to raise validation_timeout_ms in " + des.ConfigFile + ", then retry.",
		}
	case errors.Is(err, context.DeadlineExceeded):
		return []string{
			"The hook ran out of time on what is named above (a slow or stuck git, a file system that does not answer): fix that, then retry. " + deadlineEnv + " sets the hook's deadline, below Claude Code's hook timeout.",
		}
	case errors.As(err, &exitErr):
		return []string{
			"git failed as shown above: run the same git command in the repository to see it, fix the cause (a broken .git/config, a repository git refuses), then retry.",
		}
	case errors.As(err, &polErr):
		return []string{
			"Fix the team policy or data file named above (a policy error is at its file:line:col; two data files that disagree are both named; team policies live in .des/policies/ unless DES_POLICY_DIRS says otherwise), then retry.",
			"Run `des-hook policies` from the project root to check that the policies compile.",
		}
	default:
		return []string{
			"Check " + des.ConfigFile + ", the DES_* environment variables and the team policies, then retry; `des-hook policies` shows whether DES starts.",
			"If the cause is not a setting or a policy, report it with the hook's stderr (DES_LOG_LEVEL=debug).",
		}
	}
}
