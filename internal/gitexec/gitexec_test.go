package gitexec_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/gitexec"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// evilRepo is a repository whose config and attributes name programs that
// create files under marks when git runs them: clean, smudge and process
// filters (one driver's name holds "=" and dots), a textconv driver, an
// external diff and an fsmonitor hook. A file tracked by each is modified
// with an old timestamp, so git must look at its content.
func evilRepo(t *testing.T) (dir, marks string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir, marks = t.TempDir(), t.TempDir()
	git(t, dir, "init", "-q")
	git(t, dir, "config", "user.email", "des@example.com")
	git(t, dir, "config", "user.name", "des")
	if err := os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.json filter=evil diff=evil\n*.txt filter=a=b.c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.json", "b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "base")
	mark := func(name string) string { return "touch " + filepath.Join(marks, name) + "; cat" }
	git(t, dir, "config", "filter.evil.clean", mark("clean"))
	git(t, dir, "config", "filter.evil.smudge", mark("smudge"))
	git(t, dir, "config", "filter.evil.required", "true")
	git(t, dir, "config", "filter.a=b.c.process", "touch "+filepath.Join(marks, "process"))
	git(t, dir, "config", "diff.evil.textconv", mark("textconv"))
	git(t, dir, "config", "diff.external", "touch "+filepath.Join(marks, "extdiff")+" #")
	git(t, dir, "config", "core.fsmonitor", "touch "+filepath.Join(marks, "fsmonitor")+" #")
	git(t, dir, "config", "core.pager", "touch "+filepath.Join(marks, "pager")+" #")
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"a.json", "b.txt"} {
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, []byte("{\"x\": 1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	return dir, marks
}

func noMarks(t *testing.T, marks string) {
	t.Helper()
	ents, _ := os.ReadDir(marks)
	for _, e := range ents {
		t.Errorf("git ran a program the repository configures: %s", e.Name())
	}
}

func TestRunRunsNothingTheRepositoryConfigures(t *testing.T) {
	dir, marks := evilRepo(t)
	var r gitexec.Runner
	ctx := context.Background()
	for _, args := range [][]string{
		{"diff", "--name-only", "-z"},
		{"diff"},
		{"diff", "HEAD"},
		{"diff", "--cached", "--raw", "-z"},
		{"status", "--porcelain=v1", "-z", "--untracked-files=all"},
		{"log", "-p", "-1"},
		{"show", "HEAD"},
		{"ls-files", "-z", "--others", "--exclude-standard"},
	} {
		out, err := r.Run(ctx, dir, nil, args...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		if args[0] == "diff" && len(args) == 3 && !strings.Contains(string(out), "a.json") {
			t.Errorf("git %v lists %q: want a.json, changed in the work tree", args, out)
		}
	}
	noMarks(t, marks)

	// Without the Runner, the same repository runs them: the test would
	// catch nothing otherwise.
	cmd := exec.Command("git", "-C", dir, "diff", "--name-only")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("plain git diff: %v: %s", err, out)
	}
	if ents, _ := os.ReadDir(marks); len(ents) == 0 {
		t.Fatal("plain git ran none of the configured programs: the repository does not test anything")
	}
}

func TestConfig(t *testing.T) {
	dir, _ := evilRepo(t)
	git(t, dir, "config", "alias.c", "commit")
	git(t, dir, "config", "alias.Sh", "!echo hi")
	var r gitexec.Runner
	got, err := r.Config(context.Background(), dir, `^alias\.`)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"alias.c", "commit"}, {"alias.sh", "!echo hi"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Config = %q, want %q", got, want)
	}
	none, err := r.Config(context.Background(), dir, `^nosuch\.`)
	if err != nil || len(none) != 0 {
		t.Errorf("Config of no key = %q, %v; want none, nil", none, err)
	}
}

func TestRunDeadline(t *testing.T) {
	dir, _ := evilRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := new(gitexec.Runner).Run(ctx, dir, nil, "status")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run after the deadline = %v, want context.DeadlineExceeded", err)
	}
}

func TestEnvAppendsAfterTheCallersConfig(t *testing.T) {
	env := gitexec.Env([]string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=x", "GIT_PAGER=less"}, []string{"d"})
	joined := strings.Join(env, "\n")
	for _, want := range []string{"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_KEY_1=filter.d.clean", "GIT_CONFIG_VALUE_1=", "GIT_CONFIG_KEY_4=filter.d.required", "GIT_CONFIG_COUNT=5", "GIT_PAGER=cat", "GIT_CONFIG_NOSYSTEM=1", "GIT_NO_REPLACE_OBJECTS=1", "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0"} {
		if !strings.Contains(joined+"\n", want+"\n") {
			t.Errorf("Env lacks %s:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "less") {
		t.Errorf("Env keeps the caller's pager:\n%s", joined)
	}
}

// The environment in the context, not the process's, reaches git: the warm
// decision server runs git with its client's environment.
func TestWithEnvironReachesGit(t *testing.T) {
	dir := t.TempDir()
	probe := []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=des.probe", "GIT_CONFIG_VALUE_0=from-request"}
	ctx := gitexec.WithEnviron(t.Context(), append(os.Environ(), probe...))
	out, err := new(gitexec.Runner).Run(ctx, dir, nil, "config", "--get", "des.probe")
	if err != nil || strings.TrimSpace(string(out)) != "from-request" {
		t.Fatalf("git config with the context's environment: %q, %v; want from-request", out, err)
	}
	if out, err := new(gitexec.Runner).Run(t.Context(), dir, nil, "config", "--get", "des.probe"); err == nil {
		t.Fatalf("without WithEnviron git saw des.probe=%q", out)
	}
}

// git is found on the PATH of the environment git runs with, not on this
// process's: a decision server started with PATH=/evil:$PATH runs the git
// its client's PATH finds, and a client whose PATH holds an impostor gets
// the impostor, as a hook process of its own would.
func TestGitFoundOnTheEnvironmentsPath(t *testing.T) {
	evil := t.TempDir()
	if err := os.WriteFile(filepath.Join(evil, "git"), []byte("#!/bin/sh\necho impostor\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	t.Setenv("PATH", evil+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	clean := []string{"PATH=relative/bin" + string(os.PathListSeparator) + filepath.Dir(real), "HOME=" + t.TempDir()}
	out, err := new(gitexec.Runner).Run(gitexec.WithEnviron(t.Context(), clean), dir, nil, "version")
	if err != nil || !strings.HasPrefix(string(out), "git version") {
		t.Fatalf("git version with the request's PATH: %q, %v; want the real git's answer", out, err)
	}
	if got, err := gitexec.LookGit(clean); err != nil || got != filepath.Join(filepath.Dir(real), "git") {
		t.Fatalf("LookGit = %q, %v; want %s", got, err, real)
	}
	out, err = new(gitexec.Runner).Run(gitexec.WithEnviron(t.Context(), []string{"PATH=" + evil}), dir, nil, "version")
	if err != nil || strings.TrimSpace(string(out)) != "impostor" {
		t.Fatalf("git version with PATH=%s: %q, %v; want the impostor that PATH names", evil, out, err)
	}
	if _, err := gitexec.LookGit([]string{"PATH=relative"}); !errors.Is(err, gitexec.ErrNoGit) {
		t.Fatalf("LookGit with only a relative PATH entry: %v; want ErrNoGit", err)
	}
}
