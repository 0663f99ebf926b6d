package integrity

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const gsStep = "docs/feature/x/steps/01-01.json"

func gitT(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitProject is project() in a git repository with everything committed
// on main, and a branch feat whose step file differs.
func gitProject(t *testing.T) (string, *Checker) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, c := project(t)
	gitT(t, root, "init", "-q", "-b", "main", ".")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-qm", "base")
	gitT(t, root, "checkout", "-qb", "feat")
	write(t, root, gsStep, `{"task_id": "01-01", "tdd_cycle": {"feat": true}}`)
	gitT(t, root, "commit", "-qam", "feat's step")
	gitT(t, root, "checkout", "-q", "main")
	return root, c
}

// inCall runs command-like fn as a watched call whose command ran the git
// subcommands sub.
func inCall(t *testing.T, c *Checker, id string, sub []string, fn func()) Report {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Begin(ctx, id, nil, 0); err != nil {
		t.Fatal(err)
	}
	fn()
	rep, err := c.EndCall(ctx, Call{ID: id, GitCommands: sub})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestGitCheckoutTaken(t *testing.T) {
	t.Parallel()
	root, c := gitProject(t)
	mainHead := gitT(t, root, "rev-parse", "HEAD")
	// An alias the hook cannot read: HEAD's move alone tells.
	rep := inCall(t, c, "toolu_co", nil, func() { gitT(t, root, "checkout", "-q", "feat") })
	if len(rep.Changes) != 0 {
		t.Fatalf("git checkout feat was undone: %+v", rep.Changes)
	}
	if !strings.Contains(readFile(t, root, gsStep), `"feat": true`) {
		t.Fatal("feat's step is not on disk")
	}
	if len(rep.Synced) != 1 || rep.Synced[0].Path != gsStep || rep.Synced[0].From != "head" || rep.Synced[0].Kept != "" {
		t.Fatalf("Synced = %+v", rep.Synced)
	}
	if rep.GitBefore.Commit != mainHead || rep.GitBefore.Ref != "refs/heads/main" || rep.GitAfter.Ref != "refs/heads/feat" || rep.GitAfter.Commit != gitT(t, root, "rev-parse", "HEAD") {
		t.Fatalf("heads = %+v -> %+v", rep.GitBefore, rep.GitAfter)
	}
	// The next call compares with feat's step.
	if rep := inCall(t, c, "toolu_next", nil, func() {}); len(rep.Changes)+len(rep.Synced) != 0 {
		t.Fatalf("next call: %+v", rep)
	}
}

func TestForgedStepUndoneAndKept(t *testing.T) {
	t.Parallel()
	root, c := gitProject(t)
	good := readFile(t, root, gsStep)
	forged := `{"task_id": "01-01", "tdd_cycle": {"forged": true}}`
	// Even with a git command beside it, content no commit holds is undone.
	rep := inCall(t, c, "toolu_forge", []string{"stash"}, func() { write(t, root, gsStep, forged) })
	if len(rep.Changes) != 1 || !rep.Changes[0].Restored || rep.Changes[0].Kept == "" || len(rep.Synced) != 0 {
		t.Fatalf("report = %+v", rep)
	}
	if readFile(t, root, gsStep) != good {
		t.Fatal("not restored")
	}
	list, err := c.KeptList()
	if err != nil || len(list) != 1 || list[0].ID != rep.Changes[0].Kept || list[0].Why != KeptUndone || list[0].Path != gsStep || list[0].ToolUseID != "toolu_forge" {
		t.Fatalf("kept = %+v, %v", list, err)
	}
	// Not while a call runs.
	if _, err := c.Begin(context.Background(), "toolu_running", nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBack(context.Background(), list[0].ID); !errors.Is(err, ErrCallsRunning) {
		t.Fatalf("PutBack during a call: %v", err)
	}
	if _, err := c.End(context.Background(), "toolu_running", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBack(context.Background(), "nosuch"); !errors.Is(err, ErrNoKept) {
		t.Fatalf("PutBack(nosuch): %v", err)
	}
	if _, err := c.PutBack(context.Background(), list[0].ID); err != nil {
		t.Fatal(err)
	}
	if readFile(t, root, gsStep) != forged {
		t.Fatal("not put back")
	}
	// Taken as the last good state: a concurrent call's check keeps it.
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_a", nil, 0); err != nil {
		t.Fatal(err)
	}
	if rep, err := c.End(ctx, "toolu_a", false); err != nil || len(rep.Changes) != 0 {
		t.Fatalf("after put back: %+v %v", rep, err)
	}
}

func TestGitStashAndPopTaken(t *testing.T) {
	t.Parallel()
	root, c := gitProject(t)
	inProgress := `{"task_id": "01-01", "tdd_cycle": {"red": "done"}}`
	// An allowed write of the step, as the write guard announces one.
	if err := c.Expect(gsStep, []byte(inProgress)); err != nil {
		t.Fatal(err)
	}
	write(t, root, gsStep, inProgress)
	if err := c.Settle(context.Background(), gsStep); err != nil {
		t.Fatal(err)
	}
	rep := inCall(t, c, "toolu_stash", []string{"stash"}, func() { gitT(t, root, "stash") })
	if len(rep.Changes) != 0 || len(rep.Synced) != 1 || rep.Synced[0].Kept == "" {
		t.Fatalf("stash: %+v", rep)
	}
	rep = inCall(t, c, "toolu_pop", []string{"stash"}, func() { gitT(t, root, "stash", "pop") })
	if len(rep.Changes) != 0 || len(rep.Synced) != 1 || rep.Synced[0].From != "set_aside" {
		t.Fatalf("pop: %+v", rep)
	}
	if readFile(t, root, gsStep) != inProgress {
		t.Fatal("the step in progress is not back")
	}
	// reset --hard discards it: taken (HEAD's), and kept.
	rep = inCall(t, c, "toolu_reset", []string{"reset"}, func() { gitT(t, root, "reset", "-q", "--hard") })
	if len(rep.Changes) != 0 || len(rep.Synced) != 1 || rep.Synced[0].Kept == "" {
		t.Fatalf("reset: %+v", rep)
	}
	list, _ := c.KeptList()
	if len(list) != 1 || list[0].Why != KeptByGit {
		t.Fatalf("kept = %+v", list)
	}
}

func TestGitRewriteNeedsGit(t *testing.T) {
	t.Parallel()
	root, c := gitProject(t)
	inProgress := `{"task_id": "01-01", "tdd_cycle": {"red": "done"}}`
	if err := c.Expect(gsStep, []byte(inProgress)); err != nil {
		t.Fatal(err)
	}
	write(t, root, gsStep, inProgress)
	if err := c.Settle(context.Background(), gsStep); err != nil {
		t.Fatal(err)
	}
	// HEAD's content written back without git (and HEAD not moved): undone.
	rep := inCall(t, c, "toolu_cat", []string{"show"}, func() {
		data := gitT(t, root, "show", "HEAD:"+gsStep)
		write(t, root, gsStep, data)
	})
	if len(rep.Changes) != 1 || len(rep.Synced) != 0 {
		t.Fatalf("report = %+v", rep)
	}
	// Deleted while HEAD has it: undone even after a checkout.
	rep = inCall(t, c, "toolu_rm", []string{"checkout"}, func() { os.Remove(filepath.Join(root, gsStep)) })
	if len(rep.Changes) != 1 || rep.Changes[0].What != "deleted" {
		t.Fatalf("report = %+v", rep)
	}
	// git checkout -- step: HEAD's content, taken.
	rep = inCall(t, c, "toolu_co", []string{"checkout"}, func() { gitT(t, root, "checkout", "--", gsStep) })
	if len(rep.Changes) != 0 || len(rep.Synced) != 1 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestGitBranchWithoutStep(t *testing.T) {
	t.Parallel()
	root, c := gitProject(t)
	gitT(t, root, "checkout", "-qb", "nostep")
	gitT(t, root, "rm", "-q", gsStep)
	gitT(t, root, "commit", "-qm", "no step")
	gitT(t, root, "checkout", "-q", "main")
	if rep := inCall(t, c, "toolu_x", nil, func() {}); len(rep.Changes) != 0 {
		t.Fatal(rep)
	}
	rep := inCall(t, c, "toolu_co", nil, func() { gitT(t, root, "checkout", "-q", "nostep") })
	if len(rep.Changes) != 0 || len(rep.Synced) != 1 || rep.Synced[0].What != "deleted" || rep.Synced[0].Kept != "" {
		t.Fatalf("report = %+v", rep)
	}
	rep = inCall(t, c, "toolu_back", nil, func() { gitT(t, root, "checkout", "-q", "main") })
	if len(rep.Changes) != 0 || len(rep.Synced) != 1 || rep.Synced[0].What != "created" {
		t.Fatalf("report = %+v", rep)
	}
}

func TestKeptBounded(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	var last Report
	for i := range KeptMax + 5 {
		last = inCall(t, c, "toolu_f", nil, func() { write(t, root, ".des/config.json", strings.Repeat("x", i+1)) })
	}
	list, err := c.KeptList()
	if err != nil || len(list) != KeptMax {
		t.Fatalf("%d kept, %v", len(list), err)
	}
	if list[len(list)-1].ID != last.Changes[0].Kept || list[0].Size != 6 {
		t.Fatalf("oldest kept: %+v", list[0])
	}
	ents, _ := os.ReadDir(c.keptDir())
	if len(ents) != KeptMax+1 { // the contents and the index
		t.Fatalf("%d files in %s", len(ents), c.keptDir())
	}
}
