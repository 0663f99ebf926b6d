package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/template"
)

const e2eStep = "docs/feature/shop/steps/01-01.json"

func gate1Project(t *testing.T, status string) string {
	t.Helper()
	return newTestProject(t, projStep(e2eStep, `{
  "task_id": "01-01",
  "description": "Add a cart total",
  "state": {"status": "`+status+`"},
  "tdd_cycle": {"phase_execution_log": []}
}
`))
}

// agentEvent is the PreToolUse of an Agent or Task call delegating step
// 01-01 to software-crafter with prompt.
func agentEvent(root, tool, prompt string) map[string]any {
	return agentEv("PreToolUse", tool, root, "software-crafter", "step 01-01", prompt, evToolUseID("toolu_e2e"))
}

func renderPrompt(t testing.TB, name string) string {
	t.Helper()
	r, err := template.Defaults().Render(name, template.Data{StepFile: e2eStep, Step: map[string]any{"task_id": "01-01"}, Agent: map[string]any{"name": "software-crafter"}})
	if err != nil {
		t.Fatal(err)
	}
	return r.Text
}

func TestE2EGate1AllowsAndStartsTheTask(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"Agent", "Task"} {
		t.Run(tool, func(t *testing.T) {
			root := gate1Project(t, "TODO")
			r := runHookProcess(t, root, nil, agentEvent(root, tool, renderPrompt(t, "execute-step")))
			if denyReason(t, r) != "" || r.stdout != "" {
				t.Fatalf("complete prompt: stdout %q stderr %q", r.stdout, r.stderr)
			}
			raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e2eStep)))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				State map[string]any `json:"state"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil || doc.State["status"] != "IN_PROGRESS" || doc.State["started_at"] == nil {
				t.Errorf("step after Gate 1: %s", raw)
			}
			if _, err := os.Stat(filepath.Join(root, ".des", "runs", "toolu_e2e.json")); err != nil {
				t.Errorf("invocation not recorded: %v", err)
			}
		})
	}
}

func TestE2EGate1Denies(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "DONE")
	prompt := strings.Replace(renderPrompt(t, "execute-step"), "<!-- DES-SECTION: QUALITY_GATES -->", "", 1)
	reason := denyReason(t, runHookProcess(t, root, nil, agentEvent(root, "Agent", prompt)))
	for _, want := range []string{"[DES-SECTION-MISSING] the prompt has no QUALITY_GATES section", "[DES-TASK-TERMINAL] the task of " + e2eStep + " is already complete", "\nRecovery:\n- "} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason lacks %q:\n%s", want, reason)
		}
	}
}

// An ad hoc prompt reads the settings (max_concurrent_agents may apply to
// any main-thread delegation); a bad one is no opinion there, the error
// logged.
func TestE2EGate1AdHocPromptNoOpinion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if r := runHookProcess(t, root, nil, agentEvent(root, "Agent", "Summarise the README.")); r.stdout != "" || r.stderr != "" {
		t.Errorf("ad hoc prompt: stdout %q stderr %q", r.stdout, r.stderr)
	}
	r := runHookProcess(t, root, []string{"DES_TURN_BUDGET_DEFAULT=lots"}, agentEvent(root, "Agent", "Summarise the README."))
	if r.stdout != "" || !strings.Contains(r.stderr, "no opinion") || !strings.Contains(r.stderr, "turn_budget_default") {
		t.Errorf("ad hoc prompt with a bad setting: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

func TestE2EGate1BadSettingFailsClosed(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "TODO")
	reason := denyReason(t, runHookProcess(t, root, []string{"DES_TURN_BUDGET_DEFAULT=lots"}, agentEvent(root, "Agent", renderPrompt(t, "execute-step"))))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "turn_budget_default") {
		t.Errorf("reason = %q", reason)
	}
}

func TestE2EGate1WarningsReachClaudeAndTheUser(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "TODO")
	writeFile(t, root, e2eStep, `{"task_id": "01-01", "workflow_type": "configuration_setup", "state": {"status": "TODO"}}`)
	r := runHookProcess(t, root, nil, agentEvent(root, "Agent", renderPrompt(t, "execute-step")))
	var out struct {
		SystemMessage      string `json:"systemMessage"`
		HookSpecificOutput struct {
			HookEventName      string `json:"hookEventName"`
			PermissionDecision string `json:"permissionDecision"`
			AdditionalContext  string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	h := out.HookSpecificOutput
	if h.PermissionDecision != "" || !strings.Contains(h.AdditionalContext, "[DES-SAFETY-METADATA]") || !strings.Contains(out.SystemMessage, "[DES-SAFETY-METADATA]") {
		t.Errorf("warning output = %s", r.stdout)
	}
}

// The stale-work loop a user goes through: Gate 1 denies, `hook stale` lists
// the abandoned phase, `hook stale --resolve` resets it, Gate 1 allows.
func TestE2EStaleWorkLoop(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "TODO")
	abandoned := "docs/feature/shop/steps/01-02.json"
	old := `{"task_id": "01-02", "state": {"status": "IN_PROGRESS"}, "tdd_cycle": {"phase_execution_log": [
  {"phase_name": "PREPARE", "status": "EXECUTED", "outcome": "PASS"},
  {"phase_name": "RED_ACCEPTANCE", "status": "IN_PROGRESS", "started_at": "2020-01-01T00:00:00Z"}]}}`
	writeFile(t, root, abandoned, old)
	event := agentEvent(root, "Agent", renderPrompt(t, "execute-step"))
	reason := denyReason(t, runHookProcess(t, root, nil, event))
	if !strings.Contains(reason, "[DES-STALE-WORK] "+abandoned+": phase RED_ACCEPTANCE") || !strings.Contains(reason, "hook stale --resolve "+abandoned) {
		t.Fatalf("reason = %q", reason)
	}

	list := runBinCLI(t, root, "stale")
	if list.code != 0 || !strings.Contains(list.stdout, abandoned) || !strings.Contains(list.stdout, "RED_ACCEPTANCE") {
		t.Fatalf("hook stale: %+v", list)
	}
	fix := runBinCLI(t, root, "stale", "--resolve", abandoned)
	if fix.code != 0 || !strings.Contains(fix.stdout, "IN_PROGRESS -> PARTIAL") {
		t.Fatalf("hook stale --resolve: %+v", fix)
	}
	if again := runBinCLI(t, root, "stale"); !strings.Contains(again.stdout, "no stale work") {
		t.Errorf("after resolving: %q", again.stdout)
	}
	if r := runHookProcess(t, root, nil, event); denyReason(t, r) != "" {
		t.Errorf("Gate 1 after resolving: %s", r.stdout)
	}
	if bad := runBinCLI(t, root, "stale", "--resolve", "../outside.json"); bad.code != 2 || bad.stderr == "" {
		t.Errorf("resolve outside the root: %+v", bad)
	}
}

// runBinCLI runs a subcommand of the built binary in root, as its project.
func runBinCLI(t *testing.T, root string, args ...string) hookRun {
	t.Helper()
	return runIn(t, root, []string{"CLAUDE_PROJECT_DIR=" + root}, args...)
}

// The README's Gate 1 walk-through fixture gives the deny it shows.
func TestE2EGate1ReadmeFixture(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/gate1-incomplete-prompt.json")
	if err != nil {
		t.Fatal(err)
	}
	root := gate1Project(t, "TODO")
	reason := denyReason(t, runHookProcess(t, root, nil, raw))
	want := []string{
		"[DES-PHASE-MISSING] the TDD_14_PHASES section does not name phase REFACTOR_L4",
		"[DES-SECTION-MISSING] the prompt has no QUALITY_GATES section",
		"[DES-SECTION-MISSING] the prompt has no TIMEOUT_INSTRUCTION section",
	}
	if lines := strings.Split(reason, "\n"); len(lines) < 3 || !strings.HasPrefix(lines[0], want[0]) || !strings.HasPrefix(lines[1], want[1]) || !strings.HasPrefix(lines[2], want[2]) {
		t.Errorf("reason =\n%s", reason)
	}
}

// A field of an unexpected type beside the prompt must not switch Gate 1
// off; a prompt DES cannot read while markers are there fails closed.
func TestE2EGate1ToleratesOddFields(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "TODO")
	prompt := strings.Replace(renderPrompt(t, "execute-step"), "<!-- DES-SECTION: QUALITY_GATES -->", "", 1)
	ev := agentEvent(root, "Agent", prompt)
	ev["tool_input"].(map[string]any)["run_in_background"] = "yes"
	ev["tool_input"].(map[string]any)["subagent_type"] = 1
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-SECTION-MISSING]") {
		t.Errorf("odd fields: reason = %q", reason)
	}
	ev = agentEvent(root, "Agent", "")
	ev["tool_input"].(map[string]any)["prompt"] = []any{"<!-- DES-VALIDATION: required -->"}
	if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.HasPrefix(reason, "[DES-INTERNAL] ") {
		t.Errorf("unreadable marked prompt: reason = %q", reason)
	}
}

// A DONE step is terminal at every validation level: a prompt whose origin
// needs no sections (level none) may not start a subagent on it either, and
// the step file is left as it was.
func TestE2EGate1DoneIsTerminalAtLevelNone(t *testing.T) {
	t.Parallel()
	for _, origin := range []string{"command:/nw:review", "ad-hoc", "command:/nw:execute"} {
		t.Run(origin, func(t *testing.T) {
			root := gate1Project(t, "DONE")
			before, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e2eStep)))
			if err != nil {
				t.Fatal(err)
			}
			prompt := "<!-- DES-VALIDATION: required -->\n<!-- DES-ORIGIN: " + origin + " -->\n<!-- DES-STEP-FILE: " + e2eStep + " -->\nReview the cart total once more.\n"
			reason := denyReason(t, runHookProcess(t, root, nil, agentEvent(root, "Agent", prompt)))
			if !strings.Contains(reason, "[DES-TASK-TERMINAL] the task of "+e2eStep+" is already complete") {
				t.Errorf("reason = %q, want DES-TASK-TERMINAL", reason)
			}
			after, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e2eStep)))
			if err != nil || string(after) != string(before) {
				t.Errorf("the DONE step changed: %s (%v)", after, err)
			}
			if _, err := os.Stat(filepath.Join(root, ".des", "runs", "toolu_e2e.json")); err == nil {
				t.Error("a run was recorded for a denied invocation")
			}
		})
	}
}
