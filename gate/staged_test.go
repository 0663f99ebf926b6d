package gate_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/gate"
)

// newRepo is a git repository in a temporary directory (see initRepo).
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// Resolve /tmp links (macOS) so that paths compare as git prints them.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	initRepo(t, dir)
	return dir
}

// initRepo makes dir a git repository with an identity of its own, so that
// the tests do not depend on the user's settings; without git the test is
// skipped.
func initRepo(t testing.TB, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	runGit(t, dir, "init", "-q")
	runGit(t, dir, "config", "user.email", "des@example.com")
	runGit(t, dir, "config", "user.name", "des")
	runGit(t, dir, "config", "commit.gpgsign", "false")
}

func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sv is a step file's content, shaped as one, holding v.
func sv(v string) string { return `{"tdd_cycle": "` + v + `"}` }

// listed renders files as "path=content", paths relative to dir.
func listed(t *testing.T, dir string, files []gate.CommitFile) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		rel, err := filepath.Rel(dir, f.Path)
		if err != nil || !filepath.IsAbs(f.Path) {
			t.Fatalf("path %q is not absolute under %s", f.Path, dir)
		}
		out = append(out, filepath.ToSlash(rel)+"="+string(f.Content))
	}
	return out
}

func TestStagedStepFiles(t *testing.T) {
	t.Parallel()
	st := func(s string) string { return `{"tdd_cycle": "` + s + `"}` } // a step file's shape
	dir := newRepo(t)
	// Before the first commit every staged file is new.
	testenv.WriteFile(t, dir, "docs/feature/a/steps/01-01.json", st("first"))
	runGit(t, dir, "add", ".")
	files, err := gate.StagedStepFiles(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"docs/feature/a/steps/01-01.json=" + st("first")}, listed(t, dir, files)); diff != "" {
		t.Errorf("before the first commit (-want +got):\n%s", diff)
	}
	runGit(t, dir, "commit", "-qm", "one")

	testenv.WriteFile(t, dir, "docs/feature/a/steps/01-01.json", st("staged"))
	testenv.WriteFile(t, dir, "steps/02-01.json", st("top-level steps dir"))
	testenv.WriteFile(t, dir, "x/steps/1-1.json", st("named as a step"))
	testenv.WriteFile(t, dir, "x/steps/02-01a.json", st("nWave's letter suffix"))
	testenv.WriteFile(t, dir, "x/steps/welcome.json", `{"title": "not a step file"}`)
	testenv.WriteFile(t, dir, "x/steps/cart.json", `{"tdd_cycle": "a step by its content"}`)
	testenv.WriteFile(t, dir, "x/steps/03-01.json", `{"task_id": "a test fixture named as a step", "fixture": true}`)
	testenv.WriteFile(t, dir, "x/steps/01-01.json.bak", "not json")
	testenv.WriteFile(t, dir, "x/nosteps/01-01.json", st("not a steps dir"))
	testenv.WriteFile(t, dir, "src/main.go", "package main")
	runGit(t, dir, "add", ".")
	testenv.WriteFile(t, dir, "docs/feature/a/steps/01-01.json", st("work tree, not staged"))
	testenv.WriteFile(t, dir, "docs/feature/a/steps/01-02.json", st("untracked"))
	files, err = gate.StagedStepFiles(t.Context(), filepath.Join(dir, "docs")) // from a subdirectory
	if err != nil {
		t.Fatal(err)
	}
	// The write guard's default setting (**/steps/*.json) and its test:
	// content shaped like a step's, whatever the name.
	want := []string{"docs/feature/a/steps/01-01.json=" + st("staged"), "steps/02-01.json=" + st("top-level steps dir"),
		`x/steps/02-01a.json=` + st("nWave's letter suffix"), `x/steps/1-1.json=` + st("named as a step"), `x/steps/cart.json={"tdd_cycle": "a step by its content"}`}
	if diff := cmp.Diff(want, listed(t, dir, files)); diff != "" {
		t.Errorf("staged step files (-want +got):\n%s", diff)
	}

	// Another setting, relative to the project root (a subdirectory here):
	// only what it names, by name or content, and files outside the project
	// only when they are named as step files (to be reported as outside).
	custom := gate.StepFiles{Root: filepath.Join(dir, "x"), Globs: []string{"steps/c*.json", "steps/1-1.json"}}
	files, err = custom.Staged(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"docs/feature/a/steps/01-01.json=" + st("staged"), "steps/02-01.json=" + st("top-level steps dir"),
		`x/steps/1-1.json=` + st("named as a step"), `x/steps/cart.json={"tdd_cycle": "a step by its content"}`}
	if diff := cmp.Diff(want, listed(t, dir, files)); diff != "" {
		t.Errorf("custom setting (-want +got):\n%s", diff)
	}

	// Deleted and renamed files: a deletion commits no content.
	runGit(t, dir, "commit", "-qm", "two")
	runGit(t, dir, "rm", "-q", "x/steps/02-01a.json", "x/steps/1-1.json", "x/steps/cart.json")
	runGit(t, dir, "rm", "-q", "steps/02-01.json")
	runGit(t, dir, "mv", "docs/feature/a/steps/01-01.json", "docs/feature/a/steps/01-09.json")
	files, err = gate.StagedStepFiles(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"docs/feature/a/steps/01-09.json=" + st("staged")}, listed(t, dir, files)); diff != "" {
		t.Errorf("after rm and mv (-want +got):\n%s", diff)
	}

	if _, err := gate.StagedStepFiles(t.Context(), t.TempDir()); !errors.Is(err, gate.ErrNotRepository) {
		t.Errorf("outside a repository: err = %v", err)
	}
}

