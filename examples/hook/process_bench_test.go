package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkProcess times whole hook processes as Claude Code starts them,
// beside a do-nothing Go program (internal/noop) built the same way. The
// three are interleaved in one loop so that machine drift hits them alike,
// and the figures that matter are the ratios of their medians:
//
//	fast/noop:  an event DES has no opinion on (PreToolUse Read)
//	gate/noop:  an event that loads settings, compiles the tool_use gate's
//	            policies, evaluates them, records the block, prints the deny
//	gate1/noop: Gate 1 on a complete execute-step prompt: reads and validates
//	            the step file, scans its directory, compiles and evaluates
//	            Gate 1's policies, records the invocation (a resume after the
//	            first round)
func BenchmarkProcess(b *testing.B) {
	dir := b.TempDir()
	noop := filepath.Join(dir, "noop")
	build := exec.Command("go", "build", "-o", noop, "../../internal/noop")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	gateEvent, _ := json.Marshal(writeEvent(root, "Write", ".des/policies/relax.rego"))
	fastEvent, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": root,
		"tool_input": map[string]any{"file_path": filepath.Join(root, "README.md")}})
	env := append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root)
	writeFile(b, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}}`)
	gate1Event, _ := json.Marshal(agentEvent(root, "Agent", renderPrompt(b, "execute-step")))

	run := func(bin string, in []byte, wantOut bool) time.Duration {
		cmd := exec.Command(bin)
		cmd.Env, cmd.Dir, cmd.Stdin = env, root, bytes.NewReader(in)
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: %v", bin, err)
		}
		d := time.Since(start)
		if wantOut != (out.Len() > 0) {
			b.Fatalf("%s: unexpected output %q", bin, out.String())
		}
		return d
	}
	var noopT, fastT, gateT, gate1T []time.Duration
	for b.Loop() {
		noopT = append(noopT, run(noop, fastEvent, false))
		fastT = append(fastT, run(hookBin, fastEvent, false))
		gateT = append(gateT, run(hookBin, gateEvent, true))
		gate1T = append(gate1T, run(hookBin, gate1Event, false))
	}
	n, f, g, g1 := median(noopT), median(fastT), median(gateT), median(gate1T)
	b.ReportMetric(float64(n.Microseconds()), "noop-µs")
	b.ReportMetric(float64(f.Microseconds()), "fast-µs")
	b.ReportMetric(float64(g.Microseconds()), "gate-µs")
	b.ReportMetric(float64(f)/float64(n), "fast/noop")
	b.ReportMetric(float64(g)/float64(n), "gate/noop")
	b.ReportMetric(float64(g1.Microseconds()), "gate1-µs")
	b.ReportMetric(float64(g1)/float64(n), "gate1/noop")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
