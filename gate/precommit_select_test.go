package gate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/gate"
)

// One setting decides both gates: a commit's step files are those the
// write guard guards, by their shape, relative to the project root.
func TestStepFilesBashCommit(t *testing.T) {
	t.Parallel()
	const suffixed = `{"task_id": "02-01a", "tdd_cycle": {}}`
	dir := newRepo(t)
	testenv.WriteFile(t, dir, "README.md", "x")
	runGit(t, dir, "add", ".")
	runGit(t, dir, "commit", "-qm", "one")
	testenv.WriteFile(t, dir, "docs/steps/02-01a.json", suffixed)
	testenv.WriteFile(t, dir, "docs/steps/02-02.json", `{"task_id": "a test fixture", "fixture": true}`)
	testenv.WriteFile(t, dir, "docs/steps/welcome.json", `{"title": "onboarding"}`)
	testenv.WriteFile(t, dir, "docs/steps/cart.json", `{"tdd_cycle": {}}`)
	testenv.WriteFile(t, dir, "plans/a/one.step.json", `{"task_id": "one", "tdd_cycle": {}}`)
	testenv.WriteFile(t, dir, "plans/a/notes.step.json", `not json`)
	// The project root as a symbolic link to the repository (git reports
	// the real top level).
	link := filepath.Join(t.TempDir(), "project")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		steps gate.StepFiles
		want  []string
	}{
		{"a root reached through a link", gate.StepFiles{Root: link, Globs: []string{"plans/**/*.step.json"}},
			[]string{`plans/a/one.step.json={"task_id": "one", "tdd_cycle": {}}`}},
		{"default setting", gate.StepFiles{Root: dir},
			[]string{"docs/steps/02-01a.json=" + suffixed, `docs/steps/cart.json={"tdd_cycle": {}}`}},
		{"a team's setting", gate.StepFiles{Root: dir, Globs: []string{"plans/**/*.step.json"}},
			[]string{`plans/a/one.step.json={"task_id": "one", "tdd_cycle": {}}`}},
		{"a project in a subdirectory", gate.StepFiles{Root: filepath.Join(dir, "plans"), Globs: []string{"a/*.json"}},
			// docs/steps/02-01a.json is outside the project: listed by its
			// name, for the caller to leave out with a note.
			[]string{"docs/steps/02-01a.json=" + suffixed, `plans/a/one.step.json={"task_id": "one", "tdd_cycle": {}}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The work tree's content (git add -A in the command) and the
			// staged one (after a real git add) are picked alike.
			files, err := c.steps.BashCommit(t.Context(), dir, `git add -A && git commit -m x`)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, listed(t, dir, files)); diff != "" {
				t.Errorf("work tree (-want +got):\n%s", diff)
			}
			runGit(t, dir, "add", "-A")
			defer runGit(t, dir, "reset", "-q")
			files, err = c.steps.Staged(t.Context(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, listed(t, dir, files)); diff != "" {
				t.Errorf("staged (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStepFilesOnDisk(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	testenv.WriteFile(t, root, "docs/steps/welcome.json", `{"title": "onboarding"}`)
	testenv.WriteFile(t, root, "plans/one.step.json", `{"task_id": "one", "workflow_type": "configuration_setup"}`)
	for _, c := range []struct {
		steps gate.StepFiles
		want  bool
	}{
		{gate.StepFiles{Root: root}, false}, // welcome.json is no step file
		{gate.StepFiles{Root: root, Globs: []string{"plans/*.step.json"}}, true},
		{gate.StepFiles{Root: root, Globs: []string{"plans/*.md"}}, false},
	} {
		has, err := c.steps.OnDisk(t.Context())
		if err != nil || has != c.want {
			t.Errorf("%v: OnDisk = %v, %v; want %v", c.steps.Globs, has, err, c.want)
		}
	}
	testenv.WriteFile(t, root, "docs/steps/03-01a.json", `{"task_id": "a fixture named as a step", "fixture": true}`)
	if has, err := (gate.StepFiles{Root: root}).OnDisk(t.Context()); err != nil || has {
		t.Errorf("a fixture named 03-01a.json: OnDisk = %v, %v", has, err)
	}
	testenv.WriteFile(t, root, "docs/steps/03-01b.json", `{"tdd_cycle": {}}`)
	if has, err := (gate.StepFiles{Root: root}).OnDisk(t.Context()); err != nil || !has {
		t.Errorf("a step named 03-01b.json: OnDisk = %v, %v", has, err)
	}
}
