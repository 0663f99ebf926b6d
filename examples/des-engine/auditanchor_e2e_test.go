package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// anchorProject is a project whose per-user state directory is its own
// (so that a test can remove it whole) and whose trail holds n lines,
// written by the built hook (n protected writes denied).
func anchorProject(t *testing.T, root string, n int, config string) (state string, env []string) {
	t.Helper()
	state = t.TempDir()
	env = []string{"DES_STATE_DIR=" + state}
	if config != "" {
		writeFile(t, root, ".des/config.json", config)
	}
	for i := range n {
		if denyReason(t, runHookProcess(t, root, env, writeEvent(root, "Write", fmt.Sprintf(".des/policies/p%d.rego", i)))) == "" {
			t.Fatal("protected write allowed")
		}
	}
	return state, env
}

// verifyIn runs `audit verify` for root with the project's state directory.
func verifyIn(t *testing.T, root string, env []string) hookRun {
	t.Helper()
	return runIn(t, root, append([]string{"CLAUDE_PROJECT_DIR=" + root}, env...), "audit", "verify")
}

// replaceTrail swaps root's trail for another valid chain of n lines,
// written by the built hook in another project: a rewrite no chain check
// can tell.
func replaceTrail(t *testing.T, root string, n int) {
	t.Helper()
	other := t.TempDir()
	anchorProject(t, other, n, "")
	dir := filepath.Join(root, ".des", "audit")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(other, ".des", "audit"), dir); err != nil {
		t.Fatal(err)
	}
}

func wantAnchorBroken(t *testing.T, r hookRun, source string) {
	t.Helper()
	if r.code != 1 || !strings.Contains(r.stdout, ": anchor: ") || !strings.Contains(r.stdout, source) || !strings.Contains(r.stdout, "--adopt") {
		t.Errorf("verify = %+v, want exit 1 with an anchor break naming %q", r, source)
	}
}

// The whole state directory removed (witness and attestations) and the
// trail rewritten: the heads the decision log recorded still pin it.
func TestE2EAuditAnchorDecisionLog(t *testing.T) {
	root := t.TempDir()
	state, env := anchorProject(t, root, 3, `{"decision_log": "on"}`)
	ok := verifyIn(t, root, env)
	if ok.code != 0 || !strings.Contains(ok.stdout, "audit trail intact: 3 lines") || !strings.Contains(ok.stdout, "anchored: the trail holds the 2 heads") {
		t.Fatalf("honest trail: %+v", ok)
	}
	days, _ := filepath.Glob(filepath.Join(root, ".des", "decisions", "*.jsonl"))
	if len(days) != 1 {
		t.Fatalf("decision logs %v", days)
	}
	data, _ := os.ReadFile(days[0])
	if n := strings.Count(string(data), `"des_audit_head":{"dir":`); n != 2 {
		t.Errorf("%d events with des_audit_head, want 2 (the first decision came before any line):\n%s", n, data)
	}

	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	replaceTrail(t, root, 3)
	wantAnchorBroken(t, verifyIn(t, root, env), "the decision log .des/decisions/")
	// Hook events after the rewrite do not wash it away.
	runHookProcess(t, root, env, writeEvent(root, "Write", ".des/policies/x.rego"))
	wantAnchorBroken(t, verifyIn(t, root, env), "the decision log .des/decisions/")
	// The person who rewrote it adopts it on purpose.
	if r := runIn(t, root, append([]string{"CLAUDE_PROJECT_DIR=" + root}, env...), "audit", "verify", "--adopt"); r.code != 0 {
		t.Fatalf("--adopt: %+v", r)
	}
	if r := verifyIn(t, root, env); r.code != 0 {
		t.Errorf("after --adopt: %+v", r)
	}
}

