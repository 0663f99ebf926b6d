package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// refProject is a git project with des's hooks installed by the built
// `precommit --install`, and a finished step committed on master.
func refProject(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	root := gitProject(t)
	if r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin); r.code != 0 {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	git(t, root, "commit", "-qm", "finished step")
	return root
}

// runAgentBash runs command with bash in dir as the Bash tool would, and returns
// its output and exit status.
func runAgentBash(t *testing.T, dir, command string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-c", command)
	asClaudeCodeRuns(cmd)
	cmd.Dir = dir
	cmd.Env = append(cleanEnviron(), "GIT_AUTHOR_NAME=des", "GIT_AUTHOR_EMAIL=des@example.com", "GIT_COMMITTER_NAME=des", "GIT_COMMITTER_EMAIL=des@example.com", "GIT_EDITOR=true")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// agentRun is one Bash call of an agent through the built hook.
type agentRun struct {
	deny   string // PreToolUse's deny reason, "" when allowed
	out    string // the command's output, when it ran
	code   int
	post   hookRun
	reason string // PostToolUse's block reason (or PostToolUseFailure's context)
}

// agentCalls numbers the calls agentBash makes, for their tool_use_ids.
var agentCalls atomic.Int64

// agentBash runs a Bash call as Claude Code does: PreToolUse through the
// hook, the command with bash when allowed, then PostToolUse (or
// PostToolUseFailure) through the hook.
func agentBash(t *testing.T, root, cwd, command string) agentRun {
	t.Helper()
	ev := bashEvent(t, cwd, command)
	ev["tool_use_id"] = "toolu_ref_" + strings.ReplaceAll(t.Name(), "/", "_") + "_" + strconv.FormatInt(agentCalls.Add(1), 10)
	var a agentRun
	if a.deny = denyReason(t, runHookProcess(t, root, nil, ev)); a.deny != "" {
		return a
	}
	a.out, a.code = runAgentBash(t, cwd, command)
	ev["hook_event_name"] = "PostToolUse"
	ev["tool_response"] = map[string]any{"stdout": a.out, "stderr": "", "interrupted": false}
	if a.code != 0 {
		ev["hook_event_name"] = "PostToolUseFailure"
		ev["error"] = "exit status"
		delete(ev, "tool_response")
	}
	a.post = runHookProcess(t, root, nil, ev)
	if a.post.code != 0 {
		t.Fatalf("%s: exit %d\n%s", ev["hook_event_name"], a.post.code, a.post.stderr)
	}
	if s := strings.TrimSpace(a.post.stdout); s != "" {
		var out struct {
			Decision, Reason   string
			HookSpecificOutput struct {
				AdditionalContext string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("post output: %v\n%s", err, s)
		}
		a.reason = out.Reason + out.HookSpecificOutput.AdditionalContext
	}
	return a
}

// landedUnfinished lists the branches and tags whose commit holds the
// step as unfinished.
func landedUnfinished(t *testing.T, root, unfinished string) []string {
	t.Helper()
	var bad []string
	for _, ref := range strings.Fields(git(t, root, "for-each-ref", "--format=%(refname)", "refs/heads/", "refs/tags/")) {
		if out, code := gitRun(t, root, "show", ref+":"+stepPath); code == 0 && out == unfinished {
			bad = append(bad, ref)
		}
	}
	return bad
}

// Every git form that lands a commit without `git commit`'s pre-commit
// hook, run for real by an agent's Bash call: no branch or tag ends up on
// the unfinished step.
func TestE2EGitRefFormsLandNothingUnfinished(t *testing.T) {
	t.Parallel()
	unfinished := finishedStep(t, "IN_PROGRESS")
	loose := `C=$(git commit-tree -p HEAD -m wip $(git write-tree)) && `
	stage := "git add -A && "
	for i, c := range []struct{ name, command string }{
		{"commit -n", stage + "git commit -n -qm wip"},
		{"update-ref", stage + loose + "git update-ref refs/heads/master $C"},
		{"reset --soft", stage + loose + "git reset --soft $C"},
		{"checkout -B", stage + loose + "git checkout -q -B side $C"},
		{"branch -f", stage + loose + "git branch -f side $C"},
		{"push to itself", stage + loose + "git push -q . $C:refs/heads/side"},
		{"stash create", "git update-ref refs/heads/master $(git stash create)"},
		{"tag", stage + loose + "git tag v1 $C"},
		{"annotated tag", stage + loose + "git tag -a -m v v1 $C"},
		{"fast-import", "printf 'commit refs/heads/fi\\ncommitter d <d@e> 0 +0000\\ndata 2\\nfi\\nM 644 inline " + stepPath + "\\ndata <<EOF\\n%s\\nEOF\\n\\n' \"$(cat " + stepPath + ")\" | git fast-import --quiet"},
		{"worktree commit", "git worktree add -q ../wt-$$ -b wtb && cp " + stepPath + " ../wt-$$/" + stepPath + " && cd ../wt-$$ && git add -A && git commit -n -qm wip"},
		{"nested clone fetched back", "git clone -q . nested && cp " + stepPath + " nested/" + stepPath + " && (cd nested && git add -A && git commit -n -qm wip) && git fetch -q nested master:refs/heads/x"},
		{"nested clone through a remote ref", "git clone -q . nested && cp " + stepPath + " nested/" + stepPath + " && (cd nested && git add -A && git commit -n -qm wip) && git fetch -q nested master:refs/remotes/n/master && git merge -q --ff-only refs/remotes/n/master"},
		{"replace", stage + loose + "git replace HEAD $C"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.Sample(t, i, 2)
			root := refProject(t)
			head := strings.TrimSpace(git(t, root, "rev-parse", "HEAD"))
			writeFile(t, root, stepPath, unfinished)
			a := agentBash(t, root, root, c.command)
			if bad := landedUnfinished(t, root, unfinished); len(bad) > 0 {
				t.Fatalf("%s point at the unfinished step (pre %q, exit %d: %s, post %q)", bad, a.deny, a.code, a.out, a.reason)
			}
			if a.deny == "" && a.code == 0 && !strings.Contains(c.name, "remote") {
				t.Errorf("the command succeeded: %s", a.out)
			}
			if a.deny == "" && !strings.Contains(a.out, "DES-COMMIT-PHASE-OPEN") && !strings.Contains(a.out, "DES-INTERNAL") {
				t.Errorf("the hook's reasons are not in git's output: %s", a.out)
			}
			if c.name == "replace" {
				if out, _ := gitRun(t, root, "for-each-ref", "refs/replace/"); out != "" {
					t.Errorf("a replacement was made: %s", out)
				}
			}
			if got := strings.TrimSpace(git(t, root, "rev-parse", "master")); got != head {
				t.Errorf("master moved from %s to %s", head, got)
			}
		})
	}
}

// Honest operations move refs without a deny: a branch switch, a new
// branch, commits of a finished step and of a plan, a merge, a stash, a
// rebase, a reset to an existing commit, a fetch into refs/remotes.
func TestE2EGitRefHonestFormsPass(t *testing.T) {
	t.Parallel()
	root := refProject(t)
	plan := plannedStep(t, map[string]any{"status": "TODO"})
	for _, command := range []string{
		"git checkout -q -b feature",
		"git checkout -q master && git checkout -q feature",
		"printf x > notes.txt && git add notes.txt && git commit -qm notes",
		"git add -A && git commit -qm plan", // the plan written below, as the Write tool would
		"git checkout -q master && git merge -q --no-edit --no-ff feature",
		"printf y > notes2.txt && git add notes2.txt && git stash -q && git stash pop -q && git commit -qm notes2",
		"git checkout -q feature && printf z > z.txt && git add z.txt && git commit -qm z && git rebase -q master",
		"git reset -q --hard HEAD~1",
		"git tag v1 master",
		"git clone -q . ../nested-$$ && git fetch -q ../nested-$$ HEAD:refs/remotes/n/main",
	} {
		if strings.Contains(command, "plan") {
			writeFile(t, root, "docs/feature/shop/steps/02-01.json", plan)
		}
		a := agentBash(t, root, root, command)
		if a.deny != "" || a.code != 0 || a.reason != "" {
			t.Fatalf("%s: pre %q, exit %d: %s\npost %q", command, a.deny, a.code, a.out, a.reason)
		}
	}
}

// With git's hooks switched off in a way the Bash guard cannot read (a
// script file), the check after the call moves the branch back and tells
// the model.
func TestE2EGitRefBypassedHookIsUndone(t *testing.T) {
	t.Parallel()
	root := refProject(t)
	unfinished := finishedStep(t, "IN_PROGRESS")
	head := strings.TrimSpace(git(t, root, "rev-parse", "HEAD"))
	writeFile(t, root, stepPath, unfinished)
	script := filepath.Join(t.TempDir(), "land.sh")
	testenv.WriteExecutable(t, script, []byte("git add -A\nC=$(git commit-tree -p HEAD -m wip $(git write-tree))\ngit -c core.hooksPath=/dev/null update-ref refs/heads/master $C\ngit -c core.hooksPath=/dev/null branch side $C\n"))
	a := agentBash(t, root, root, "sh "+script)
	if a.deny != "" || a.code != 0 {
		t.Fatalf("pre %q, exit %d: %s", a.deny, a.code, a.out)
	}
	if bad := landedUnfinished(t, root, unfinished); len(bad) > 0 {
		t.Fatalf("%s still point at the unfinished step; post %s", bad, a.post.stdout)
	}
	if got := strings.TrimSpace(git(t, root, "rev-parse", "master")); got != head {
		t.Errorf("master = %s, want it moved back to %s", got, head)
	}
	if _, code := gitRun(t, root, "rev-parse", "--verify", "-q", "refs/heads/side"); code == 0 {
		t.Errorf("side, made by the call, still exists")
	}
	for _, want := range []string{"[DES-COMMIT-PHASE-OPEN]", "refs/heads/master", "refs/heads/side", "moved"} {
		if !strings.Contains(a.reason, want) {
			t.Errorf("post reason lacks %q: %s", want, a.reason)
		}
	}
	// An honest commit afterwards is not moved back.
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	if a := agentBash(t, root, root, "printf n > n.txt && git add n.txt && git commit -qm n"); a.deny != "" || a.code != 0 || a.reason != "" {
		t.Fatalf("honest commit: pre %q, exit %d: %s, post %q", a.deny, a.code, a.out, a.reason)
	}
}

// The reference-transaction hook is one of DES's files: removed by a Bash
// call, it is put back after the call, and the next move is judged again.
func TestE2EGitRefHookRemovedIsRestored(t *testing.T) {
	t.Parallel()
	root := refProject(t)
	hook := filepath.Join(root, ".git", "hooks", "reference-transaction")
	raw, err := os.ReadFile(hook)
	if err != nil || !strings.Contains(string(raw), `--ref-transaction "$1"`) {
		t.Fatalf("installed hook: %v\n%s", err, raw)
	}
	// Spelled so that the Bash guard cannot see it (it denies a plain rm).
	script := filepath.Join(t.TempDir(), "rm.sh")
	testenv.WriteExecutable(t, script, []byte("rm .git/hooks/reference-transaction\n"))
	a := agentBash(t, root, root, "sh "+script)
	if a.deny != "" || !strings.Contains(a.reason, "DES-INTEGRITY") {
		t.Fatalf("pre %q, post %q", a.deny, a.reason)
	}
	if fi, err := os.Stat(hook); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("hook not restored executable: %v %v", fi, err)
	}
	unfinished := finishedStep(t, "IN_PROGRESS")
	writeFile(t, root, stepPath, unfinished)
	git(t, root, "add", stepPath)
	if out, code := gitRun(t, root, "commit", "-n", "-qm", "wip"); code == 0 || !strings.Contains(out, "DES-COMMIT-PHASE-OPEN") {
		t.Fatalf("git commit -n of an unfinished step: exit %d\n%s", code, out)
	}
}

