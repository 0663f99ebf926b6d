package gate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/internal/fileio"
)

func TestTranscriptPrompt(t *testing.T) {
	t.Parallel()
	const marker = "<!-- DES-STEP-FILE: docs/feature/shop/steps/01-01.json -->"
	for _, tc := range []struct {
		file     string
		contains string // "" means the prompt must be exactly empty
		notReady bool
		wantErr  bool
	}{
		{file: "string-content.jsonl", contains: marker},
		{file: "array-content.jsonl", contains: "<!-- DES-VALIDATION: required -->\n" + marker}, // text blocks joined, the image skipped
		{file: "meta-first.jsonl", contains: marker},
		{file: "no-markers.jsonl", contains: "Very thorough exploration"},
		{file: "compaction.jsonl", contains: "create a detailed summary"},
		{file: "empty.jsonl", notReady: true},
		{file: "torn.jsonl", notReady: true},
		{file: "missing.jsonl", notReady: true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := transcriptPrompt(filepath.Join("testdata", "transcripts", tc.file))
			if tc.notReady {
				if !errors.Is(err, errTranscriptNotReady) {
					t.Fatalf("err = %v, want errTranscriptNotReady", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tc.contains) {
				t.Errorf("prompt = %q, want it to contain %q", got, tc.contains)
			}
		})
	}
}

func TestTranscriptPromptRealFirstLines(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "shared", "corpus", "claude-code-hooks", "subagent_transcripts")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("no real transcripts at %s: the shared corpus is not beside this clone", dir)
	}
	for _, f := range files {
		got, err := transcriptPrompt(f)
		if err != nil || got == "" {
			t.Errorf("%s: prompt %q, err %v; want the first user message", filepath.Base(f), got, err)
		}
	}
}

func TestTranscriptWrittenLate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent-a1.jsonl")
	src, err := os.ReadFile(filepath.Join("testdata", "transcripts", "string-content.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(30 * time.Millisecond)
		done <- os.WriteFile(path, src, 0o644)
	}()
	got, err := readTranscriptPrompt(context.Background(), path, 5*time.Second)
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil || !strings.Contains(got, "DES-STEP-FILE") {
		t.Fatalf("prompt %q, err %v; want the prompt once the file appears", got, err)
	}
	// Never written: the wait is bounded.
	if _, err := readTranscriptPrompt(context.Background(), path+".never", 50*time.Millisecond); !errors.Is(err, errTranscriptNotReady) {
		t.Fatalf("err = %v, want errTranscriptNotReady after the bound", err)
	}
}

func TestMetaToolUseID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := filepath.Join(dir, "agent-a4388d337bf8a9397.jsonl")
	if got := metaToolUseID(tr); got != "" {
		t.Errorf("no meta file: %q", got)
	}
	meta := `{"agentType":"general-purpose","description":"probe bg child","toolUseId":"toolu_01KeyyCiTPjwVZLFwG6wEwnp","spawnDepth":1}`
	if err := os.WriteFile(filepath.Join(dir, "agent-a4388d337bf8a9397.meta.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := metaToolUseID(tr); got != "toolu_01KeyyCiTPjwVZLFwG6wEwnp" {
		t.Errorf("metaToolUseID = %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent-a4388d337bf8a9397.meta.json"), []byte(`{"toolUseId":"../../etc/passwd"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := metaToolUseID(tr); got != "" {
		t.Errorf("unsafe id accepted: %q", got)
	}
}

// git runs git in dir for a test.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

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

func TestChangedFiles(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	for _, f := range []string{"src/auth/a.go", "src/old.go", "README.md", "app/keep.go", "app/gone.go"} {
		write(t, repo, f, "x\n")
	}
	write(t, repo, ".gitignore", "*.log\nbuild/\n")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "base")

	write(t, repo, "src/auth/a.go", "changed\n")         // modified, unstaged
	write(t, repo, "src/auth/b/c/d.go", "new\n")         // untracked, nested
	write(t, repo, "app/new.go", "new\n")                // added
	git(t, repo, "add", "app/new.go")                    //
	git(t, repo, "mv", "src/old.go", "src/renamed.go")   // renamed: both names
	git(t, repo, "rm", "-q", "app/gone.go")              // deleted
	write(t, repo, "debug.log", "ignored\n")             // ignored
	write(t, repo, "build/out.bin", "ignored\n")         // ignored directory
	write(t, repo, "name with space.txt", "untracked\n") // quoting: -z keeps it verbatim

	got, err := changedFiles(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app/gone.go", "app/new.go", "name with space.txt", "src/auth/a.go", "src/auth/b/c/d.go", "src/old.go", "src/renamed.go"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changedFiles (-want +got):\n%s", diff)
	}

	// A project in a subdirectory sees its own files, relative to itself.
	got, err = changedFiles(context.Background(), filepath.Join(repo, "src"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"auth/a.go", "auth/b/c/d.go", "old.go", "renamed.go"}, got); diff != "" {
		t.Errorf("changedFiles in src (-want +got):\n%s", diff)
	}

	if _, err := changedFiles(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "not inside a git repository") {
		t.Errorf("outside a repository: err = %v", err)
	}
}

func TestOutOfScope(t *testing.T) {
	t.Parallel()
	files := []string{".des/audit/audit-2026-11-22.log", "README.md", "docs/feature/shop/steps/01-01.json", "policies/x.rego", "src/auth/a/b/c.go", "src/auth/c.go", "src/authz/d.go", "src/auth/x.txt"}
	got := outOfScope(files, []string{"src/auth/**/*.go"}, []string{".des", "policies"}, "docs/feature/shop/steps/01-01.json")
	if diff := cmp.Diff([]string{"README.md", "src/authz/d.go", "src/auth/x.txt"}, got); diff != "" {
		t.Errorf("outOfScope (-want +got):\n%s", diff)
	}
}

func TestChangedFilesThroughALinkedRoot(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	real := t.TempDir()
	git(t, real, "init", "-q", "-b", "main")
	write(t, real, "README.md", "x\n")
	link := filepath.Join(t.TempDir(), "project")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	got, err := changedFiles(context.Background(), link)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"README.md"}, got); diff != "" {
		t.Errorf("changedFiles through a link (-want +got):\n%s", diff)
	}
}

func TestSpecialFilesAreNotRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "agent-a1.jsonl")
	if err := makeFIFO(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := transcriptPrompt(fifo); !errors.Is(err, fileio.ErrNotRegular) {
		t.Errorf("FIFO transcript: err = %v, want fileio.ErrNotRegular (without blocking)", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "agent-a2.meta.json")); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	if got := metaToolUseID(filepath.Join(dir, "agent-a2.jsonl")); got != "" {
		t.Errorf("meta file linked to /dev/zero: %q", got)
	}
}

func TestInsideResolvesLinksOfPathsNotWrittenYet(t *testing.T) {
	t.Parallel()
	claude := t.TempDir()
	link := filepath.Join(t.TempDir(), "claude")
	if err := os.Symlink(claude, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	notYet := filepath.Join(link, "projects", "p", "s", "subagents", "agent-a1.jsonl")
	if !inside(notYet, claude) || !inside(notYet, link) {
		t.Error("a transcript not written yet under a linked Claude directory is refused")
	}
	if inside(filepath.Join(link, "..", "elsewhere", "a.jsonl"), claude) {
		t.Error("a path beside the Claude directory is accepted")
	}
}
