package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Git's honest rewrites of guarded documents end to end: the built hook
// around commands really run by bash in a real repository, the trail read
// afterwards.

// gsStepOf is the step file with a note, standing for a step's content on
// some branch or in some state of work.
func gsStepOf(note string) string {
	// A plan (TODO, every canonical phase NOT_EXECUTED): what Gate 3 lets
	// a branch hold, so the moves below are honest ones.
	var phases []string
	for i, name := range canonicalPhases {
		phases = append(phases, `{"phase_name": "`+name+`", "phase_index": `+itoa(i)+`, "status": "NOT_EXECUTED"}`)
	}
	return `{"task_id": "01-01", "state": {"status": "TODO"}, "notes": "` + note + `", "tdd_cycle": {"phase_execution_log": [` + strings.Join(phases, ", ") + `]}}` + "\n"
}

// gsProject is effProject with everything committed on main and a branch
// feat whose step file differs; DES has recorded it (a first call ran).
func gsProject(t *testing.T) string {
	t.Helper()
	root := effProject(t)
	gitIdentity(t, root)
	git(t, root, "checkout", "-qb", "main")
	writeFile(t, root, effStep, gsStepOf("main"))
	writeFile(t, root, ".gitignore", ".des/audit/\n")
	git(t, root, "add", "-A")
	git(t, root, "commit", "-qm", "base", "--no-verify")
	git(t, root, "checkout", "-qb", "feat")
	writeFile(t, root, effStep, gsStepOf("feat"))
	git(t, root, "commit", "-qam", "feat's step", "--no-verify")
	git(t, root, "checkout", "-q", "main")
	begin(t, root)
	return root
}

func headOf(t *testing.T, root, rev string) string {
	t.Helper()
	return strings.TrimSpace(git(t, root, "rev-parse", rev))
}

// noIntegrity fails when a call's PostToolUse reported DES-INTEGRITY.
func noIntegrity(t *testing.T, what string, post afterTool) {
	t.Helper()
	if post.Decision != "" || strings.Contains(post.Reason+post.Specific.AdditionalContext, "DES-INTEGRITY") {
		t.Fatalf("%s was reported: %+v", what, post)
	}
}

// gitSyncs are the GIT_SYNC lines of the trail for one tool call.
func gitSyncs(t *testing.T, root, toolUseID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range auditLines(t, root, "GIT_SYNC") {
		if l["tool_use_id"] == toolUseID {
			out = append(out, l)
		}
	}
	return out
}

// wantGitSync checks one GIT_SYNC of a call: the paths, and HEAD before and
// after (commit and ref).
func wantGitSync(t *testing.T, root, toolUseID string, before, after [2]string, paths ...string) map[string]any {
	t.Helper()
	lines := gitSyncs(t, root, toolUseID)
	if len(lines) != 1 {
		t.Fatalf("%d GIT_SYNC lines for %s; trail:\n%s", len(lines), toolUseID, auditText(t, root))
	}
	l := lines[0]
	if got := fmt.Sprint(l["paths"]); got != fmt.Sprint(paths) {
		t.Errorf("GIT_SYNC paths = %s; want %v", got, paths)
	}
	for name, want := range map[string][2]string{"head_before": before, "head_after": after} {
		h, _ := l[name].(map[string]any)
		if h["commit"] != want[0] || h["ref"] != want[1] {
			t.Errorf("GIT_SYNC %s = %v; want %v", name, h, want)
		}
	}
	return l
}

// allowedWrite writes a guarded document through the write guard, as
// Claude Code's Write tool does: PreToolUse (allowed), the write,
// PostToolUse.
func allowedWrite(t *testing.T, root, rel, content string) {
	t.Helper()
	pre := writeToolEvent(root, "Write", rel, map[string]any{"content": content})
	if r := denyReason(t, runHookProcess(t, root, nil, pre)); r != "" {
		t.Fatalf("the Write of %s was denied: %s", rel, r)
	}
	writeFile(t, root, rel, content)
	post := writeToolEvent(root, "Write", rel, map[string]any{"content": content})
	post["hook_event_name"] = "PostToolUse"
	post["tool_response"] = map[string]any{"filePath": filepath.Join(root, rel)}
	runHookProcess(t, root, nil, post)
}

