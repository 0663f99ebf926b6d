package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/channel"
)

// BenchmarkServeGate1 is the warm decision server's own work on one Gate 1
// request (the complete execute-step prompt of BenchmarkProcess, a resume:
// the step is IN_PROGRESS after the first call; each call with a tool_use_id
// of its own, as Claude Code sends them), without the client, the socket or
// process start: what the server adds to a hook call over an event it
// routes nowhere.
//
//	plain:    no effect-check baseline for the project yet
//	baseline: after a Bash call, so the project has an effect-check
//	          baseline and every write des makes under .des/runs is
//	          announced to it and settled in it, as in a real session
func BenchmarkServeGate1(b *testing.B) {
	for _, baseline := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "baseline"}[baseline]
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			writeFile(b, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
			env := append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root, "DES_STATE_DIR="+b.TempDir())
			h := serveHandler(claudecode.NewCache(), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
			call := func(ev map[string]any) {
				data, _ := json.Marshal(ev)
				rep := h(context.Background(), &channel.Request{Version: channel.Protocol, Root: root, Cwd: root, Env: env, Stdin: data})
				if rep.Exit != 0 || len(rep.Stdout) != 0 {
					b.Fatalf("exit %d, stdout %q, stderr %q", rep.Exit, rep.Stdout, rep.Stderr)
				}
			}
			prompt := renderPrompt(b, "execute-step")
			n := 0
			gate1 := func() {
				n++
				ev := agentEvent(root, "Agent", prompt)
				ev["tool_use_id"] = fmt.Sprintf("toolu_bench_%d", n)
				call(ev)
			}
			if baseline {
				for _, event := range []string{"PreToolUse", "PostToolUse"} {
					call(map[string]any{"session_id": "s1", "cwd": root, "hook_event_name": event, "tool_name": "Bash",
						"tool_use_id": "toolu_bash", "tool_input": map[string]any{"command": "ls"}, "tool_response": map[string]any{}})
				}
			}
			gate1() // the start (TODO -> IN_PROGRESS) and the compile
			for b.Loop() {
				gate1()
			}
		})
	}
}
