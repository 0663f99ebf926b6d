package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
//	phase/noop: Gate 1 on an iSDLC phase delegation the guards allow (the
//	            README's example project): finds and reads the workflow state,
//	            the plan and the artifacts, compiles and evaluates Gate 1's
//	            policies with the phase guards
func BenchmarkProcess(b *testing.B) {
	noop := buildNoop(b)
	root := b.TempDir()
	gateEvent, _ := json.Marshal(writeEvent(root, "Write", ".des/policies/relax.rego"))
	fastEvent, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": root,
		"tool_input": map[string]any{"file_path": filepath.Join(root, "README.md")}})
	env := append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root)
	writeFile(b, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
	gate1Event, _ := json.Marshal(agentEvent(root, "Agent", renderPrompt(b, "execute-step")))
	phaseRoot := b.TempDir()
	if err := os.CopyFS(phaseRoot, os.DirFS("testdata/isdlc-project")); err != nil {
		b.Fatal(err)
	}
	phaseEnv := append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+phaseRoot)
	phaseEvent, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Agent", "cwd": phaseRoot,
		"session_id": "s", "tool_use_id": "toolu_bench",
		"tool_input": map[string]any{"subagent_type": "software-developer", "description": "Implement T0002", "prompt": "Implement T0002 of docs/isdlc/tasks.md."}})

	run := func(bin string, in []byte, wantOut bool) time.Duration {
		if bytes.Equal(in, phaseEvent) {
			return timeProcess(b, phaseEnv, phaseRoot, in, wantOut, bin)
		}
		return timeProcess(b, env, root, in, wantOut, bin)
	}
	var noopT, fastT, gateT, gate1T, phaseT []time.Duration
	for b.Loop() {
		noopT = append(noopT, run(noop, fastEvent, false))
		fastT = append(fastT, run(hookBin, fastEvent, false))
		gateT = append(gateT, run(hookBin, gateEvent, true))
		gate1T = append(gate1T, run(hookBin, gate1Event, false))
		phaseT = append(phaseT, run(hookBin, phaseEvent, false))
	}
	n, f, g, g1, ph := median(noopT), median(fastT), median(gateT), median(gate1T), median(phaseT)
	b.ReportMetric(float64(n.Microseconds()), "noop-µs")
	b.ReportMetric(float64(f.Microseconds()), "fast-µs")
	b.ReportMetric(float64(g.Microseconds()), "gate-µs")
	b.ReportMetric(float64(f)/float64(n), "fast/noop")
	b.ReportMetric(float64(g)/float64(n), "gate/noop")
	b.ReportMetric(float64(g1.Microseconds()), "gate1-µs")
	b.ReportMetric(float64(g1)/float64(n), "gate1/noop")
	b.ReportMetric(float64(ph.Microseconds()), "phase-µs")
	b.ReportMetric(float64(ph)/float64(n), "phase/noop")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkProcessBashCall times the two hook processes of one Bash call
// that changes nothing, on a project with the 300 real step files of the
// shared corpus, beside a do-nothing Go program and an event DES has no
// opinion on, interleaved in one loop:
//
//	pre/noop:  PreToolUse Bash: settings loaded, the command read, the effect
//	           check's baseline refreshed (a stat per watched path), the call
//	           recorded in flight
//	post/noop: PostToolUse Bash: the effect check (a stat per watched path,
//	           the protected directories listed), before the change only the
//	           fast path
//	fast/noop: PreToolUse Read, routed nowhere: what PostToolUse Bash cost
//	           before the effect check
func BenchmarkProcessBashCall(b *testing.B) {
	src := filepath.Join("..", "..", "..", "shared", "corpus", "nwave-steps")
	files, _ := filepath.Glob(filepath.Join(src, "*.json"))
	if len(files) == 0 {
		b.Skipf("no step files in %s (the shared corpus beside the project)", src)
	}
	noop := buildNoop(b)
	root := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		b.Skipf("git init: %v %s", err, out)
	}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, root, fmt.Sprintf("docs/feature/f%d/steps/%02d-%02d.json", i%10, i/10, i%10), string(data))
	}
	writeFile(b, root, ".des/config.json", "{}")
	writeFile(b, root, ".des/policies/team.rego", "package des.team\n")
	old := time.Now().Add(-time.Hour) // files as a project has them, not written this second
	_ = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			_ = os.Chtimes(p, old, old)
		}
		return nil
	})
	env := append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root, "DES_STATE_DIR="+b.TempDir())
	ev := func(event string) []byte {
		data, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": root, "hook_event_name": event, "tool_name": "Bash",
			"tool_use_id": "toolu_bench", "tool_input": map[string]any{"command": "ls"}, "tool_response": map[string]any{}})
		return data
	}
	pre, post := ev("PreToolUse"), ev("PostToolUse")
	fast, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": root,
		"tool_input": map[string]any{"file_path": filepath.Join(root, "README.md")}})
	run := func(bin string, in []byte) time.Duration { return timeProcess(b, env, root, in, false, bin) }
	run(hookBin, pre) // the first baseline: every file read, hashed and kept
	run(hookBin, post)
	var noopT, fastT, preT, postT []time.Duration
	for b.Loop() {
		noopT = append(noopT, run(noop, fast))
		fastT = append(fastT, run(hookBin, fast))
		preT = append(preT, run(hookBin, pre))
		postT = append(postT, run(hookBin, post))
	}
	n, f, p, q := median(noopT), median(fastT), median(preT), median(postT)
	b.ReportMetric(float64(n.Microseconds()), "noop-µs")
	b.ReportMetric(float64(f.Microseconds()), "fast-µs")
	b.ReportMetric(float64(p.Microseconds()), "pre-µs")
	b.ReportMetric(float64(q.Microseconds()), "post-µs")
	b.ReportMetric(float64(f)/float64(n), "fast/noop")
	b.ReportMetric(float64(p)/float64(n), "pre/noop")
	b.ReportMetric(float64(q)/float64(n), "post/noop")
}

