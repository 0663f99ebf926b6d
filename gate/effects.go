package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/policy"
)

// CodeIntegrity is the code of a protected file or guarded document found
// changed after a tool call, outside an allowed write, and restored.
const CodeIntegrity = "DES-INTEGRITY"

// EffectChange is one watched path a tool call changed (internal/integrity
// finds them and restores them before any policy is asked).
type EffectChange struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	What     string `json:"what"`
	Was      string `json:"was"`
	Now      string `json:"now"`
	Restored bool   `json:"restored"`
	Error    string `json:"error,omitempty"`
	Kept     string `json:"kept,omitempty"` // the id of the undone content des kept
}

// Effects is what a tool call did to DES's files.
type Effects struct {
	Tool      string
	ToolUseID string
	SessionID string
	AgentID   string // the event's agent_id: set when a subagent made the call
	Changes   []EffectChange
	KeptDir   string // where the undone contents are kept (for the message)
}

// CheckEffects records the changes a tool call made to DES's files as
// INTEGRITY_VIOLATION and asks des.gates.tool_use how to report them
// (input.integrity.changes; des.integrity words DES-INTEGRITY). The undo has
// already happened and never depends on this answer. ev may be nil (the
// policies could not load): the result then carries EffectsFallback's
// violation. A failure to record is returned with the result.
func (t ToolUse) CheckEffects(ctx context.Context, ev Evaluator, e Effects) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	if len(e.Changes) == 0 {
		return res, nil
	}
	changes := make([]any, len(e.Changes))
	paths := make([]any, len(e.Changes))
	for i, c := range e.Changes {
		m := map[string]any{"path": c.Path, "kind": c.Kind, "what": c.What, "was": c.Was, "now": c.Now, "restored": c.Restored}
		if c.Error != "" {
			m["error"] = c.Error
		}
		if c.Kept != "" {
			m["kept"] = c.Kept
		}
		changes[i], paths[i] = m, c.Path
	}
	var evalErr error
	if ev != nil {
		in := map[string]any{"changes": changes}
		if e.KeptDir != "" {
			in["kept_dir"] = e.KeptDir
		}
		d, err := ev.Evaluate(ctx, policy.ToolUse, map[string]any{"tool": e.Tool, "integrity": in})
		if err == nil {
			res.Decision, res.Evaluated = d, true
		}
		evalErr = err
	}
	if !slices.Contains(res.Decision.Codes(), CodeIntegrity) {
		// No policy, or a team exception: the files were restored all the
		// same, and the agent must learn it.
		res.Decision.Deny = append(res.Decision.Deny, EffectsFallback(e))
		res.Evaluated = true
	}
	if t.Audit == nil {
		return res, evalErr
	}
	fields := map[string]any{"gate": string(policy.ToolUse), "tool": e.Tool, "paths": paths, "changes": changes, "codes": res.Decision.Codes()}
	if e.ToolUseID != "" {
		fields["tool_use_id"] = e.ToolUseID
	}
	if e.SessionID != "" {
		fields["session_id"] = e.SessionID
	}
	withAgent(fields, e.AgentID)
	if err := t.Audit.Append(ctx, audit.Entry{Event: audit.IntegrityViolation, Fields: fields}); err != nil {
		return res, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return res, evalErr
}

// EffectsFallback is the DES-INTEGRITY violation worded without policy,
// for when the policies cannot load (a config that does not parse is
// restored first, but a team policy may still fail to compile).
func EffectsFallback(e Effects) policy.Violation {
	var b strings.Builder
	files := "files"
	if len(e.Changes) == 1 {
		files = "a file"
	}
	fmt.Fprintf(&b, "%s changed %s DES protects outside an allowed write:", e.Tool, files)
	kept := false
	for _, c := range e.Changes {
		state := "restored"
		if !c.Restored {
			state = "NOT restored (" + c.Error + ")"
		}
		fmt.Fprintf(&b, "\n%s %s: %s", c.Path, c.What, state)
		if c.Kept != "" {
			fmt.Fprintf(&b, "; what it held is kept as %s (`des-hook integrity restore %s` takes it back)", c.Kept, c.Kept)
			kept = true
		}
	}
	recovery := []string{
		"Do not change DES's files, its hook settings or guarded documents from Bash, notebooks or MCP tools; write guarded documents with the Write or Edit tool, which DES checks.",
		"If the user meant the change, the user makes it by hand between tool calls, or runs `des-hook integrity accept` afterwards.",
	}
	if kept {
		where := "DES's state directory"
		if e.KeptDir != "" {
			where = e.KeptDir
		}
		recovery[1] = "Nothing undone is lost: DES kept it in " + where + " (`des-hook integrity kept` lists it). If the user meant the change, the user runs `des-hook integrity restore ID` from a terminal of their own (not through Claude Code; it waits for no background job of the agent's, only for a call that is running), or makes it by hand between tool calls once the agent's commands have ended."
	}
	return policy.Violation{Code: CodeIntegrity, Severity: policy.Deny, Message: b.String(), Recovery: recovery}
}
