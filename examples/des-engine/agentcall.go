package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/integrity"
	"github.com/deterministic-exec/des/internal/statedir"
)

// agentCallEnv are variables Claude Code (2.1) sets in the environment of
// every command its tools run (the Bash tool's shell, hooks, MCP servers)
// and of its child sessions, and that a terminal of the user's own lacks:
// CLAUDECODE=1, CLAUDE_CODE_ENTRYPOINT (how it was started: cli, sdk-ts,
// ...), CLAUDE_CODE_CHILD_SESSION.
var agentCallEnv = []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_CHILD_SESSION"}

// insideClaudeCode reports whether this process runs inside Claude Code (a
// tool call or a hook), and the variable that says so with its value. An
// agent can unset them (env -u): insideAgentCall also asks the in-flight
// records, and the effect check undoes what such a run changes.
func insideClaudeCode(lookupEnv func(string) (string, bool)) (name, value string, ok bool) {
	for _, k := range agentCallEnv {
		if v, set := lookupEnv(k); set && strings.TrimSpace(v) != "" {
			return k, v, true
		}
	}
	return "", "", false
}

// insideAgentCall says why a person's command (one whose run must not count when
// the agent makes it: a resolution, accepting des's files, adopting the
// trail) appears to run inside an agent's tool call, "" when it does not:
// Claude Code's variables are in its environment, or a tool call of the
// project is recorded as running (the effect check's in-flight records,
// which an agent cannot unset: its own call is one of them). root "" looks
// at every project of the user.
func insideAgentCall(lookupEnv func(string) (string, bool), root string, now time.Time) string {
	if k, v, ok := insideClaudeCode(lookupEnv); ok {
		return fmt.Sprintf("%s=%s is set: Claude Code sets it for the commands its tools run", k, v)
	}
	// Which calls this process belongs to: while only an agent's background
	// job runs on, a person's terminal belongs to none.
	running := integrity.CallsRunning(statedir.Base(lookupEnv), os.Getpid(), now)
	if root != "" {
		running = integrity.ProjectCallsRunning(statedir.For(root, lookupEnv), os.Getpid(), now)
	}
	if len(running) > 0 {
		return fmt.Sprintf("tool calls are running (%s; each counts until its PostToolUse, or, for a command it started, while what it left running runs, or for %s where des cannot see processes)", strings.Join(running, ", "), integrity.InFlightLifetime)
	}
	return ""
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
