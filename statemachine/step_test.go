package statemachine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/statemachine"
)

const stepSrc = `{
  "task_id": "01-02",
  "custom_first": {"keep": [1, 2.50, "x"]},
  "workflow_type": "configuration_setup",
  "state": {"status": "TODO", "started_at": null, "extra": true},
  "tdd_cycle": {
    "max_turns": 40,
    "duration_minutes": 30,
    "total_extensions_minutes": 7.5,
    "phase_execution_log": [
      {"phase_name": "PREPARE", "phase_index": 0, "status": "EXECUTED", "outcome": "PASS",
       "outcome_details": "ok", "started_at": "2026-01-01T10:00:00Z", "ended_at": "2026-01-01T10:05:00Z",
       "turn_count": 3, "max_turns": 10, "duration_seconds": 300.5, "history": [], "notes": "kept"},
      "not an object",
      {"phase_name": "RED_ACCEPTANCE", "phase_index": "one", "status": "IN_PROGRESS", "blocked_by": null,
       "started_at": "2026-01-01T10:05:00", "turn_count": "many", "x-unknown": {"a": 1}}
    ]
  },
  "allowed_file_patterns": ["src/**/*.go", "README.md"],
  "safety": {"is_destructive": true, "affects_production": false, "rollback_plan": "git revert"},
  "documentation": "docs",
  "validation_output": "evidence",
  "custom_last": null
}
`

