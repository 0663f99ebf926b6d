package main

import (
	"os/exec"
	"strings"
	"testing"
)

// mustRunBash runs command with bash in dir, as Claude Code's Bash tool would
// once the hook let it through.
func mustRunBash(t *testing.T, dir, command string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-c", command)
	asClaudeCodeRuns(cmd)
	cmd.Dir = dir
	cmd.Env = append(cleanEnviron(), "GIT_AUTHOR_NAME=des", "GIT_AUTHOR_EMAIL=des@example.com", "GIT_COMMITTER_NAME=des", "GIT_COMMITTER_EMAIL=des@example.com", "GIT_EDITOR=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash -c %q: %v\n%s", command, err, out)
	}
}

// Every spelling of a commit is a commit: global options before it, an
// alias the command defines or the repository defines, a shell alias, a
// subcommand DES cannot read. Unfinished: denied. Finished: no opinion,
// and the command, really run, makes the commit.
func TestE2EGate3CommitSpellings(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	for _, command := range []string{
		"git -c core.hooksPath=/dev/null -c alias.c=commit c -m wip",
		"g=git; $g commit -m x",
		"git $(echo commit) -m x",
		`git "$(printf commit)" -m x`,
		"git ci -m x",
		"git save",
		"git --no-pager -c user.name=x commit -m x",
	} {
		t.Run(command, func(t *testing.T) {
			root := gitProject(t)
			git(t, root, "config", "alias.ci", "commit")
			git(t, root, "config", "alias.save", "!git add -A && git commit -qm save")
			writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
			git(t, root, "add", stepPath)
			r := runHookProcess(t, root, nil, bashEvent(t, root, command))
			if reason := denyReason(t, r); !strings.Contains(reason, "[DES-COMMIT-PHASE-OPEN] "+stepPath) {
				t.Fatalf("unfinished step: want Gate 3's deny, got %q\nstderr %s", reason, r.stderr)
			}

			writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
			git(t, root, "add", stepPath)
			r = runHookProcess(t, root, nil, bashEvent(t, root, command))
			if reason := denyReason(t, r); reason != "" {
				t.Fatalf("finished step: want no opinion, got %q", reason)
			}
			mustRunBash(t, root, command)
			if got := git(t, root, "log", "-1", "--name-only", "--format="); !strings.Contains(got, stepPath) {
				t.Errorf("the allowed command did not commit the step: %q", got)
			}
		})
	}
}

// merge, cherry-pick, revert and rebase make commits from content already
// in the repository: the step files those commits hold are judged.
func TestE2EGate3SequencerCommits(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	git(t, root, "branch", "-M", "main")
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	git(t, root, "commit", "-qm", "finished")
	git(t, root, "checkout", "-qb", "topic")
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "commit", "-qam", "reopened")
	writeFile(t, root, "src/cart.go", "package cart\n")
	git(t, root, "add", "src")
	git(t, root, "commit", "-qm", "code")
	for _, c := range []struct{ head, command string }{
		{"main", "git merge topic"},
		{"main", "git merge --no-ff -m 'merge topic' topic"},
		{"main", "git cherry-pick main..topic"},
		{"main", "git cherry-pick topic~1"},
		{"topic", "git revert --no-edit HEAD~2"}, // back to the version before "finished"
		{"main", "git rebase main topic"},
		{"main", "git -c alias.m=merge m topic"},
	} {
		t.Run(c.command, func(t *testing.T) {
			git(t, root, "checkout", "-q", c.head)
			r := runHookProcess(t, root, nil, bashEvent(t, root, c.command))
			reason := denyReason(t, r)
			if strings.Contains(c.command, "revert") {
				// The parent of the first commit holds no step file: nothing to judge.
				if reason != "" {
					t.Errorf("revert of the step's first commit: %q", reason)
				}
				return
			}
			if !strings.Contains(reason, "[DES-COMMIT-PHASE-OPEN] "+stepPath) {
				t.Errorf("want Gate 3's deny, got %q\nstderr %s", reason, r.stderr)
			}
		})
	}
	// Reverting the commit that reopened the step brings back the finished one.
	git(t, root, "checkout", "-q", "topic")
	if reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, "git revert --no-edit HEAD~1"))); reason != "" {
		t.Errorf("revert to the finished step: %q", reason)
	}
	// Commands that make no commit are left alone.
	for _, command := range []string{"git merge --abort", "git cherry-pick -n topic~1", "git merge --squash topic", "git rebase --abort"} {
		if reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, command))); reason != "" {
			t.Errorf("%s: %q", command, reason)
		}
	}
}

// A commit in a repository named by --git-dir is one des cannot read: in a
// project with step files it fails closed.
func TestE2EGate3GitDirFailsClosed(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, "git --git-dir=.git --work-tree=. commit -am x")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "--git-dir") {
		t.Errorf("reason %q", reason)
	}
}
