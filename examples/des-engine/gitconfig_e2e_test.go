package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A step whose task is FAILED is not committed, though every phase says
// EXECUTED: the installed hook, des-hook precommit and an agent's git
// commit all refuse it with DES-COMMIT-TASK-STATUS.
func TestE2EGate3FailedTaskIsRefused(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	if r := runIn(t, root, nil, "precommit", "--install"); r.code != 0 {
		t.Fatalf("install: exit %d\n%s", r.code, r.stderr)
	}
	step := strings.Replace(finishedStep(t, "EXECUTED"), `"status": "IN_PROGRESS"`, `"status": "FAILED"`, 1)
	if !strings.Contains(step, `"status": "FAILED"`) {
		t.Fatalf("the step holds no FAILED task:\n%s", step)
	}
	writeFile(t, root, stepPath, step)
	git(t, root, "add", stepPath)
	out, code := gitRun(t, root, "commit", "-qm", "abandoned step")
	if code == 0 || !strings.Contains(out, "[DES-COMMIT-TASK-STATUS]") || !strings.Contains(out, "des-hook stale --resolve "+stepPath) {
		t.Errorf("git commit of a FAILED task: exit %d\n%s", code, out)
	}
	r := runHookProcess(t, root, nil, bashEvent(t, root, "git commit -m wip"))
	if reason := denyReason(t, r); !strings.Contains(reason, "[DES-COMMIT-TASK-STATUS]") {
		t.Errorf("an agent's git commit of a FAILED task: %q", reason)
	}
	// The same step, its task DONE, commits.
	writeFile(t, root, stepPath, strings.Replace(step, `"status": "FAILED"`, `"status": "DONE"`, 1))
	git(t, root, "add", stepPath)
	if out, code := gitRun(t, root, "commit", "-qm", "done step"); code != 0 {
		t.Errorf("git commit of a DONE task: exit %d\n%s", code, out)
	}
}

