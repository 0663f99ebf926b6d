package main

import (
	"context"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/template"
)

// One handler per route of defaultRoutes. Each gathers what its gate needs
// from the event, asks the library (h.engine) and maps the decision to a
// response with the constructors of output.go; the decision itself belongs
// to the library.

// preToolUseSubagent is Gate 1: PreToolUse for Agent/Task.
func preToolUseSubagent(ctx context.Context, h *hookEnv, ev *Event) response {
	in, err := ev.SubagentInput()
	if err != nil || !template.Parse(in.Prompt).HasMarkers {
		return noOpinion() // ad hoc: DES has no opinion, and builds nothing
	}
	h.requireValidation()
	eng, err := h.engine(ctx)
	if err != nil {
		return h.internalError(true, err)
	}
	res, err := eng.PreInvocation(ctx, gate.Invocation{
		Prompt: in.Prompt, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentType: in.SubagentType,
	})
	if err != nil && (!res.Evaluated || !res.Denied()) {
		return h.internalError(true, err) // an allow DES could not carry out or record fails closed
	}
	if err != nil {
		h.logger.Error("hook: the deny stands but was not recorded", "err", err)
	}
	return preToolUseResponse(res.Result)
}

// preToolUseWrite guards Write/Edit/MultiEdit before they land: workflow
// documents (document_write) and DES's own files (protected paths).
func preToolUseWrite(ctx context.Context, h *hookEnv, ev *Event) response {
	path, ok := ev.TargetFile()
	if !ok {
		return noOpinion() // no file named: Claude Code refuses the call itself
	}
	call := gate.ToolCall{Tool: ev.ToolName, Paths: []string{path}}
	eng, err := h.engine(ctx)
	if err != nil {
		// Without settings only .des itself is known to be DES's.
		return h.internalError(gate.ToolUse{Root: h.root}.Concerns(call), err)
	}
	if !eng.ToolUse().Concerns(call) {
		return noOpinion() // not DES's file: no policy is compiled or asked
	}
	h.requireValidation()
	res, err := eng.CheckToolUse(ctx, call)
	if err != nil && !res.Evaluated {
		return h.internalError(true, err)
	}
	if err != nil {
		h.logger.Error("hook: the decision stands but was not recorded", "err", err)
	}
	return preToolUseResponse(res)
}

// preToolUseResponse maps a gate result to PreToolUse output: a deny with
// every violation, or the warnings for Claude and the user, or nothing.
func preToolUseResponse(res gate.Result) response {
	switch {
	case res.Denied():
		return denyPreToolUse(res.Reason())
	case len(res.Decision.Warn) > 0:
		w := res.Warnings()
		return warnPreToolUse(w, w)
	default:
		return noOpinion()
	}
}

// preToolUseBash guards Bash: writes to guarded documents (tool_use) and
// `git commit`, which runs Gate 3.
func preToolUseBash(ctx context.Context, h *hookEnv, ev *Event) response {
	// wired by the gate issues
	return noOpinion()
}

// postToolUseWrite confirms that a guarded write landed.
func postToolUseWrite(ctx context.Context, h *hookEnv, ev *Event) response {
	// wired by the gate issues
	return noOpinion()
}

// postToolUseSubagent tells the orchestrator when Gate 2 failed the step the
// subagent ran (PostToolUse for Agent/Task).
func postToolUseSubagent(ctx context.Context, h *hookEnv, ev *Event) response {
	// wired by the gate issues
	return noOpinion()
}

// subagentStop is Gate 2.
func subagentStop(ctx context.Context, h *hookEnv, ev *Event) response {
	// wired by the gate issues
	return noOpinion()
}
