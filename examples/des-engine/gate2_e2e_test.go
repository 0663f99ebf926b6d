package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gate2Project is a project whose step 01-01 (14 phases, none started) was
// started by Gate 1 through the hook, with the subagent's transcript in a
// Claude directory of its own. It returns the root and the environment
// that points the hook at that Claude directory.
func gate2Project(t *testing.T, env ...string) (root, transcript string, hookEnv []string) {
	t.Helper()
	root = newTestProject(t, projStep(e2eStep, unstartedStep()))
	claude := t.TempDir()
	hookEnv = append([]string{"CLAUDE_CONFIG_DIR=" + claude}, env...)
	prompt := renderPrompt(t, "execute-step")
	if reason := denyReason(t, runHookProcess(t, root, hookEnv, agentEvent(root, "Agent", prompt))); reason != "" {
		t.Fatalf("Gate 1 denied the fixture: %s", reason)
	}
	transcript = filepath.Join(claude, "projects", "p", "s1", "subagents", "agent-a6fbb44895c6a27dd.jsonl")
	line, _ := json.Marshal(map[string]any{
		"parentUuid": nil, "isSidechain": true, "agentId": "a6fbb44895c6a27dd", "type": "user",
		"message": map[string]any{"role": "user", "content": prompt}, "sessionId": "s1", "version": "2.1.270",
	})
	writeFile(t, filepath.Dir(transcript), filepath.Base(transcript), string(line)+"\n")
	return root, transcript, hookEnv
}

// unstartedStep is step 01-01 with its 14 phases, none started, and a
// field des does not know (which every rewrite must keep).
func unstartedStep() string {
	var phases []string
	for i, name := range canonicalPhases {
		phases = append(phases, `{"phase_name": "`+name+`", "phase_index": `+itoa(i)+`, "status": "NOT_EXECUTED"}`)
	}
	return `{
  "task_id": "01-01",
  "description": "Add a cart total",
  "state": {"status": "TODO"},
  "tdd_cycle": {"phase_execution_log": [` + strings.Join(phases, ", ") + `]},
  "team_notes": {"kept": true}
}
`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// stopEvent is a SubagentStop payload in the shape of the corpus's
// SubagentStop_with_background_tasks_effort.json.
func stopEvent(root, transcript string, active bool) map[string]any {
	return subagentStopEv(root, "a6fbb44895c6a27dd", "software-crafter", transcript, "All 14 phases done, tests green.",
		evStopActive(active), evTranscript(filepath.Join(filepath.Dir(transcript), "..", "..", "s1.jsonl")), evMode("auto"),
		evFields(map[string]any{"effort": map[string]any{"level": "high"}, "background_tasks": []any{}, "session_crons": []any{}}))
}

// agentDoneEvent is the PostToolUse of gate2Project's Agent call, its
// subagent done.
func agentDoneEvent(root string) map[string]any {
	return agentEv("PostToolUse", "Agent", root, "software-crafter", "step 01-01", "…", evToolUseID("toolu_e2e"),
		evResponse(map[string]any{"status": "completed", "agentId": "a6fbb44895c6a27dd", "content": []any{map[string]any{"type": "text", "text": "done"}}}))
}

// completeAroundTheGuard is what a dishonest subagent does: it writes the
// step as finished in one go, with a tool the write guard does not see.
func completeAroundTheGuard(t *testing.T, root string) {
	t.Helper()
	var phases []string
	for i, name := range canonicalPhases {
		phases = append(phases, `{"phase_name": "`+name+`", "phase_index": `+itoa(i)+`, "status": "EXECUTED", "outcome": "PASS"}`)
	}
	writeFile(t, root, e2eStep, `{
  "task_id": "01-01",
  "description": "Add a cart total",
  "state": {"status": "DONE"},
  "tdd_cycle": {"phase_execution_log": [`+strings.Join(phases, ", ")+`]},
  "team_notes": {"kept": true}
}
`)
}

type stopOutput struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	SystemMessage      string `json:"systemMessage"`
	HookSpecificOutput *struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func decodeStop(t *testing.T, r hookRun) stopOutput {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit status %d; stderr: %s", r.code, r.stderr)
	}
	var out stopOutput
	if strings.TrimSpace(r.stdout) == "" {
		return out
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	return out
}

// readStep reads the step file, which must have kept its unknown field.
func readStep(t *testing.T, root string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e2eStep)))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["team_notes"] == nil {
		t.Errorf("a rewrite lost an unknown field: %s", raw)
	}
	return doc
}

