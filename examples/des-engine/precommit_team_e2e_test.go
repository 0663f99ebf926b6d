package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/audit"
)

// plannedStep is a step as nWave plans it: every canonical phase
// NOT_EXECUTED; state is left out when nil.
func plannedStep(t *testing.T, state map[string]any, executed ...string) string {
	t.Helper()
	var log []any
	for i, name := range canonicalPhases {
		p := map[string]any{"phase_name": name, "phase_index": i, "status": "NOT_EXECUTED", "outcome": nil}
		for _, e := range executed {
			if e == name {
				p["status"], p["outcome"] = "EXECUTED", "PASS"
			}
		}
		log = append(log, p)
	}
	doc := map[string]any{"task_id": "02-01", "tdd_cycle": map[string]any{"phase_execution_log": log}}
	if state != nil {
		doc["state"] = state
	}
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw) + "\n"
}

// Plans commit: through the installed git hook, a real `git commit` of two
// freshly planned steps lands; a step that has started does not.
func TestE2EPrecommitPlansCommit(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	if r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin); r.code != 0 {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, root, "docs/feature/shop/steps/02-01.json", plannedStep(t, map[string]any{"status": "TODO"}))
	writeFile(t, root, "docs/feature/shop/steps/02-02.json", plannedStep(t, nil))
	git(t, root, "add", ".")
	r := runIn(t, root, nil, "precommit")
	if r.code != 0 || r.stdout != "Gate 3: 2 step files passed\n" {
		t.Errorf("precommit on two plans: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out, code := gitRun(t, root, "commit", "-qm", "plan the cart steps"); code != 0 {
		t.Fatalf("git commit of two plans refused: exit %d\n%s", code, out)
	}

	for _, c := range []struct {
		name, step string
		open       int
	}{
		{"a plan with one phase executed", plannedStep(t, map[string]any{"status": "TODO"}, "PREPARE"), 13},
		{"a task in progress", plannedStep(t, map[string]any{"status": "IN_PROGRESS"}), 14},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, root, "docs/feature/shop/steps/02-01.json", c.step)
			git(t, root, "add", ".")
			out, code := gitRun(t, root, "commit", "-qm", "wip")
			if code == 0 || strings.Count(out, "[DES-COMMIT-PHASE-OPEN]") != c.open {
				t.Errorf("git commit: exit %d, want refused with %d open phases\n%s", code, c.open, out)
			}
			git(t, root, "reset", "-q", "--hard")
		})
	}
}

// deferredStep is a finished step whose REFACTOR_L3 was deferred, before
// phases that ran: a deferral and a gap.
func deferredStep(t *testing.T) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(finishedStep(t, "EXECUTED")), &doc); err != nil {
		t.Fatal(err)
	}
	log := doc["tdd_cycle"].(map[string]any)["phase_execution_log"].([]any)
	log[9] = map[string]any{"phase_name": "REFACTOR_L3", "phase_index": 9, "status": "SKIPPED", "blocked_by": "DEFERRED: split Cart after the release"}
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw) + "\n"
}

