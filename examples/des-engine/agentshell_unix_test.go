//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// asClaudeCodeRuns starts cmd as Claude Code's Bash tool starts a command:
// in a session of its own (the shell is its leader, and so of its process
// group), which the jobs it leaves keep once it has exited. The effect
// check tells a call's jobs from other programs' by that session.
func asClaudeCodeRuns(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setpgid = false
}
