package des_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/template"
)

// noEnv keeps the examples independent of the caller's DES_* variables.
func noEnv(string) (string, bool) { return "", false }

// A team extends Gate 3 with its own rule by adding a Rego file to the gate's
// package in .des/policies; partial set rules merge with the built-in ones.
func Example_teamPolicy() {
	root, err := os.MkdirTemp("", "des-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	team := `package des.gates.pre_commit

# METADATA
# title: Every step names its owner
# custom:
#   code: TEAM-OWNER
#   severity: deny
deny contains {"code": "TEAM-OWNER", "msg": sprintf("%s names no owner; add \"owner\"", [input.step.path]), "field": "/owner"} if {
	not input.step.document.owner
}
`
	if err := os.MkdirAll(filepath.Join(root, ".des", "policies"), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".des", "policies", "owner.rego"), []byte(team), 0o644); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	engine, err := des.New(ctx, des.WithRoot(root), des.WithEnv(noEnv))
	if err != nil {
		log.Fatal(err)
	}
	input := map[string]any{"step": map[string]any{
		"path":     "steps/01-01.json",
		"document": map[string]any{"task_id": "01-01", "step_id": "01-01"},
	}}
	decision, err := engine.Evaluate(ctx, policy.PreCommit, input)
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range decision.Deny {
		fmt.Printf("[%s] %s (from %s)\n", v.Code, v.Message, v.Policy)
	}
	// Output:
	// [DES-STEPFILE-OBSOLETE] step file steps/01-01.json uses the obsolete top-level field "step_id"; use task_id (or task_specification.task_id) instead (from des.stepfile)
	// [TEAM-OWNER] steps/01-01.json names no owner; add "owner" (from des.gates.pre_commit)
}

// A gate's exception set waives a code for that gate; the Engine records each
// waiver in the audit trail.
func Example_exception() {
	root, err := os.MkdirTemp("", "des-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	waiver := "package des.gates.pre_commit\n\nexception contains \"DES-STEPFILE-OBSOLETE\"\n"
	if err := os.WriteFile(filepath.Join(root, "waiver.rego"), []byte(waiver), 0o644); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	engine, err := des.New(ctx, des.WithRoot(root), des.WithEnv(noEnv), des.WithClock(clock),
		des.WithPolicyDirs(filepath.Join(root, "waiver.rego")))
	if err != nil {
		log.Fatal(err)
	}
	input := map[string]any{"step": map[string]any{"path": "s.json", "document": map[string]any{"step_id": "1"}}}
	decision, err := engine.Evaluate(ctx, policy.PreCommit, input)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("allowed:", decision.Allowed())
	for _, v := range decision.Waived {
		fmt.Println("waived:", v.Code)
	}
	trail, err := os.ReadFile(filepath.Join(root, ".des", "audit", "audit-2026-11-22.log"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(trail))
	// Output:
	// allowed: true
	// waived: DES-STEPFILE-OBSOLETE
	// {"timestamp":"2026-11-22T12:00:00Z","event":"POLICY_EXCEPTION","seq":1,"prev":"0000000000000000000000000000000000000000000000000000000000000000","code":"DES-STEPFILE-OBSOLETE","gate":"pre_commit","msg":"step file s.json uses the obsolete top-level field \"step_id\"; use task_id (or task_specification.task_id) instead","policy":"des.stepfile"}
}

// Gate 1 judges a subagent's prompt and step file before it starts. Here
// the prompt, rendered from the default execute-step template, has lost its
// QUALITY_GATES section, and the step is already DONE.
func ExampleEngine_PreInvocation() {
	root, err := os.MkdirTemp("", "des-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	stepFile := "docs/feature/shop/steps/01-01.json"
	step := map[string]any{"task_id": "01-01", "state": map[string]any{"status": "DONE"}}
	raw, _ := json.Marshal(step)
	if err := os.MkdirAll(filepath.Join(root, "docs", "feature", "shop", "steps"), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, stepFile), raw, 0o644); err != nil {
		log.Fatal(err)
	}
	prompt, err := template.Defaults().Render("execute-step", template.Data{StepFile: stepFile, Step: step, Agent: map[string]any{"name": "software-crafter"}})
	if err != nil {
		log.Fatal(err)
	}
	text := strings.Replace(prompt.Text, "<!-- DES-SECTION: QUALITY_GATES -->", "", 1)

	ctx := context.Background()
	engine, err := des.New(ctx, des.WithRoot(root), des.WithEnv(noEnv))
	if err != nil {
		log.Fatal(err)
	}
	res, err := engine.PreInvocation(ctx, gate.Invocation{Prompt: text, ToolUseID: "toolu_01"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("denied:", res.Denied(), "level:", res.Level)
	fmt.Println(res.Reason())
	// Output:
	// denied: true level: full
	// [DES-SECTION-MISSING] the prompt has no QUALITY_GATES section, which validation level "full" requires (origin "command:/nw:execute"); add <!-- DES-SECTION: QUALITY_GATES --> with its content
	// [DES-TASK-TERMINAL] the task of docs/feature/shop/steps/01-01.json is already complete (state.status DONE); DONE is terminal, so no subagent may start on it
	// Recovery:
	// - Render the prompt from a DES template so that every section of level "full" is present: DES_METADATA, AGENT_IDENTITY, TASK_CONTEXT, TDD_14_PHASES, QUALITY_GATES, OUTCOME_RECORDING, BOUNDARY_RULES, TIMEOUT_INSTRUCTION.
	// - Do not re-run a completed step; pick the next step whose status is TODO, FAILED or PARTIAL.
	// - If the step really must be redone, create a new step file for the new work.
}

// An orchestrator written in Go calls Gate 2 itself once a subagent is done,
// naming the step. Here the subagent claimed the task DONE without running a
// single phase: Gate 2 fails the stop and marks the step FAILED with
// recovery suggestions.
func ExampleEngine_CheckStop() {
	root, err := os.MkdirTemp("", "des-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	stepFile := "docs/feature/shop/steps/01-01.json"
	raw := `{"task_id": "01-01", "state": {"status": "DONE"}, "tdd_cycle": {"phase_execution_log": [
  {"phase_name": "PREPARE", "phase_index": 0, "status": "NOT_EXECUTED"}]}}`
	if err := os.MkdirAll(filepath.Join(root, "docs", "feature", "shop", "steps"), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, stepFile), []byte(raw), 0o644); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	engine, err := des.New(ctx, des.WithRoot(root), des.WithEnv(noEnv))
	if err != nil {
		log.Fatal(err)
	}
	res, err := engine.CheckStop(ctx, gate.Stop{StepFile: stepFile})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("codes:", res.Decision.Codes(), "action:", res.Action)
	after, err := os.ReadFile(filepath.Join(root, stepFile))
	if err != nil {
		log.Fatal(err)
	}
	var doc struct {
		State struct {
			Status      string   `json:"status"`
			Suggestions []string `json:"recovery_suggestions"`
		} `json:"state"`
	}
	if err := json.Unmarshal(after, &doc); err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", doc.State.Status)
	fmt.Println("first suggestion:", doc.State.Suggestions[0])
	// Output:
	// codes: [DES-SILENT-COMPLETION] action: record
	// status: FAILED
	// first suggestion: Read the audit trail's events for docs/feature/shop/steps/01-01.json (step_file) to see which phases the subagent recorded.
}

// README "Use it from Go" begins.

// stepPrompt is the prompt a subagent receives for the step: in Claude Code
// the Agent (or Task) tool call's tool_input.prompt, which the hook hands to
// Gate 1. An orchestrator renders it from a des template (package template)
// for the step file and the agent; Gate 1 judges its markers and sections.
func stepPrompt(stepFile string, step map[string]any) (string, error) {
	data := template.Data{StepFile: stepFile, Step: step, Agent: map[string]any{"name": "software-crafter"}}
	rendered, err := template.Defaults().Render("execute-step", data)
	return rendered.Text, err
}

// checkEveryGate calls each gate from Go in projectDir, on a subagent
// prompt for the step docs/feature/shop/steps/01-01.json.
func checkEveryGate(ctx context.Context, projectDir, prompt string) error {
	engine, err := des.New(ctx, des.WithRoot(projectDir)) // settings, policies, audit trail: build it once
	if err != nil {
		return err // *des.ConfigError for a bad setting, policy.Errors (file:line:col) for a policy
	}
	step := "docs/feature/shop/steps/01-01.json"

	// Gate 1, before a subagent starts: markers, sections, step file, task state.
	start, err := engine.PreInvocation(ctx, gate.Invocation{Prompt: prompt, ToolUseID: "toolu_01"})
	if err != nil {
		return err
	}
	fmt.Println("Gate 1 denies:", start.Denied())

	// The write guard and des's own files, before a tool call writes.
	write, err := engine.CheckToolUse(ctx, gate.ToolCall{Tool: "Write", Paths: []string{".des/config.json"}})
	if err != nil {
		return err
	}
	fmt.Println("write denied:", write.Denied(), write.Decision.Codes())

	// Gate 2, when the subagent stops: the step as it left it.
	stop, err := engine.CheckStop(ctx, gate.Stop{StepFile: step})
	if err != nil {
		return err
	}
	fmt.Println("Gate 2:", stop.Decision.Codes(), stop.Action)

	// Gate 3, before a commit: the step files it holds.
	commit, err := engine.PreCommit(ctx, step)
	if err != nil {
		return err // des could not decide: refuse the commit
	}
	fmt.Println("Gate 3 denies:", commit.Denied())

	// Any gate, on an input document of your own: here an obsolete layout.
	input := map[string]any{"step": map[string]any{"path": "old.json", "document": map[string]any{"step_id": "01-01"}}}
	decision, err := engine.Evaluate(ctx, policy.PreCommit, input)
	if err != nil {
		return err
	}
	fmt.Println("pre_commit:", decision.Codes())

	// Phase workflow guards (iSDLC), where a workflow state is found; none here.
	skill, err := engine.CheckSkill(ctx, gate.Invocation{Tool: gate.ToolSkill, Skill: "isdlc", Args: "advance"})
	if err != nil {
		return err
	}
	branch, err := engine.CheckCommitBranches(ctx, gate.BashCall{Command: "git commit -m wip"})
	if err != nil {
		return err
	}
	open, err := engine.Escalations(ctx, projectDir, false)
	if err != nil {
		return err
	}
	fmt.Println("phase guards deny:", skill.Denied(), branch.Denied(), "open escalations:", len(open))
	return nil
}

// README "Use it from Go" ends.

// The README's "Use it from Go" code, run: a prompt rendered from the
// default template for a step that is still TODO.
func Example_useFromGo() {
	root, err := os.MkdirTemp("", "des-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	stepFile := "docs/feature/shop/steps/01-01.json"
	step := map[string]any{"task_id": "01-01", "state": map[string]any{"status": "TODO"}}
	raw, _ := json.Marshal(step)
	if err := os.MkdirAll(filepath.Join(root, "docs", "feature", "shop", "steps"), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, stepFile), raw, 0o644); err != nil {
		log.Fatal(err)
	}
	prompt, err := stepPrompt(stepFile, step)
	if err != nil {
		log.Fatal(err)
	}
	// checkEveryGate reads the process's environment, as a program would:
	// des's per-user state (the audit witness) goes to the example's own
	// directory, not the home directory of whoever runs it. Examples run
	// one at a time, after the tests.
	state, err := os.MkdirTemp("", "des-example-state")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)
	old, had := os.LookupEnv("DES_STATE_DIR")
	os.Setenv("DES_STATE_DIR", state)
	defer func() {
		if had {
			os.Setenv("DES_STATE_DIR", old)
		} else {
			os.Unsetenv("DES_STATE_DIR")
		}
	}()
	if err := checkEveryGate(context.Background(), root, prompt); err != nil {
		log.Fatal(err)
	}
	// Output:
	// Gate 1 denies: false
	// write denied: true [DES-PROTECTED-PATH]
	// Gate 2: [DES-SILENT-COMPLETION] record
	// Gate 3 denies: true
	// pre_commit: [DES-STEPFILE-OBSOLETE]
	// phase guards deny: false false open escalations: 0
}
