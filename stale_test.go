package des

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/audit"
)

var staleNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func staleProject(t *testing.T, files map[string]string) *Engine {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(nil)), WithClock(func() time.Time { return staleNow }))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func phaseStep(status string, phases ...string) string {
	var log []any
	for i := 0; i+1 < len(phases); i += 2 {
		p := map[string]any{"phase_name": phases[i], "status": phases[i+1], "outcome": nil, "note": "kept"}
		if phases[i+1] == "IN_PROGRESS" {
			p["started_at"] = staleNow.Add(-45 * time.Minute).Format(time.RFC3339)
		}
		if phases[i+1] == "EXECUTED" {
			p["outcome"] = "PASS"
		}
		log = append(log, p)
	}
	b, _ := json.MarshalIndent(map[string]any{"task_id": "x", "state": map[string]any{"status": status}, "tdd_cycle": map[string]any{"phase_execution_log": log}}, "", "  ")
	return string(b)
}

func TestStaleWorkAcrossStepsDirs(t *testing.T) {
	t.Parallel()
	e := staleProject(t, map[string]string{
		"docs/feature/a/steps/01-01.json": phaseStep("IN_PROGRESS", "PREPARE", "EXECUTED", "RED_UNIT", "IN_PROGRESS"),
		"docs/feature/b/steps/02-01.json": phaseStep("IN_PROGRESS", "PREPARE", "NOT_EXECUTED"),
		"node_modules/x/steps/01-01.json": phaseStep("IN_PROGRESS", "PREPARE", "IN_PROGRESS"), // not searched
	})
	work, err := e.StaleWork(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(work) != 1 || work[0].File != "docs/feature/a/steps/01-01.json" || work[0].Phase != "RED_UNIT" || work[0].Age != 45*time.Minute {
		t.Errorf("stale work = %+v", work)
	}
}

func TestResolveStale(t *testing.T) {
	t.Parallel()
	rel := "docs/feature/a/steps/01-01.json"
	e := staleProject(t, map[string]string{rel: phaseStep("IN_PROGRESS", "PREPARE", "EXECUTED", "RED_UNIT", "IN_PROGRESS")})
	res, err := e.ResolveStale(t.Context(), rel)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(res, Resolution{StepFile: rel, Phases: []string{"RED_UNIT"}, From: "IN_PROGRESS", To: "PARTIAL"}) {
		t.Errorf("resolution = %+v", res)
	}
	var doc struct {
		State    map[string]any `json:"state"`
		TDDCycle struct {
			Log []map[string]any `json:"phase_execution_log"`
		} `json:"tdd_cycle"`
	}
	raw, _ := os.ReadFile(filepath.Join(e.Root(), rel))
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.State["status"] != "PARTIAL" {
		t.Errorf("task = %v", doc.State)
	}
	if doc.TDDCycle.Log[0]["status"] != "EXECUTED" || doc.TDDCycle.Log[0]["outcome"] != "PASS" {
		t.Errorf("completed phase changed: %v", doc.TDDCycle.Log[0])
	}
	reset := doc.TDDCycle.Log[1]
	if reset["status"] != "NOT_EXECUTED" || reset["started_at"] != nil || reset["note"] != "kept" {
		t.Errorf("reset phase = %v", reset)
	}
	if h, _ := reset["history"].([]any); len(h) != 1 {
		t.Errorf("history = %v, want the abandonment recorded", reset["history"])
	}
	files, _ := e.Audit().Files()
	entries, err := audit.ReadFile(files[0])
	if err != nil || len(entries) != 2 || entries[0].Event != audit.StaleResolution || entries[1].Event != audit.TaskStateChanged {
		t.Errorf("audit = %+v, %v", entries, err)
	}
	// Resolving again finds nothing.
	if _, err := e.ResolveStale(t.Context(), rel); !errors.Is(err, ErrNothingToResolve) {
		t.Errorf("second resolve: %v", err)
	}
}

func TestResolveFailedTask(t *testing.T) {
	t.Parallel()
	rel := "steps/01-01.json"
	e := staleProject(t, map[string]string{rel: phaseStep("FAILED", "PREPARE", "EXECUTED", "RED_ACCEPTANCE", "FAILED", "RED_UNIT", "NOT_EXECUTED")})
	res, err := e.ResolveStale(t.Context(), rel)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(res.Phases, []string{"RED_ACCEPTANCE"}) || res.From != "FAILED" || res.To != "PARTIAL" {
		t.Errorf("resolution = %+v", res)
	}
}

// A task started again loses the failure text Gate 2 wrote; the rest of
// state, unknown members included, is kept, in place.
func TestResolveFailedTaskClearsTheFailure(t *testing.T) {
	t.Parallel()
	rel := "steps/01-01.json"
	step := `{"task_id": "x", "state": {"status": "FAILED", "started_at": "2026-11-22T10:00:00Z", "failure_reason": "Gate 2: phase RED_UNIT was abandoned",
  "recovery_suggestions": ["Run hook stale --resolve"], "owner": "team-a"}, "tdd_cycle": {"phase_execution_log": [
  {"phase_name": "PREPARE", "status": "EXECUTED", "outcome": "PASS"}, {"phase_name": "RED_UNIT", "status": "IN_PROGRESS"}]}, "extra": [1, 2]}`
	e := staleProject(t, map[string]string{rel: step})
	if _, err := e.ResolveStale(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(e.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": "PARTIAL", "started_at": "2026-11-22T10:00:00Z", "owner": "team-a"}
	if diff := cmp.Diff(want, doc["state"]); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if !cmp.Equal(doc["extra"], []any{1.0, 2.0}) {
		t.Errorf("unknown member = %v", doc["extra"])
	}
}

func TestResolveRefusesOutsideAndMissing(t *testing.T) {
	t.Parallel()
	e := staleProject(t, nil)
	if _, err := e.ResolveStale(t.Context(), "../elsewhere.json"); err == nil {
		t.Error("a file outside the root was resolved")
	}
	if _, err := e.ResolveStale(t.Context(), "steps/none.json"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// Only the step's latest Gate 2 failure names phases to redo: a later pass
// or resolution settles it.
func TestResolveFailedTaskUsesOnlyTheLatestGate2Failure(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := t.TempDir()
	rel := "docs/feature/x/steps/01-01.json"
	step := `{"task_id": "01-01", "state": {"status": "FAILED"}, "tdd_cycle": {"phase_execution_log": [
  {"phase_name": "PREPARE", "status": "EXECUTED", "outcome": "PASS"},
  {"phase_name": "RED_UNIT", "status": "IN_PROGRESS"}]}}`
	write := func() {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(step), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eng, err := New(ctx, WithRoot(root), WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	fail := audit.Entry{Event: audit.SubagentStopValidation, Fields: map[string]any{
		"step_file": rel, "outcome": "FAIL", "codes": []string{"DES-PHASE-JUMP"}, "action": "record", "reset_phases": []string{"PREPARE"}}}
	pass := audit.Entry{Event: audit.SubagentStopValidation, Fields: map[string]any{"step_file": rel, "outcome": "PASS", "codes": []string{}, "action": "none"}}

	write()
	if err := eng.Audit().Append(ctx, fail); err != nil {
		t.Fatal(err)
	}
	res, err := eng.ResolveStale(ctx, rel)
	if err != nil || !slices.Equal(res.Phases, []string{"RED_UNIT", "PREPARE"}) {
		t.Fatalf("after a failure naming PREPARE: %+v, %v", res, err)
	}

	write()
	if err := eng.Audit().Append(ctx, pass); err != nil {
		t.Fatal(err)
	}
	res, err = eng.ResolveStale(ctx, rel)
	if err != nil || !slices.Equal(res.Phases, []string{"RED_UNIT"}) {
		t.Fatalf("after a later pass: %+v, %v; want only the unfinished phase", res, err)
	}
}

// A symbolic link inside the project does not carry the rewrite outside it
// or into DES's own files, and a link to a step file inside it is resolved
// under the step's own name, the one Gates 2 and 3 read in the trail.
func TestResolveFollowsNoLinkOutOrIntoDESFiles(t *testing.T) {
	t.Parallel()
	failed := phaseStep("FAILED", "PREPARE", "IN_PROGRESS")
	e := staleProject(t, map[string]string{"steps/01-01.json": failed, ".des/runs/x.json": failed})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "01-01.json"), []byte(failed), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"out": outside, "des": filepath.Join(e.Root(), ".des"), "alias": filepath.Join(e.Root(), "steps")} {
		if err := os.Symlink(target, filepath.Join(e.Root(), link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"out/01-01.json", filepath.Join(e.Root(), "out", "01-01.json"), "des/runs/x.json"} {
		if res, err := e.ResolveStale(t.Context(), f); err == nil {
			t.Errorf("%s was resolved: %+v", f, res)
		}
	}
	for _, f := range []string{filepath.Join(outside, "01-01.json"), filepath.Join(e.Root(), ".des", "runs", "x.json")} {
		if raw, _ := os.ReadFile(f); string(raw) != failed {
			t.Errorf("%s was rewritten", f)
		}
	}
	res, err := e.ResolveStale(t.Context(), "alias/01-01.json")
	if err != nil || res.StepFile != "steps/01-01.json" {
		t.Fatalf("through an alias inside the project: %+v, %v", res, err)
	}
	entries, err := e.Audit().Read(t.Context(), audit.Query{Events: []audit.EventType{audit.StaleResolution}})
	if err != nil || len(entries) != 1 || entries[0].Fields["step_file"] != "steps/01-01.json" {
		t.Errorf("recorded %+v, %v", entries, err)
	}
}
