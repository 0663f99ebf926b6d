package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleGraph is the plan of examples/taskgraph, which its README and the
// README's Orchestration section promise passes every rule.
const exampleGraph = "../taskgraph/active_task_graph.json"

// readmeGraph is the JSON block of the README's Orchestration section.
func readmeGraph(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "## Orchestration")
	if i < 0 {
		t.Fatal("README has no Orchestration section")
	}
	j := strings.Index(s[i:], "```json\n")
	if j < 0 {
		t.Fatal("the Orchestration section has no JSON block")
	}
	body := s[i+j+len("```json\n"):]
	return body[:strings.Index(body, "```")]
}

// exampleEvent is a hook event in root with the given fields.
func exampleEvent(root, event string, fields map[string]any) map[string]any {
	return hookEvent(event, root, evSession("s-example"), evFields(fields))
}

// Both published plans are written through the write guard as an agent
// would, and nothing is said: no deny, no warning.
func TestE2ETaskGraphExamplesPass(t *testing.T) {
	t.Parallel()
	file, err := os.ReadFile(exampleGraph)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"examples/taskgraph": string(file), "README": readmeGraph(t)} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			r := runHookProcess(t, root, nil, exampleEvent(root, "PreToolUse", map[string]any{
				"tool_name": "Write", "tool_use_id": "toolu_plan",
				"tool_input": map[string]any{"file_path": filepath.Join(root, ".claude", "state", "active_task_graph.json"), "content": content},
			}))
			if strings.TrimSpace(r.stdout) != "" || r.code != 0 {
				t.Errorf("writing the plan: exit %d, output %s", r.code, r.stdout)
			}
		})
	}
}

// The example plan run to the end through the hook: each wave's phases
// delegated, des's wave sync at every SubagentStop, the next step told at
// PostToolUse, and the graph complete at the end.
func TestE2ETaskGraphExampleRunsToTheEnd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	data, err := os.ReadFile(exampleGraph)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, ".claude/state/active_task_graph.json", string(data))
	n := 0
	run := func(phase, agent, last string) string {
		t.Helper()
		n++
		prompt := fmt.Sprintf("Phase ID: %s\nDo the work of phase %s.", phase, phase)
		input := map[string]any{"subagent_type": agent, "description": phase, "prompt": prompt}
		id := fmt.Sprintf("toolu_example_%d", n)
		if reason := denyReason(t, runHookProcess(t, root, nil, exampleEvent(root, "PreToolUse", map[string]any{
			"tool_name": "Agent", "tool_use_id": id, "tool_input": input,
		}))); reason != "" {
			t.Fatalf("delegating %s: %s", phase, reason)
		}
		agentID := fmt.Sprintf("a%d", n)
		transcript := filepath.Join(root, "transcripts", "agent-"+agentID+".jsonl")
		line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
		writeFile(t, root, filepath.Join("transcripts", "agent-"+agentID+".jsonl"), string(line)+"\n")
		runHookProcess(t, root, nil, exampleEvent(root, "SubagentStart", map[string]any{"agent_id": agentID, "agent_type": agent}))
		if r := runHookProcess(t, root, nil, exampleEvent(root, "SubagentStop", map[string]any{
			"agent_id": agentID, "agent_type": agent, "agent_transcript_path": transcript,
			"stop_hook_active": false, "last_assistant_message": last,
		})); strings.TrimSpace(r.stdout) != "" {
			t.Fatalf("stop of %s: %s", phase, r.stdout)
		}
		r := runHookProcess(t, root, nil, exampleEvent(root, "PostToolUse", map[string]any{
			"tool_name": "Agent", "tool_use_id": id, "tool_input": input,
			"tool_response": map[string]any{"status": "completed", "content": []any{map[string]any{"type": "text", "text": last}}},
		}))
		return r.stdout
	}
	run("impl_calc", "general-purpose", "calc.py written, tests pass.")
	if out := run("impl_api", "general-purpose", "api.py written, tests pass."); !strings.Contains(out, "verify_calc") {
		t.Errorf("after wave 0 the orchestrator is not told to verify: %s", out)
	}
	run("verify_calc", "task-completion-verifier", "All criteria met.\nVERDICT: PASS")
	run("verify_api", "task-completion-verifier", "All criteria met.\nVERDICT: PASS")
	run("verify_integration", "task-completion-verifier", "Suite green.\nVERDICT: PASS")

	var g struct {
		CurrentWave int `json:"current_wave"`
	}
	data, err = os.ReadFile(filepath.Join(root, ".claude", "state", "active_task_graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if g.CurrentWave != 3 {
		t.Errorf("current_wave = %d at the end, want 3 (every wave done)", g.CurrentWave)
	}
	status := map[string]string{}
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	for _, w := range raw["waves"].([]any) {
		for _, p := range w.(map[string]any)["phases"].([]any) {
			pm := p.(map[string]any)
			status[pm["phase_id"].(string)], _ = pm["status"].(string)
		}
	}
	for id, s := range status {
		if s != "completed" {
			t.Errorf("phase %s is %q at the end", id, s)
		}
	}
	if n := len(auditEventsOf(t, root, "TASK_GRAPH_UPDATED")); n != 5 {
		t.Errorf("TASK_GRAPH_UPDATED lines = %d, want 5", n)
	}
}

// auditEventsOf returns the audit lines of one event type.
func auditEventsOf(t *testing.T, root, event string) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, ".des", "audit", "*.log"))
	var out []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["event"] == event {
				out = append(out, m)
			}
		}
	}
	return out
}
