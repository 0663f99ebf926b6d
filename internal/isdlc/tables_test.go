package isdlc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// defaults mirrors data.des.phases.requirements: one path in each table.
func defaults() map[string]any {
	return map[string]any{
		"iteration_requirements": map[string]any{"phase_requirements": map[string]any{
			"01-requirements": map[string]any{"artifact_validation": map[string]any{"enabled": true,
				"paths": []any{"docs/requirements/{artifact_folder}/requirements-spec.md"}}},
			"06-implementation": map[string]any{"test_iteration": map[string]any{"enabled": true}},
		}},
		"artifact_paths": map[string]any{"phases": map[string]any{
			"04-design": map[string]any{"paths": []any{"docs/requirements/{artifact_folder}/module-design.md"}},
		}},
	}
}

const (
	teamIteration = `{"phase_requirements": {"06-implementation": {"artifact_validation": {"enabled": true, "paths": ["src/{artifact_folder}.md"]}}}, "workflow_overrides": {}}`
	teamArtifacts = `{"version": "1.0.0", "phases": {"08-code-review": {"paths": ["docs/review/{artifact_folder}/report.md", "docs/{unknown}/x.md"]}}}`
)

func TestRequirementFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, isdlcState, `{"active_workflow": {"artifact_folder": "REQ-7"}}`)
	write(t, root, "config/iteration.json", teamIteration)
	write(t, root, "config/artifacts.json", teamArtifacts)
	write(t, root, "src/REQ-7.md", "x")

	t.Run("both files replace the defaults", func(t *testing.T) {
		w, err := Discover(Options{Root: root, Getenv: env(nil), DefaultTables: defaults(),
			RequirementFiles: []string{"config/artifacts.json", "config/iteration.json"}})
		if err != nil {
			t.Fatal(err)
		}
		req := w.Facts()["requirements"].(map[string]any)
		if d := cmp.Diff([]any{"config/artifacts.json", "config/iteration.json"}, req["files"]); d != "" {
			t.Errorf("files (-want +got):\n%s", d)
		}
		if _, ok := req["iteration_requirements"].(map[string]any)["workflow_overrides"]; !ok {
			t.Error("iteration requirements are not the team's file as written")
		}
		want := map[string]bool{"src/REQ-7.md": true, "docs/review/REQ-7/report.md": false}
		if d := cmp.Diff(want, w.Artifacts); d != "" {
			t.Errorf("artifacts come from the team's tables only (-want +got):\n%s", d)
		}
	})
	t.Run("one file keeps the other default", func(t *testing.T) {
		w, err := Discover(Options{Root: root, Getenv: env(nil), DefaultTables: defaults(),
			RequirementFiles: []string{"config/iteration.json"}})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(defaults()["artifact_paths"], w.Requirements["artifact_paths"]); d != "" {
			t.Errorf("artifact paths (-want +got):\n%s", d)
		}
		want := map[string]bool{"src/REQ-7.md": true, "docs/requirements/REQ-7/module-design.md": false}
		if d := cmp.Diff(want, w.Artifacts); d != "" {
			t.Errorf("artifacts (-want +got):\n%s", d)
		}
	})
	t.Run("unset: no requirements fact, defaults used", func(t *testing.T) {
		w, err := Discover(Options{Root: root, Getenv: env(nil), DefaultTables: defaults()})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := w.Facts()["requirements"]; ok {
			t.Error("requirements fact without the setting")
		}
		want := map[string]bool{"docs/requirements/REQ-7/requirements-spec.md": false, "docs/requirements/REQ-7/module-design.md": false}
		if d := cmp.Diff(want, w.Artifacts); d != "" {
			t.Errorf("artifacts (-want +got):\n%s", d)
		}
	})

	write(t, root, "config/broken.json", `{"phases": `)
	write(t, root, "config/other.json", `{"gate_blocking_rules": {}}`)
	write(t, root, "config/both.json", `{"phases": {}, "phase_requirements": {}}`)
	write(t, root, "config/iteration2.json", teamIteration)
	for _, tc := range []struct {
		name  string
		files []string
		has   []string
	}{
		{"missing", []string{"config/nope.json"}, []string{"config/nope.json", "cannot be read", "phase_requirements_files"}},
		{"outside the root", []string{"../outside.json"}, []string{"../outside.json", "cannot be read"}},
		{"invalid JSON", []string{"config/broken.json"}, []string{"config/broken.json", "line 1", "fix it or remove it"}},
		{"neither table", []string{"config/other.json"}, []string{"config/other.json", "neither"}},
		{"both tables in one file", []string{"config/both.json"}, []string{"config/both.json", "two files"}},
		{"two of a kind", []string{"config/iteration.json", "config/iteration2.json"}, []string{"config/iteration.json and config/iteration2.json", "list one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Discover(Options{Root: root, Getenv: env(nil), DefaultTables: defaults(), RequirementFiles: tc.files})
			if w != nil || !errors.Is(err, ErrRequirementFile) {
				t.Fatalf("got %v, %v; want an ErrRequirementFile", w, err)
			}
			for _, s := range tc.has {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
	t.Run("no state: files not read", func(t *testing.T) {
		w, err := Discover(Options{Root: t.TempDir(), Getenv: env(nil), RequirementFiles: []string{"config/nope.json"}})
		if w != nil || err != nil {
			t.Fatalf("got %v, %v; want nil, nil", w, err)
		}
	})
}

func TestArtifacts(t *testing.T) {
	tables := map[string]any{"artifact_paths": map[string]any{"phases": map[string]any{
		"01-requirements": map[string]any{"paths": []any{"docs/requirements/{artifact_folder}/requirements-spec.md"}},
		"03-architecture": map[string]any{"paths": []any{"docs/requirements/{artifact_folder}/architecture-overview.md"}},
		"04-design":       map[string]any{"paths": []any{"docs/requirements/{artifact_folder}/module-design.md"}},
		"05-test-strategy": map[string]any{"paths": []any{"docs/requirements/{artifact_folder}/test-strategy.md",
			"../escape/{artifact_folder}.md", "/etc/hostname", "docs/link/out.md", "docs/{artifact_folder}-{other}.md"}},
	}}}
	tests := []struct {
		name     string
		mono     bool
		folder   string
		files    []string
		want     map[string]bool
		skipLink bool
	}{
		{name: "no artifact folder: placeholders left out", want: map[string]bool{"/etc/hostname": false, "docs/link/out.md": false}},
		{name: "as given", folder: "REQ-1", files: []string{"docs/requirements/REQ-1/requirements-spec.md"},
			want: map[string]bool{
				"docs/requirements/REQ-1/requirements-spec.md": true, "docs/requirements/REQ-1/architecture-overview.md": false,
				"docs/requirements/REQ-1/module-design.md": false, "docs/requirements/REQ-1/test-strategy.md": false,
				"../escape/REQ-1.md": false, "/etc/hostname": false, "docs/link/out.md": false}},
		{name: "monorepo variants", mono: true, folder: "REQ-1", files: []string{
			"docs/api/requirements/REQ-1/requirements-spec.md",          // docs/<project>/
			"apps/api/docs/requirements/REQ-1/architecture-overview.md", // under the project's path
			"docs/web/requirements/REQ-1/module-design.md",              // another project's
			"docs/requirements/REQ-1/test-strategy.md",                  // as given
		}, want: map[string]bool{
			"docs/requirements/REQ-1/requirements-spec.md": true, "docs/requirements/REQ-1/architecture-overview.md": true,
			"docs/requirements/REQ-1/module-design.md": false, "docs/requirements/REQ-1/test-strategy.md": true,
			"../escape/REQ-1.md": false, "/etc/hostname": false, "docs/link/out.md": false}},
		{name: "folder climbing out", folder: "../../outside", files: nil, want: map[string]bool{
			"docs/requirements/../../outside/requirements-spec.md": false, "docs/requirements/../../outside/architecture-overview.md": false,
			"docs/requirements/../../outside/module-design.md": false, "docs/requirements/../../outside/test-strategy.md": false,
			"../escape/../../outside.md": false, "/etc/hostname": false, "docs/link/out.md": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "repo")
			// Files just outside the root that an escape would find.
			write(t, parent, "escape/REQ-1.md", "x")
			write(t, parent, "outside/requirements-spec.md", "x")
			write(t, parent, "outside/test-strategy.md", "x")
			write(t, parent, "repo/docs/requirements/outside/requirements-spec.md", "not reached by ../../")
			write(t, parent, "target.md", "x")
			write(t, root, "docs/link/.keep", "")
			if err := os.Symlink(filepath.Join(parent, "target.md"), filepath.Join(root, "docs", "link", "out.md")); err != nil {
				t.Skip("no symbolic links:", err)
			}
			state := `{"active_workflow": {"artifact_folder": "` + tc.folder + `"}}`
			if tc.folder == "" {
				state = `{"active_workflow": {}}`
			}
			write(t, root, isdlcState, state)
			env := env(nil)
			if tc.mono {
				write(t, root, monorepoFile, monoMap)
				write(t, root, ".isdlc/projects/api/state.json", state)
				env = func(k string) (string, bool) { return "api", k == projectEnvVar }
			}
			for _, f := range tc.files {
				write(t, root, f, "x")
			}
			w, err := Discover(Options{Root: root, Getenv: env, DefaultTables: tables})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, w.Artifacts); d != "" {
				t.Errorf("artifacts (-want +got):\n%s", d)
			}
		})
	}
}
