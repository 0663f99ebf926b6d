package statemachine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/deterministic-exec/des/statemachine"
)

// fullState has every field DES reads, nulls, wrong types, unknown fields
// at every level and a repeated key.
const fullState = `{
  "project": {"name": "demo", "nested": {"deep": [1, 2, {"x": null}]}},
  "state_version": 7,
  "current_phase": "02-design",
  "active_agent": "architect",
  "active_workflow": {
    "type": "feature",
    "id": "wf-1",
    "phases": ["01-requirements", "02-design", "03-implementation"],
    "current_phase": "02-design",
    "current_phase_index": 1.0,
    "phase_status": {"01-requirements": "completed", "02-design": "in_progress", "03-implementation": null, "04-x": 3},
    "git_branch": {"name": "feature/x", "status": "active", "created_from": "main"},
    "supervised_review": {"status": "redo_pending", "redo_count": 2},
    "recovery_action": {"type": "retry", "reason": "flaky"},
    "started_at": "2026-01-01T00:00:00Z"
  },
  "phases": {
    "01-requirements": {
      "status": "completed",
      "started": "2026-01-01T00:00:00Z",
      "completed": "2026-01-01T01:00:00Z",
      "summary": "Requirements < done & dusted >",
      "artifacts": ["req.md"],
      "iteration_requirements": {
        "test_iteration": {"completed": true, "current_iteration": 3, "last_test_result": "passed", "max_iterations": 10},
        "interactive_elicitation": {"completed": true, "menu_interactions": 4, "selections": ["a"]}
      },
      "constitutional_validation": {"completed": true, "iterations_used": 1, "status": "compliant", "articles": [1, 2]},
      "timing": {"started_at": "2026-01-01T00:00:00Z", "completed_at": null, "retries": 0, "wall_ms": 12}
    },
    "02-design": {"status": "in_progress", "started": null, "completed": null, "gate_passed": null},
    "03-implementation": null,
    "04-broken": "not an object",
    "05-types": {
      "status": 5, "started": true, "summary": ["x"],
      "iteration_requirements": {"test_iteration": {"completed": "yes", "current_iteration": 2.5, "last_test_result": {"ok": true}}},
      "constitutional_validation": null,
      "timing": []
    }
  },
  "workflow_history": [{"type": "fix", "status": "completed"}],
  "current_phase": "03-implementation"
}`

func TestParseStateTypedFields(t *testing.T) {
	t.Parallel()
	s, err := statemachine.ParseState([]byte(fullState))
	if err != nil {
		t.Fatal(err)
	}
	i := func(v int) *int { return &v }
	b := func(v bool) *bool { return &v }
	v7 := int64(7)
	want := statemachine.State{
		StateVersion: &v7,
		CurrentPhase: "03-implementation", // the last occurrence counts
		ActiveAgent:  "architect",
		ActiveWorkflow: &statemachine.Workflow{
			Type:              "feature",
			Phases:            []string{"01-requirements", "02-design", "03-implementation"},
			CurrentPhase:      "02-design",
			CurrentPhaseIndex: i(1),
			PhaseStatus:       map[string]string{"01-requirements": "completed", "02-design": "in_progress"},
			GitBranch:         &statemachine.GitBranch{Name: "feature/x", Status: "active"},
			SupervisedReview:  &statemachine.SupervisedReview{Status: "redo_pending", RedoCount: i(2)},
			RecoveryAction:    &statemachine.RecoveryAction{Type: "retry"},
		},
		Phases: map[string]statemachine.PhaseState{
			"01-requirements": {
				Status:                   "completed",
				Started:                  "2026-01-01T00:00:00Z",
				Completed:                "2026-01-01T01:00:00Z",
				Summary:                  "Requirements < done & dusted >",
				TestIteration:            &statemachine.TestIteration{Completed: b(true), CurrentIteration: i(3), LastTestResult: "passed"},
				InteractiveElicitation:   &statemachine.InteractiveElicitation{Completed: b(true), MenuInteractions: i(4)},
				ConstitutionalValidation: &statemachine.ConstitutionalValidation{Completed: b(true), IterationsUsed: i(1), Status: "compliant"},
				Timing:                   &statemachine.PhaseTiming{StartedAt: "2026-01-01T00:00:00Z", Retries: i(0)},
			},
			"02-design": {Status: "in_progress"},
			"05-types":  {TestIteration: &statemachine.TestIteration{}},
		},
	}
	if diff := cmp.Diff(want, *s, cmpopts.IgnoreUnexported(statemachine.State{})); diff != "" {
		t.Errorf("typed fields (-want +got):\n%s", diff)
	}
}

