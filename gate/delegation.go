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

// DelegationCall is a work tool call (Bash, Write, Edit, MultiEdit,
// NotebookEdit) about to run, as the delegation rules see it.
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
	n, countErr := 0, error(nil)
	if main && !temp && d.CountDirect != nil {
		// Only work that counts against delegating is counted: a scratch
		// file in the temporary directory is not.
		n, countErr = d.CountDirect(ctx, call.SessionID)
	}
	// No writes: the paths are the work tool's own guard's business (its
	// rules judge them with facts this check does not gather), and what
	// delegation exempts (the temporary directory) is temp_only. A write
	// of the task graph in the main thread is work like any other: the
	// plan is a planner subagent's to write.
	in := map[string]any{
		"event": "PreToolUse", "tool": call.Tool, "writes": []any{},
		"delegation": map[string]any{"main_thread": main, "direct_calls": n, "temp_only": temp},
	}
	dec, err := ev.Evaluate(ctx, policy.ToolUse, in)
	if err != nil {
		return res, fmt.Errorf("delegation: %w", err)
	}
	res.Decision, res.Evaluated = dec, true
	if countErr != nil {
		return res, fmt.Errorf("delegation: count the direct calls: %w", countErr)
	}
	return res, nil
}

// tempOnly reports whether every path the call writes is outside the
// project root and under the temporary directory (links resolved on both
// sides: /tmp is /private/tmp on macOS). A call that names no path (Bash)
// is not.
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
