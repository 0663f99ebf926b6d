package gate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
)

const graphFile = ".claude/state/active_task_graph.json"

var phaseLine = regexp.MustCompile(`(?m)^Phase ID:\s*(\S+)\s*$|<!--\s*DES-TASK-PHASE:\s*(\S+)\s*-->`)

// testGraph reads the graph with hand-made facts: these tests are about
// what Go hands the policy, not about internal/taskgraph.
func testGraph() gate.TaskGraph {
	return gate.TaskGraph{
		File: graphFile,
		WriteFacts: func(rel string, content, disk []byte) map[string]any {
			f := map[string]any{}
			var doc any
			if err := json.Unmarshal(content, &doc); err != nil {
				f["problem"], f["error"] = "invalid_json", err.Error()
			} else {
				f["document"], f["schema_errors"] = doc, []any{}
			}
			var d any
			if disk != nil && json.Unmarshal(disk, &d) == nil {
				f["disk"] = d
			}
			return f
		},
		PhaseID: func(prompt string) (string, bool) {
			m := phaseLine.FindStringSubmatch(prompt)
			if m == nil {
				return "", false
			}
			return m[1] + m[2], true
		},
	}
}

func writeFile(t *testing.T, root, rel, content string) string {
	t.Helper()
	testenv.WriteFile(t, root, rel, content)
	return filepath.Join(root, filepath.FromSlash(rel))
}

const twoWaves = `{"current_wave": 0, "waves": [{"wave_id": 0, "phases": [{"phase_id": "impl-a", "type": "implementation"}]},
 {"wave_id": 1, "phases": [{"phase_id": "verify-a", "type": "verification", "verifies_phase_id": "impl-a"}]}]}`

func TestTaskGraphIsAGuardedDocument(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, graphFile, twoWaves)
	d := gate.DocumentWrite{Root: root, Graph: testGraph()}
	if kind, rel := d.Kind(filepath.Join(root, graphFile)); kind != gate.KindTaskGraph || rel != graphFile {
		t.Fatalf("Kind = %q %q, want task_graph", kind, rel)
	}
	if kind, _ := d.Kind(filepath.Join(root, ".claude/state/other.json")); kind != "" {
		t.Errorf("a neighbour is %q", kind)
	}
	rec := &recorder{}
	content := `{"waves": []}`
	res, err := d.Check(t.Context(), rec, gate.WriteCall{Tool: "Write", Path: filepath.Join(root, graphFile), Content: &content})
	if err != nil || !res.Evaluated {
		t.Fatalf("Check = %+v, %v", res, err)
	}
	tg, _ := rec.last(t)["task_graph"].(map[string]any)
	if tg["path"] != graphFile || tg["document"] == nil || tg["disk"] == nil {
		t.Errorf("input.task_graph = %v", tg)
	}

	// Without a graph setting the same path is nobody's.
	if kind, _ := (gate.DocumentWrite{Root: root}).Kind(filepath.Join(root, graphFile)); kind != "" {
		t.Errorf("no graph configured, kind = %q", kind)
	}
}

func TestBashWriteToTheTaskGraphIsJudged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, graphFile, twoWaves)
	docs := gate.DocumentWrite{Root: root, Graph: testGraph()}
	tu := gate.ToolUse{Root: root}
	for _, cmd := range []string{
		"echo '{}' > " + graphFile,
		"sed -i s/pending/completed/ .claude/state/active_task_graph.json",
		"rm -rf .claude/state",
		`cp /tmp/x "$D/active_task_graph.json"`,
	} {
		rec := &recorder{}
		res, err := tu.CheckBash(t.Context(), rec, docs, gate.BashCall{Command: cmd, Cwd: root})
		if err != nil || !res.Evaluated {
			t.Errorf("%s: not judged (%+v, %v)", cmd, res, err)
			continue
		}
		writes, _ := rec.last(t)["writes"].([]any)
		if len(writes) == 0 || writes[0].(map[string]any)["document"] != gate.KindTaskGraph {
			t.Errorf("%s: writes = %v, want a task_graph document", cmd, writes)
		}
	}
	rec := &recorder{}
	if res, _ := tu.CheckBash(t.Context(), rec, docs, gate.BashCall{Command: "echo hi > notes.txt", Cwd: root}); res.Evaluated {
		t.Error("a write elsewhere was judged")
	}
}