func TestParseStateNullAndWrongTypesAreAbsent(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`{}`,
		`{"state_version": null, "current_phase": null, "active_agent": null, "active_workflow": null, "phases": null}`,
		`{"state_version": "3", "current_phase": 1, "active_agent": [], "active_workflow": "x", "phases": []}`,
		`{"state_version": 2.5}`,
		`{"state_version": 1e300}`,
		`{"state_version": 3, "state_version": null}`,
	} {
		s, err := statemachine.ParseState([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if s.StateVersion != nil || s.CurrentPhase != "" || s.ActiveAgent != "" || s.ActiveWorkflow != nil || s.Phases != nil {
			t.Errorf("%s: typed fields not all absent: %+v", src, s)
		}
		if f := s.Facts(); len(f) != 0 {
			t.Errorf("%s: Facts = %v, want empty", src, f)
		}
	}
}

func TestParseStateVersionForms(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]int64{
		`{"state_version": 0}`:                        0,
		`{"state_version": 3.0}`:                      3,
		`{"state_version": 1e2}`:                      100,
		`{"state_version": -0}`:                       0,
		`{"state_version": 9223372036854775807}`:      9223372036854775807,
		`{"state_version": null, "state_version": 4}`: 4,
	} {
		s, err := statemachine.ParseState([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if s.StateVersion == nil || *s.StateVersion != want {
			t.Errorf("%s: StateVersion = %v, want %d", src, s.StateVersion, want)
		}
	}
}

func TestParseStateRejects(t *testing.T) {
	t.Parallel()
	for _, src := range []string{`[]`, `"x"`, `null`, `3`} {
		_, err := statemachine.ParseState([]byte(src))
		if !errors.Is(err, statemachine.ErrNotObject) {
			t.Errorf("%s: err = %v, want ErrNotObject", src, err)
		}
	}
	for _, src := range []string{``, `{`, `{"a": }`, `{} {}`} {
		_, err := statemachine.ParseState([]byte(src))
		if err == nil || errors.Is(err, statemachine.ErrNotObject) {
			t.Errorf("%q: err = %v, want a syntax error", src, err)
		}
	}
}

func TestStateFacts(t *testing.T) {
	t.Parallel()
	s, err := statemachine.ParseState([]byte(fullState))
	if err != nil {
		t.Fatal(err)
	}
	n := func(s string) json.Number { return json.Number(s) }
	want := map[string]any{
		"state_version": n("7"),
		"current_phase": "03-implementation",
		"active_agent":  "architect",
		"active_workflow": map[string]any{
			"type":                "feature",
			"phases":              []any{"01-requirements", "02-design", "03-implementation"},
			"current_phase":       "02-design",
			"current_phase_index": n("1.0"), // as written: Rego compares 1.0 == 1
			"phase_status":        map[string]any{"01-requirements": "completed", "02-design": "in_progress"},
			"git_branch":          map[string]any{"name": "feature/x", "status": "active"},
			"supervised_review":   map[string]any{"status": "redo_pending", "redo_count": n("2")},
			"recovery_action":     map[string]any{"type": "retry"},
		},
		"phases": map[string]any{
			"01-requirements": map[string]any{
				"status":    "completed",
				"started":   "2026-01-01T00:00:00Z",
				"completed": "2026-01-01T01:00:00Z",
				"summary":   "Requirements < done & dusted >",
				"iteration_requirements": map[string]any{
					"test_iteration":          map[string]any{"completed": true, "current_iteration": n("3"), "last_test_result": "passed"},
					"interactive_elicitation": map[string]any{"completed": true, "menu_interactions": n("4")},
				},
				"constitutional_validation": map[string]any{"completed": true, "iterations_used": n("1"), "status": "compliant"},
				"timing":                    map[string]any{"started_at": "2026-01-01T00:00:00Z", "retries": n("0")},
			},
			"02-design": map[string]any{"status": "in_progress"},
			"05-types": map[string]any{
				"iteration_requirements": map[string]any{"test_iteration": map[string]any{}},
			},
		},
	}
	got := s.Facts()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Facts (-want +got):\n%s", diff)
	}

	// The facts are the caller's: changing them changes nothing else.
	got["current_phase"] = "changed"
	if s.Facts()["current_phase"] != "03-implementation" {
		t.Error("Facts shares its result between calls")
	}
	// Facts follows edits made through Object.
	if err := s.Object().SetPath([]string{"active_workflow", "recovery_action", "type"}, "rollback"); err != nil {
		t.Fatal(err)
	}
	if got := s.Facts()["active_workflow"].(map[string]any)["recovery_action"]; !cmp.Equal(got, map[string]any{"type": "rollback"}) {
		t.Errorf("after an edit, recovery_action = %v", got)
	}
	if s.ActiveWorkflow.RecoveryAction.Type != "retry" {
		t.Error("an edit through Object changed the typed fields")
	}
}

func TestStateFactsEscapedKeysAndStrings(t *testing.T) {
	t.Parallel()
	s, err := statemachine.ParseState([]byte(`{"current_\u0070hase": "a\"b", "phases": {"p\u00e9": {"status": "done\n"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"current_phase": `a"b`, "phases": map[string]any{"pé": map[string]any{"status": "done\n"}}}
	if diff := cmp.Diff(want, s.Facts()); diff != "" {
		t.Errorf("Facts (-want +got):\n%s", diff)
	}
}

// stateDoc builds a realistic workflow state of about size bytes: twelve
// phases with long summaries and unknown blobs (artifacts, notes, gate
// reports) and a workflow history, as the iSDLC layout holds.
func stateDoc(tb testing.TB, size int) []byte {
	tb.Helper()
	// The size grows linearly with the filler's length: measure twice and
	// solve.
	l0, l1 := len(stateDocFiller(tb, 0)), len(stateDocFiller(tb, 1000))
	n := max(0, (size-l0)*1000/(l1-l0))
	return stateDocFiller(tb, n)
}

func stateDocFiller(tb testing.TB, n int) []byte {
	names := []string{"00-quick-scan", "01-requirements", "02-impact-analysis", "03-architecture", "04-design",
		"05-test-strategy", "06-implementation", "07-testing", "08-code-review", "09-validation", "10-cicd", "11-local-testing"}
	status := func(i int) string {
		switch {
		case i < 6:
			return "completed"
		case i == 6:
			return "in_progress"
		}
		return "pending"
	}
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", n/57+1)[:n]
	phaseStatus := map[string]string{}
	phases := map[string]any{}
	for i, name := range names {
		phaseStatus[name] = status(i)
		phases[name] = map[string]any{
			"status":    status(i),
			"started":   "2026-02-01T10:00:00Z",
			"completed": nil,
			"summary":   "Phase " + name + ": " + filler,
			"artifacts": []string{"docs/" + name + "/report.md", "docs/" + name + "/notes.md"},
			"gate_report": map[string]any{
				"checks": []map[string]any{{"name": "lint", "ok": true, "output": filler}, {"name": "tests", "ok": true}},
			},
			"iteration_requirements": map[string]any{
				"test_iteration":          map[string]any{"completed": i < 6, "current_iteration": i, "max_iterations": 10, "last_test_result": "passed", "history": []int{1, 2, 3}},
				"interactive_elicitation": map[string]any{"completed": i < 6, "menu_interactions": i % 3},
			},
			"constitutional_validation": map[string]any{"completed": i < 6, "iterations_used": 1, "status": "compliant", "notes": filler},
			"timing":                    map[string]any{"started_at": "2026-02-01T10:00:00Z", "completed_at": nil, "retries": 0},
		}
	}
	var history []map[string]any
	for i := range 20 {
		history = append(history, map[string]any{"type": "feature", "id": fmt.Sprintf("wf-%d", i), "status": "completed", "note": filler[:min(200, n)]})
	}
	doc := map[string]any{
		"state_version": 41,
		"project":       map[string]any{"name": "demo", "framework": "isdlc", "constitution": filler},
		"current_phase": "06-implementation",
		"active_agent":  "software-developer",
		"active_workflow": map[string]any{
			"type": "feature", "phases": names, "current_phase": "06-implementation", "current_phase_index": 6,
			"phase_status": phaseStatus, "git_branch": map[string]any{"name": "feature/x", "status": "active"},
			"supervised_review": nil, "recovery_action": nil,
		},
		"phases":           phases,
		"workflow_history": history,
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func TestStateDocIsRealistic(t *testing.T) {
	t.Parallel()
	data := stateDoc(t, 50<<10)
	if n := len(data); n < 45<<10 || n > 60<<10 {
		t.Errorf("state document is %d bytes, want about 50 KB", n)
	}
	s, err := statemachine.ParseState(data)
	if err != nil {
		t.Fatal(err)
	}
	if errs := s.Validate(); errs != nil {
		t.Errorf("ValidateState: %v", errs)
	}
	f, err := json.Marshal(s.Facts())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("facts: %d bytes of a %d-byte document", len(f), len(data))
	if len(s.Phases) != 12 || s.ActiveWorkflow == nil || *s.ActiveWorkflow.CurrentPhaseIndex != 6 {
		t.Errorf("typed fields: %d phases, workflow %+v", len(s.Phases), s.ActiveWorkflow)
	}
}

func TestValidateState(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		doc  string
		want []string // "pointer: message" prefixes, sorted
	}{
		{"empty", `{}`, nil},
		{"full", strings.Replace(fullState[:strings.Index(fullState, `"04-broken"`)]+`"x": {}}}`, `, "04-x": 3`, "", 1), nil},
		{"all null", `{"state_version": null, "current_phase": null, "active_agent": null, "workflow_history": null,
			"active_workflow": {"type": null, "phases": null, "current_phase": null, "current_phase_index": null,
			  "phase_status": {"a": null}, "git_branch": {"name": null, "status": null},
			  "supervised_review": {"status": null, "redo_count": null}, "recovery_action": {"type": null}},
			"phases": {"a": null, "b": {"status": null, "started": null, "completed": null, "summary": null,
			  "iteration_requirements": {"test_iteration": {"completed": null, "current_iteration": null, "last_test_result": null},
			    "interactive_elicitation": {"completed": null, "menu_interactions": null}},
			  "constitutional_validation": {"completed": null, "iterations_used": null, "status": null},
			  "timing": {"started_at": null, "completed_at": null, "retries": null}}}}`, nil},
		{"unknown fields and free statuses", `{"x": 1, "phases": {"a": {"status": "blocked", "y": [1]}},
			"active_workflow": {"phase_status": {"a": "skipped"}, "z": {}}}`, nil},
		{"integral float", `{"state_version": 3.0, "active_workflow": {"current_phase_index": 1e1}}`, nil},
		{"negative index allowed", `{"active_workflow": {"current_phase_index": -1}}`, nil},
		{"version", `{"state_version": "3"}`, []string{"/state_version: expected integer or null, but got string"}},
		{"fractional version", `{"state_version": 2.5}`, []string{"/state_version: expected integer or null, but got number"}},
		{"strings", `{"current_phase": 1, "active_agent": true}`, []string{
			"/active_agent: expected string or null, but got boolean",
			"/current_phase: expected string or null, but got number"}},
		{"workflow", `{"active_workflow": {"type": 1, "phases": ["a", 2], "current_phase_index": "1",
			"phase_status": {"a": 1}, "git_branch": "main", "supervised_review": {"redo_count": -1}, "recovery_action": {"type": []}}}`, []string{
			"/active_workflow/current_phase_index: expected integer or null",
			"/active_workflow/git_branch: expected object or null",
			"/active_workflow/phase_status/a: expected string or null",
			"/active_workflow/phases/1: expected string",
			"/active_workflow/recovery_action/type: expected string or null",
			"/active_workflow/supervised_review/redo_count: must be >= 0",
			"/active_workflow/type: expected string or null"}},
		{"phases", `{"phases": {"a": "done", "b": {"started": true, "iteration_requirements": {"test_iteration": {"completed": "yes", "current_iteration": 1.5},
			"interactive_elicitation": {"menu_interactions": -2}}, "constitutional_validation": {"iterations_used": "1"}, "timing": {"retries": -1}}}}`, []string{
			"/phases/a: expected object or null",
			"/phases/b/constitutional_validation/iterations_used: expected integer or null",
			"/phases/b/iteration_requirements/interactive_elicitation/menu_interactions: must be >= 0",
			"/phases/b/iteration_requirements/test_iteration/completed: expected boolean or null",
			"/phases/b/iteration_requirements/test_iteration/current_iteration: expected integer or null",
			"/phases/b/started: expected string or null",
			"/phases/b/timing/retries: must be >= 0"}},
		{"history", `{"workflow_history": {}}`, []string{"/workflow_history: expected array or null"}},
		{"not an object", `[]`, []string{"(root): expected object"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := statemachine.ValidateState(decode(t, c.doc))
			if len(got) != len(c.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(got), len(c.want), got)
			}
			for i, e := range got {
				if !strings.HasPrefix(e.Error(), c.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, e.Error(), c.want[i])
				}
			}
		})
	}
}

func TestValidateStateNumbersAsJSONNumber(t *testing.T) {
	t.Parallel()
	s, err := statemachine.ParseState([]byte(`{"state_version": 2.5, "phases": {"a": {"timing": {"retries": 3}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Validate()
	if len(got) != 1 || got[0].Pointer != "/state_version" {
		t.Errorf("Validate = %v, want one error at /state_version", got)
	}
	if errs := statemachine.ValidateState(map[string]any{"current_phase": struct{}{}}); len(errs) != 1 || !strings.Contains(errs[0].Message, "not a JSON document") {
		t.Errorf("a Go value JSON cannot hold: %v", errs)
	}
	if errs := statemachine.ValidateState(nil); len(errs) != 1 || errs[0].Pointer != "" {
		t.Errorf("nil document: %v", errs)
	}
}

func TestStateSchemaIsEmbeddedJSON(t *testing.T) {
	t.Parallel()
	var v map[string]any
	if err := json.Unmarshal(statemachine.StateSchema(), &v); err != nil {
		t.Fatal(err)
	}
	if v["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", v["$schema"])
	}
	b := statemachine.StateSchema()
	b[0] = 'X'
	if statemachine.StateSchema()[0] == 'X' {
		t.Error("StateSchema returns the embedded bytes themselves")
	}
}

// mustReadState reads the state at path.
func mustReadState(tb testing.TB, path string) *statemachine.State {
	tb.Helper()
	s, _, err := statemachine.ReadState(path)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func mustParseState(tb testing.TB, src string) *statemachine.State {
	tb.Helper()
	s, err := statemachine.ParseState([]byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// withoutVersion returns the document with state_version removed and
// whitespace compacted, to compare two versions of one document.
func withoutVersion(tb testing.TB, data []byte) string {
	tb.Helper()
	o, err := statemachine.ParseObject(data)
	if err != nil {
		tb.Fatal(err)
	}
	o.Delete("state_version")
	b, _ := o.MarshalJSON()
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		tb.Fatal(err)
	}
	return c.String()
}

// stateSnapshot renders a State's typed fields, version included.
func stateSnapshot(s *statemachine.State) string {
	v := "unversioned"
	if s.StateVersion != nil {
		v = fmt.Sprint(*s.StateVersion)
	}
	return fmt.Sprintf("%s %+v", v, *s)
}

func TestWriteStateSequential(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	const src = `{"zeta": {"b": 1, "a": [true, null]}, "current_phase": "01-a", "note": "a < b & c", "alpha": "\u00e9"}`
	s := mustParseState(t, src)
	before, _ := s.Marshal()

	for want := int64(1); want <= 5; want++ {
		base := stateSnapshot(s)
		got, err := statemachine.WriteState(path, s)
		if err != nil {
			t.Fatalf("write %d: %v", want, err)
		}
		if got != want {
			t.Fatalf("write returned version %d, want %d", got, want)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		on := mustParseState(t, string(data))
		if on.StateVersion == nil || *on.StateVersion != want {
			t.Fatalf("disk version = %v, want %d", on.StateVersion, want)
		}
		// A new state_version goes first; everything else is kept in order
		// and as written.
		if keys := on.Object().Keys(); !cmp.Equal(keys, []string{"state_version", "zeta", "current_phase", "note", "alpha"}) {
			t.Errorf("keys = %v", keys)
		}
		if !bytes.Contains(data, []byte(`"a < b & c"`)) || !bytes.Contains(data, []byte(`"\u00e9"`)) {
			t.Errorf("values not kept as written:\n%s", data)
		}
		if got, want := withoutVersion(t, data), withoutVersion(t, []byte(src)); got != want {
			t.Errorf("document changed:\n got %s\nwant %s", got, want)
		}
		// The caller's State is never changed...
		if after, _ := s.Marshal(); !bytes.Equal(after, before) || stateSnapshot(s) != base {
			t.Fatalf("WriteState changed its argument")
		}
		// ...so the next write is based on the version just written.
		s = on
		before, _ = s.Marshal()
	}
	noTempFiles(t, dir)
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Errorf("lock file: %v", err)
	}
}

func TestWriteStateKeepsVersionPosition(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	s := mustParseState(t, `{"a": 1, "state_version": 3, "b": 2, "state_version": 3}`)
	v, err := statemachine.WriteState(path, s)
	if err != nil || v != 4 {
		t.Fatalf("WriteState = %d, %v; want 4", v, err)
	}
	data, _ := os.ReadFile(path)
	if got := string(bytes.Join(bytes.Fields(data), nil)); got != `{"a":1,"state_version":4,"b":2,"state_version":4}` {
		t.Errorf("written %s", got)
	}
}

func TestWriteStateVersionRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		disk  string // "" for no file
		base  string // the caller's document
		want  int64  // 0: stale
		stale bool
	}{
		{"no file, unversioned", "", `{}`, 1, false},
		{"no file, versioned", "", `{"state_version": 7}`, 8, false},
		{"unversioned disk, unversioned write", `{"x": 1}`, `{}`, 1, false},
		{"null disk version", `{"state_version": null}`, `{"state_version": null}`, 1, false},
		{"unversioned disk, versioned write", `{}`, `{"state_version": 4}`, 5, false},
		{"same version", `{"state_version": 5}`, `{"state_version": 5}`, 6, false},
		{"newer than disk", `{"state_version": 5}`, `{"state_version": 9}`, 10, false},
		{"integral float on disk", `{"state_version": 5.0}`, `{"state_version": 5}`, 6, false},
		{"stale", `{"state_version": 5}`, `{"state_version": 3}`, 0, true},
		{"unversioned write", `{"state_version": 5}`, `{}`, 0, true},
		{"null write", `{"state_version": 5}`, `{"state_version": null}`, 0, true},
		{"unreadable write version", `{"state_version": 5}`, `{"state_version": "6"}`, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			if c.disk != "" {
				if err := os.WriteFile(path, []byte(c.disk), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := statemachine.WriteState(path, mustParseState(t, c.base))
			if c.stale {
				var se *statemachine.StaleStateError
				if !errors.Is(err, statemachine.ErrStaleState) || !errors.As(err, &se) {
					t.Fatalf("err = %v, want a StaleStateError", err)
				}
				if data, _ := os.ReadFile(path); string(data) != c.disk {
					t.Errorf("refused write changed the file to %s", data)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("WriteState = %d, %v; want %d", got, err, c.want)
			}
			if v := mustReadState(t, path).StateVersion; v == nil || *v != c.want {
				t.Errorf("disk version %v, want %d", v, c.want)
			}
			fi, _ := os.Stat(path)
			if c.disk != "" && fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want the original 0600", fi.Mode().Perm())
			}
		})
	}
}

// The scenario of the phase handshake audit: disk at version 5, a write
// based on version 3.
func TestWriteStateStaleRefusedFileUnchanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	disk := stateDoc(t, 4<<10)
	disk = bytes.Replace(disk, []byte(`"state_version": 41`), []byte(`"state_version": 5`), 1)
	if err := os.WriteFile(path, disk, 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustParseState(t, `{"state_version": 3, "current_phase": "07-testing"}`)
	before, _ := s.Marshal()
	_, err := statemachine.WriteState(path, s)
	var se *statemachine.StaleStateError
	if !errors.As(err, &se) || se.Base == nil || *se.Base != 3 || se.Disk != 5 || se.Path != path {
		t.Fatalf("err = %#v, want a StaleStateError based on 3, disk 5", err)
	}
	for _, want := range []string{path, "stale workflow state", "version 3", "version 5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, disk) {
		t.Error("the file changed")
	}
	if after, _ := s.Marshal(); !bytes.Equal(after, before) || *s.StateVersion != 3 {
		t.Error("the caller's state changed")
	}

	_, err = statemachine.WriteState(path, mustParseState(t, `{"current_phase": "x"}`))
	if !errors.As(err, &se) || se.Base != nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("unversioned write: err = %v", err)
	}
}

func TestWriteStateRefusesUnreadableDisk(t *testing.T) {
	t.Parallel()
	for _, disk := range []string{`{"state_version": `, `[1]`, `{"state_version": "5"}`, `{"state_version": 2.5}`, `{"state_version": true}`} {
		path := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(path, []byte(disk), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := statemachine.WriteState(path, mustParseState(t, `{"state_version": 5}`))
		if err == nil || errors.Is(err, statemachine.ErrStaleState) || !strings.Contains(err.Error(), "fix or remove") {
			t.Errorf("%s: err = %v, want a refusal naming the fix", disk, err)
		}
		if data, _ := os.ReadFile(path); string(data) != disk {
			t.Errorf("%s: file changed", disk)
		}
	}
}

func TestWriteStateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := statemachine.WriteState(filepath.Join(dir, "missing", "state.json"), mustParseState(t, `{}`)); err == nil {
		t.Error("missing directory: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("the missing directory was created")
	}
	if _, err := statemachine.WriteState(filepath.Join(dir, "s.json"), nil); err == nil {
		t.Error("nil state: no error")
	}
	if _, err := statemachine.WriteState(filepath.Join(dir, "s.json"), &statemachine.State{}); err == nil {
		t.Error("zero State: no error")
	}
	if err := os.Mkdir(filepath.Join(dir, "d.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := statemachine.WriteState(filepath.Join(dir, "d.json"), mustParseState(t, `{}`)); err == nil {
		t.Error("a directory in the way: no error")
	}
}

func TestWriteStateThroughSymlinkSharesLock(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	if _, err := statemachine.WriteState(real, mustParseState(t, `{}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.json", link); err != nil {
		t.Skip("symlinks:", err)
	}
	if v, err := statemachine.WriteState(link, mustReadState(t, link)); err != nil || v != 2 {
		t.Fatalf("write through the link = %d, %v", v, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if _, err := os.Stat(link + ".lock"); err == nil {
		t.Error("a lock file named after the link: writers through the link and the file would not exclude each other")
	}
	// A relative path names the same lock too.
	t.Chdir(dir)
	if v, err := statemachine.WriteState("real.json", mustReadState(t, "link.json")); err != nil || v != 3 {
		t.Fatalf("relative write = %d, %v", v, err)
	}
}

func TestWriteStateRemovesTempLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	leftovers := []string{".state.json.tmp-12345", ".state.json.tmp-9"}
	kept := []string{".state.json.tmp-abc", ".other.json.tmp-1", "state.json.tmp-1"}
	for _, n := range append(leftovers, kept...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := statemachine.WriteState(path, mustParseState(t, `{}`)); err != nil {
		t.Fatal(err)
	}
	for _, n := range leftovers {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("leftover %s not removed", n)
		}
	}
	for _, n := range kept {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
}

// Goroutines that read the same version and write at once: exactly one
// wins each round, the others are stale.
func TestWriteStateConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	const writers, rounds = 8, 20
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if _, err := statemachine.WriteState(path, mustParseState(t, `{"phases": {}}`)); err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		base := int64(round + 1)
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		var wins atomic.Int32
		errs := make([]error, writers)
		for w := range writers {
			ready.Add(1)
			done.Go(func() {
				s, _, err := statemachine.ReadState(path)
				ready.Done()
				if err != nil {
					errs[w] = err
					return
				}
				if err := s.Object().SetPath([]string{"phases", fmt.Sprint("w", w)}, round); err != nil {
					errs[w] = err
					return
				}
				<-start
				v, err := statemachine.WriteState(path, s)
				switch {
				case err == nil && v == base+1:
					wins.Add(1)
				case err == nil:
					errs[w] = fmt.Errorf("wrote version %d, want %d", v, base+1)
				default:
					var se *statemachine.StaleStateError
					if !errors.As(err, &se) || *se.Base != base || se.Disk != base+1 {
						errs[w] = err
					}
				}
			})
		}
		ready.Wait()
		close(start)
		done.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d writers succeeded, want exactly 1", round, n)
		}
	}
	if v := mustReadState(t, path).StateVersion; *v != rounds+1 {
		t.Errorf("final version %d, want %d", *v, rounds+1)
	}
	noTempFiles(t, dir)
}

func BenchmarkStateFacts50KB(b *testing.B) {
	data := stateDoc(b, 50<<10)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := statemachine.ParseState(data)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Facts()) == 0 {
			b.Fatal("no facts")
		}
	}
}

func BenchmarkWriteState(b *testing.B) {
	for _, data := range [][]byte{[]byte(fullState), stateDoc(b, 50<<10)} {
		b.Run(fmt.Sprintf("%dKB", (len(data)+512)>>10), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state.json")
			s, err := statemachine.ParseState(data)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				v, err := statemachine.WriteState(path, s)
				if err != nil {
					b.Fatal(err)
				}
				s.StateVersion = &v // the next write is based on this one
			}
		})
	}
}
