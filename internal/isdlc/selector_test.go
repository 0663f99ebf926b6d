package isdlc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSelectorSwitches(t *testing.T) {
	root := t.TempDir()
	put := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	active := `{"active_workflow": {"current_phase": "06-implementation"}}`
	put(".isdlc/state.json", active)
	put(".isdlc/projects/api/state.json", `{"state_version": 1}`)
	noEnv := func(string) (string, bool) { return "", false }
	opts := Options{Root: root, Getenv: noEnv}

	for _, tc := range []struct {
		name, incoming string
		want           []Switch
	}{
		{"a project nobody moves to", `{"projects": {"web": {"path": "apps/web"}}}`, nil},
		{"default_project with a state", `{"projects": {"api": {"path": "apps/api"}}, "default_project": "api"}`, []Switch{
			{Cwd: ".", From: ".isdlc/state.json", To: ".isdlc/projects/api/state.json", ToProject: "api", FromActive: true},
			{Cwd: ".", Env: "api", From: ".isdlc/state.json", To: ".isdlc/projects/api/state.json", ToProject: "api", FromActive: true},
			{Cwd: "apps/api", From: ".isdlc/state.json", To: ".isdlc/projects/api/state.json", ToProject: "api", FromActive: true},
			{Cwd: "apps/api", Env: "api", From: ".isdlc/state.json", To: ".isdlc/projects/api/state.json", ToProject: "api", FromActive: true},
		}},
		{"an unusable file", `[`, []Switch{
			{Cwd: ".", From: ".isdlc/state.json", To: ".isdlc/monorepo.json", FromActive: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectorSwitches(opts, []byte(tc.incoming))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("switch %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}

	// Leaving a monorepo whose project state is active counts too.
	put(".isdlc/monorepo.json", `{"projects": {"api": {"path": "apps/api"}}, "default_project": "api"}`)
	put(".isdlc/projects/api/state.json", active)
	put(".isdlc/state.json", `{"state_version": 1}`)
	got, err := SelectorSwitches(opts, []byte(`{"projects": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].From != ".isdlc/projects/api/state.json" || !got[0].FromActive {
		t.Errorf("leaving the api project: %+v", got)
	}
}