func TestBashCommitFiles(t *testing.T) {
	t.Parallel()
	step := "docs/feature/a/steps/01-01.json"
	other := "docs/feature/a/steps/01-02.json"
	newStep := "docs/feature/b/steps/02-01.json"
	setup := func(t *testing.T) string {
		dir := newRepo(t)
		testenv.WriteFile(t, dir, step, sv("v1"))
		testenv.WriteFile(t, dir, other, sv("v1"))
		testenv.WriteFile(t, dir, "src/main.go", "v1")
		runGit(t, dir, "add", ".")
		runGit(t, dir, "commit", "-qm", "one")
		// Now: step staged at v2 and changed again in the work tree (v3),
		// other changed in the work tree only, newStep untracked.
		testenv.WriteFile(t, dir, step, sv("v2"))
		runGit(t, dir, "add", step)
		testenv.WriteFile(t, dir, step, sv("v3"))
		testenv.WriteFile(t, dir, other, sv("v2"))
		testenv.WriteFile(t, dir, newStep, sv("new"))
		testenv.WriteFile(t, dir, "src/main.go", "v2")
		return dir
	}
	cases := []struct {
		name, cmd, cwd string
		want           []string
	}{
		{"plain commit: the staged content", `git commit -m "x"`, "", []string{step + "=" + sv("v2")}},
		{"-a adds tracked work-tree changes", `git commit -am "x"`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2")}},
		{"--all", `git commit --all --message x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2")}},
		{"add then commit", `git add ` + other + ` && git commit -m "$(cat <<'EOF'
feat: x
EOF
)"`, "", []string{step + "=" + sv("v2"), other + "=" + sv("v2")}},
		{"add of an unrelated file", `git add src/main.go && git commit -m x`, "", []string{step + "=" + sv("v2")}},
		{"add -A stages untracked files", `git add -A && git commit -m x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2"), newStep + "=" + sv("new")}},
		{"add . in a subdirectory", `cd docs/feature/b && git add . && git commit -m x`, "", []string{step + "=" + sv("v2"), newStep + "=" + sv("new")}},
		{"add -u leaves untracked files", `git add -u; git commit -m x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2")}},
		{"add --dry-run", `git add -n . && git commit -m x`, "", []string{step + "=" + sv("v2")}},
		{"pathspec commit: only those", `git commit -m x -- ` + other, "", []string{other + "=" + sv("v2")}},
		{"pathspec commit with -i", `git commit -i ` + other + ` -m x`, "", []string{step + "=" + sv("v2"), other + "=" + sv("v2")}},
		{"pathspec commit of a directory", `git commit docs/feature/a -m x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2")}},
		{"expansion: everything changed", `git add "$F" && git commit -m x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2"), newStep + "=" + sv("new")}},
		{"unknown option: everything changed", `git commit --frobnicate -m x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2"), newStep + "=" + sv("new")}},
		{"-C dir", `git -C docs commit -m x`, "", []string{step + "=" + sv("v2")}},
		{"from a subdirectory cwd", `git commit -m x`, "src", []string{step + "=" + sv("v2")}},
		{"dry run", `git commit --dry-run -a`, "", nil},
		{"no commit", `git add -A`, "", nil},
		{"commit-tree is not a commit", `git commit-tree HEAD^{tree} -m x`, "", nil},
		{"commit elsewhere", `cd /nonexistent && git commit -m x`, "", nil},
		{"a cd that may fail: both directories", `cd /nonexistent; git commit -m x`, "", []string{step + "=" + sv("v2")}},
		{"alias defined with -c", `git -c core.hooksPath=/dev/null -c alias.c=commit c -m wip`, "", []string{step + "=" + sv("v2")}},
		{"command name in a variable", `g=git; $g commit -m x`, "", []string{step + "=" + sv("v2")}},
		{"computed command name: everything changed", `$G commit -m x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2"), newStep + "=" + sv("new")}},
		{"computed subcommand: everything changed", `git $(echo commit) -m x`, "", []string{step + "=" + sv("v3"), other + "=" + sv("v2"), newStep + "=" + sv("new")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := setup(t)
			files, err := gate.BashCommitFiles(t.Context(), filepath.Join(dir, c.cwd), c.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, listed(t, dir, files)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.cmd, diff)
			}
		})
	}
}

func TestBashCommitFilesOtherRepository(t *testing.T) {
	t.Parallel()
	outer := newRepo(t)
	inner := filepath.Join(outer, "vendor", "lib")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	runGit(t, inner, "init", "-q")
	testenv.WriteFile(t, outer, "steps/01-01.json", sv("outer"))
	testenv.WriteFile(t, inner, "steps/01-01.json", sv("inner"))
	runGit(t, outer, "add", "steps")
	runGit(t, inner, "add", ".")
	// The add in the outer repository does not stage into the inner one.
	files, err := gate.BashCommitFiles(t.Context(), outer, `git add -A && cd vendor/lib && git commit -m x`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"vendor/lib/steps/01-01.json=" + sv("inner")}, listed(t, outer, files)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	files, err = gate.BashCommitFiles(t.Context(), outer, `git commit -m x; git -C vendor/lib commit -m y`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"steps/01-01.json=" + sv("outer"), "vendor/lib/steps/01-01.json=" + sv("inner")}, listed(t, outer, files)); diff != "" {
		t.Errorf("two repositories (-want +got):\n%s", diff)
	}
}