// BenchmarkProcessPaths times Gate 1 (the execute-step prompt of
// BenchmarkProcess) and an event DES has no opinion on by each path a hook
// event can take, beside the do-nothing Go program and the start-up of node
// and python3 (the runtimes of other hooks), interleaved in one loop:
//
//	server:  des-hook, the warm decision server deciding (after a warm-up)
//	handoff: des-hook with DES_DECISION_SERVER=off, exec'ing des-engine
//	engine:  des-engine run directly, the in-process path alone
//	fast:    des-hook through the server on PreToolUse Read
//	session: server, in a second project that has had a Bash call (so an
//	         effect-check baseline, which every write des makes is recorded
//	         in), each call with a tool_use_id of its own as in a session
//	node, python3: `node -e 0`, `python3 -c 0`, when installed
func BenchmarkProcessPaths(b *testing.B) {
	if testDecisionServer == "off" {
		b.Skip("DES_TEST_DECISION_SERVER=off")
	}
	noop := buildNoop(b)
	root := b.TempDir()
	writeFile(b, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
	gate1Event, _ := json.Marshal(agentEvent(root, "Agent", renderPrompt(b, "execute-step")))
	fastEvent, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": root,
		"tool_input": map[string]any{"file_path": filepath.Join(root, "README.md")}})
	base := slices.DeleteFunc(cleanEnviron(), func(kv string) bool { return strings.HasPrefix(kv, "DES_DECISION_SERVER=") })
	auto := append(slices.Clip(base), "CLAUDE_PROJECT_DIR="+root)
	off := append(slices.Clip(auto), "DES_DECISION_SERVER=off")
	run := func(env []string, in []byte, bin string, args ...string) time.Duration {
		return timeProcess(b, env, root, in, false, bin, args...)
	}
	// The warm-up: the first call starts the server; wait for it, then one
	// call through it.
	run(auto, gate1Event, hookBin)
	if _, ok, err := testServerPID(os.Getenv("XDG_RUNTIME_DIR")); err != nil || !ok {
		b.Fatalf("no decision server after the first call: %v", err)
	}
	run(auto, gate1Event, hookBin)
	// The session project: a Bash call first, then Gate 1 with fresh ids.
	sroot := b.TempDir()
	writeFile(b, sroot, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
	senv := append(slices.Clip(base), "CLAUDE_PROJECT_DIR="+sroot)
	for _, event := range []string{"PreToolUse", "PostToolUse"} {
		ev, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": sroot, "hook_event_name": event, "tool_name": "Bash",
			"tool_use_id": "toolu_bash", "tool_input": map[string]any{"command": "ls"}, "tool_response": map[string]any{}})
		run(senv, ev, hookBin)
	}
	sessionCall := 0
	sessionEvent := func() []byte {
		sessionCall++
		ev := agentEvent(sroot, "Agent", renderPrompt(b, "execute-step"))
		ev["tool_use_id"] = fmt.Sprintf("toolu_session_%d", sessionCall)
		data, _ := json.Marshal(ev)
		return data
	}
	timeProcess(b, senv, sroot, sessionEvent(), false, hookBin) // the start (TODO -> IN_PROGRESS)
	node, _ := exec.LookPath("node")
	python, _ := exec.LookPath("python3")
	var noopT, serverT, handoffT, engineT, fastT, sessionT, nodeT, pythonT []time.Duration
	for b.Loop() {
		noopT = append(noopT, run(auto, fastEvent, noop))
		serverT = append(serverT, run(auto, gate1Event, hookBin))
		handoffT = append(handoffT, run(off, gate1Event, hookBin))
		engineT = append(engineT, run(auto, gate1Event, engineBin))
		fastT = append(fastT, run(auto, fastEvent, hookBin))
		sessionT = append(sessionT, timeProcess(b, senv, sroot, sessionEvent(), false, hookBin))
		if node != "" {
			nodeT = append(nodeT, run(auto, nil, node, "-e", "0"))
		}
		if python != "" {
			pythonT = append(pythonT, run(auto, nil, python, "-c", "0"))
		}
	}
	n := median(noopT)
	report := func(name string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		m := median(ds)
		b.ReportMetric(float64(m.Microseconds()), name+"-µs")
		b.ReportMetric(float64(m)/float64(n), name+"/noop")
	}
	b.ReportMetric(float64(n.Microseconds()), "noop-µs")
	report("server", serverT)
	report("handoff", handoffT)
	report("engine", engineT)
	report("fast", fastT)
	report("session", sessionT)
	report("node", nodeT)
	report("python3", pythonT)
}

// timeProcess runs bin with args in dir with env and in on stdin, and
// returns how long the process took; it fails b on an error, and on output
// unless wantOut (a deny) or on none if wantOut.
func timeProcess(b *testing.B, env []string, dir string, in []byte, wantOut bool, bin string, args ...string) time.Duration {
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir, cmd.Stdin = env, dir, bytes.NewReader(in)
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

// buildNoop builds the do-nothing program internal/noop as TestMain builds
// the hook (static), the yardstick of every process benchmark.
func buildNoop(b *testing.B) string {
	noop := filepath.Join(b.TempDir(), "noop")
	build := exec.Command("go", "build", "-o", noop, "../../internal/noop")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	return noop
}
