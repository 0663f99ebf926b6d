package isdlc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write creates root/rel (slash path) with content, making its directories.
func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

const (
	monoMap = `{"version": "1.0.0", "default_project": "web",
  "projects": {"api": {"name": "API", "path": "apps/api"}, "web": {"path": "apps/web/"},
               "apps": {"path": "apps"}, "api2": {"path": "apps/api2"}}}`
	monoList = `{"default_project": "web",
  "projects": [{"id": "api", "path": "apps/api"}, {"name": "web", "path": "apps/web"}]}`
)

func TestDiscoverWhichState(t *testing.T) {
	allStates := []string{".des/state.json", ".isdlc/state.json",
		".isdlc/projects/api/state.json", ".isdlc/projects/web/state.json",
		".isdlc/projects/apps/state.json", ".isdlc/projects/api2/state.json"}
	tests := []struct {
		name        string
		files       map[string]string // extra files; "state" marks a state file
		states      []string
		cwd         string // relative to the root; "ABS:" prefix = absolute under root
		env         map[string]string
		wantFile    string // "" = nil workflow
		wantProject string
		wantProblem string
	}{
		{name: "no state", states: nil},
		{name: "isdlc state", states: []string{".isdlc/state.json"}, wantFile: ".isdlc/state.json"},
		{name: "des state first", states: []string{".des/state.json", ".isdlc/state.json"}, wantFile: ".des/state.json"},
		{name: "monorepo by env", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			cwd: "ABS:apps/web", env: map[string]string{"ISDLC_PROJECT": "api"},
			wantFile: ".isdlc/projects/api/state.json", wantProject: "api"},
		{name: "des state first in a monorepo", files: map[string]string{monorepoFile: monoMap}, states: allStates,
			env: map[string]string{"ISDLC_PROJECT": "api"}, wantFile: ".des/state.json", wantProject: "api"},
		{name: "monorepo by absolute cwd, longest prefix", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			cwd: "ABS:apps/api/src/routes", wantFile: ".isdlc/projects/api/state.json", wantProject: "api"},
		{name: "monorepo by relative cwd", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			cwd: "apps/web/src", wantFile: ".isdlc/projects/web/state.json", wantProject: "web"},
		{name: "sibling prefix is not a prefix", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			cwd: "ABS:apps/api2/src", wantFile: ".isdlc/projects/api2/state.json", wantProject: "api2"},
		{name: "outer project when no inner matches", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			cwd: "ABS:apps/apiX", wantFile: ".isdlc/projects/apps/state.json", wantProject: "apps"},
		{name: "default project outside every project", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			cwd: "ABS:tools", wantFile: ".isdlc/projects/web/state.json", wantProject: "web"},
		{name: "list shape", files: map[string]string{monorepoFile: monoList}, states: allStates[1:],
			cwd: "ABS:apps/api", wantFile: ".isdlc/projects/api/state.json", wantProject: "api"},
		{name: "list shape, name as id, default", files: map[string]string{monorepoFile: monoList}, states: allStates[1:],
			cwd: "ABS:docs", wantFile: ".isdlc/projects/web/state.json", wantProject: "web"},
		{name: "project without state falls to the root state", files: map[string]string{monorepoFile: monoMap},
			states: []string{".isdlc/state.json"}, env: map[string]string{"ISDLC_PROJECT": "api"},
			wantFile: ".isdlc/state.json", wantProject: "api"},
		{name: "monorepo without any project", files: map[string]string{monorepoFile: `{"projects": {}}`},
			states: []string{".isdlc/state.json"}, cwd: "ABS:apps/api", wantFile: ".isdlc/state.json"},
		{name: "monorepo, no state anywhere", files: map[string]string{monorepoFile: monoMap}, cwd: "ABS:apps/api"},
		{name: "invalid monorepo.json", files: map[string]string{monorepoFile: `{"projects": `},
			states: []string{".isdlc/state.json"}, wantFile: monorepoFile, wantProblem: ProblemInvalidJSON},
		{name: "monorepo.json not an object", files: map[string]string{monorepoFile: `["api"]`},
			states: []string{".isdlc/state.json"}, wantFile: monorepoFile, wantProblem: ProblemNotObject},
		{name: "invalid monorepo.json, project states", files: map[string]string{monorepoFile: `{`},
			states: []string{".isdlc/projects/api/state.json"}, wantFile: monorepoFile, wantProblem: ProblemInvalidJSON},
		{name: "invalid monorepo.json, no state at all", files: map[string]string{monorepoFile: `{`}},
		{name: "invalid monorepo.json, des state still first", files: map[string]string{monorepoFile: `nope`},
			states: []string{".des/state.json"}, wantFile: ".des/state.json"},
		{name: "project id climbing out", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			env: map[string]string{"ISDLC_PROJECT": "../../x"}, wantFile: monorepoFile, wantProblem: ProblemUnreadable},
		{name: "empty env is unset", files: map[string]string{monorepoFile: monoMap}, states: allStates[1:],
			cwd: "ABS:apps/api", env: map[string]string{"ISDLC_PROJECT": ""}, wantFile: ".isdlc/projects/api/state.json", wantProject: "api"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, content := range tc.files {
				write(t, root, rel, content)
			}
			for _, s := range tc.states {
				write(t, root, s, `{"file": "`+s+`"}`)
			}
			cwd := tc.cwd
			if rest, ok := strings.CutPrefix(cwd, "ABS:"); ok {
				cwd = filepath.Join(root, filepath.FromSlash(rest))
			}
			w, err := Discover(Options{Root: root, Cwd: cwd, Getenv: env(tc.env)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantFile == "" {
				if w != nil {
					t.Fatalf("got state %q, want none", w.StateFile)
				}
				return
			}
			if w == nil {
				t.Fatalf("got no state, want %s", tc.wantFile)
			}
			if w.StateFile != tc.wantFile || w.Project != tc.wantProject || w.Problem != tc.wantProblem {
				t.Fatalf("got file %q project %q problem %q (%v), want %q %q %q",
					w.StateFile, w.Project, w.Problem, w.Err, tc.wantFile, tc.wantProject, tc.wantProblem)
			}
			if tc.wantProblem == "" && w.State["file"] != tc.wantFile {
				t.Fatalf("read %v, want the content of %s", w.State, tc.wantFile)
			}
			if tc.wantProblem != "" && (w.Err == nil || !strings.Contains(w.Err.Error(), monorepoFile)) {
				t.Fatalf("error %v does not name %s", w.Err, monorepoFile)
			}
		})
	}
}

func TestProjectAt(t *testing.T) {
	m := monorepo{projects: []project{
		{"api", "apps/api"}, {"api2", `apps\api2`}, {"apps", "./apps/"},
		{"web", `C:\Repo\apps\web`}, {"far", `D:\elsewhere`}, {"posix", "/srv/repo/tools"},
	}}
	tests := []struct{ root, cwd, want string }{
		{`C:\Repo`, `c:\Repo\apps\api\src`, "api"},
		{`c:\Repo`, `C:\Repo\apps\api`, "api"},
		{`C:\Repo\`, `C:/Repo/apps/api2`, "api2"},
		{`C:\Repo`, `C:\Repo\apps\api2x`, "apps"},
		{`C:\Repo`, `C:\Repo\apps\web\src`, "web"},
		{`C:\Repo`, `C:\Repo\apps\api\..\web`, "web"},
		{`C:\Repo`, `C:\Other\apps\api`, ""},
		{`C:\Repo`, `D:\Repo\apps\api`, ""},
		{`C:\Repo`, `C:\Repo`, ""},
		{`C:\Repo`, `apps\api\x`, "api"},
		{`C:\Repo`, `..\Repo\apps\api`, ""},
		{"/srv/repo", "/srv/repo/tools/bin", "posix"},
		{"/srv/repo", "/srv/repo2/apps/api", ""},
		{"/srv/repo/", "/srv/repo/apps/api", "api"},
		{"/", "/apps/api", "api"},
		{"/srv/repo", "", ""},
	}
	for _, tc := range tests {
		if got := m.projectAt(tc.root, tc.cwd); got != tc.want {
			t.Errorf("projectAt(%q, %q) = %q, want %q", tc.root, tc.cwd, got, tc.want)
		}
	}
}

func TestDiscoverProjectThroughSymlinkedRoot(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	write(t, real, monorepoFile, monoMap)
	write(t, real, ".isdlc/projects/api/state.json", `{}`)
	write(t, real, ".isdlc/projects/web/state.json", `{}`)
	if err := os.MkdirAll(filepath.Join(real, "apps", "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Discover(Options{Root: link, Cwd: filepath.Join(real, "apps", "api"), Getenv: env(nil)})
	if err != nil || w == nil || w.Project != "api" {
		t.Fatalf("got %+v, %v; want project api", w, err)
	}
}

func TestStateProblems(t *testing.T) {
	tests := []struct {
		name, content string
		problem       string
		errHas        []string
	}{
		{"array", `[{"active_workflow": {}}]`, ProblemNotObject, []string{".isdlc/state.json", "an array"}},
		{"string", `"state"`, ProblemNotObject, []string{"a string"}},
		{"null", `null`, ProblemNotObject, []string{"null"}},
		{"syntax", "{\n  \"active_workflow\": {\n    \"current_phase\": ,\n  }\n}", ProblemInvalidJSON, []string{"line 3, column 22", ".isdlc/state.json"}},
		{"truncated", "{\n  \"a\": [1, 2", ProblemInvalidJSON, []string{"line 2", "unexpected end"}},
		{"two values", `{} {}`, ProblemInvalidJSON, []string{"line 1, column 4", "after the JSON value"}},
		{"empty", ``, ProblemInvalidJSON, []string{"line 1, column 1"}},
		{"too large", `{"pad": "` + strings.Repeat("x", MaxStateBytes) + `"}`, ProblemUnreadable, []string{"limit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, isdlcState, tc.content)
			w, err := Discover(Options{Root: root, Getenv: env(nil)})
			if err != nil || w == nil {
				t.Fatalf("got %v, %v", w, err)
			}
			if w.Problem != tc.problem || w.State != nil {
				t.Fatalf("problem %q state %v, want %q and no state", w.Problem, w.State, tc.problem)
			}
			f := w.Facts()
			if _, ok := f["state"]; ok {
				t.Fatal("facts hold state with a problem")
			}
			msg, _ := f["error"].(string)
			for _, s := range tc.errHas {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q lacks %q", msg, s)
				}
			}
		})
	}
}

func TestStateUnreadable(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".isdlc", "state.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		w, _ := Discover(Options{Root: root, Getenv: env(nil)})
		if w == nil || w.Problem != ProblemUnreadable {
			t.Fatalf("got %+v, want unreadable", w)
		}
	})
	t.Run("link out of the project", func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		write(t, outside, "state.json", `{"active_workflow": {}}`)
		write(t, root, ".isdlc/.keep", "")
		if err := os.Symlink(filepath.Join(outside, "state.json"), filepath.Join(root, ".isdlc", "state.json")); err != nil {
			t.Skip("no symbolic links:", err)
		}
		w, _ := Discover(Options{Root: root, Getenv: env(nil)})
		if w == nil || w.StateFile != isdlcState || w.Problem != ProblemUnreadable {
			t.Fatalf("got %+v, want %s unreadable", w, isdlcState)
		}
	})
}

func TestStateKeepsNullsAndNumbers(t *testing.T) {
	root := t.TempDir()
	write(t, root, isdlcState, `{"active_workflow": {"current_phase": null, "current_phase_index": 12345678901234567890}}`)
	w, err := Discover(Options{Root: root, Getenv: env(nil)})
	if err != nil || w == nil || w.Problem != "" {
		t.Fatalf("got %+v, %v", w, err)
	}
	aw := w.State["active_workflow"].(map[string]any)
	if v, ok := aw["current_phase"]; !ok || v != nil {
		t.Errorf("current_phase = %v, %v; want a null kept", v, ok)
	}
	if got := aw["current_phase_index"]; got == nil || got.(interface{ String() string }).String() != "12345678901234567890" {
		t.Errorf("current_phase_index = %v, want the number as written", got)
	}
}

func TestDiscoverBadRoot(t *testing.T) {
	_, err := Discover(Options{Root: filepath.Join(t.TempDir(), "missing"), Getenv: env(nil)})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping fs.ErrNotExist", err)
	}
}
