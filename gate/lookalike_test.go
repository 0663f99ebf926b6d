package gate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/gate"
)

// Under a steps folder, only files shaped like DES step files are step
// files, whatever their name; a path that does not exist yet is one when
// named as a step file (Kind cannot see what will be written there).
func TestStepLookAlikes(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	guard := p.eng.DocumentWriteGate()
	write := func(rel, content string) {
		t.Helper()
		path := filepath.Join(p.root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("src/onboarding/steps/welcome.json", `{"title": "Welcome", "next": "profile"}`)
	write(".github/workflows/steps/build.json", `{"run": "make"}`)
	write("plans/steps/setup.json", `{"task_id": "setup", "state": {"status": "TODO"}, "tdd_cycle": {}}`)
	write("test/fixtures/steps/01-01.json", `{"task_id": "x", "fixture": true}`)
	write("src/wizard/steps/02-03.json", `{"task_id": "02-03", "title": "Pick a plan", "state": {"status": "TODO"}}`)
	for path, want := range map[string]string{
		"src/onboarding/steps/welcome.json":     "",
		".github/workflows/steps/build.json":    "",
		"src/onboarding/steps/new.json":         "", // does not exist yet
		"plans/steps/setup.json":                gate.KindStep,
		"test/fixtures/steps/01-01.json":        "", // named as a step, shaped as a fixture
		"src/wizard/steps/02-03.json":           "",
		"docs/feature/x/steps/01-01.json":       gate.KindStep, // by name, before it exists
		"docs/feature/x/steps/01-02a.json":      gate.KindStep,
		"docs/feature/x/steps/US005-03-05.json": gate.KindStep,
		"docs/feature/x/steps/phase2-01.json":   gate.KindStep,
		"docs/feature/x/steps/2024.json":        "",
	} {
		if kind, _ := guard.Kind(path); kind != want {
			t.Errorf("Kind(%s) = %q, want %q", path, kind, want)
		}
	}
	// A Write is judged on the content it brings as well as on the disk.
	for _, c := range []struct {
		content string
		want    string
	}{
		{`{"title": "Hello"}`, ""},
		{`{"task_id": "x", "tdd_cycle": {}}`, gate.KindStep},
		{`{"step_id": "01-01"}`, ""},
		{`{"task_id": "x"}`, ""},
		{`{"task_id": "x", "workflow_type": "configuration_setup"}`, gate.KindStep},
		{`not json`, ""},
	} {
		call := gate.WriteCall{Tool: "Write", Path: "src/onboarding/steps/welcome.json", Content: &c.content}
		if kind, _, _ := guard.WriteKind(call); kind != c.want {
			t.Errorf("WriteKind(%s) = %q, want %q", c.content, kind, c.want)
		}
	}
	// Overwriting a step file with anything is a step write.
	junk := `{"title": "x"}`
	if kind, _, _ := guard.WriteKind(gate.WriteCall{Tool: "Write", Path: "plans/steps/setup.json", Content: &junk}); kind != gate.KindStep {
		t.Errorf("overwriting a step file: %q", kind)
	}
	// An Edit that makes an ordinary file a step file is a step write.
	edit := gate.WriteCall{Tool: "Edit", Path: ".github/workflows/steps/build.json", Edits: []gate.Edit{{Old: `"run"`, New: `"tdd_cycle"`}}}
	if kind, _, _ := guard.WriteKind(edit); kind != gate.KindStep {
		t.Errorf("edit into a step file: %q", kind)
	}
}

// Every real nWave step file looks like one by its content.
func TestStepLookAlikeCorpus(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "shared", "corpus", "nwave-steps")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skip("corpus absent (../shared/corpus/nwave-steps):", err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !gate.LooksLikeStep(raw) {
			t.Errorf("%s does not look like a step file", e.Name())
		}
	}
}

// Another hard link of a guarded document or a protected file is that file.
func TestHardLinksAreTheirDocument(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.writeStep(".isdlc/state.json", map[string]any{"state_version": 1})
	if err := os.MkdirAll(filepath.Join(p.root, ".des"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".des", "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for old, name := range map[string]string{".isdlc/state.json": "s.json", ".des/config.json": "c.json"} {
		if err := os.Link(filepath.Join(p.root, old), filepath.Join(p.root, name)); err != nil {
			t.Skip("hard links unavailable:", err)
		}
	}
	if kind, rel := p.eng.DocumentWriteGate().Kind("s.json"); kind != gate.KindState || rel != ".isdlc/state.json" {
		t.Errorf("Kind(s.json) = %q, %q", kind, rel)
	}
	if !p.eng.ToolUseGate().Concerns(gate.ToolCall{Tool: "Write", Paths: []string{"c.json"}}) {
		t.Error("a hard link of .des/config.json does not concern DES")
	}
	res, err := p.eng.CheckToolUse(t.Context(), gate.ToolCall{Tool: "Write", Paths: []string{"c.json"}})
	if err != nil || !res.Denied() || !strings.Contains(res.Reason(), ".des/config.json") {
		t.Errorf("write to c.json: %v, %s", err, res.Reason())
	}
}
