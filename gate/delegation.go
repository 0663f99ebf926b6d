package gate

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/deterministic-exec/des/policy"
)

// Delegation modes (setting delegation_mode).
const (
	DelegationOff     = "off"
	DelegationNudge   = "nudge"
	DelegationEnforce = "enforce"
)

// DelegationCall is a tool call about to run that may be work (Bash,
// Write, Edit, MultiEdit, NotebookEdit, an MCP tool), as the delegation
// rules see it; the policy says which tools are work.
type DelegationCall struct {
	Tool      string
	AgentID   string   // the event's agent_id: "" in the main thread
	SessionID string   // the counter of direct calls is per session
	Paths     []string // the files a file tool writes (absolute, or relative to the root); none for Bash
}

// Delegation asks des.gates.tool_use about main-thread work
// (DES-DELEGATION-REQUIRED, des.delegation) when the setting
// delegation_mode is not off. Go gathers the facts: whether the call is
// made in the main thread, how many direct work calls the main thread made
// since the last user prompt, and whether the call writes only in the
// temporary directory; the policy decides.
type Delegation struct {
	Root string // absolute project root
	Mode string // delegation_mode; "" or DelegationOff evaluates nothing
	// TempDir is the system's temporary directory ($TMPDIR, else /tmp).
	TempDir string
	// CountDirect counts one more direct work call of the session's main
	// thread since the last user prompt and returns the count; nil counts
	// nothing (0).
	CountDirect func(ctx context.Context, sessionID string) (int, error)
}

// Check evaluates the delegation rules on a call: input.delegation
// {main_thread, direct_calls, temp_only} beside the tool. With the mode off
// nothing is evaluated (Result.Evaluated false). A failure to count is
// returned with the evaluated result: the decision does not depend on the
// count, only its message does.
func (d Delegation) Check(ctx context.Context, ev Evaluator, call DelegationCall) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	if d.Mode == "" || d.Mode == DelegationOff {
		return res, nil
	}
	main := call.AgentID == ""
	temp := d.tempOnly(call)
	// No writes: the paths are the work tool's own guard's business (its
	// rules judge them with facts this check does not gather), and what
	// delegation exempts (the temporary directory) is temp_only. A write
	// of the task graph in the main thread is work like any other: the
	// plan is a planner subagent's to write.
	in := func(n int) map[string]any {
		return map[string]any{
			"event": "PreToolUse", "tool": call.Tool, "writes": []any{},
			"delegation": map[string]any{"main_thread": main, "direct_calls": n, "temp_only": temp},
		}
	}
	dec, err := ev.Evaluate(ctx, policy.ToolUse, in(0))
	if err != nil {
		return res, fmt.Errorf("delegation: %w", err)
	}
	// Only work that counts against delegating is counted: the policy says
	// which calls are work (an MCP tool that only reads is not; a scratch
	// file in the temporary directory is not). The count is in a nudge's
	// message only, so a nudge is judged again with it.
	var countErr error
	if main && !temp && d.CountDirect != nil && (hasCode(dec.Deny, DelegationCode) || hasCode(dec.Warn, DelegationCode)) {
		var n int
		n, countErr = d.CountDirect(ctx, call.SessionID)
		if countErr == nil && hasCode(dec.Warn, DelegationCode) {
			if dec, err = ev.Evaluate(ctx, policy.ToolUse, in(n)); err != nil {
				return res, fmt.Errorf("delegation: %w", err)
			}
		}
	}
	res.Decision, res.Evaluated = dec, true
	if countErr != nil {
		return res, fmt.Errorf("delegation: count the direct calls: %w", countErr)
	}
	return res, nil
}

// DelegationCode is the code of main-thread work (des.delegation).
const DelegationCode = "DES-DELEGATION-REQUIRED"

func hasCode(vs []policy.Violation, code string) bool {
	for _, v := range vs {
		if v.Code == code {
			return true
		}
	}
	return false
}

// tempOnly reports whether every path the call writes is outside the
// project root and under the temporary directory (links resolved on both
// sides: /tmp is /private/tmp on macOS), and is not a file with several
// hard links (another name, perhaps, of a project file). A call that names
// no path (Bash) is not.
func (d Delegation) tempOnly(call DelegationCall) bool {
	if len(call.Paths) == 0 || d.TempDir == "" {
		return false
	}
	tmp, err := resolvePath(filepath.Clean(d.TempDir))
	if err != nil || !filepath.IsAbs(tmp) {
		return false
	}
	for _, p := range call.Paths {
		rel, err := ResolveProjectPath(d.Root, p)
		if err != nil {
			return false
		}
		abs := filepath.FromSlash(rel)
		if !filepath.IsAbs(abs) {
			return false // inside the root: project work, even when the root is under /tmp
		}
		if _, ok := within(tmp, abs); !ok {
			return false
		}
		if multiplyLinked(abs) != nil {
			return false // another name of a file that may be the project's: not a scratch file
		}
	}
	return true
}

// TempDir is the system's temporary directory as the delegation rules
// read it: $TMPDIR, else /tmp (on every system: Claude Code's own
// scratch files go there).
func TempDir(lookupEnv func(string) (string, bool)) string {
	if lookupEnv != nil {
		if t, ok := lookupEnv("TMPDIR"); ok && filepath.IsAbs(t) {
			return filepath.Clean(t)
		}
	}
	return "/tmp"
}