func readStepState(t *testing.T, root string) map[string]any {
	t.Helper()
	return readStep(t, root)["state"].(map[string]any)
}

// stepPhases is the step file's phase log.
func stepPhases(doc map[string]any) []any {
	return doc["tdd_cycle"].(map[string]any)["phase_execution_log"].([]any)
}

func TestE2EGate2FailedStopIsRecordedAndReported(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	completeAroundTheGuard(t, root)

	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if out.Decision != "" || out.HookSpecificOutput != nil {
		t.Fatalf("record mode: %+v; want only a systemMessage", out)
	}
	for _, want := range []string{"[DES-PHASE-JUMP]", "PREPARE", "Recovery:", "hook stale --resolve " + e2eStep, "DES marked " + e2eStep + " FAILED."} {
		if !strings.Contains(out.SystemMessage, want) {
			t.Errorf("systemMessage lacks %q:\n%s", want, out.SystemMessage)
		}
	}
	state := readStepState(t, root)
	if state["status"] != "FAILED" || len(state["recovery_suggestions"].([]any)) < 3 {
		t.Errorf("step state after a failed stop: %v", state)
	}

	// The orchestrator learns it at PostToolUse for the Agent call.
	post := agentDoneEvent(root)
	po := decodeStop(t, runHookProcess(t, root, env, post))
	if po.HookSpecificOutput == nil || po.HookSpecificOutput.HookEventName != "PostToolUse" ||
		!strings.Contains(po.HookSpecificOutput.AdditionalContext, "[DES-PHASE-JUMP]") ||
		!strings.Contains(po.HookSpecificOutput.AdditionalContext, "marked FAILED") {
		t.Errorf("PostToolUse output = %+v", po)
	}

	// The resolution command makes the step resumable, as the message says.
	r := runBinCLI(t, root, "stale", "--resolve", e2eStep)
	if r.code != 0 {
		t.Fatalf("stale --resolve: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if s := readStepState(t, root); s["status"] != "PARTIAL" {
		t.Errorf("after stale --resolve: %v", s)
	}
	// The phases written as finished around the guard must be done again.
	for _, p := range stepPhases(readStep(t, root)) {
		if p := p.(map[string]any); p["status"] != "NOT_EXECUTED" {
			t.Errorf("after stale --resolve, phase %s is %s; want NOT_EXECUTED (Gate 2 found it jumped)", p["phase_name"], p["status"])
		}
	}
}

func TestE2EGate2BlockModeBlocksOnce(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t, "DES_GATE2_ON_FAILURE=block")
	completeAroundTheGuard(t, root)

	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if out.Decision != "block" || !strings.Contains(out.Reason, "[DES-PHASE-JUMP]") || out.SystemMessage != "" {
		t.Fatalf("first stop in block mode: %+v", out)
	}
	// Sent back, the subagent finds its step reopened: the task in progress
	// again and the phases it wrote around the guard to be redone.
	if s := readStepState(t, root); s["status"] != "IN_PROGRESS" {
		t.Errorf("a blocked stop left the task %v; want IN_PROGRESS", s["status"])
	}
	// Stopping again without redoing the work: the reopened phases are
	// still to do, and this time the failure is recorded.
	out = decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, true)))
	if out.Decision != "" || !strings.Contains(out.SystemMessage, "[DES-SILENT-COMPLETION]") {
		t.Fatalf("stop with stop_hook_active: %+v; want a systemMessage, never a second block", out)
	}
	if s := readStepState(t, root); s["status"] != "FAILED" {
		t.Errorf("second failed stop: %v", s)
	}
}

// An honest subagent finishes PREPARE through the write guard and stops
// with the task still in progress: Gate 2 has nothing to say.
func TestE2EGate2HonestStopPasses(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	prepareThroughTheGuard(t, root, env)
	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if out != (stopOutput{}) {
		t.Fatalf("honest stop: %+v; want no opinion", out)
	}
	if s := readStepState(t, root); s["status"] != "IN_PROGRESS" {
		t.Errorf("honest stop changed the task: %v", s)
	}
}