// The installed pre-commit hook decides with the root and state directory
// it was installed with and the project's .des/config.json: no variable of
// the commit's environment lets an unfinished step, or one Gate 2 failed,
// through.
func TestE2EGitHookIgnoresTheCommittersEnvironment(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, ".des/audit/audit-2026-11-20.log",
		`{"timestamp":"2026-11-20T10:00:00Z","event":"SUBAGENT_STOP_VALIDATION","action":"record","codes":["DES-PHASE-ABANDONED"],"outcome":"FAIL","step_file":"`+stepPath+`"}`+"\n")
	if r := runIn(t, root, nil, "precommit", "--install"); r.code != 0 {
		t.Fatalf("install: exit %d\n%s", r.code, r.stderr)
	}
	script, err := os.ReadFile(filepath.Join(root, ".git", "hooks", "pre-commit"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--git-hook --root " + root, "--state-dir " + testStateDir} {
		if !strings.Contains(string(script), want) {
			t.Errorf("the script does not pin %q:\n%s", want, script)
		}
	}
	// An OPA server or bundle server named by a variable must not be asked.
	asked := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"result":{"deny":[],"warn":[]}}`))
	}))
	defer srv.Close()
	policies := t.TempDir()
	writeFile(t, policies, "waive.rego", "package des.gates.pre_commit\n\nexception contains \"DES-COMMIT-PHASE-OPEN\"\n\nexception contains \"DES-COMMIT-GATE2\"\n")
	elsewhere := t.TempDir()
	state := t.TempDir()
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", stepPath)
	for _, env := range [][]string{
		nil,
		{"DES_GUARDED_STEP_FILES=none/*.json"},
		{"DES_STATE_DIR=" + state},
		{"XDG_STATE_HOME=" + state},
		{"CLAUDE_PROJECT_DIR=" + elsewhere},
		{"DES_AUDIT_DIR=" + elsewhere},
		{"DES_POLICY_DIRS=" + policies},
		{"DES_OPA_URL=" + srv.URL},
		{"DES_BUNDLE_URLS=" + srv.URL + "/b.tar.gz", "DES_BUNDLE_PUBLIC_KEY=" + filepath.Join(policies, "waive.rego")},
		{"DES_GATE2_ON_FAILURE=record", "DES_DECISION_SERVER=off", "DES_VALIDATION_TIMEOUT_MS=1"},
		{"DES_LOG_LEVEL=debug"},
	} {
		out, code := gitRunEnv(t, root, env, "commit", "-qm", "unfinished")
		if code == 0 || !strings.Contains(out, "[DES-COMMIT-PHASE-OPEN]") || !strings.Contains(out, "[DES-COMMIT-GATE2]") {
			t.Errorf("%v: the commit of an unfinished step Gate 2 failed was not refused: exit %d\n%s", env, code, out)
		}
		if code == 0 { // undone, so that each variable is tried on its own
			git(t, root, "reset", "-q", "--soft", "HEAD~1")
		}
	}
	select {
	case p := <-asked:
		t.Errorf("the hook asked a server a variable named (%s)", p)
	default:
	}
	if ents, _ := os.ReadDir(state); len(ents) > 0 {
		t.Errorf("the hook used the state directory a variable named: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, ".des")); err == nil {
		t.Error("the hook judged for the project a variable named")
	}
}

// The pins are for the git hook: a person's des-hook precommit still reads
// its environment, and the flags go with --git-hook only.
func TestE2EPrecommitPinsGoWithGitHook(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	if r := runIn(t, root, nil, "precommit", "--root", root); r.code != 2 || !strings.Contains(r.stderr, "go with --git-hook") {
		t.Errorf("--root without --git-hook: exit %d\n%s", r.code, r.stderr)
	}
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", stepPath)
	if r := runIn(t, root, []string{"DES_GUARDED_STEP_FILES=none/*.json"}, "precommit"); r.code != 0 || !strings.Contains(r.stdout, "no staged step files") {
		t.Errorf("a person's setting in the environment: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// precommit --install is a person's: inside Claude Code (CLAUDECODE,
// CLAUDE_CODE_ENTRYPOINT) it is refused, and an agent that unsets them and
// installs a hook that does not run DES (--command /bin/true) gets it
// undone by the check after the call, since only a hook running DES's own
// binary is announced as DES's write.
func TestE2EAgentCannotInstallThePreCommitHook(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	hookFile := filepath.Join(root, ".git", "hooks", "pre-commit")
	if r := runIn(t, root, nil, "precommit", "--install"); r.code != 0 {
		t.Fatalf("a person's install: exit %d\n%s", r.code, r.stderr)
	}
	good, err := os.ReadFile(hookFile)
	if err != nil {
		t.Fatal(err)
	}
	begin(t, root)
	for _, v := range []string{"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli"} {
		r := runIn(t, root, []string{v}, "precommit", "--install", "--command", "/bin/true")
		if r.code != 2 || !strings.Contains(r.stderr, "refused inside Claude Code") {
			t.Errorf("%s: exit %d\n%s", v, r.code, r.stderr)
		}
	}
	if got, _ := os.ReadFile(hookFile); string(got) != string(good) {
		t.Fatalf("a refused install changed the hook:\n%s", got)
	}
	refFile := filepath.Join(root, ".git", "hooks", "reference-transaction")
	goodRef, err := os.ReadFile(refFile)
	if err != nil {
		t.Fatal(err)
	}
	_, post := bashToolCall(t, root, "toolu_inst", "env -u CLAUDECODE "+hookBin+" precommit --install --command /bin/true")
	wantRestored(t, post, "pre-commit")
	if got, _ := os.ReadFile(hookFile); string(got) != string(good) {
		t.Errorf("the agent's hook was kept:\n%s", got)
	}
	// The reference-transaction hook the same install rewrote too.
	if got, _ := os.ReadFile(refFile); string(got) != string(goodRef) {
		t.Errorf("the agent's reference-transaction hook was kept:\n%s", got)
	}
	// DES's own command, installed by a Bash call, is DES's write: kept.
	_, post = bashToolCall(t, root, "toolu_own", hookBin+" precommit --install")
	if post.Decision != "" {
		t.Errorf("an install of DES's own hook was undone: %+v", post)
	}
}

// Git's config is judged as git reads it, in every file git reads it from:
// a byte order mark, config.worktree, the user's ~/.gitconfig and the
// files an include names. A change to core.hooksPath is denied, an honest
// edit passes.
func TestE2EGitConfigAsGitReadsIt(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	home := t.TempDir()
	writeFile(t, home, ".gitconfig", "[user]\n\tname = dev\n[include]\n\tpath = ~/.gitconfig-work\n")
	writeFile(t, home, ".gitconfig-work", "[user]\n\temail = dev@example.com\n")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	write := func(file, content string) string {
		t.Helper()
		ev := writeToolEvent(root, "Write", "x", map[string]any{"content": content})
		ev["tool_input"].(map[string]any)["file_path"] = file
		return denyReason(t, runHookProcess(t, root, env, ev))
	}
	cfg := fileText(t, root, ".git/config")
	for _, c := range []struct{ name, file, content string }{
		{"a byte order mark", filepath.Join(root, ".git", "config"), "\ufeff[core]\n\thooksPath = /x\n" + cfg},
		{"a quoted section", filepath.Join(root, ".git", "config"), cfg + "[CORE]\n\tHooksPath = \"/x\"\n"},
		{"config.worktree", filepath.Join(root, ".git", "config.worktree"), "[core]\n\thooksPath = /x\n"},
		{"~/.gitconfig", filepath.Join(home, ".gitconfig"), "[user]\n\tname = dev\n[core]\n\thooksPath = /dev/null\n"},
		{"an include added", filepath.Join(home, ".gitconfig"), "[user]\n\tname = dev\n[includeIf \"gitdir:/\"]\n\tpath = /tmp/x\n"},
		{"an included file", filepath.Join(home, ".gitconfig-work"), "[core]\n\thooksPath = /dev/null\n"},
		{"XDG's git config", filepath.Join(home, ".config", "git", "config"), "[core]\n\thooksPath = /dev/null\n"},
	} {
		if r := write(c.file, c.content); !strings.Contains(r, "[DES-PROTECTED-PATH]") || !strings.Contains(r, "core.hooksPath") {
			t.Errorf("%s: a Write setting core.hooksPath was not denied: %q", c.name, r)
		}
	}
	for _, c := range []struct{ name, file, content string }{
		{"user.name in ~/.gitconfig", filepath.Join(home, ".gitconfig"), "[user]\n\tname = Dev Eloper\n[alias]\n\tco = checkout\n[include]\n\tpath = ~/.gitconfig-work\n"},
		{"a byte order mark alone", filepath.Join(root, ".git", "config"), "\ufeff" + cfg},
		{"user.email in the included file", filepath.Join(home, ".gitconfig-work"), "[user]\n\temail = dev@example.org\n"},
	} {
		if r := write(c.file, c.content); r != "" {
			t.Errorf("%s: an honest Write was denied: %s", c.name, r)
		}
	}

	// Bash: the check after the call asks git, and puts back what git
	// would have taken for core.hooksPath.
	begin(t, root)
	_, post := bashToolCall(t, root, "toolu_wt", "git config extensions.worktreeConfig true && git config --worktree core.hooksPath /x")
	wantRestored(t, post, "config.worktree")
	if out, _ := gitRun(t, root, "config", "--get", "core.hooksPath"); strings.TrimSpace(out) != "" {
		t.Errorf("core.hooksPath is still set after the check: %q", out)
	}
	_, post = bashToolCall(t, root, "toolu_bom", `printf '\357\273\277[core]\n\thooksPath = /x\n' > .git/config.new && cat .git/config >> .git/config.new && mv .git/config.new .git/config`)
	wantRestored(t, post, ".git/config")
	if out, _ := gitRun(t, root, "config", "--get", "core.hooksPath"); strings.TrimSpace(out) != "" {
		t.Errorf("core.hooksPath is still set after the check: %q", out)
	}
	if _, post := bashToolCall(t, root, "toolu_name", "git config user.name 'Dev Eloper'"); post.Decision != "" {
		t.Errorf("an honest git config was undone: %+v", post)
	}
}
