package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkGitInTheWorkflow measures, as whole processes through the warm
// decision server, what git in the workflow adds: a Bash call's
// PreToolUse and PostToolUse in a project that is a git repository (the
// refs recorded before and compared after) against one that is not, and
// a `git checkout -b` with des's reference-transaction hook against
// without it. Reported per operation and as ratios to a process that does
// nothing (noop), as docs/performance.md records them.
func BenchmarkGitInTheWorkflow(b *testing.B) {
	if testDecisionServer == "off" {
		b.Skip("DES_TEST_DECISION_SERVER=off")
	}
	noop := buildNoop(b)
	base := slices.DeleteFunc(cleanEnviron(), func(kv string) bool { return strings.HasPrefix(kv, "DES_DECISION_SERVER=") })
	bashCall := func(root string, n int) time.Duration {
		env := append(slices.Clip(base), "CLAUDE_PROJECT_DIR="+root)
		var total time.Duration
		for _, event := range []string{"PreToolUse", "PostToolUse"} {
			ev, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": root, "hook_event_name": event, "tool_name": "Bash",
				"tool_use_id": fmt.Sprintf("toolu_bench_%d", n), "tool_input": map[string]any{"command": "ls"}, "tool_response": map[string]any{}})
			total += timeProcess(b, env, root, ev, false, hookBin)
		}
		return total
	}
	plain := b.TempDir()
	repo := gitProject(b)
	if r := runIn(b, repo, nil, "precommit", "--install", "--command", hookBin); r.code != 0 {
		b.Fatalf("install: %+v", r)
	}
	bare := gitProject(b)
	bashCall(plain, 0) // starts the server
	var noopT, plainT, repoT, hookT, noHookT time.Duration
	for i := 1; i <= b.N; i++ {
		noopT += timeProcess(b, base, plain, nil, false, noop)
		plainT += bashCall(plain, i)
		repoT += bashCall(repo, i)
		hookT += timed(b, repo, "git", "checkout", "-q", "-b", fmt.Sprintf("h%d", i))
		noHookT += timed(b, bare, "git", "checkout", "-q", "-b", fmt.Sprintf("h%d", i))
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64(noopT/n)/1e6, "noop-ms")
	b.ReportMetric(float64(plainT/n)/1e6, "bash-call-plain-ms")
	b.ReportMetric(float64(repoT/n)/1e6, "bash-call-git-ms")
	b.ReportMetric(float64(hookT/n)/1e6, "checkout-b-hooked-ms")
	b.ReportMetric(float64(noHookT/n)/1e6, "checkout-b-bare-ms")
	b.ReportMetric(float64(repoT)/float64(plainT), "git/plain")
	b.ReportMetric(float64(hookT)/float64(noHookT), "hooked/bare")
}

// timed runs a command in dir and returns how long it took.
func timed(b *testing.B, dir, name string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnviron()
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return time.Since(start)
}
