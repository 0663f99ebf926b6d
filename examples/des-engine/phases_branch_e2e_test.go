package main

// The branch guard (CONTRACT §8: DES-BRANCH-PROTECTED,
// DES-BRANCH-INTERMEDIATE) on real git repositories, through the built hook.
// Harness: phases_e2e_test.go.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// branchRepo is a git repository at a new directory with one commit on
// branch initial and the workflow branch created beside it (not checked
// out). DES's own directory is ignored, as the README advises.
func branchRepo(t *testing.T, initial string) string {
	t.Helper()
	root := newTestProject(t, projGit(initial), projFiles(branchFiles...))
	git(t, root, "branch", workflowBranch)
	return root
}

// branchFiles are the files of branchRepo's first commit.
var branchFiles = []string{"README.md", "shop\n", "sub/cart.js", "export const total = () => 0\n", ".gitignore", ".des/\n"}

// initRepo makes dir (created when missing) a repository like branchRepo's,
// without the workflow branch.
func initRepo(t *testing.T, dir, initial string) {
	t.Helper()
	gitFirstCommit(t, dir, initial, branchFiles...)
}

// withWorkflow writes the workflow state (and the plan) into dir.
func withWorkflow(t *testing.T, dir string, state doc) {
	t.Helper()
	writeFile(t, dir, ".isdlc/state.json", marshalState(t, state))
	writeFile(t, dir, planPath, planV1)
}

// The commit forms DES detects, each on main during an active workflow
// whose branch exists: protected. Commands that are no commit: no opinion.
func TestPhasesBranchProtectedCommitForms(t *testing.T) {
	t.Parallel()
	root := branchRepo(t, "main")
	withWorkflow(t, root, workflowState(featurePhases, 5))
	protected := denies("DES-BRANCH-PROTECTED").with("main", workflowBranch)
	for _, c := range []struct {
		command string
		w       want
	}{
		{"git commit -m x", protected},
		{"git commit -am 'wip'", protected},
		{"git commit --amend --no-edit", protected},
		{"git -c user.name=x commit -m x", protected},
		{"git -C sub commit -m x", protected},
		{"g=git; $g commit -m x", protected},
		{"cd sub && git commit -m x", protected},
		{"git add -A && git commit -m x", protected},
		{"npm test; git commit -m x", protected},
		{heredocCommit, protected},
		{`bash -c "git commit -m x"`, protected},
		{"(cd sub && git commit -m x)", protected},
		{"git commit -m x || true", protected},
		// No commit at all (the peer hook's /\bgit\s+commit\b/ matched some).
		{`echo "git commit"`, allow},
		{"git commit-tree HEAD^{tree} -m x", allow},
		{"git log --grep commit", allow},
		{"git status", allow},
		{"npm test", allow},
	} {
		t.Run(c.command, func(t *testing.T) {
			t.Parallel()
			check(t, root, nil, bashEvent(t, root, c.command), c.w)
		})
	}
}