// The post-commit hook notes the head on each commit; honest commits are
// never failed by it; with the state directory removed and the trail
// rewritten, the notes (even one removed since) still pin it.
func TestE2EAuditAnchorGitNotes(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	state, env := anchorProject(t, root, 2, `{"decision_log": "off"}`) // the notes alone anchor it
	if r := runIn(t, root, env, "precommit", "--install"); r.code != 0 || !strings.Contains(r.stdout, "hooks/post-commit: it runs ") {
		t.Fatalf("install: %+v", r)
	}
	writeFile(t, root, "src/a.go", "package a\n")
	git(t, root, "add", ".")
	if out, code := gitRun(t, root, "commit", "-qm", "a"); code != 0 || strings.Contains(out, "not noted") {
		t.Fatalf("honest commit: exit %d\n%s", code, out)
	}
	note := git(t, root, "notes", "--ref=des-audit", "show", "HEAD")
	if !strings.HasPrefix(note, `{"des_audit_head":{"dir":"`+filepath.Join(root, ".des", "audit")+`",`) || !strings.Contains(note, `"seq":2,`) {
		t.Errorf("note on HEAD: %q", note)
	}
	// A finished step: Gate 3 records its verdict, and the note the head after it.
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", ".")
	if out, code := gitRun(t, root, "commit", "-qm", "step"); code != 0 || strings.Contains(out, "not noted") {
		t.Fatalf("step commit: exit %d\n%s", code, out)
	}
	if note := git(t, root, "notes", "--ref=des-audit", "show", "HEAD"); !strings.Contains(note, `"des_audit_head"`) || strings.Contains(note, `"seq":2,`) {
		t.Errorf("note after Gate 3's verdict: %q", note)
	}
	// A note git cannot write is a warning; the commit stands.
	lock := filepath.Join(root, ".git", "refs", "notes", "des-audit.lock")
	writeFile(t, root, ".git/refs/notes/des-audit.lock", "")
	writeFile(t, root, "src/b.go", "package a\n")
	git(t, root, "add", ".")
	out, code := gitRun(t, root, "commit", "-qm", "b")
	if code != 0 || !strings.Contains(out, "is not noted on the commit") {
		t.Errorf("commit with the notes ref locked: exit %d\n%s", code, out)
	}
	os.Remove(lock)
	if log := git(t, root, "log", "--format=%s"); log != "b\nstep\na\ninit\n" {
		t.Errorf("commits: %q", log)
	}

	ok := verifyIn(t, root, env)
	if ok.code != 0 || !strings.Contains(ok.stdout, "anchored: the trail holds the 2 heads") {
		t.Fatalf("honest trail: %+v", ok)
	}
	// The state directory removed, the trail rewritten, the notes removed:
	// the notes ref's history still holds them.
	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	replaceTrail(t, root, 3)
	git(t, root, "notes", "--ref=des-audit", "remove", "HEAD~1", "HEAD~2")
	if out, _ := gitRun(t, root, "notes", "--ref=des-audit", "list"); out != "" {
		t.Fatalf("notes left: %q", out)
	}
	wantAnchorBroken(t, verifyIn(t, root, env), "the git note on commit ")
	// Dropping the notes' history is refused by the reference-transaction
	// hook: deleted, rewound.
	tip := git(t, root, "rev-parse", "refs/notes/des-audit")
	for _, args := range [][]string{
		{"update-ref", "-d", "refs/notes/des-audit"},
		{"update-ref", "refs/notes/des-audit", "refs/notes/des-audit~1"},
	} {
		out, code := gitRun(t, root, args...)
		if code == 0 || !strings.Contains(out, "refs/notes/des-audit") || !strings.Contains(out, "git will not move the ref") {
			t.Errorf("git %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if now := git(t, root, "rev-parse", "refs/notes/des-audit"); now != tip {
		t.Errorf("the notes ref moved from %s to %s", tip, now)
	}
	wantAnchorBroken(t, verifyIn(t, root, env), "the git note on commit ")
}

// An agent's `git commit`, through the hook as Claude Code runs it: the
// post-commit hook notes the head, and neither the ref check after the
// call nor the effect check takes des's own note for a move to judge.
func TestE2EAuditAnchorAgentCommit(t *testing.T) {
	t.Parallel()
	root := refProject(t) // hooks installed, a finished step committed
	for i, command := range []string{
		"printf x > notes.txt && git add notes.txt && git commit -qm notes",
		"printf y >> notes.txt && git commit -qam more --no-verify",
	} {
		a := agentBash(t, root, root, command)
		if a.deny != "" || a.code != 0 || a.reason != "" {
			t.Fatalf("%s: pre %q, exit %d: %s\npost %q", command, a.deny, a.code, a.out, a.reason)
		}
		if note, code := gitRun(t, root, "notes", "--ref=des-audit", "show", "HEAD"); code != 0 || !strings.Contains(note, `"des_audit_head"`) {
			t.Errorf("call %d: note on HEAD: exit %d %q", i, code, note)
		}
	}
	if r := runBinCLI(t, root, "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "anchored: the trail holds the ") || !strings.Contains(r.stdout, "(up to seq ") {
		t.Errorf("verify: %+v", r)
	}
}

// A post-commit hook des did not write is left alone: install exits 2 with
// the line to add, and the hooks that judge commits are still written.
func TestE2EAuditAnchorInstallLeavesForeignPostCommit(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	hook := filepath.Join(root, ".git", "hooks", "post-commit")
	foreign := "#!/bin/sh\necho committed\n"
	testenv.WriteExecutable(t, hook, []byte(foreign))
	r := runIn(t, root, nil, "precommit", "--install", "--command", hookBin)
	if r.code != 0 || !strings.Contains(r.stderr, `precommit --post-commit --root `) || !strings.Contains(r.stdout, "hooks/pre-commit: it runs ") || !strings.Contains(r.stdout, "hooks/reference-transaction: it runs ") {
		t.Fatalf("install over a foreign post-commit: %+v", r)
	}
	if raw, _ := os.ReadFile(hook); string(raw) != foreign {
		t.Fatalf("the foreign hook was changed:\n%s", raw)
	}
}
