package isdlc

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
)

// The workflow object is the seam with the Rego policy: its exact shape,
// as JSON, and that OPA takes it as input as it is.
func TestFactsShape(t *testing.T) {
	root := t.TempDir()
	write(t, root, monorepoFile, monoMap)
	write(t, root, ".isdlc/projects/api/state.json", `{"active_workflow": {"artifact_folder": "REQ-1", "current_phase": "06-implementation",
		"git_branch": {"name": "feature/REQ-1", "status": "active"}, "phase_status": null}}`)
	write(t, root, ".isdlc/projects/api/tasks.md", "Format: v2.0\n## Phase 06: Implementation\n- [ ] T0001 x | traces: FR-01\n  files: a.js (CREATE)\n  blocked_by: [T0002]\n")
	write(t, root, "apps/api/docs/requirements/REQ-1/requirements-spec.md", "x")
	write(t, root, "team/iteration.json", `{"phase_requirements": {}}`)

	w, err := Discover(Options{Root: root, Getenv: env(map[string]string{"ISDLC_PROJECT": "api"}),
		RequirementFiles: []string{"team/iteration.json"}, DefaultTables: defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.BranchName(); got != "feature/REQ-1" {
		t.Errorf("BranchName() = %q", got)
	}
	want := `{
	  "state_file": ".isdlc/projects/api/state.json",
	  "project": "api",
	  "state": {"active_workflow": {"artifact_folder": "REQ-1", "current_phase": "06-implementation",
	            "git_branch": {"name": "feature/REQ-1", "status": "active"}, "phase_status": null}},
	  "plan": {"exists": true, "path": ".isdlc/projects/api/tasks.md",
	           "candidates": ["docs/isdlc/projects/api/tasks.md", ".isdlc/projects/api/tasks.md"],
	           "format": "v2.0",
	           "sections": [{"title": "Phase 06: Implementation", "line": 2,
	                         "tasks": [{"id": "T0001", "line": 3, "files": ["a.js"], "traces": true, "blocked_by": ["T0002"]}]}]},
	  "requirements": {"iteration_requirements": {"phase_requirements": {}},
	                   "artifact_paths": {"phases": {"04-design": {"paths": ["docs/requirements/{artifact_folder}/module-design.md"]}}},
	                   "files": ["team/iteration.json"]},
	  "artifacts": {"docs/requirements/REQ-1/module-design.md": false}
	}`
	checkFacts(t, w.Facts(), want)

	// A missing plan, a problem instead of the state, no requirements.
	root = t.TempDir()
	write(t, root, isdlcState, `[]`)
	w, err = Discover(Options{Root: root, Getenv: env(nil), DefaultTables: defaults()})
	if err != nil {
		t.Fatal(err)
	}
	checkFacts(t, w.Facts(), `{
	  "state_file": ".isdlc/state.json", "project": "",
	  "problem": "not_object", "error": "workflow state .isdlc/state.json is not a JSON object (it is an array); it must be {…}",
	  "plan": {"exists": false, "candidates": ["docs/isdlc/tasks.md", ".isdlc/tasks.md"]},
	  "artifacts": {}
	}`)

	b := BranchFacts{Readable: true, Current: "main", WorkflowBranchExists: true}
	checkFacts(t, b.Facts(), `{"readable": true, "current": "main", "detached": false, "workflow_branch_exists": true}`)
}

func checkFacts(t *testing.T, facts map[string]any, want string) {
	t.Helper()
	if _, err := ast.InterfaceToValue(facts); err != nil {
		t.Fatalf("OPA refuses the facts: %v", err)
	}
	got, err := json.Marshal(facts)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("facts (-want +got):\n%s", d)
	}
}