// The guard's conditions one by one.
func TestPhasesBranchGuard(t *testing.T) {
	t.Parallel()
	last := len(featurePhases) - 1
	cases := []struct {
		name    string
		initial string // the branch the repository starts on
		setup   func(t *testing.T, root string)
		state   func() doc
		w       want
	}{
		{"main, workflow branch exists", "main", nil, func() doc { return workflowState(featurePhases, 5) },
			denies("DES-BRANCH-PROTECTED").with("main", workflowBranch)},
		{"master", "master", nil, func() doc { return workflowState(featurePhases, 5) },
			denies("DES-BRANCH-PROTECTED").with("master", workflowBranch)},
		{"main at the last phase", "main", nil, func() doc { return workflowState(featurePhases, last) },
			denies("DES-BRANCH-PROTECTED")},
		{"main, workflow branch not created", "main", nil, func() doc {
			return set(workflowState(featurePhases, 5), "active_workflow.git_branch.name", "feature/REQ-0002-not-yet")
		}, allow},
		{"main, branch merged", "main", nil, func() doc {
			return set(workflowState(featurePhases, 5), "active_workflow.git_branch.status", "merged")
		}, allow},
		{"main, no git_branch", "main", nil, func() doc {
			return set(workflowState(featurePhases, 5), "active_workflow.git_branch", nil)
		}, allow},
		{"workflow branch, intermediate phase", "main", func(t *testing.T, root string) { git(t, root, "checkout", "-q", workflowBranch) },
			func() doc { return workflowState(featurePhases, 5) },
			denies("DES-BRANCH-INTERMEDIATE").with(workflowBranch, "06-implementation", "08-code-review")},
		{"workflow branch, first phase", "main", func(t *testing.T, root string) { git(t, root, "checkout", "-q", workflowBranch) },
			func() doc { return workflowState(featurePhases, 0) },
			denies("DES-BRANCH-INTERMEDIATE").with("01-requirements")},
		{"workflow branch, last phase", "main", func(t *testing.T, root string) { git(t, root, "checkout", "-q", workflowBranch) },
			func() doc { return workflowState(featurePhases, last) }, allow},
		{"another branch", "main", func(t *testing.T, root string) { git(t, root, "checkout", "-q", "-b", "scratch") },
			func() doc { return workflowState(featurePhases, 5) }, allow},
		{"detached HEAD", "main", func(t *testing.T, root string) { git(t, root, "checkout", "-q", "--detach") },
			func() doc { return workflowState(featurePhases, 5) }, allow},
		{"workflow branch only in packed-refs", "main", func(t *testing.T, root string) {
			git(t, root, "pack-refs", "--all")
			if _, err := os.Stat(filepath.Join(root, ".git", "refs", "heads", filepath.FromSlash(workflowBranch))); err == nil {
				t.Fatal("setup: the loose ref survived pack-refs")
			}
		}, func() doc { return workflowState(featurePhases, 5) }, denies("DES-BRANCH-PROTECTED")},
		{"packed-refs, on the workflow branch", "main", func(t *testing.T, root string) {
			git(t, root, "checkout", "-q", workflowBranch)
			git(t, root, "pack-refs", "--all")
		}, func() doc { return workflowState(featurePhases, 5) }, denies("DES-BRANCH-INTERMEDIATE")},
		{"unreadable HEAD", "main", func(t *testing.T, root string) { writeFile(t, root, ".git/HEAD", "garbage\n") },
			func() doc { return workflowState(featurePhases, 5) }, allow},
		{"no active workflow", "main", nil, func() doc {
			s := workflowState(featurePhases, 5)
			s["active_workflow"] = nil
			return s
		}, allow},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := branchRepo(t, c.initial)
			if c.setup != nil {
				c.setup(t, root)
			}
			withWorkflow(t, root, c.state())
			cmd := "git commit -m wip"
			if i%2 == 1 {
				cmd = "git -c core.editor=true commit -am wip"
			}
			check(t, root, nil, bashEvent(t, root, cmd), c.w)
		})
	}

	t.Run("no repository", func(t *testing.T) {
		t.Parallel()
		root := newProject(t, workflowState(featurePhases, 5))
		check(t, root, nil, bashEvent(t, root, "git commit -m wip"), allow)
	})
	t.Run("no state", func(t *testing.T) {
		t.Parallel()
		root := branchRepo(t, "main")
		check(t, root, nil, bashEvent(t, root, "git commit -m wip"), allow)
	})
}