// A reference-transaction hook des did not write is left alone, and the
// lines to add are printed; des's own is rewritten.
func TestE2EGitRefInstallLeavesForeignHook(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	hook := filepath.Join(root, ".git", "hooks", "reference-transaction")
	foreign := "#!/bin/sh\nexit 0\n"
	testenv.WriteExecutable(t, hook, []byte(foreign))
	r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin)
	if r.code != 2 || !strings.Contains(r.stderr, `--ref-transaction "$1" || exit 1`) {
		t.Fatalf("install over a foreign hook: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if raw, _ := os.ReadFile(hook); string(raw) != foreign {
		t.Fatalf("the foreign hook was changed:\n%s", raw)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin); r.code != 0 || !strings.Contains(r.stdout, "installed "+hook) {
			t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
}

// A step written with Bash around the guard and committed with git's hooks
// off in a spelling the Bash guard cannot read: the check after the call
// moves the branch back, and the effect check does not take the forged
// step as git's honest change (its commit was not judged): the work tree
// gets the step back as it was, and the forged content is kept.
func TestE2EGitRefBypassedCommitIsNoGitSync(t *testing.T) {
	t.Parallel()
	root := refProject(t)
	before := fileText(t, root, stepPath)
	head := git(t, root, "rev-parse", "HEAD")
	agentBash(t, root, root, "true") // des records its baseline
	script := filepath.Join(t.TempDir(), "land.sh")
	forged := strings.ReplaceAll(finishedStep(t, "IN_PROGRESS"), "\n", "\\n")
	testenv.WriteExecutable(t, script, []byte("printf '"+forged+"' > "+stepPath+" && git -c core.hooksPath=/dev/null commit -qam forged\n"))
	a := agentBash(t, root, root, "sh "+script)
	if got := git(t, root, "rev-parse", "HEAD"); got != head {
		t.Errorf("the branch was not moved back: %s -> %s (%s)", head, got, a.reason)
	}
	if got := fileText(t, root, stepPath); got != before {
		t.Errorf("the forged step stayed in the work tree:\n%s\npost: %s", got, a.reason)
	}
	if !strings.Contains(a.reason, "DES-INTEGRITY") {
		t.Errorf("the model was not told the step was undone: %q", a.reason)
	}
}
