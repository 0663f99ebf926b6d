package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/integrity"
	"github.com/deterministic-exec/des/internal/statedir"
)

// agentCallEnv are variables Claude Code (2.1) sets in the environment of
// every command its tools run (the Bash tool's shell, hooks, MCP servers)
// and of its child sessions, and that a terminal of the user's own lacks.
var agentCallEnv = []string{"CLAUDECODE", "CLAUDE_CODE_CHILD_SESSION"}

// insideAgentCall says why a person's command (one whose run must not count when
// the agent makes it: a resolution, accepting des's files, adopting the
// trail) appears to run inside an agent's tool call, "" when it does not:
// Claude Code's variables are in its environment, or a tool call of the
// project is recorded as running (the effect check's in-flight records,
// which an agent cannot unset: its own call is one of them). root "" looks
// at every project of the user.
func insideAgentCall(lookupEnv func(string) (string, bool), root string, now time.Time) string {
	for _, k := range agentCallEnv {
		if v, ok := lookupEnv(k); ok && v != "" {
			return fmt.Sprintf("%s=%s is set: Claude Code sets it for the commands its tools run", k, v)
		}
	}
	running := integrity.CallsRunning(statedir.Base(lookupEnv), now)
	if root != "" {
		running = projectCallsRunning(statedir.For(root, lookupEnv), now)
	}
	if len(running) > 0 {
		return fmt.Sprintf("tool calls are running (%s; each counts until its PostToolUse, or until %s after it started)", strings.Join(running, ", "), integrity.InFlightLifetime)
	}
	return ""
}

// projectCallsRunning lists the tool calls recorded as running in the
// project whose state directory is dir (integrity.CallsRunning's records:
// a record's modification time is when it expires).
func projectCallsRunning(dir string, now time.Time) []string {
	recs, _ := filepath.Glob(filepath.Join(dir, "integrity", "inflight", "*"))
	var out []string
	for _, r := range recs {
		if fi, err := os.Lstat(r); err == nil && now.Before(fi.ModTime()) {
			out = append(out, filepath.Base(r))
		}
	}
	return out
}

// refuseAgentCall prints why cmd is refused inside an agent's call (of
// root's project; "" any project) and reports whether it is.
func refuseAgentCall(e env, cmd, root string, now time.Time) bool {
	why := insideAgentCall(e.lookupEnv, root, now)
	if why == "" {
		return false
	}
	fmt.Fprintf(e.stderr, "%s: refused inside an agent's tool call: %s.\nAn agent's run of it does not count: run it yourself, from a terminal of your own (not through Claude Code, not even its ! shell), once the agent's commands have ended.\n", cmd, why)
	return true
}