func TestGate1OrchestrationFacts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runs := filepath.Join(root, ".des", "runs")
	g := gate.PreInvocation{Root: root, RunsDir: runs, Graph: testGraph()}
	prompt := "Implement the auth module.\nPhase ID: impl-a\n"

	// No graph: a phase id alone puts nothing in charge.
	rec := &recorder{}
	res, err := g.Check(t.Context(), rec, gate.Invocation{Prompt: prompt, ToolUseID: "toolu_1"})
	if err != nil || res.Evaluated || res.Orchestration {
		t.Fatalf("no graph: %+v, %v", res, err)
	}

	writeFile(t, root, graphFile, twoWaves)
	res, err = g.Check(t.Context(), rec, gate.Invocation{Prompt: prompt, ToolUseID: "toolu_1", SessionID: "s1", AgentType: "coder"})
	if err != nil || !res.Evaluated || !res.Orchestration || res.TaskPhase != "impl-a" {
		t.Fatalf("graph: %+v, %v", res, err)
	}
	in := rec.last(t)
	if in["task_phase"] != "impl-a" || in["main_thread"] != true || in["task_graph"] == nil {
		t.Errorf("input = %v", in)
	}
	if _, ok := in["registry"]; ok {
		t.Error("registry given without a limit")
	}
	if _, ok := in["prompt"]; ok {
		t.Error("a routing marker alone asked for nWave validation")
	}
	// The allowed delegation is recorded for the wave sync, by call and by prompt.
	for _, name := range []string{"toolu_1.json", "prompt-" + sha(prompt) + ".json"} {
		var run gate.Run
		data, err := os.ReadFile(filepath.Join(runs, name))
		if err != nil || json.Unmarshal(data, &run) != nil || run.TaskPhase != "impl-a" || run.StepFile != "" {
			t.Errorf("run record %s = %s, %v", name, data, err)
		}
	}

	// Denied: nothing recorded.
	deny := &recorder{decide: func(map[string]any) policy.Decision {
		return policy.Decision{Deny: []policy.Violation{{Code: "DES-TASKGRAPH-WAVE", Severity: policy.Deny, Message: "wrong wave"}}}
	}}
	if res, _ := g.Check(t.Context(), deny, gate.Invocation{Prompt: "Phase ID: verify-a", ToolUseID: "toolu_2"}); !res.Denied() {
		t.Fatal("not denied")
	}
	if _, err := os.Stat(filepath.Join(runs, "toolu_2.json")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a denied delegation was recorded")
	}

	// A subagent's own delegation without a phase: not in charge.
	if res, _ := g.Check(t.Context(), rec, gate.Invocation{Prompt: "look around", AgentID: "a1"}); res.Evaluated {
		t.Error("an ad hoc call was judged")
	}
}

func TestGate1RegistryWhenTheLimitIsSet(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	reg := map[string]any{"running": 2, "agents": []any{}}
	g := gate.PreInvocation{Root: root, Registry: func(context.Context) (map[string]any, error) { return reg, nil }}
	rec := &recorder{}
	res, err := g.Check(t.Context(), rec, gate.Invocation{Prompt: "explore", ToolUseID: "t"})
	if err != nil || !res.Evaluated || !res.Orchestration {
		t.Fatalf("main thread: %+v, %v", res, err)
	}
	if got := rec.last(t)["registry"]; got == nil {
		t.Error("no registry in the input")
	}
	rec = &recorder{}
	if res, _ := g.Check(t.Context(), rec, gate.Invocation{Prompt: "explore", AgentID: "a1"}); res.Evaluated {
		t.Error("a subagent's call was judged by the limit")
	}
	failing := gate.PreInvocation{Root: root, Registry: func(context.Context) (map[string]any, error) { return nil, errors.New("locked") }}
	if res, err := failing.Check(t.Context(), rec, gate.Invocation{Prompt: "explore"}); err == nil || !res.Orchestration {
		t.Errorf("a registry failure must fail closed: %+v, %v", res, err)
	}
}

