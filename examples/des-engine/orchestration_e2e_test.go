package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/audit"
)

// Orchestration governance through the built hook: the wiring of the
// delegation mode, the subagent registry, the task graph as a guarded
// document, the wave sync and the status commands. The rules themselves
// are tested in rego/des/taskgraph and rego/des/delegation, the big flows
// in taskgraph_*_e2e_test.go.

const orchGraph = ".claude/state/active_task_graph.json"

// orchPlan is a graph of two waves: an implementation, then its
// verification.
const orchPlan = `{
  "task_id": "T-1",
  "current_wave": 0,
  "waves": [
    {"wave_id": 0, "parallel_execution": true, "phases": [
      {"phase_id": "impl-a", "type": "implementation", "objective": "Add the login handler", "agent": "coder",
       "deliverable_manifest": {"files": [{"path": "src/login.go", "must_exist": true}]}}
    ]},
    {"wave_id": 1, "phases": [
      {"phase_id": "verify-a", "type": "verification", "objective": "Verify the login handler", "agent": "verifier", "verifies_phase_id": "impl-a"}
    ]}
  ]
}
`

func orchProject(t *testing.T, graph bool, config string) string {
	t.Helper()
	var opts []projOpt
	if config != "" {
		opts = append(opts, projConfig(config))
	}
	if graph {
		opts = append(opts, projGraph(orchGraph, orchPlan))
	}
	return newTestProject(t, opts...)
}

// orchOut is any hook response.
type orchOut struct {
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	SystemMessage string `json:"systemMessage"`
	Specific      struct {
		HookEventName      string `json:"hookEventName"`
		PermissionDecision string `json:"permissionDecision"`
		Reason             string `json:"permissionDecisionReason"`
		AdditionalContext  string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func orchRun(t *testing.T, root string, ev map[string]any, env ...string) (orchOut, string) {
	t.Helper()
	r := runHookProcess(t, root, env, ev)
	var out orchOut
	if r.code != 0 {
		t.Fatalf("exit status %d; stderr: %s", r.code, r.stderr)
	}
	if s := strings.TrimSpace(r.stdout); s != "" {
		dec := json.NewDecoder(strings.NewReader(s))
		if err := dec.Decode(&out); err != nil || dec.More() {
			t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
		}
	}
	return out, r.stdout
}

func orchTool(root, event, tool, id string, input map[string]any) map[string]any {
	return toolEvent(event, tool, root, input, evToolUseID(id))
}

func orchAgentCall(root, id, prompt string) map[string]any {
	return agentEv("PreToolUse", "Agent", root, "coder", "work", prompt, evToolUseID(id))
}

// orchTranscript writes a subagent transcript: the prompt, then the
// assistant's messages.
func orchTranscript(t *testing.T, root, name, prompt string, assistant ...string) string {
	t.Helper()
	lines := []string{mustMarshal(t, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})}
	for _, a := range assistant {
		lines = append(lines, mustMarshal(t, map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": a}}}}))
	}
	p := filepath.Join(root, ".claude", "transcripts", name+".jsonl")
	writeFile(t, root, filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator))), strings.Join(lines, "\n")+"\n")
	return p
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func orchStop(root, agentID, agentType, transcript, last string) map[string]any {
	return subagentStopEv(root, agentID, agentType, transcript, last)
}

func orchGraphDoc(t *testing.T, root string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(fileText(t, root, orchGraph)), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func orchPhase(doc map[string]any, id string) map[string]any {
	for _, w := range doc["waves"].([]any) {
		for _, p := range w.(map[string]any)["phases"].([]any) {
			if p.(map[string]any)["phase_id"] == id {
				return p.(map[string]any)
			}
		}
	}
	return nil
}

// runSub runs a subcommand of the built binary in root, stdin given.
func runSub(t *testing.T, root, stdin string, env []string, args ...string) hookRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin, args...)
	cmd.Env = append(slices.Clip(cleanEnviron()), env...)
	cmd.Dir = root
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run hook: %v", err)
		}
	}
	return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

func TestE2EOrchBashWriteToTheGraphDenied(t *testing.T) {
	t.Parallel()
	root := orchProject(t, true, "")
	for _, cmd := range []string{
		`echo '{}' > ` + orchGraph,
		`jq '.current_wave = 1' x.json > ` + orchGraph,
		`sed -i 's/pending/completed/' .claude/state/active_task_graph.json`,
	} {
		out, _ := orchRun(t, root, orchTool(root, "PreToolUse", "Bash", "toolu_b", map[string]any{"command": cmd}))
		if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-STATE-BASH-WRITE") {
			t.Errorf("%s: %+v, want DES-STATE-BASH-WRITE", cmd, out)
		}
	}
	// The registry is DES's own.
	out, _ := orchRun(t, root, orchTool(root, "PreToolUse", "Write", "toolu_w", map[string]any{"file_path": filepath.Join(root, ".des/sessions/a1.json"), "content": "{}"}))
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-PROTECTED-PATH") {
		t.Errorf("write to the registry: %+v", out)
	}
}