func parse(t *testing.T, src string) *statemachine.Step {
	t.Helper()
	s, err := statemachine.ParseStep([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestParseStepTypedFields(t *testing.T) {
	t.Parallel()
	s := parse(t, stepSrc)
	want := statemachine.Step{
		TaskID:                 "01-02",
		WorkflowType:           "configuration_setup",
		Status:                 "TODO",
		PhaseLogPath:           []string{"tdd_cycle", "phase_execution_log"},
		MaxTurns:               ptr(40),
		DurationMinutes:        ptr(30.0),
		TotalExtensionsMinutes: ptr(7.5),
		AllowedFilePatterns:    []string{"src/**/*.go", "README.md"},
		Safety:                 &statemachine.Safety{IsDestructive: true, RollbackPlan: "git revert"},
		Documentation:          "docs",
		ValidationOutput:       "evidence",
		Phases: []statemachine.Phase{
			{Name: "PREPARE", Index: 0, Pos: 0, Status: "EXECUTED", Outcome: "PASS", OutcomeDetails: "ok",
				StartedAt: "2026-01-01T10:00:00Z", EndedAt: "2026-01-01T10:05:00Z",
				TurnCount: ptr(3), MaxTurns: ptr(10), DurationSeconds: ptr(300.5)},
			// phase_index and turn_count have the wrong type: read as absent.
			{Name: "RED_ACCEPTANCE", Index: -1, Pos: 2, Status: "IN_PROGRESS", StartedAt: "2026-01-01T10:05:00"},
		},
	}
	if diff := cmp.Diff(&want, s, cmp.AllowUnexported(statemachine.Step{}), cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".doc" || p.Last().String() == ".generic" || p.Last().String() == ".err"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("ParseStep (-want +got):\n%s", diff)
	}
}

func TestParseStepLenientAndDefaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		check     func(*statemachine.Step) string
	}{
		{"task id from task_specification", `{"task_specification": {"task_id": "02-01"}}`,
			func(s *statemachine.Step) string { return s.TaskID + "|" + s.WorkflowType }},
		{"top-level task id wins", `{"task_id": "a", "task_specification": {"task_id": "b"}}`,
			func(s *statemachine.Step) string { return s.TaskID }},
		{"non-string task id falls back", `{"task_id": 7, "task_specification": {"task_id": "b"}}`,
			func(s *statemachine.Step) string { return s.TaskID }},
		{"workflow_type null is the default", `{"workflow_type": null}`,
			func(s *statemachine.Step) string { return s.WorkflowType }},
		{"state of the wrong type", `{"state": "DONE", "safety": [], "allowed_file_patterns": ["a", 1]}`,
			func(s *statemachine.Step) string {
				return s.Status + "|" + boolStr(s.Safety == nil) + "|" + boolStr(s.AllowedFilePatterns == nil)
			}},
		{"legacy phase log", `{"tdd_cycle": {"phase_execution_log": null, "tdd_phase_tracking": {"phase_execution_log": [{"phase_name": "P"}]}}}`,
			func(s *statemachine.Step) string { return strings.Join(s.PhaseLogPath, ".") + "|" + s.Phases[0].Name }},
		{"current log wins over legacy", `{"tdd_cycle": {"phase_execution_log": [], "tdd_phase_tracking": {"phase_execution_log": [{"phase_name": "P"}]}}}`,
			func(s *statemachine.Step) string {
				return strings.Join(s.PhaseLogPath, ".") + "|" + boolStr(len(s.Phases) == 0)
			}},
		{"no phase log", `{"tdd_cycle": {"phase_execution_log": {}}}`,
			func(s *statemachine.Step) string { return boolStr(s.PhaseLogPath == nil && s.Phases == nil) }},
		{"integral numbers", `{"tdd_cycle": {"max_turns": 3.0, "phase_execution_log": [{"turn_count": 1e1, "max_turns": 2.5}]}}`,
			func(s *statemachine.Step) string {
				return boolStr(*s.MaxTurns == 3 && *s.Phases[0].TurnCount == 10 && s.Phases[0].MaxTurns == nil)
			}},
		{"obsolete layouts parse", `{"step_id": "01-01", "phase_id": "x", "tdd_phase": "RED"}`,
			func(s *statemachine.Step) string { return s.TaskID + "|" + boolStr(s.PhaseLogPath == nil) }},
	}
	want := []string{
		"02-01|tdd_cycle", "a", "b", "tdd_cycle", "|true|true",
		"tdd_cycle.tdd_phase_tracking.phase_execution_log|P", "tdd_cycle.phase_execution_log|true",
		"true", "true", "|true",
	}
	for i, c := range cases {
		if got := c.check(parse(t, c.src)); got != want[i] {
			t.Errorf("%s: got %q, want %q", c.name, got, want[i])
		}
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestParseStepRejects(t *testing.T) {
	t.Parallel()
	for _, src := range []string{`[]`, `"x"`, `{`, ``} {
		if _, err := statemachine.ParseStep([]byte(src)); err == nil {
			t.Errorf("ParseStep(%q): no error", src)
		}
	}
}

// Every corpus file parses, obsolete layouts included, and the typed view
// agrees with the corpus's shape (all 300 have a task id).
func TestParseStepCorpus(t *testing.T) {
	t.Parallel()
	var obsolete, legacy, noLog int
	for _, f := range corpusFiles(t) {
		s, _, err := statemachine.ReadStep(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s.TaskID == "" {
			t.Errorf("%s: no task id", filepath.Base(f))
		}
		_, stepID := s.Object().Get("step_id")
		_, phaseID := s.Object().Get("phase_id")
		if stepID || phaseID {
			obsolete++
		}
		switch {
		case s.PhaseLogPath == nil:
			noLog++
		case len(s.PhaseLogPath) == 3:
			legacy++
		}
		if s.Document() == nil {
			t.Errorf("%s: no document", filepath.Base(f))
		}
	}
	// Observed: 80 files carry a top-level phase_id (12 of them step_id too);
	// 45 keep their log at the legacy location; 12 have no phase log at all.
	if obsolete != 80 || legacy != 45 || noLog != 12 {
		t.Errorf("obsolete=%d legacy=%d noLog=%d, want 80, 45, 12", obsolete, legacy, noLog)
	}
}

var now = time.Date(2026, 2, 3, 4, 5, 6, 789, time.FixedZone("X", 3600))

func TestSetTaskStatus(t *testing.T) {
	t.Parallel()
	s := parse(t, stepSrc)
	s.SetTaskStatus(statemachine.TaskInProgress, now)
	if s.Status != "IN_PROGRESS" || s.StartedAt != "2026-02-03T03:05:06Z" {
		t.Errorf("after IN_PROGRESS: status %q started_at %q", s.Status, s.StartedAt)
	}
	// Resuming keeps the first start.
	s.SetTaskStatus(statemachine.TaskPartial, now.Add(time.Hour))
	s.SetTaskStatus(statemachine.TaskInProgress, now.Add(2*time.Hour))
	if s.StartedAt != "2026-02-03T03:05:06Z" {
		t.Errorf("started_at overwritten on resume: %q", s.StartedAt)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Only state changed, in place; every other member is kept as it was.
	assertOnlyChanged(t, stepSrc, out, "state")
	if !strings.Contains(string(out), `"state": {
    "status": "IN_PROGRESS",
    "started_at": "2026-02-03T03:05:06Z",
    "extra": true
  },`) {
		t.Errorf("state not rewritten in place:\n%s", out)
	}

	for name, src := range map[string]string{
		"no state":         `{"task_id": "x"}`,
		"null state":       `{"task_id": "x", "state": null}`,
		"empty started_at": `{"task_id": "x", "state": {"started_at": ""}}`,
		"null started_at":  `{"task_id": "x", "state": {"started_at": null}}`,
	} {
		s := parse(t, src)
		s.SetTaskStatus(statemachine.TaskInProgress, now)
		if s.Status != "IN_PROGRESS" || s.StartedAt != "2026-02-03T03:05:06Z" || s.Err() != nil {
			t.Errorf("%s: status %q started_at %q err %v", name, s.Status, s.StartedAt, s.Err())
		}
	}
	s = parse(t, `{"state": {"status": "TODO"}}`)
	s.SetTaskStatus(statemachine.TaskDone, now)
	if s.StartedAt != "" {
		t.Errorf("started_at set for a move to DONE: %q", s.StartedAt)
	}
}

// An edit that cannot be made leaves the document as it was and makes
// Marshal fail, so DES never writes a half-edited step file.
func TestEditErrorIsSticky(t *testing.T) {
	t.Parallel()
	s := parse(t, `{"task_id": "x", "state": "DONE"}`)
	s.SetTaskStatus(statemachine.TaskInProgress, now)
	if s.Err() == nil || !errors.Is(s.Err(), statemachine.ErrNotObject) {
		t.Fatalf("Err = %v, want ErrNotObject", s.Err())
	}
	s.SetFailure("r", nil) // skipped
	if _, err := s.Marshal(); err == nil {
		t.Error("Marshal succeeded after a failed edit")
	}
	if got, _ := s.Object().Get("state"); string(got) != `"DONE"` {
		t.Errorf("state = %s after a failed edit", got)
	}
}

func TestSetFailure(t *testing.T) {
	t.Parallel()
	s := parse(t, stepSrc)
	s.SetFailure("phase RED_ACCEPTANCE abandoned", []string{"read the transcript", "reset RED_ACCEPTANCE", "resume"})
	if s.Status != "FAILED" || s.FailureReason != "phase RED_ACCEPTANCE abandoned" || len(s.RecoverySuggestions) != 3 {
		t.Errorf("got %q %q %v", s.Status, s.FailureReason, s.RecoverySuggestions)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	assertOnlyChanged(t, stepSrc, out, "state")
	s = parse(t, `{"task_id": "x"}`)
	s.SetFailure("why", nil)
	if out, _ := s.Marshal(); !strings.Contains(string(out), `"recovery_suggestions": []`) {
		t.Errorf("nil suggestions not written as an empty list:\n%s", out)
	}
}

func TestClearFailure(t *testing.T) {
	t.Parallel()
	s := parse(t, stepSrc)
	s.SetFailure("phase RED_ACCEPTANCE abandoned", []string{"reset RED_ACCEPTANCE"})
	s.ClearFailure()
	if s.FailureReason != "" || s.RecoverySuggestions != nil || s.Status != "FAILED" {
		t.Errorf("got %q %q %v", s.Status, s.FailureReason, s.RecoverySuggestions)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Only the status SetFailure wrote is left of the failure; state's
	// other members stay, in their order.
	want := strings.Replace(stepSrc, `"status": "TODO"`, `"status": "FAILED"`, 1)
	assertOnlyChanged(t, want, out)
	// Nothing to clear, or no state: no change.
	for _, src := range []string{`{"task_id": "x"}`, `{"task_id": "x", "state": {"status": "PARTIAL", "z": 1}}`} {
		s := parse(t, src)
		s.ClearFailure()
		out, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		assertOnlyChanged(t, src, out)
	}
}

func TestResetPhases(t *testing.T) {
	t.Parallel()
	s := parse(t, stepSrc)
	s.ResetPhases([]string{"PREPARE", "RED_ACCEPTANCE", "NOT_IN_LOG"}, now, "abandoned: stale for 2h")
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Phases {
		if p.Status != "NOT_EXECUTED" || p.StartedAt != "" || p.EndedAt != "" || p.Outcome != "" {
			t.Errorf("%s not reset: %+v", p.Name, p)
		}
	}
	if s.Phases[0].OutcomeDetails != "ok" || *s.Phases[0].TurnCount != 3 {
		t.Errorf("fields outside the reset changed: %+v", s.Phases[0])
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	assertOnlyChanged(t, stepSrc, out, "tdd_cycle")
	var doc struct {
		TDD struct {
			Log []json.RawMessage `json:"phase_execution_log"`
		} `json:"tdd_cycle"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if string(doc.TDD.Log[1]) != `"not an object"` {
		t.Errorf("non-object entry changed: %s", doc.TDD.Log[1])
	}
	wantPrepare := `{"phase_name":"PREPARE","phase_index":0,"status":"NOT_EXECUTED","outcome":null,"outcome_details":"ok","started_at":null,"ended_at":null,"turn_count":3,"max_turns":10,"duration_seconds":300.5,"history":[{"at":"2026-02-03T03:05:06Z","from":"EXECUTED","to":"NOT_EXECUTED","note":"abandoned: stale for 2h"}],"notes":"kept"}`
	if got := compact(t, doc.TDD.Log[0]); got != wantPrepare {
		t.Errorf("PREPARE entry:\n got %s\nwant %s", got, wantPrepare)
	}
	// No history array before: one is appended at the end of the entry.
	wantRed := `{"phase_name":"RED_ACCEPTANCE","phase_index":"one","status":"NOT_EXECUTED","blocked_by":null,"started_at":null,"turn_count":"many","x-unknown":{"a":1},"ended_at":null,"outcome":null,"history":[{"at":"2026-02-03T03:05:06Z","from":"IN_PROGRESS","to":"NOT_EXECUTED","note":"abandoned: stale for 2h"}]}`
	if got := compact(t, doc.TDD.Log[2]); got != wantRed {
		t.Errorf("RED_ACCEPTANCE entry:\n got %s\nwant %s", got, wantRed)
	}

	// A history that is not an array cannot be appended to: nothing changes.
	s = parse(t, `{"tdd_cycle": {"phase_execution_log": [{"phase_name": "P", "status": "IN_PROGRESS", "history": "x"}]}}`)
	s.ResetPhases([]string{"P"}, now, "n")
	if s.Err() == nil || s.Phases[0].Status != "IN_PROGRESS" {
		t.Errorf("Err = %v, status %q", s.Err(), s.Phases[0].Status)
	}

	// The legacy location is edited where it is.
	s = parse(t, `{"tdd_cycle": {"tdd_phase_tracking": {"phase_execution_log": [{"phase_name": "P"}]}}}`)
	s.ResetPhases([]string{"P"}, now, "n")
	if s.Err() != nil || s.Phases[0].Status != "NOT_EXECUTED" {
		t.Errorf("legacy: Err = %v, phases %+v", s.Err(), s.Phases)
	}
	if out, _ := s.Marshal(); !strings.Contains(string(out), `"from": null`) {
		t.Errorf("a phase without status: from should be null:\n%s", out)
	}
}

func compact(t *testing.T, v []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// assertOnlyChanged checks that out has the members of src in the same order
// and, except for the named ones, with the same values.
func assertOnlyChanged(t *testing.T, src string, out []byte, changed ...string) {
	t.Helper()
	a, err := statemachine.ParseObject([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b, err := statemachine.ParseObject(out)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(a.Keys(), b.Keys()) {
		t.Errorf("key order changed: %v -> %v", a.Keys(), b.Keys())
	}
	for _, k := range a.Keys() {
		if slices.Contains(changed, k) {
			continue
		}
		va, _ := a.Get(k)
		vb, _ := b.Get(k)
		if compact(t, va) != compact(t, vb) {
			t.Errorf("%s changed: %s -> %s", k, va, vb)
		}
	}
}

func TestDocumentCache(t *testing.T) {
	t.Parallel()
	s := parse(t, stepSrc)
	d := s.Document()
	if d["task_id"] != "01-02" {
		t.Errorf("task_id = %v", d["task_id"])
	}
	if n, ok := d["tdd_cycle"].(map[string]any)["max_turns"].(json.Number); !ok || n != "40" {
		t.Errorf("numbers should decode as json.Number, got %T", d["tdd_cycle"].(map[string]any)["max_turns"])
	}
	d["marker"] = true
	if s.Document()["marker"] != true {
		t.Error("Document is decoded again on every call")
	}
	s.SetTaskStatus(statemachine.TaskInProgress, now)
	if d2 := s.Document(); d2["marker"] != nil || d2["state"].(map[string]any)["status"] != "IN_PROGRESS" {
		t.Error("Document not refreshed after an edit")
	}
}

func TestReadStep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "01-01.json")
	if err := os.WriteFile(good, []byte(stepSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, raw, err := statemachine.ReadStep(good)
	if err != nil || s.TaskID != "01-02" || string(raw) != stepSrc {
		t.Fatalf("ReadStep: %v", err)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("[1]"), 0o644)
	if s, raw, err := statemachine.ReadStep(bad); err == nil || s != nil || string(raw) != "[1]" {
		t.Errorf("non-object: %v %v %q", s, err, raw)
	}

	if _, _, err := statemachine.ReadStep(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: err = %v", err)
	}
	if _, _, err := statemachine.ReadStep(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: err = %v", err)
	}

	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(statemachine.MaxStepFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, _, err = statemachine.ReadStep(big)
	if !errors.Is(err, statemachine.ErrTooLarge) || !strings.Contains(err.Error(), "16 MiB") {
		t.Errorf("oversized: err = %v, want ErrTooLarge naming the 16 MiB limit", err)
	}
}

// Reading a step file is on Gate 1's path, so is validating it.
func BenchmarkParseStep(b *testing.B) {
	corpusFiles(b)
	data := readFile(b, filepath.Join(corpusDir, "8b6721c66ffcb77d1fb4b01ab91e98a17faea568.json")) // the largest, 23 KB
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := statemachine.ParseStep(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateStep(b *testing.B) {
	corpusFiles(b)
	s, _, err := statemachine.ReadStep(filepath.Join(corpusDir, "8b6721c66ffcb77d1fb4b01ab91e98a17faea568.json"))
	if err != nil {
		b.Fatal(err)
	}
	doc := s.Document()
	statemachine.ValidateStep(doc) // compile outside the loop
	for b.Loop() {
		statemachine.ValidateStep(doc)
	}
}
