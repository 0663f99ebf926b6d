package isdlc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// git runs git in dir with no user or system configuration.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=des", "-c", "user.email=des@example.com",
		"-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo is a repository on main with one commit and branches feature/x and
// other.
func repo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a.txt", "a")
	git(t, dir, "add", "a.txt")
	git(t, dir, "commit", "-q", "-m", "one")
	git(t, dir, "branch", "feature/x")
	git(t, dir, "branch", "other")
	return dir
}

func TestBranch(t *testing.T) {
	main := repo(t)
	write(t, main, "sub/dir/b.txt", "b")

	wt := filepath.Join(t.TempDir(), "wt")
	git(t, main, "worktree", "add", "-q", "-b", "wt-branch", wt)

	detached := repo(t)
	git(t, detached, "checkout", "-q", "--detach")

	packed := repo(t)
	git(t, packed, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(packed, ".git", "refs", "heads", "feature", "x")); err == nil {
		t.Fatal("pack-refs left the loose ref")
	}
	packedWt := filepath.Join(t.TempDir(), "pwt")
	git(t, packed, "worktree", "add", "-q", packedWt, "other")

	empty := t.TempDir()
	git(t, empty, "init", "-q", "-b", "trunk")

	tests := []struct {
		name, dir, workflow string
		want                BranchFacts
	}{
		{"main, workflow branch loose", main, "feature/x", BranchFacts{Readable: true, Current: "main", WorkflowBranchExists: true}},
		{"from a subdirectory", filepath.Join(main, "sub", "dir"), "other", BranchFacts{Readable: true, Current: "main", WorkflowBranchExists: true}},
		{"missing workflow branch", main, "feature/y", BranchFacts{Readable: true, Current: "main"}},
		{"a directory of refs is no branch", main, "feature", BranchFacts{Readable: true, Current: "main"}},
		{"no workflow branch", main, "", BranchFacts{Readable: true, Current: "main"}},
		{"branch name climbing out", main, "../../HEAD", BranchFacts{Readable: true, Current: "main"}},
		{"worktree HEAD, common refs", wt, "feature/x", BranchFacts{Readable: true, Current: "wt-branch", WorkflowBranchExists: true}},
		{"main sees the worktree's branch", main, "wt-branch", BranchFacts{Readable: true, Current: "main", WorkflowBranchExists: true}},
		{"detached", detached, "other", BranchFacts{Readable: true, Detached: true, WorkflowBranchExists: true}},
		{"packed refs", packed, "feature/x", BranchFacts{Readable: true, Current: "main", WorkflowBranchExists: true}},
		{"packed refs, missing", packed, "feature", BranchFacts{Readable: true, Current: "main"}},
		{"worktree of packed refs", packedWt, "feature/x", BranchFacts{Readable: true, Current: "other", WorkflowBranchExists: true}},
		{"unborn branch", empty, "trunk", BranchFacts{Readable: true, Current: "trunk"}},
		{"no repository", t.TempDir(), "main", BranchFacts{}},
		{"missing directory inside a repository", filepath.Join(main, "no", "such"), "other", BranchFacts{Readable: true, Current: "main", WorkflowBranchExists: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no repository" && inRepo(tc.dir) {
				t.Skip("the temporary directory is inside a repository")
			}
			if got := Branch(tc.dir, tc.workflow); got != tc.want {
				t.Errorf("Branch(%s, %q) = %+v, want %+v", tc.dir, tc.workflow, got, tc.want)
			}
		})
	}
}

func inRepo(dir string) bool {
	_, ok := findGitDir(filepath.Dir(dir))
	return ok
}