func TestE2EOrchEffectCheckRestoresTheGraph(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	writeFile(t, root, orchGraph, orchPlan)
	begin(t, root)
	_, post := bashToolCall(t, root, "toolu_g", `F=.claude/state/active_task_graph; printf '{"waves": []}' > "$F.json"`)
	wantRestored(t, post, orchGraph)
	if fileText(t, root, orchGraph) != orchPlan {
		t.Errorf("graph not restored:\n%s", fileText(t, root, orchGraph))
	}
}

func TestE2EOrchStatusLineAndStatus(t *testing.T) {
	t.Parallel()
	root := orchProject(t, true, "")
	// Claude Code's JSON names the project; no CLAUDE_PROJECT_DIR.
	in := mustMarshal(t, map[string]any{"cwd": root, "workspace": map[string]any{"project_dir": root, "current_dir": root}})
	r := runSub(t, t.TempDir(), in, nil, "statusline")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[PAR] Active: 0 Wave 0" {
		t.Errorf("statusline = %d %q (stderr %s)", r.code, r.stdout, r.stderr)
	}
	// No input at all: the root from CLAUDE_PROJECT_DIR.
	if r := runSub(t, t.TempDir(), "", []string{"CLAUDE_PROJECT_DIR=" + root}, "statusline"); r.code != 0 || !strings.HasPrefix(r.stdout, "[PAR] Active: 0") {
		t.Errorf("statusline without JSON = %d %q", r.code, r.stdout)
	}
	// No graph, a bad setting: a short line, exit 0.
	bare := orchProject(t, false, "")
	if r := runSub(t, bare, "not json", nil, "statusline"); r.code != 0 || strings.TrimSpace(r.stdout) != "[DES] Active: 0" {
		t.Errorf("statusline without a graph = %d %q", r.code, r.stdout)
	}
	bad := orchProject(t, false, `{"delegation_mode": "sometimes"}`)
	if r := runSub(t, bad, "", nil, "statusline"); r.code != 0 || !strings.HasPrefix(r.stdout, "[DES] settings error: ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("statusline with a bad setting = %d %q", r.code, r.stdout)
	}

	r = runSub(t, root, "", []string{"CLAUDE_PROJECT_DIR=" + root}, "status", "--json")
	var st struct {
		DelegationMode string `json:"delegation_mode"`
		Running        []any  `json:"running"`
		Graph          struct {
			CurrentWave int `json:"current_wave"`
			Waves       []struct {
				Phases []struct {
					ID     string `json:"phase_id"`
					Status string `json:"status"`
				} `json:"phases"`
			} `json:"waves"`
		} `json:"task_graph"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 {
		t.Fatalf("status --json = %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if st.DelegationMode != "off" || len(st.Graph.Waves) != 2 || st.Running == nil {
		t.Errorf("status = %+v", st)
	}
	r = runSub(t, root, "", []string{"CLAUDE_PROJECT_DIR=" + root}, "status")
	for _, want := range []string{"delegation_mode: off", "subagents running: none", "impl-a", "verify-a", "current wave 0 of 2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
}

// The registry across processes: starts and stops as Claude Code sends
// them, seen by the status commands; the concurrency limit on the main
// thread only.
func TestE2EOrchRegistry(t *testing.T) {
	t.Parallel()
	root := orchProject(t, false, `{"max_concurrent_agents": 2}`)
	for _, id := range []string{"a1", "a2"} {
		out, raw := orchRun(t, root, subagentStartEv(root, id, "explorer"))
		if raw != "" {
			t.Errorf("SubagentStart said %s (%+v)", raw, out)
		}
	}
	if r := runSub(t, root, "", nil, "statusline"); strings.TrimSpace(r.stdout) != "[DES] Active: 2" {
		t.Errorf("statusline = %q", r.stdout)
	}
	out, _ := orchRun(t, root, orchAgentCall(root, "toolu_3", "Explore the code."))
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-CONCURRENCY-LIMIT") {
		t.Errorf("third agent: %+v, want DES-CONCURRENCY-LIMIT", out)
	}
	// A subagent's own delegation is not the main thread's.
	sub := orchAgentCall(root, "toolu_4", "Explore the code.")
	sub["agent_id"] = "a1"
	if out, raw := orchRun(t, root, sub); raw != "" {
		t.Errorf("a subagent's call: %+v", out)
	}
	tr := orchTranscript(t, root, "a1", "Explore the code.", "Done.")
	if out, raw := orchRun(t, root, orchStop(root, "a1", "explorer", tr, "Done.")); raw != "" {
		t.Errorf("SubagentStop said %s (%+v)", raw, out)
	}
	r := runSub(t, root, "", nil, "statusline")
	if !strings.HasPrefix(r.stdout, "[DES] Active: 1 | Last: explorer completed (") {
		t.Errorf("statusline after a stop = %q", r.stdout)
	}
	if out, raw := orchRun(t, root, orchAgentCall(root, "toolu_5", "Explore the code.")); raw != "" {
		t.Errorf("below the limit again: %+v", out)
	}
	// A new prompt: no output.
	if _, raw := orchRun(t, root, userPromptEv(root, "go on")); raw != "" {
		t.Errorf("UserPromptSubmit said %s", raw)
	}
}

func TestE2EOrchDelegation(t *testing.T) {
	t.Parallel()
	write := func(root, path string) map[string]any {
		return orchTool(root, "PreToolUse", "Write", "toolu_w", map[string]any{"file_path": path, "content": "package main\n"})
	}
	t.Run("enforce", func(t *testing.T) {
		root := orchProject(t, false, `{"delegation_mode": "enforce"}`)
		out, _ := orchRun(t, root, write(root, filepath.Join(root, "main.go")))
		if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-DELEGATION-REQUIRED") {
			t.Errorf("main-thread Write: %+v", out)
		}
		out, _ = orchRun(t, root, orchTool(root, "PreToolUse", "Bash", "toolu_b", map[string]any{"command": "go test ./..."}))
		if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-DELEGATION-REQUIRED") {
			t.Errorf("main-thread Bash: %+v", out)
		}
		inSub := write(root, filepath.Join(root, "main.go"))
		inSub["agent_id"] = "a1"
		if out, raw := orchRun(t, root, inSub); raw != "" {
			t.Errorf("a subagent's Write: %+v", out)
		}
		tmp := t.TempDir()
		if out, raw := orchRun(t, root, write(root, filepath.Join(tmp, "scratch.txt")), "TMPDIR="+tmp); raw != "" {
			t.Errorf("a Write under $TMPDIR: %+v", out)
		}
		// Delegating stays possible: the Agent call is not a work tool.
		if out, raw := orchRun(t, root, orchAgentCall(root, "toolu_a", "Write main.go")); raw != "" {
			t.Errorf("delegating: %+v", out)
		}
		// Both guards at once: every violation listed.
		out, _ = orchRun(t, root, write(root, filepath.Join(root, ".des/policies/x.rego")))
		if !strings.Contains(out.Specific.Reason, "DES-DELEGATION-REQUIRED") || !strings.Contains(out.Specific.Reason, "DES-PROTECTED-PATH") {
			t.Errorf("merged deny: %+v", out)
		}
	})
	t.Run("nudge", func(t *testing.T) {
		root := orchProject(t, false, `{"delegation_mode": "nudge"}`)
		var last orchOut
		for range 3 {
			last, _ = orchRun(t, root, write(root, filepath.Join(root, "main.go")))
		}
		if last.Specific.PermissionDecision != "" || !strings.Contains(last.Specific.AdditionalContext, "DES-DELEGATION-REQUIRED") || !strings.Contains(last.Specific.AdditionalContext, "3") {
			t.Errorf("third direct call: %+v, want a warning with the count 3", last)
		}
		orchRun(t, root, userPromptEv(root, "next"))
		last, _ = orchRun(t, root, write(root, filepath.Join(root, "main.go")))
		if !strings.Contains(last.Specific.AdditionalContext, "1") || strings.Contains(last.Specific.AdditionalContext, "4") {
			t.Errorf("after a new prompt: %+v, want the count back at 1", last)
		}
	})
	t.Run("off", func(t *testing.T) {
		root := orchProject(t, false, "")
		if out, raw := orchRun(t, root, write(root, filepath.Join(root, "main.go"))); raw != "" {
			t.Errorf("mode off: %+v", out)
		}
	})
}

// One phase through the hook: Gate 1 judges the delegation against the
// graph and records its phase, the stop syncs the graph, PostToolUse says
// what to run next.
func TestE2EOrchWaveSync(t *testing.T) {
	t.Parallel()
	root := orchProject(t, true, "")
	prompt := "Add the login handler.\nPhase ID: impl-a\n"

	out, _ := orchRun(t, root, orchAgentCall(root, "toolu_v", "Verify.\nPhase ID: verify-a\n"))
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-TASKGRAPH-") {
		t.Errorf("a phase of a later wave: %+v", out)
	}
	out, _ = orchRun(t, root, orchAgentCall(root, "toolu_x", "Phase ID: nope\n"))
	if out.Specific.PermissionDecision != "deny" || !strings.Contains(out.Specific.Reason, "DES-TASKGRAPH-UNKNOWN-PHASE") {
		t.Errorf("an unknown phase: %+v", out)
	}
	if out, _ := orchRun(t, root, orchAgentCall(root, "toolu_i", prompt)); out.Specific.PermissionDecision == "deny" {
		t.Fatalf("the phase of the current wave: %+v", out)
	}
	if s := fileText(t, root, ".des/runs/toolu_i.json"); !strings.Contains(s, `"task_phase": "impl-a"`) {
		t.Errorf("run record = %s", s)
	}

	tr := orchTranscript(t, root, "a1", prompt, "Done: src/login.go written.")
	if out, raw := orchRun(t, root, orchStop(root, "a1", "coder", tr, "")); raw != "" {
		t.Errorf("SubagentStop said %s (%+v)", raw, out)
	}
	doc := orchGraphDoc(t, root)
	if orchPhase(doc, "impl-a")["status"] != "completed" || doc["current_wave"] != float64(1) {
		t.Errorf("graph after the stop: %v", doc)
	}
	entries, err := readAuditEvents(t, root, audit.TaskGraphUpdated)
	if err != nil || len(entries) != 1 || entries[0].Fields["phase"] != "impl-a" {
		t.Errorf("TASK_GRAPH_UPDATED = %v, %v", entries, err)
	}

	post := orchTool(root, "PostToolUse", "Agent", "toolu_i", map[string]any{"prompt": prompt, "subagent_type": "coder"})
	post["tool_response"] = map[string]any{"status": "completed", "agentId": "a1", "content": []any{map[string]any{"type": "text", "text": "Done."}}}
	out, _ = orchRun(t, root, post)
	if out.Specific.HookEventName != "PostToolUse" || !strings.Contains(out.Specific.AdditionalContext, "verify-a") {
		t.Errorf("PostToolUse: %+v, want verify-a next", out)
	}
	// An asynchronous launch has not finished: nothing to say.
	post["tool_response"] = map[string]any{"status": "async_launched", "agentId": "a2"}
	if out, raw := orchRun(t, root, post); raw != "" {
		t.Errorf("async launch: %+v", out)
	}

	// The verifier fails it, in its last message.
	vprompt := "Verify.\n<!-- DES-TASK-PHASE: verify-a -->\n"
	if out, _ := orchRun(t, root, orchAgentCall(root, "toolu_vv", vprompt)); out.Specific.PermissionDecision == "deny" {
		t.Fatalf("verification in wave 1: %+v", out)
	}
	vtr := orchTranscript(t, root, "a3", vprompt, "Checked.")
	orchRun(t, root, orchStop(root, "a3", "verifier", vtr, "The handler lacks tests.\nVERDICT: FAIL"))
	doc = orchGraphDoc(t, root)
	if p := orchPhase(doc, "verify-a"); p["status"] != "failed" {
		t.Errorf("verify-a = %v", p)
	}
	if p := orchPhase(doc, "impl-a"); p["status"] != "pending" || p["retries"] != float64(1) {
		t.Errorf("impl-a after a failed verification = %v", p)
	}
}

func readAuditEvents(t *testing.T, root string, ev audit.EventType) ([]audit.Entry, error) {
	t.Helper()
	log, err := audit.Open(filepath.Join(root, ".des", "audit"))
	if err != nil {
		return nil, err
	}
	return log.Read(t.Context(), audit.Query{Events: []audit.EventType{ev}})
}

// DES's own writes (the registry, the wave sync) land while another call's
// effects are watched: the check after that call keeps them.
func TestE2EOrchOwnWritesNotRestored(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	writeFile(t, root, orchGraph, orchPlan)
	begin(t, root)
	// A Bash call of another subagent is in flight meanwhile.
	if pre := denyReason(t, runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_long", "sleep 1"))); pre != "" {
		t.Fatalf("PreToolUse: %s", pre)
	}
	prompt := "Add the login handler.\nPhase ID: impl-a\n"
	orchRun(t, root, subagentStartEv(root, "a1", "coder"))
	if out, _ := orchRun(t, root, orchAgentCall(root, "toolu_i", prompt)); out.Specific.PermissionDecision == "deny" {
		t.Fatalf("delegation: %+v", out)
	}
	tr := orchTranscript(t, root, "a1", prompt, "Done.")
	orchRun(t, root, orchStop(root, "a1", "coder", tr, ""))
	synced := fileText(t, root, orchGraph)
	if !strings.Contains(synced, `"completed"`) {
		t.Fatalf("not synced:\n%s", synced)
	}
	post := readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_long", "sleep 1")))
	if post.Decision != "" {
		t.Errorf("DES's own writes were reported: %+v", post)
	}
	if fileText(t, root, orchGraph) != synced {
		t.Error("the wave sync was undone")
	}
	ents, err := os.ReadDir(filepath.Join(root, ".des", "sessions"))
	if err != nil || len(ents) == 0 {
		t.Errorf("the registry was undone: %v %v", ents, err)
	}
}