func TestE2EGitSyncCheckout(t *testing.T) {
	t.Parallel()
	root := gsProject(t)
	mainHead, featHead := headOf(t, root, "main"), headOf(t, root, "feat")
	_, post := bashToolCall(t, root, "toolu_co", "git checkout -q feat")
	noIntegrity(t, "git checkout feat", post)
	if fileText(t, root, effStep) != gsStepOf("feat") {
		t.Fatalf("the work tree does not have feat's step:\n%s", fileText(t, root, effStep))
	}
	wantGitSync(t, root, "toolu_co", [2]string{mainHead, "refs/heads/main"}, [2]string{featHead, "refs/heads/feat"}, effStep)

	// The next commit keeps feat's step; and back on main, main's.
	_, post = bashToolCall(t, root, "toolu_ls", "ls >/dev/null")
	noIntegrity(t, "a call after the checkout", post)
	_, post = bashToolCall(t, root, "toolu_back", "git switch -q main")
	noIntegrity(t, "git switch main", post)
	if fileText(t, root, effStep) != gsStepOf("main") {
		t.Fatal("main's step is not back")
	}
	if git(t, root, "show", "feat:"+effStep) != gsStepOf("feat") {
		t.Fatal("feat's commit lost its step")
	}
}

func TestE2EGitSyncPull(t *testing.T) {
	t.Parallel()
	root := gsProject(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	git(t, root, "clone", "-q", "--bare", root, remote)
	git(t, root, "remote", "add", "origin", remote)
	git(t, root, "fetch", "-q", "origin")
	git(t, root, "branch", "-q", "--set-upstream-to=origin/main", "main")

	// A teammate updates the step in a clone of their own and pushes.
	mate := filepath.Join(t.TempDir(), "mate")
	git(t, filepath.Dir(mate), "clone", "-q", remote, mate)
	git(t, mate, "config", "user.email", "mate@example.com")
	git(t, mate, "config", "user.name", "mate")
	writeFile(t, mate, effStep, gsStepOf("teammate"))
	git(t, mate, "commit", "-qam", "teammate's step", "--no-verify")
	git(t, mate, "push", "-q", "origin", "main")

	before := headOf(t, root, "HEAD")
	_, post := bashToolCall(t, root, "toolu_pull", "git pull -q --ff-only")
	noIntegrity(t, "git pull", post)
	if fileText(t, root, effStep) != gsStepOf("teammate") {
		t.Fatalf("the teammate's step was not kept:\n%s", fileText(t, root, effStep))
	}
	wantGitSync(t, root, "toolu_pull", [2]string{before, "refs/heads/main"}, [2]string{headOf(t, root, "HEAD"), "refs/heads/main"}, effStep)
}

func TestE2EGitSyncStashAndPop(t *testing.T) {
	t.Parallel()
	root := gsProject(t)
	head := [2]string{headOf(t, root, "HEAD"), "refs/heads/main"}
	inProgress := gsStepOf("in progress")
	allowedWrite(t, root, effStep, inProgress)

	_, post := bashToolCall(t, root, "toolu_stash", "git stash -q")
	noIntegrity(t, "git stash", post)
	if fileText(t, root, effStep) != gsStepOf("main") {
		t.Fatal("git stash was undone")
	}
	l := wantGitSync(t, root, "toolu_stash", head, head, effStep)
	if !strings.Contains(fmt.Sprint(l["files"]), "kept:") {
		t.Errorf("what git stashed is not kept: %v", l["files"])
	}

	_, post = bashToolCall(t, root, "toolu_pop", "git stash pop -q")
	noIntegrity(t, "git stash pop", post)
	if fileText(t, root, effStep) != inProgress {
		t.Fatalf("the step in progress is not back:\n%s", fileText(t, root, effStep))
	}
	l = wantGitSync(t, root, "toolu_pop", head, head, effStep)
	if !strings.Contains(fmt.Sprint(l["files"]), "from:set_aside") {
		t.Errorf("GIT_SYNC files = %v", l["files"])
	}
}

func TestE2EGitSyncCheckoutPathToHead(t *testing.T) {
	t.Parallel()
	root := gsProject(t)
	head := [2]string{headOf(t, root, "HEAD"), "refs/heads/main"}
	inProgress := gsStepOf("in progress")
	allowedWrite(t, root, effStep, inProgress)
	_, post := bashToolCall(t, root, "toolu_co", "git checkout -- "+effStep)
	noIntegrity(t, "git checkout -- step", post)
	if fileText(t, root, effStep) != gsStepOf("main") {
		t.Fatal("HEAD's step was undone")
	}
	wantGitSync(t, root, "toolu_co", head, head, effStep)
	// What git discarded is kept, and a person can take it back.
	r := runBinCLI(t, root, "integrity", "kept")
	id := regexp.MustCompile(`(?m)^([0-9a-f]{12})  .*` + regexp.QuoteMeta(effStep) + `.*replaced by git`).FindStringSubmatch(r.stdout)
	if r.code != 0 || id == nil {
		t.Fatalf("integrity kept: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinCLI(t, root, "integrity", "restore", id[1]); r.code != 0 || fileText(t, root, effStep) != inProgress {
		t.Fatalf("integrity restore: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestE2EForgedStepKeptAndTakenBack(t *testing.T) {
	t.Parallel()
	root := gsProject(t)
	forged := strings.TrimSuffix(gsStepOf("forged"), "\n")
	// Around the guard: a computed target; a git command beside it does not
	// make it honest.
	cmd := `printf '%s' '` + forged + `' > $(printf %s ` + effStep + `); git status --short >/dev/null; git stash list`
	_, post := bashToolCall(t, root, "toolu_forge", cmd)
	wantRestored(t, post, effStep)
	m := regexp.MustCompile("kept as ([0-9a-f]{12}) \\(`des-hook integrity restore ([0-9a-f]{12})` takes it back\\)").FindStringSubmatch(post.Reason)
	if m == nil || m[1] != m[2] {
		t.Fatalf("DES-INTEGRITY does not name the kept content:\n%s", post.Reason)
	}
	id := m[1]
	if !strings.Contains(post.Reason, filepath.Join("integrity", "kept")) {
		t.Errorf("DES-INTEGRITY does not say where the content is kept:\n%s", post.Reason)
	}
	if fileText(t, root, effStep) != gsStepOf("main") {
		t.Fatal("the forged step was not restored")
	}
	if len(gitSyncs(t, root, "toolu_forge")) != 0 {
		t.Fatal("a forged step was audited as GIT_SYNC")
	}
	if r := runBinCLI(t, root, "integrity", "kept"); r.code != 0 || !strings.Contains(r.stdout, id+"  ") || !strings.Contains(r.stdout, "undone by DES (toolu_forge)") {
		t.Fatalf("integrity kept: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Not from inside an agent's call.
	runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_take", "des-hook integrity restore "+id))
	if r := runBinCLI(t, root, "integrity", "restore", id); r.code != 2 || !strings.Contains(r.stderr, "toolu_take") {
		t.Fatalf("restore during a call: code %d\n%s", r.code, r.stderr)
	}
	noIntegrity(t, "the refused restore", readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_take", "des-hook integrity restore "+id))))

	// A person, from a terminal: back, and kept by the next call's check.
	if r := runBinCLI(t, root, "integrity", "restore", id); r.code != 0 {
		t.Fatalf("integrity restore: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fileText(t, root, effStep) != forged {
		t.Fatal("not taken back")
	}
	runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_long", "sleep 1"))
	_, post = bashToolCall(t, root, "toolu_after", "ls >/dev/null")
	noIntegrity(t, "a call after the restore", post)
	noIntegrity(t, "a long call after the restore", readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_long", "sleep 1"))))
	if fileText(t, root, effStep) != forged {
		t.Fatal("the content taken back was undone")
	}
}

// A workflow state edited by hand between calls, then reset away by the
// agent's `git reset --hard`: git's doing, taken, and the edit kept.
func TestE2EGitSyncResetKeepsHandEdit(t *testing.T) {
	t.Parallel()
	root := gsProject(t)
	edited := `{"state_version": 7}` + "\n"
	writeFile(t, root, effState, edited)
	_, post := bashToolCall(t, root, "toolu_reset", "git reset -q --hard")
	noIntegrity(t, "git reset --hard", post)
	if fileText(t, root, effState) == edited {
		t.Fatal("git reset --hard did not run")
	}
	head := [2]string{headOf(t, root, "HEAD"), "refs/heads/main"}
	wantGitSync(t, root, "toolu_reset", head, head, effState)
	r := runBinCLI(t, root, "integrity", "kept")
	if r.code != 0 || !strings.Contains(r.stdout, effState) || !strings.Contains(r.stdout, "replaced by git (toolu_reset)") {
		t.Fatalf("integrity kept: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