// A team that waives DES-COMMIT-DEFERRED accepts deferred skips: neither
// the deferral nor the gap it leaves blocks, and the waiver is recorded.
func TestE2EPrecommitDeferredWaived(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, stepPath, deferredStep(t))
	git(t, root, "add", stepPath)
	r := runIn(t, root, nil, "precommit")
	if r.code != 1 || !strings.Contains(r.stdout, "[DES-COMMIT-DEFERRED]") || !strings.Contains(r.stdout, "[DES-COMMIT-GAP] phase REFACTOR_L3") {
		t.Fatalf("without a waiver: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, root, ".des/policies/commit.rego", "package des.gates.pre_commit\n\nexception contains \"DES-COMMIT-DEFERRED\"\n")
	r = runIn(t, root, nil, "precommit")
	if r.code != 0 || r.stdout != "Gate 3: 1 step file passed\n" {
		t.Errorf("with the waiver: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	log, err := audit.Open(filepath.Join(root, ".des", "audit"))
	if err != nil {
		t.Fatal(err)
	}
	waived, err := log.Read(t.Context(), audit.Query{Events: []audit.EventType{audit.PolicyException}})
	if err != nil || len(waived) != 1 || waived[0].Fields["code"] != "DES-COMMIT-DEFERRED" {
		t.Errorf("waivers recorded: %+v, %v", waived, err)
	}
	// A bare DEFERRED: without a reason is still no valid skip.
	writeFile(t, root, stepPath, strings.Replace(deferredStep(t), "DEFERRED: split Cart after the release", "DEFERRED:", 1))
	git(t, root, "add", stepPath)
	if r := runIn(t, root, nil, "precommit"); r.code != 1 || !strings.Contains(r.stdout, "[DES-COMMIT-GAP] phase REFACTOR_L3") {
		t.Errorf("DEFERRED: without a reason: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// One setting decides both gates: a step named 02-01a.json, guarded on
// write, is judged at commit, through `hook precommit`, the installed git
// hook and an agent's git commit; a team's own setting moves both.
func TestE2EPrecommitGuardedStepFilesSetting(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	if r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin); r.code != 0 {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	suffixed := "docs/feature/shop/steps/02-01a.json"
	writeFile(t, root, suffixed, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", suffixed)
	if r := runIn(t, root, nil, "precommit"); r.code != 1 || !strings.Contains(r.stdout, suffixed+": [DES-COMMIT-PHASE-OPEN]") {
		t.Errorf("precommit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out, code := gitRun(t, root, "commit", "-qm", "wip"); code == 0 || !strings.Contains(out, suffixed+": [DES-COMMIT-PHASE-OPEN]") {
		t.Errorf("git commit through the installed hook: exit %d\n%s", code, out)
	}
	r := runHookProcess(t, root, nil, bashEvent(t, root, heredocCommit))
	if reason := denyReason(t, r); !strings.Contains(reason, "[DES-COMMIT-PHASE-OPEN] "+suffixed) {
		t.Errorf("agent's git commit: %q\n%s", reason, r.stderr)
	}
	git(t, root, "reset", "-q", "--hard")

	// A team that keeps its steps elsewhere: those are judged, and a
	// steps/ file it does not guard is not (the write guard lets it be
	// written freely too).
	custom := []string{"DES_GUARDED_STEP_FILES=plans/*.step.json"}
	writeFile(t, root, "plans/cart.step.json", finishedStep(t, "IN_PROGRESS"))
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", ".")
	r = runIn(t, root, custom, "precommit")
	if r.code != 1 || !strings.Contains(r.stdout, "plans/cart.step.json: [DES-COMMIT-PHASE-OPEN]") || strings.Contains(r.stdout, stepPath) {
		t.Errorf("custom setting: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runHookProcess(t, root, custom, bashEvent(t, root, heredocCommit))
	if reason := denyReason(t, r); !strings.Contains(reason, "[DES-COMMIT-PHASE-OPEN] plans/cart.step.json") || strings.Contains(reason, stepPath) {
		t.Errorf("agent's git commit, custom setting: %q\n%s", reason, r.stderr)
	}
}

// FILE arguments are read against the current directory, as every CLI
// reads them, for precommit and stale --resolve alike.
func TestE2EFileArgumentsFromASubdirectory(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	failed := `{"task_id": "01-02", "state": {"status": "FAILED", "failure_reason": "Gate 2: phase RED_UNIT was abandoned",
  "recovery_suggestions": ["Run des-hook stale --resolve"], "owner": "team-a"},
  "tdd_cycle": {"phase_execution_log": [{"phase_name": "PREPARE", "status": "EXECUTED", "outcome": "PASS"},
  {"phase_name": "RED_UNIT", "status": "IN_PROGRESS", "started_at": "2026-11-20T10:00:00Z"}]}}`
	writeFile(t, root, stepPath, failed)
	sub := filepath.Join(root, "docs", "feature")
	env := []string{"CLAUDE_PROJECT_DIR=" + root}

	r := runIn(t, sub, env, "precommit", "shop/steps/01-02.json")
	if r.code != 1 || !strings.Contains(r.stdout, stepPath+": [DES-COMMIT-INCOMPLETE]") {
		t.Errorf("precommit from a subdirectory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, sub, env, "stale", "--resolve", "shop/steps/01-02.json")
	if r.code != 0 || !strings.Contains(r.stdout, stepPath+": task FAILED -> PARTIAL") {
		t.Fatalf("stale --resolve from a subdirectory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The restarted task keeps no failure text, and every other member.
	raw, err := os.ReadFile(filepath.Join(root, stepPath))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		State map[string]any `json:"state"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.State["failure_reason"]; ok || doc.State["recovery_suggestions"] != nil || doc.State["owner"] != "team-a" || doc.State["status"] != "PARTIAL" {
		t.Errorf("state after the resolution: %v", doc.State)
	}

	// The root-relative paths des prints in its recovery steps work from
	// any directory too, when nothing of that name is here.
	if r := runIn(t, sub, env, "stale", "--resolve", stepPath); r.code != 0 || !strings.Contains(r.stdout, stepPath+": nothing to resolve") {
		t.Errorf("stale --resolve with the root-relative path: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runIn(t, sub, env, "precommit", stepPath); r.code != 1 || !strings.Contains(r.stdout, stepPath+": [DES-COMMIT-INCOMPLETE]") {
		t.Errorf("precommit with the root-relative path: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A file here wins over one of the same name from the root.
	writeFile(t, sub, stepPath, finishedStep(t, "EXECUTED"))
	if r := runIn(t, sub, env, "precommit", stepPath); r.code != 0 || !strings.Contains(r.stdout, "1 step file passed") {
		t.Errorf("precommit of the file here: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Absolute paths as they are; outside the root: named with the root.
	outside := filepath.Join(t.TempDir(), "steps", "01-01.json")
	writeFile(t, filepath.Dir(outside), "01-01.json", "{}")
	for _, args := range [][]string{
		{"precommit", filepath.Join(root, stepPath)},
		{"precommit", outside}, {"stale", "--resolve", outside},
		{"precommit", "../../../elsewhere.json"}, {"stale", "--resolve", "../../../elsewhere.json"},
	} {
		r := runIn(t, sub, env, args...)
		if strings.Contains(args[len(args)-1], "elsewhere") || args[len(args)-1] == outside {
			if r.code != 2 || !strings.Contains(r.stderr, "is outside the project root "+root) {
				t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
			}
			continue
		}
		if r.code == 2 {
			t.Errorf("%v: exit 2, stderr %q", args, r.stderr)
		}
	}
}

// Gate 1 starting a task again after a failure clears the failure text
// Gate 2 left in the step file.
func TestE2EGate1RestartClearsTheFailure(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "PARTIAL")
	writeFile(t, root, e2eStep, `{
  "task_id": "01-01",
  "state": {"status": "PARTIAL", "failure_reason": "Gate 2: phase RED_UNIT was abandoned", "recovery_suggestions": ["redo RED_UNIT"], "started_at": "2026-11-20T10:00:00Z"},
  "tdd_cycle": {"phase_execution_log": []}
}
`)
	r := runHookProcess(t, root, nil, agentEvent(root, "Agent", renderPrompt(t, "execute-step")))
	if denyReason(t, r) != "" {
		t.Fatalf("Gate 1: %s\n%s", r.stdout, r.stderr)
	}
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e2eStep)))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		State map[string]any `json:"state"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": "IN_PROGRESS", "started_at": "2026-11-20T10:00:00Z"}
	if len(doc.State) != 2 || doc.State["status"] != want["status"] || doc.State["started_at"] != want["started_at"] {
		t.Errorf("state after Gate 1 = %v, want %v", doc.State, want)
	}
}