func transcriptFile(t *testing.T, dir, prompt string, assistant ...string) string {
	t.Helper()
	lines := []string{mustJSON(t, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})}
	for _, a := range assistant {
		lines = append(lines, mustJSON(t, map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": a}, map[string]any{"type": "tool_use", "name": "Read"}}}}))
	}
	p := filepath.Join(dir, "agent-x.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type syncCall struct {
	phase  string
	failed bool
	msg    string
}

func TestWaveSync(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runs := filepath.Join(root, ".des", "runs")
	auditDir := filepath.Join(root, ".des", "audit")
	log := openAudit(t, auditDir)
	var calls []syncCall
	w := gate.WaveSync{
		Stop: gate.SubagentStop{Root: root, RunsDir: runs}, Graph: testGraph(), Audit: log,
		Sync: func(_ context.Context, phase string, failed bool, msg string, _ time.Time) (gate.GraphUpdate, error) {
			calls = append(calls, syncCall{phase, failed, msg})
			return gate.GraphUpdate{Changed: true, Status: "completed", Fields: map[string]any{"wave_from": 0, "wave_to": 1}}, nil
		},
	}
	prompt := "Verify the auth module.\nPhase ID: verify-a\n"
	tr := transcriptFile(t, root, prompt, "Looking.", "All checks ran.\nVERDICT: FAIL")

	// No graph: nothing.
	if res, err := w.Run(t.Context(), gate.Stop{TranscriptPath: tr, AgentID: "a1"}, "", nil); err != nil || res.Phase != "" || len(calls) != 0 {
		t.Fatalf("no graph: %+v, %v, %v", res, err, calls)
	}
	writeFile(t, root, graphFile, twoWaves)

	// From the transcript's prompt; the last message from the transcript.
	res, err := w.Run(t.Context(), gate.Stop{TranscriptPath: tr, AgentID: "a1", SessionID: "s"}, "", nil)
	if err != nil || res.Phase != "verify-a" || res.Found != "transcript" {
		t.Fatalf("transcript: %+v, %v", res, err)
	}
	if len(calls) != 1 || calls[0].failed || !strings.Contains(calls[0].msg, "VERDICT: FAIL") {
		t.Errorf("sync calls = %+v", calls)
	}

	// Gate 1's record wins over the transcript; the event's message over the transcript's.
	g1 := gate.PreInvocation{Root: root, RunsDir: runs, Graph: testGraph()}
	if _, err := g1.Check(t.Context(), &recorder{}, gate.Invocation{Prompt: prompt, ToolUseID: "toolu_9"}); err != nil {
		t.Fatal(err)
	}
	res, err = w.Run(t.Context(), gate.Stop{TranscriptPath: tr, AgentID: "a2", ToolUseID: "toolu_9"}, "VERDICT: PASS", &gate.StopResult{})
	if err != nil || res.Phase != "verify-a" || res.Found != "record" || calls[1].msg != "VERDICT: PASS" {
		t.Fatalf("record: %+v, %v, %+v", res, err, calls)
	}

	// Gate 2 failed the step: failed.
	failed := &gate.StopResult{Result: gate.Result{Evaluated: true, Decision: policy.Decision{Deny: []policy.Violation{{Code: "DES-X", Severity: policy.Deny}}}}, Action: gate.StopActionRecord}
	if _, err := w.Run(t.Context(), gate.Stop{TranscriptPath: tr, ToolUseID: "toolu_9"}, "done", failed); err != nil || !calls[2].failed {
		t.Errorf("gate 2 failure: %v, %+v", err, calls)
	}
	// Sent back to work: not the end of the phase.
	failed.Action = gate.StopActionBlock
	if _, err := w.Run(t.Context(), gate.Stop{TranscriptPath: tr, ToolUseID: "toolu_9"}, "done", failed); err != nil || len(calls) != 3 {
		t.Errorf("a blocked stop was synced: %v, %+v", err, calls)
	}

	entries := readAudit(t, auditDir, audit.TaskGraphUpdated)
	if len(entries) != 3 {
		t.Fatalf("TASK_GRAPH_UPDATED entries = %d, want 3", len(entries))
	}
	if f := entries[0].Fields; f["phase"] != "verify-a" || f["task_graph"] != graphFile || f["status"] != "completed" || f["found"] != "transcript" {
		t.Errorf("entry = %v", f)
	}

	// A sync error is returned.
	w.Sync = func(context.Context, string, bool, string, time.Time) (gate.GraphUpdate, error) {
		return gate.GraphUpdate{}, errors.New("lock held")
	}
	if _, err := w.Run(t.Context(), gate.Stop{TranscriptPath: tr}, "", nil); err == nil || !strings.Contains(err.Error(), "verify-a") {
		t.Errorf("err = %v", err)
	}

	// A prompt without a phase: nothing.
	other := transcriptFile(t, t.TempDir(), "just look around")
	w.Stop.ClaudeDirs = []string{filepath.Dir(other)}
	if res, err := w.Run(t.Context(), gate.Stop{TranscriptPath: other}, "", nil); err != nil || res.Phase != "" {
		t.Errorf("no phase: %+v, %v", res, err)
	}
}

func TestLastAssistantText(t *testing.T) {
	t.Parallel()
	tr := transcriptFile(t, t.TempDir(), "p", "first", "second\nVERDICT: PASS")
	if got, err := gate.LastAssistantText(tr); err != nil || got != "second\nVERDICT: PASS" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := gate.LastAssistantText(filepath.Join(t.TempDir(), "none.jsonl")); err == nil {
		t.Error("a missing transcript is no error")
	}
}

func TestDelegationFacts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tmp := t.TempDir()
	counts := map[string]int{}
	d := gate.Delegation{Root: root, Mode: gate.DelegationNudge, TempDir: tmp,
		CountDirect: func(_ context.Context, s string) (int, error) { counts[s]++; return counts[s], nil }}

	// The policy's nudge on main-thread work outside the temporary
	// directory (des.delegation): only such calls are counted.
	rec := &recorder{decide: func(in map[string]any) policy.Decision {
		del := in["delegation"].(map[string]any)
		if del["main_thread"] == true && del["temp_only"] != true && in["tool"] != "mcp__fs__read_file" {
			return policy.Decision{Warn: []policy.Violation{{Code: gate.DelegationCode, Message: fmt.Sprint(del["direct_calls"])}}}
		}
		return policy.Decision{}
	}}
	if res, _ := (gate.Delegation{Root: root, Mode: gate.DelegationOff}).Check(t.Context(), rec, gate.DelegationCall{Tool: "Bash"}); res.Evaluated {
		t.Fatal("evaluated with the mode off")
	}
	cases := []struct {
		call       gate.DelegationCall
		main, temp bool
		n          int
	}{
		{gate.DelegationCall{Tool: "Bash", SessionID: "s"}, true, false, 1},
		{gate.DelegationCall{Tool: "Write", SessionID: "s", Paths: []string{filepath.Join(root, "main.go")}}, true, false, 2},
		{gate.DelegationCall{Tool: "Write", SessionID: "s", Paths: []string{filepath.Join(tmp, "scratch.txt")}}, true, true, 0},
		{gate.DelegationCall{Tool: "Edit", SessionID: "s", Paths: []string{filepath.Join(tmp, "x", "..", "..", "elsewhere.txt")}}, true, false, 3},
		{gate.DelegationCall{Tool: "Edit", SessionID: "s", AgentID: "a1", Paths: []string{filepath.Join(root, "main.go")}}, false, false, 0},
		{gate.DelegationCall{Tool: "Bash", SessionID: "other"}, true, false, 1},
		// A tool the policy does not count as work is not counted.
		{gate.DelegationCall{Tool: "mcp__fs__read_file", SessionID: "other"}, true, false, 0},
		{gate.DelegationCall{Tool: "mcp__fs__write_file", SessionID: "other"}, true, false, 2},
	}
	for i, c := range cases {
		res, err := d.Check(t.Context(), rec, c.call)
		if err != nil || !res.Evaluated {
			t.Fatalf("%d: %+v, %v", i, res, err)
		}
		in := rec.last(t)
		del := in["delegation"].(map[string]any)
		if del["main_thread"] != c.main || del["temp_only"] != c.temp || del["direct_calls"] != c.n || in["tool"] != c.call.Tool {
			t.Errorf("%d: input = %v, want main %v temp %v n %d", i, in, c.main, c.temp, c.n)
		}
	}
	// The written paths are the work tool's guard's: none here.
	if _, err := d.Check(t.Context(), rec, gate.DelegationCall{Tool: "Write", Paths: []string{filepath.Join(root, graphFile)}}); err != nil {
		t.Fatal(err)
	}
	if w := rec.last(t)["writes"].([]any); len(w) != 0 {
		t.Errorf("writes = %v", w)
	}
	// A root under the temporary directory is still the project.
	inTmp := gate.Delegation{Root: root, Mode: gate.DelegationEnforce, TempDir: filepath.Dir(root)}
	if _, err := inTmp.Check(t.Context(), rec, gate.DelegationCall{Tool: "Write", Paths: []string{filepath.Join(root, "a.go")}}); err != nil {
		t.Fatal(err)
	}
	if rec.last(t)["delegation"].(map[string]any)["temp_only"] != false {
		t.Error("a project file under $TMPDIR counted as a temporary file")
	}
	if got := gate.TempDir(func(string) (string, bool) { return "", false }); got != "/tmp" {
		t.Errorf("TempDir = %q", got)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