// Worktrees: HEAD lives in .git/worktrees/<name>/ (reached through the
// worktree's `gitdir:` file) and branches in the common directory.
func TestPhasesBranchGuardWorktrees(t *testing.T) {
	t.Parallel()
	t.Run("worktree on main, repository on the workflow branch", func(t *testing.T) {
		t.Parallel()
		repo := branchRepo(t, "main")
		git(t, repo, "checkout", "-q", workflowBranch)
		wt := filepath.Join(t.TempDir(), "wt-main")
		git(t, repo, "worktree", "add", "-q", wt, "main")
		withWorkflow(t, wt, workflowState(featurePhases, 5))
		check(t, wt, nil, bashEvent(t, wt, "git commit -m wip"), denies("DES-BRANCH-PROTECTED").with("main", workflowBranch))
		check(t, wt, nil, bashEvent(t, wt, "cd sub && git commit -m wip"), denies("DES-BRANCH-PROTECTED"))
	})
	t.Run("worktree on the workflow branch", func(t *testing.T) {
		t.Parallel()
		repo := branchRepo(t, "main")
		wt := filepath.Join(t.TempDir(), "wt-feature")
		git(t, repo, "worktree", "add", "-q", wt, workflowBranch)
		withWorkflow(t, wt, workflowState(featurePhases, 5))
		check(t, wt, nil, bashEvent(t, wt, "git commit -m wip"), denies("DES-BRANCH-INTERMEDIATE").with(workflowBranch))
		withWorkflow(t, wt, workflowState(featurePhases, len(featurePhases)-1))
		check(t, wt, nil, bashEvent(t, wt, "git commit -m wip"), allow)
	})
}

// The branch is read where the commit runs. Assumption (§8 says "on a
// protected branch", the seam gives each commit its own dir and branch): a
// commit in a nested, separate repository is judged on that repository's
// branch and refs, not the project root's.
func TestPhasesBranchGuardNestedRepository(t *testing.T) {
	t.Parallel()
	t.Run("outer on main, nested repository without the workflow branch", func(t *testing.T) {
		t.Parallel()
		root := branchRepo(t, "main")
		initRepo(t, filepath.Join(root, "vendor", "lib"), "main")
		withWorkflow(t, root, workflowState(featurePhases, 5))
		check(t, root, nil, bashEvent(t, root, "git commit -m wip"), denies("DES-BRANCH-PROTECTED"))
		check(t, root, nil, bashEvent(t, root, "cd vendor/lib && git commit -m wip"), allow)
	})
	t.Run("outer on another branch, nested repository on main with the workflow branch", func(t *testing.T) {
		t.Parallel()
		root := branchRepo(t, "main")
		git(t, root, "checkout", "-q", "-b", "scratch")
		nested := filepath.Join(root, "vendor", "lib")
		initRepo(t, nested, "main")
		git(t, nested, "branch", workflowBranch)
		withWorkflow(t, root, workflowState(featurePhases, 5))
		check(t, root, nil, bashEvent(t, root, "git commit -m wip"), allow)
		check(t, root, nil, bashEvent(t, root, "cd vendor/lib && git commit -m wip"), denies("DES-BRANCH-PROTECTED"))
		check(t, root, nil, bashEvent(t, root, "git -C vendor/lib commit -m wip"), denies("DES-BRANCH-PROTECTED"))
	})
}

// iSDLC's finalize (00-sdlc-orchestrator.md, "Branch Merge (Workflow
// Completion)"): after the last gate, commit what is left on the workflow
// branch, then `git checkout main && git merge --no-ff {branch}`, and only
// after the merge set git_branch.status to "merged". So the merge runs on
// main while the status is still "active" and the branch exists. §8's branch
// guard is about `git commit`; a merge (or a pull, or commit-tree, which
// moves no branch) is not one, and blocking it would stop every workflow at
// its finalize. (DES's commit detection reports merges for Gate 3, which
// judges the step files they bring; that is a different question.)
func TestPhasesBranchGuardFinalizeMerge(t *testing.T) {
	t.Parallel()
	last := len(featurePhases) - 1
	done := readyToAdvance(featurePhases, last)
	set(done, "phases.08-code-review.status", "completed")
	set(done, "active_workflow.phase_status.08-code-review", "completed")
	set(done, "active_workflow.current_phase_index", len(featurePhases))
	merge := `git merge --no-ff ` + workflowBranch + ` -m "merge: feature ` + artifactFolder + ` — all gates passed"`

	// Pre-merge commit on the workflow branch, then checkout and merge in
	// one command (HEAD is still the workflow branch when the hook runs).
	onBranch := branchRepo(t, "main")
	git(t, onBranch, "checkout", "-q", workflowBranch)
	withWorkflow(t, onBranch, done)
	check(t, onBranch, nil, bashEvent(t, onBranch, "git add -A && git commit -m 'wip: pre-merge'"), allow)
	check(t, onBranch, nil, bashEvent(t, onBranch, "git checkout main && "+merge), allow)

	// The merge as its own call, on main.
	onMain := branchRepo(t, "main")
	withWorkflow(t, onMain, done)
	for _, command := range []string{merge, "git pull --ff-only", "git commit-tree HEAD^{tree} -p HEAD -m x"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			check(t, onMain, nil, bashEvent(t, onMain, command), allow)
		})
	}
	// A plain commit on main at that moment is still protected.
	check(t, onMain, nil, bashEvent(t, onMain, "git commit -m 'hotfix'"), denies("DES-BRANCH-PROTECTED"))
}

