//go:build !unix

package main

import "os/exec"

func asClaudeCodeRuns(*exec.Cmd) {}