// prepareThroughTheGuard is an honest subagent's work: it starts and
// finishes PREPARE with Write calls the write guard allows and confirms.
func prepareThroughTheGuard(t *testing.T, root string, env []string) {
	t.Helper()
	for i, set := range []map[string]any{
		{"status": "IN_PROGRESS", "started_at": "2026-11-22T12:00:00Z"},
		{"status": "EXECUTED", "outcome": "PASS", "outcome_details": "ok", "ended_at": "2026-11-22T12:05:00Z"},
	} {
		doc := readStep(t, root)
		prepare := stepPhases(doc)[0].(map[string]any)
		for k, v := range set {
			prepare[k] = v
		}
		next, _ := json.MarshalIndent(doc, "", "  ")
		ev := writeToolEvent(root, "Write", e2eStep, map[string]any{"content": string(next)}, evToolUseID("toolu_w"+itoa(i)))
		if reason := denyReason(t, runHookProcess(t, root, env, ev)); reason != "" {
			t.Fatalf("write %d denied: %s", i, reason)
		}
		writeFile(t, root, e2eStep, string(next))
		post := writtenEv(ev, filepath.Join(root, e2eStep))
		if r := runHookProcess(t, root, env, post); r.code != 0 || r.stdout != "" {
			t.Fatalf("PostToolUse %d: %+v", i, r)
		}
	}
}

// Real SubagentStop payloads whose transcripts are not on this machine get
// no opinion (the corpus test checks them all; this one names the reason).
func TestE2EGate2CorpusShapesWithoutTranscript(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	root := t.TempDir()
	for _, name := range []string{"SubagentStop_7char_id_empty_type.json", "SubagentStop_with_background_tasks_effort.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, "curated", name))
		if err != nil {
			t.Fatal(err)
		}
		r := runHookProcess(t, root, []string{"DES_LOG_LEVEL=info"}, raw)
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "no opinion on the stop") {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// A real transcript's first lines (an exploration agent, no DES markers):
// the subagent is not des's, so the hook says nothing and records nothing.
func TestE2EGate2RealTranscriptWithoutMarkers(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	src, err := os.ReadFile(filepath.Join(dir, "subagent_transcripts", "marot_spotter_v2.1.39_agent-a2898e3.first2lines.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	root, claude := t.TempDir(), t.TempDir()
	transcript := filepath.Join(claude, "projects", "p", "s1", "subagents", "agent-a2898e3.jsonl")
	writeFile(t, filepath.Dir(transcript), filepath.Base(transcript), string(src))
	r := runHookProcess(t, root, []string{"CLAUDE_CONFIG_DIR=" + claude}, stopEvent(root, transcript, false))
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("%+v", r)
	}
	if _, err := os.Stat(filepath.Join(root, ".des", "audit")); err == nil {
		t.Error("a subagent that is not des's left an audit trail")
	}
}

// A subagent that ran in the background: its result comes back as a
// <task-notification> prompt after its SubagentStop, and UserPromptSubmit
// gives the orchestrator Gate 2's failure there.
func TestE2EGate2VerdictWithTaskNotification(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	completeAroundTheGuard(t, root)
	decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	prompt := "<task-notification>\n<task-id>a6fbb44895c6a27dd</task-id>\n<tool-use-id>toolu_e2e</tool-use-id>\n<status>completed</status>\n</task-notification>"
	ev := userPromptEv(root, prompt)
	out := decodeStop(t, runHookProcess(t, root, env, ev))
	if out.HookSpecificOutput == nil || !strings.Contains(out.HookSpecificOutput.AdditionalContext, "DES Gate 2 failed the subagent's work on "+e2eStep) {
		t.Fatalf("task notification: %+v; want Gate 2's failure as additionalContext", out)
	}
	// A prompt that is no notification, or names another call, gets nothing.
	for _, p := range []string{"go on", strings.ReplaceAll(strings.ReplaceAll(prompt, "toolu_e2e", "toolu_other"), "a6fbb44895c6a27dd", "aother")} {
		ev["prompt"] = p
		if r := runHookProcess(t, root, env, ev); r.stdout != "" {
			t.Errorf("prompt %q: stdout %q; want no output", p, r.stdout)
		}
	}
}