func TestBranchOddRepositories(t *testing.T) {
	hash := strings.Repeat("ab", 20)
	tests := []struct {
		name  string
		files map[string]string // relative to the test directory; "repo" is where Branch looks
		link  [2]string         // HEAD symlink: name, target
		want  BranchFacts
	}{
		{"hand-made repository", map[string]string{"repo/.git/HEAD": "ref: refs/heads/dev\n", "repo/.git/refs/heads/wf": hash + "\n"},
			[2]string{}, BranchFacts{Readable: true, Current: "dev", WorkflowBranchExists: true}},
		{"empty loose ref does not count", map[string]string{"repo/.git/HEAD": "ref: refs/heads/dev\n", "repo/.git/refs/heads/wf": ""},
			[2]string{}, BranchFacts{Readable: true, Current: "dev"}},
		{"packed-refs with peeled tags and CRLF", map[string]string{"repo/.git/HEAD": hash + "\n",
			"repo/.git/packed-refs": "# pack-refs with: peeled fully-peeled sorted \r\n" + hash + " refs/tags/v1\r\n^" + hash + "\r\n" + hash + " refs/heads/wf\r\n"},
			[2]string{}, BranchFacts{Readable: true, Detached: true, WorkflowBranchExists: true}},
		{"gitdir file, relative", map[string]string{"repo/.git": "gitdir: ../store/wt\n", "store/wt/HEAD": "ref: refs/heads/topic\n",
			"store/wt/commondir": "../common\n", "store/common/refs/heads/wf": hash}, [2]string{},
			BranchFacts{Readable: true, Current: "topic", WorkflowBranchExists: true}},
		{"gitdir file naming nothing", map[string]string{"repo/.git": "gitdir: ../gone\n"}, [2]string{}, BranchFacts{}},
		{".git file without gitdir", map[string]string{"repo/.git": "hello\n"}, [2]string{}, BranchFacts{}},
		{"garbage HEAD", map[string]string{"repo/.git/HEAD": "not a ref\n"}, [2]string{}, BranchFacts{}},
		{"HEAD naming no ref", map[string]string{"repo/.git/HEAD": "ref: HEAD\n"}, [2]string{}, BranchFacts{}},
		{"reftable repository", map[string]string{"repo/.git/HEAD": "ref: refs/heads/.invalid\n"}, [2]string{}, BranchFacts{}},
		{"symbolic-link HEAD", map[string]string{"repo/.git/refs/heads/dev": hash}, [2]string{"repo/.git/HEAD", "refs/heads/dev"},
			BranchFacts{Readable: true, Current: "dev"}},
		{"symbolic-link HEAD out of the repository", map[string]string{"repo/.git/refs/heads/dev": hash, "elsewhere": "ref: refs/heads/evil\n"},
			[2]string{"repo/.git/HEAD", "../../elsewhere"}, BranchFacts{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			if err := os.MkdirAll(filepath.Join(base, "repo"), 0o755); err != nil {
				t.Fatal(err)
			}
			for rel, content := range tc.files {
				write(t, base, rel, content)
			}
			if tc.link[0] != "" {
				if err := os.Symlink(tc.link[1], filepath.Join(base, filepath.FromSlash(tc.link[0]))); err != nil {
					t.Skip("no symbolic links:", err)
				}
			}
			if tc.want == (BranchFacts{}) && inRepo(base) {
				t.Skip("the temporary directory is inside a repository")
			}
			if got := Branch(filepath.Join(base, "repo"), "wf"); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidBranch(t *testing.T) {
	for name, want := range map[string]bool{
		"main": true, "feature/REQ-0042-export": true, "bugfix/BUG-1_x": true,
		"": false, "../x": false, "a/../b": false, "/abs": false, "a/": false, "a//b": false, ".hidden": false,
		"a/.b": false, "x.lock": false, `a\b`: false, "a b": false, "a~1": false, "a^": false, "a:b": false,
		"a?": false, "a*": false, "a[": false, "a@{1}": false, "a\x00": false,
	} {
		if got := validBranch(name); got != want {
			t.Errorf("validBranch(%q) = %v, want %v", name, got, want)
		}
	}
}

// A git directory given as such (what --git-dir names, a bare repository)
// is read directly; a directory that only has a HEAD is not one.
func TestBranchOfAGitDirectory(t *testing.T) {
	main := repo(t)
	got := Branch(filepath.Join(main, ".git"), "feature/x")
	if !got.Readable || got.Current != "main" || !got.WorkflowBranchExists {
		t.Errorf("Branch(.git) = %+v", got)
	}
	bare := filepath.Join(t.TempDir(), "bare.git")
	git(t, main, "clone", "-q", "--bare", main, bare)
	if got := Branch(bare, "other"); !got.Readable || got.Current != "main" || !got.WorkflowBranchExists {
		t.Errorf("Branch(bare) = %+v", got)
	}
	decoy := t.TempDir()
	write(t, decoy, "HEAD", "ref: refs/heads/other\n")
	if got := Branch(decoy, ""); got.Readable {
		t.Errorf("a directory with a HEAD file only: %+v", got)
	}
}

// The workflow branch is named as the policy reads it: a full ref name or
// spaces around it find the same branch.
func TestBranchWorkflowBranchSpellings(t *testing.T) {
	main := repo(t)
	for _, name := range []string{"feature/x", "refs/heads/feature/x", " feature/x\n"} {
		if got := Branch(main, name); !got.WorkflowBranchExists {
			t.Errorf("Branch(%q) = %+v", name, got)
		}
	}
	if got := Branch(main, "refs/heads/"); got.WorkflowBranchExists {
		t.Errorf("an empty name after refs/heads/: %+v", got)
	}
}
