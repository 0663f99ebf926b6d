package gate

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/internal/gitexec"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	aliases := map[string]string{
		"c": "commit", "ci": "commit -a", "cc": "ci -m wip", "sh": "!git add -A && git commit -m x",
		"loop": "loop", "q": `commit -m "a b"`, "o": "-c user.name=x commit", "st": "status",
		"mg": "merge --no-ff", "pick": "cherry-pick",
	}
	cases := []struct {
		sub     string
		args    []string
		dynamic bool
		kind    int
		want    []string
	}{
		{"commit", []string{"-m", "x"}, false, commitIndex, []string{"-m", "x"}},
		{"$g", []string{"-am", "x"}, true, commitWiden, []string{"-am", "x"}},
		{"c", []string{"-m", "x"}, false, commitIndex, []string{"-m", "x"}},
		{"C", nil, false, commitIndex, nil}, // alias names are case-insensitive
		{"cc", []string{"f"}, false, commitIndex, []string{"-a", "-m", "wip", "f"}},
		{"sh", nil, false, commitWiden, nil},
		{"loop", nil, false, commitWiden, nil},
		{"q", nil, false, commitWiden, nil},
		{"o", nil, false, commitWiden, nil},
		{"st", nil, false, commitNone, nil},
		{"lfs", []string{"push"}, false, commitNone, nil}, // no such alias: git-lfs or "not a git command"
		{"mg", []string{"topic"}, false, commitMerge, []string{"--no-ff", "topic"}},
		{"merge", []string{"--continue"}, false, commitIndex, nil},
		{"rebase", []string{"--abort"}, false, commitNone, nil},
		{"pick", []string{"-n", "abc"}, false, commitNone, nil},
		{"cherry-pick", []string{"a..b"}, false, commitPick, []string{"a..b"}},
		{"revert", []string{"HEAD"}, false, commitRevert, []string{"HEAD"}},
		{"merge", []string{"--squash", "topic"}, false, commitNone, nil},
		{"rebase", []string{"main"}, false, commitRebase, []string{"main"}},
		{"am", []string{"x.patch"}, false, commitOutside, nil},
		{"pull", nil, false, commitOutside, nil},
		{"am", []string{"--continue"}, false, commitIndex, nil},
	}
	for _, c := range cases {
		got := classify(c.sub, c.args, c.dynamic, aliases)
		if got.kind != c.kind || !cmp.Equal(got.args, c.want, cmp.Comparer(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })) {
			t.Errorf("classify(%q, %q, %v) = %d %q; want %d %q", c.sub, c.args, c.dynamic, got.kind, got.args, c.kind, c.want)
		}
		if (got.kind == commitWiden || got.kind == commitOutside) && got.why == "" {
			t.Errorf("classify(%q): no reason given", c.sub)
		}
	}
}

func TestRevisions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want []string
		ok   bool
	}{
		{[]string{"--no-ff", "-m", "msg", "topic"}, []string{"topic"}, true},
		{[]string{"-X", "ours", "--strategy=recursive", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"$BRANCH"}, nil, false},
		{[]string{"--", "x"}, []string{"x"}, true},
	} {
		got, ok := revisions(c.args, mergeValued)
		if ok != c.ok || !cmp.Equal(got, c.want) {
			t.Errorf("revisions(%q) = %q, %v; want %q, %v", c.args, got, ok, c.want, c.ok)
		}
	}
}

// seqRepo is a repository whose branch topic changed the step file twice
// (v1, then v2) since main, whose own version is v0; branch other changed
// it to v9.
func seqRepo(t *testing.T) (dir string, git *gitexec.Runner) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir = t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=d@e.f", "-c", "user.name=d", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(content string) {
		t.Helper()
		p := filepath.Join(dir, "steps", "01-01.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q", "-b", "main")
	write(`{"v": 0}`)
	run("add", ".")
	run("commit", "-qm", "v0")
	run("checkout", "-qb", "topic")
	write(`{"v": 1}`)
	run("commit", "-qam", "v1")
	write(`{"v": 2}`)
	run("commit", "-qam", "v2")
	run("checkout", "-qb", "other", "main") // a version of its own: merging topic conflicts
	write(`{"v": 9}`)
	run("commit", "-qam", "v9")
	return dir, new(gitexec.Runner)
}

func versions(t *testing.T, dir string, git *gitexec.Runner, refs []blobRef) []string {
	t.Helper()
	var oids []string
	for _, r := range refs {
		if r.path != "steps/01-01.json" {
			t.Errorf("path %q", r.path)
		}
		oids = append(oids, r.oid)
	}
	blobs, err := catBlobs(t.Context(), git, dir, oids)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range oids {
		out = append(out, string(blobs[o]))
	}
	return out
}

func TestSequencerBlobs(t *testing.T) {
	t.Parallel()
	dir, git := seqRepo(t)
	ctx := t.Context()
	for _, c := range []struct {
		sub  string
		args []string
		head string // checked out first
		want []string
	}{
		{"merge", []string{"topic"}, "main", []string{`{"v": 2}`}},
		{"merge", []string{"--no-ff", "-m", "merge topic", "topic"}, "main", []string{`{"v": 2}`}},
		{"cherry-pick", []string{"main..topic"}, "main", []string{`{"v": 1}`, `{"v": 2}`}},
		{"cherry-pick", []string{"topic~1"}, "main", []string{`{"v": 1}`}},
		{"revert", []string{"HEAD"}, "topic", []string{`{"v": 1}`}},
		{"rebase", []string{"main"}, "topic", []string{`{"v": 1}`, `{"v": 2}`}},
		{"rebase", []string{"--onto", "main", "main", "topic"}, "main", []string{`{"v": 1}`, `{"v": 2}`}},
		{"merge", []string{"main"}, "topic", nil},  // main brings no step change
		{"merge", []string{"topic"}, "other", nil}, // a conflict: the merge stops, and its resolution is judged
	} {
		cmd := exec.Command("git", "-C", dir, "checkout", "-q", c.head)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("checkout: %v %s", err, out)
		}
		refs := blobSet{keep: func(p string) bool { return StepFiles{}.picker(dir)(p) != pickNo }}
		if err := sequencerBlobs(ctx, git, dir, classify(c.sub, c.args, false, nil), &refs); err != nil {
			t.Fatalf("%s %q: %v", c.sub, c.args, err)
		}
		if got := versions(t, dir, git, refs.refs); !cmp.Equal(got, c.want) {
			t.Errorf("%s %q on %s: versions %q, want %q", c.sub, c.args, c.head, got, c.want)
		}
	}
	for _, args := range [][]string{{"$B"}, {"-X", "theirs", "topic", "other"}} {
		refs := blobSet{keep: func(p string) bool { return StepFiles{}.picker(dir)(p) != pickNo }}
		err := sequencerBlobs(ctx, git, dir, classify("merge", args, false, nil), &refs)
		if args[0] == "$B" && !errors.Is(err, errWiden) {
			t.Errorf("merge %q: %v, want errWiden", args, err)
		}
	}
	if err := sequencerBlobs(ctx, git, dir, classify("rebase", []string{"-x", "make", "main"}, false, nil), &blobSet{keep: func(p string) bool { return StepFiles{}.picker(dir)(p) != pickNo }}); !errors.Is(err, errWiden) {
		t.Errorf("rebase --exec: %v, want errWiden", err)
	}
}