// The branch guard on ref moves, through git's reference-transaction hook
// des installs: a commit made on main without `git commit` (commit-tree
// and update-ref, a push to a local ref, commit -n) while the workflow's
// branch is active is refused like `git commit` on main; merging the
// workflow branch in (a fast-forward, or a merge commit) is not a commit of
// main's own and passes.
func TestPhasesBranchGuardOnRefMoves(t *testing.T) {
	t.Parallel()
	root := branchRepo(t, "main")
	withWorkflow(t, root, workflowState(featurePhases, 5))
	if r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin); r.code != 0 {
		t.Fatalf("install: %+v", r)
	}
	before := git(t, root, "rev-parse", "main")
	for _, command := range []string{
		"C=$(git commit-tree HEAD^{tree} -p HEAD -m x) && git update-ref refs/heads/main $C",
		"C=$(git commit-tree HEAD^{tree} -p HEAD -m x) && git checkout -q -B main $C",
		"echo x >> README.md && git commit -qn -am x",
	} {
		out, code := runAgentBash(t, root, command)
		if code == 0 || !strings.Contains(out, "DES-BRANCH-PROTECTED") {
			t.Errorf("%s: exit %d, want DES-BRANCH-PROTECTED:\n%s", command, code, out)
		}
		if got := git(t, root, "rev-parse", "main"); got != before {
			t.Errorf("%s: main moved", command)
		}
		git(t, root, "checkout", "-q", "--", "README.md")
	}
	// The workflow branch gets a commit of its own (no guard refuses it
	// here: the test's workflow is in its last phase only for main), then
	// main takes it by merging.
	git(t, root, "checkout", "-q", workflowBranch)
	writeFile(t, root, "feature.txt", "done\n")
	git(t, root, "add", "feature.txt")
	if out, code := gitRun(t, root, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "feature"); code != 0 {
		t.Fatalf("commit on the workflow branch: %s", out)
	}
	git(t, root, "checkout", "-q", "main")
	if out, code := runAgentBash(t, root, "git merge -q --ff-only "+workflowBranch); code != 0 {
		t.Errorf("a fast-forward of main to the workflow branch was refused:\n%s", out)
	}
}

// The same with git's hooks switched off in a way the Bash guard cannot
// read (a script): the check after the call moves main back.
func TestPhasesBranchGuardRefCheckAfterBash(t *testing.T) {
	t.Parallel()
	root := branchRepo(t, "main")
	withWorkflow(t, root, workflowState(featurePhases, 5))
	if r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin); r.code != 0 {
		t.Fatalf("install: %+v", r)
	}
	before := git(t, root, "rev-parse", "main")
	script := filepath.Join(t.TempDir(), "land.sh")
	testenv.WriteExecutable(t, script, []byte("C=$(git commit-tree HEAD^{tree} -p HEAD -m x) && git -c core.hooksPath=/dev/null update-ref refs/heads/main $C\n"))
	a := agentBash(t, root, root, "sh "+script)
	if !strings.Contains(a.reason, "DES-BRANCH-PROTECTED") {
		t.Errorf("after the call: %q (deny %q); want DES-BRANCH-PROTECTED", a.reason, a.deny)
	}
	if got := git(t, root, "rev-parse", "main"); got != before {
		t.Errorf("main was not moved back")
	}
}
