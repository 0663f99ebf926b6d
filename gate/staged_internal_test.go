package gate

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCommitArgs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want commitPlan
	}{
		{nil, commitPlan{}},
		{[]string{"-m", "-a"}, commitPlan{}}, // -a is the message
		{[]string{"-qam", "msg"}, commitPlan{all: true}},
		{[]string{"-amsg", "file.go"}, commitPlan{all: true, pathspecs: []string{"file.go"}}},
		{[]string{"-F", "/tmp/msg", "--author", "A <a@b.c>", "x"}, commitPlan{pathspecs: []string{"x"}}},
		{[]string{"--author=A", "--date", "now", "--fixup=abc", "-C", "HEAD", "-c", "HEAD~1", "-t", "tpl"}, commitPlan{}},
		{[]string{"-uno", "-S", "-s", "-n", "--amend", "--no-edit"}, commitPlan{}},
		{[]string{"-i", "a", "--", "-weird-name"}, commitPlan{include: true, pathspecs: []string{"a", "-weird-name"}}},
		{[]string{"--dry-run"}, commitPlan{dryRun: true}},
		{[]string{"-p"}, commitPlan{widen: true}},
		{[]string{"--pathspec-from-file=list"}, commitPlan{widen: true}},
		{[]string{"--mess", "x"}, commitPlan{widen: true, pathspecs: []string{"x"}}}, // an abbreviation DES does not expand
		{[]string{"-m", "$(cat <<'EOF'\nmsg\nEOF\n)"}, commitPlan{}},                 // a message DES cannot read is still a message
		{[]string{"$FILE"}, commitPlan{widen: true, pathspecs: []string{"$FILE"}}},
		{[]string{"--message=$(cat msg)", "-m$X"}, commitPlan{}},
		{[]string{"-$OPTS"}, commitPlan{widen: true}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, parseCommitArgs(c.args), cmp.AllowUnexported(commitPlan{})); diff != "" {
			t.Errorf("parseCommitArgs(%q) (-want +got):\n%s", c.args, diff)
		}
	}
}

func TestParseAddArgs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want addPlan
	}{
		{nil, addPlan{none: true}},
		{[]string{"-v"}, addPlan{none: true}},
		{[]string{"."}, addPlan{pathspecs: []string{"."}}},
		{[]string{"-A"}, addPlan{}},
		{[]string{"--all", "docs"}, addPlan{pathspecs: []string{"docs"}}},
		{[]string{"-u"}, addPlan{update: true}},
		{[]string{"--update", "--", "-x"}, addPlan{update: true, pathspecs: []string{"-x"}}},
		{[]string{"-n", "."}, addPlan{none: true, pathspecs: []string{"."}}},
		{[]string{"--refresh"}, addPlan{none: true}},
		{[]string{"-p"}, addPlan{widen: true}},
		{[]string{"$F"}, addPlan{widen: true, pathspecs: []string{"$F"}}},
		{[]string{"--chmod=+x", "a"}, addPlan{pathspecs: []string{"a"}}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, parseAddArgs(c.args), cmp.AllowUnexported(addPlan{})); diff != "" {
			t.Errorf("parseAddArgs(%q) (-want +got):\n%s", c.args, diff)
		}
	}
}

func TestBashDir(t *testing.T) {
	t.Parallel()
	home := filepath.FromSlash("/home/client") // the hook's, not this process's
	cwd := filepath.FromSlash("/work/proj")
	cases := map[string]string{
		"":             cwd,
		"sub":          filepath.Join(cwd, "sub"),
		"/abs/dir":     filepath.FromSlash("/abs/dir"),
		"$R":           cwd,
		"a/$R/b":       filepath.Join(cwd, "a"),
		"~":            home,
		"~/Documents":  filepath.Join(home, "Documents"),
		"sub/../other": filepath.Join(cwd, "other"),
	}
	for dir, want := range cases {
		if got := bashDir(cwd, dir, home); got != want {
			t.Errorf("bashDir(%q) = %q, want %q", dir, got, want)
		}
	}
}
