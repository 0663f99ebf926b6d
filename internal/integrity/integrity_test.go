package integrity

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

const desHook = "/opt/des/hook"

// project makes a project with DES's files, a step file, a workflow state
// and Claude Code settings holding DES's hooks and one of the user's.
func project(t *testing.T) (root string, c *Checker) {
	t.Helper()
	root = t.TempDir()
	files := map[string]string{
		".des/config.json":                  `{"stale_threshold_minutes": 30}`,
		".des/policies/team.rego":           "package des.gates.tool_use\n",
		".des/runs/toolu_1.json":            `{"step_file": "docs/steps/01-01.json"}`,
		".isdlc/state.json":                 `{"state_version": 1}`,
		"docs/feature/x/steps/01-01.json":   `{"task_id": "01-01", "tdd_cycle": {}}`,
		"src/onboarding/steps/welcome.json": `{"title": "hi"}`,
		".claude/settings.json":             `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "` + desHook + `"}, {"type": "command", "command": "lint"}]}]}, "permissions": {"allow": []}}`,
	}
	for p, s := range files {
		write(t, root, p, s)
	}
	c = New(Options{Root: root, StateDir: t.TempDir(), Cache: NewBaselineCache()}) // as the warm server builds them
	if _, err := c.Begin(context.Background(), "toolu_setup", nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.End(context.Background(), "toolu_setup", false); err != nil {
		t.Fatal(err)
	}
	return root, c
}

func write(t *testing.T, root, p, s string) {
	t.Helper()
	abs := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, root, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(data)
}

// call runs fn as a watched tool call and returns what End found.
func call(t *testing.T, c *Checker, id string, fn func()) Report {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Begin(ctx, id, nil, 0); err != nil {
		t.Fatal(err)
	}
	fn()
	rep, err := c.End(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func sh(t *testing.T, root, script string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs a POSIX shell")
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("sh %q: %v\n%s", script, err, out)
	}
}

func TestRestoresDeletedDESDirectory(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	rep := call(t, c, "toolu_a", func() { sh(t, root, "rm -rf .des") })
	if len(rep.Changes) == 0 || !rep.Restored() {
		t.Fatalf("report = %+v, want restored changes", rep)
	}
	if got := readFile(t, root, ".des/config.json"); got != `{"stale_threshold_minutes": 30}` {
		t.Errorf("config = %q", got)
	}
	readFile(t, root, ".des/policies/team.rego")
	readFile(t, root, ".des/runs/toolu_1.json")
}

func TestRestoresRewrittenFilesAndRemovesNewOnes(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	rep := call(t, c, "toolu_a", func() {
		sh(t, root, `echo x > .des/config.json; echo 'package evil' > .des/policies/evil.rego; mkdir -p .des/policies/sub && echo y > .des/policies/sub/z.rego;
			python3 -c "open('.isdlc/state.json','w').write('{}')" 2>/dev/null || echo '{}' > .isdlc/state.json; echo '{}' > .des/state.json;
			echo '{"tdd_cycle": 1}' > docs/feature/x/steps/01-02.json; rm docs/feature/x/steps/01-01.json; echo changed > src/onboarding/steps/welcome.json`)
	})
	if !rep.Restored() {
		t.Fatalf("not all restored: %+v", rep)
	}
	if got := readFile(t, root, ".des/config.json"); !strings.Contains(got, "stale") {
		t.Errorf("config = %q", got)
	}
	for _, p := range []string{".des/policies/evil.rego", ".des/policies/sub/z.rego", ".des/state.json", "docs/feature/x/steps/01-02.json"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	if got := readFile(t, root, ".isdlc/state.json"); got != `{"state_version": 1}` {
		t.Errorf("state = %q", got)
	}
	readFile(t, root, "docs/feature/x/steps/01-01.json")
	// Not a DES step file: not watched.
	if got := readFile(t, root, "src/onboarding/steps/welcome.json"); got != "changed\n" {
		t.Errorf("a JSON file under steps/ that is not a step was restored: %q", got)
	}
}

func TestHardLinkModeAndSymlink(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	rep := call(t, c, "toolu_a", func() {
		sh(t, root, `ln .des/config.json c.json && echo '{"guarded_state_files":["none"]}' > c.json; chmod 600 .isdlc/state.json;
			mv .des/policies /tmp/ignored-$$ 2>/dev/null; ln -s /tmp .des/policies`)
	})
	if !rep.Restored() || len(rep.Changes) < 3 {
		t.Fatalf("report = %+v", rep)
	}
	if got := readFile(t, root, ".des/config.json"); !strings.Contains(got, "stale") {
		t.Errorf("config = %q", got)
	}
	fi, err := os.Lstat(filepath.Join(root, ".des/policies"))
	if err != nil || !fi.IsDir() {
		t.Errorf(".des/policies = %v, %v; want a directory", fi, err)
	}
	readFile(t, root, ".des/policies/team.rego")
	if fi, _ := os.Stat(filepath.Join(root, ".isdlc/state.json")); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v", fi.Mode())
	}
	// A write through the link no longer reaches the config.
	write(t, root, "c.json", "again")
	if got := readFile(t, root, ".des/config.json"); !strings.Contains(got, "stale") {
		t.Errorf("the hard link still reaches the config: %q", got)
	}
}

func TestClaudeSettingsGuardedPart(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	rep := call(t, c, "toolu_a", func() {
		// Claude Code adds a permission (legitimate); the agent removes DES's hook.
		write(t, root, ".claude/settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}]}, "permissions": {"allow": ["Bash(ls)"]}, "model": "x"}`)
	})
	if len(rep.Changes) != 1 || rep.Changes[0].What != "hooks" || !rep.Restored() {
		t.Fatalf("report = %+v", rep)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(readFile(t, root, ".claude/settings.json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["model"] != "x" || !strings.Contains(readFile(t, root, ".claude/settings.json"), "Bash(ls)") {
		t.Errorf("Claude Code's own change was lost: %v", doc)
	}
	if !strings.Contains(readFile(t, root, ".claude/settings.json"), desHook) {
		t.Errorf("DES's hook not restored")
	}
	// A rewrite that keeps the hooks (des's and the user's lint) and
	// changes only the allow rules and the model is no change at all.
	rep = call(t, c, "toolu_b", func() {
		write(t, root, ".claude/settings.json", `{"permissions": {"allow": ["Bash(cat)"]}, "model": "y", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "`+desHook+`"}, {"type": "command", "command": "lint"}]}]}}`)
	})
	if len(rep.Changes) != 0 {
		t.Fatalf("a legitimate rewrite was reported: %+v", rep)
	}
	// disableAllHooks in the local settings is undone; the file stays.
	rep = call(t, c, "toolu_c", func() {
		write(t, root, ".claude/settings.local.json", `{"disableAllHooks": true, "permissions": {"allow": ["Bash(x)"]}}`)
	})
	if len(rep.Changes) != 1 || strings.Contains(readFile(t, root, ".claude/settings.local.json"), "disableAllHooks") {
		t.Fatalf("report = %+v, file %s", rep, readFile(t, root, ".claude/settings.local.json"))
	}
	// Garbage: the whole last good copy is back.
	rep = call(t, c, "toolu_d", func() { write(t, root, ".claude/settings.json", "{}") })
	if len(rep.Changes) != 1 || !strings.Contains(readFile(t, root, ".claude/settings.json"), desHook) {
		t.Fatalf("report = %+v", rep)
	}
}

// Everything in Claude Code's settings but the allow rules and the model
// is des's to guard: env (PATH, XDG_STATE_HOME, DES_*), the sandbox, other
// hooks, statusLine, the deny rules and the permission mode. A change is
// undone; the allow rules Claude Code adds during the call stay.
func TestClaudeSettingsGuardedKeys(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	rep := call(t, c, "toolu_a", func() {
		write(t, root, ".claude/settings.local.json", `{"env": {"DES_DELEGATION_MODE": "off", "PATH": "/evil"}, "permissions": {"allow": ["Bash(x)"]}}`)
	})
	got := readFile(t, root, ".claude/settings.local.json")
	if len(rep.Changes) != 1 || strings.Contains(got, "DES_DELEGATION_MODE") || strings.Contains(got, "/evil") || !strings.Contains(got, "Bash(x)") {
		t.Fatalf("report = %+v, file %s", rep, got)
	}
	for _, after := range []string{
		`{"env": {"DES_POLICY_DIRS": "/tmp/x"}}`, `{"env": {"XDG_STATE_HOME": "/tmp/fresh"}}`, `{"env": {"PATH": "/evil:/usr/bin"}}`,
		`{"sandbox": {"enabled": false}}`, `{"statusLine": {"type": "command", "command": "python3 evil.py"}}`,
		`{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "sh agent.sh"}]}]}}`,
		`{"permissions": {"deny": []}}`, `{"permissions": {"defaultMode": "bypassPermissions"}}`,
		`{"apiKeyHelper": "sh agent.sh"}`, `{"disableAllHooks": true}`,
	} {
		if !ClaudeSettingsChanged([]byte(`{}`), []byte(after)) {
			t.Errorf("%s: not a change of the guarded part", after)
		}
	}
	for _, after := range []string{`{"permissions": {"allow": ["Bash(ls)"]}}`, `{"model": "opus"}`, "{\n  \"model\": \"opus\"\n}\n"} {
		if ClaudeSettingsChanged([]byte(`{}`), []byte(after)) {
			t.Errorf("%s: Claude Code's own rewrite counts as a change", after)
		}
	}
	// Reformatting is no change.
	if ClaudeSettingsChanged([]byte(`{"sandbox": {"enabled": true, "allowUnsandboxedCommands": false}}`), []byte("{\n \"sandbox\": {\"allowUnsandboxedCommands\": false,\n \"enabled\": true}}")) {
		t.Error("a reformatted file counts as a change")
	}
}

func TestAnnouncedWriteIsKept(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	next := `{"state_version": 2}`
	rep := call(t, c, "toolu_a", func() {
		if err := c.Expect(filepath.Join(root, ".isdlc/state.json"), []byte(next)); err != nil {
			t.Fatal(err)
		}
		write(t, root, ".isdlc/state.json", next)
	})
	if len(rep.Changes) != 0 || len(rep.Accepted) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	if got := readFile(t, root, ".isdlc/state.json"); got != next {
		t.Errorf("state = %q", got)
	}
	// Another content at the same path is not the announced one.
	rep = call(t, c, "toolu_b", func() { write(t, root, ".isdlc/state.json", `{"state_version": 9}`) })
	if len(rep.Changes) != 1 || readFile(t, root, ".isdlc/state.json") != next {
		t.Fatalf("report = %+v", rep)
	}
	// Settle records an announced write outside a check.
	if err := c.Expect(".des/runs/toolu_2.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".des/runs/toolu_2.json", "{}")
	if err := c.Settle(context.Background(), ".des/runs/toolu_2.json"); err != nil {
		t.Fatal(err)
	}
	rep = call(t, c, "toolu_c", func() {})
	if len(rep.Changes) != 0 {
		t.Fatalf("a settled write was undone: %+v", rep)
	}
	readFile(t, root, ".des/runs/toolu_2.json")
}

func TestHandEditBetweenCallsIsAcceptedButNotWhileACallRuns(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	ctx := context.Background()
	write(t, root, ".des/config.json", `{"stale_threshold_minutes": 45}`)
	rep := call(t, c, "toolu_a", func() {})
	if len(rep.Changes) != 0 || !strings.Contains(readFile(t, root, ".des/config.json"), "45") {
		t.Fatalf("hand edit undone: %+v", rep)
	}
	// One agent's command is running; another agent's call starts.
	if _, err := c.Begin(ctx, "toolu_long", nil, 0); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".des/config.json", `{"stale_threshold_minutes": 1}`) // the running command's write
	refreshed, err := c.Begin(ctx, "toolu_other", nil, 0)
	if err != nil || refreshed {
		t.Fatalf("Begin while a call runs: refreshed=%v err=%v", refreshed, err)
	}
	rep, err = c.End(ctx, "toolu_other", false)
	if err != nil || len(rep.Changes) != 1 || !strings.Contains(readFile(t, root, ".des/config.json"), "45") {
		t.Fatalf("the running command's write was accepted: %+v %v", rep, err)
	}
	if _, err := c.End(ctx, "toolu_long", false); err != nil {
		t.Fatal(err)
	}
}

func TestGitHooksPath(t *testing.T) {
	t.Parallel()
	root, c0 := project(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	sh(t, root, "git init -q . && git config user.email a@b && mkdir -p .git/hooks && printf '#!/bin/sh\\nexec hook precommit\\n' > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit")
	c := New(Options{Root: root, StateDir: filepath.Dir(c0.Dir())})
	rep := call(t, c, "toolu_a", func() {
		sh(t, root, "git config core.hooksPath /dev/null && git config user.name someone && rm .git/hooks/pre-commit")
	})
	if len(rep.Changes) != 2 || !rep.Restored() {
		t.Fatalf("report = %+v", rep)
	}
	cfg := readFile(t, root, ".git/config")
	if strings.Contains(cfg, "hooksPath") || !strings.Contains(cfg, "someone") {
		t.Errorf("config = %s", cfg)
	}
	if fi, err := os.Stat(filepath.Join(root, ".git/hooks/pre-commit")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("pre-commit = %v %v", fi, err)
	}
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	_, c := project(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	if _, err := c.End(ctx, "toolu_x", false); err == nil {
		t.Fatal("End past its deadline succeeded")
	}
}

func TestCommandRunsExecutable(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	for _, cmd := range []string{exe, "'" + exe + "' --x", `"` + exe + `"`} {
		if !CommandRunsExecutable(cmd, exe, "/", "") {
			t.Errorf("%q not recognised", cmd)
		}
	}
	if CommandRunsExecutable("lint "+exe, exe, "/", "") {
		t.Error("a command that names the executable as an argument was taken for it")
	}
	// ~ is the hook's home, not this process's.
	dir, name := filepath.Split(exe)
	if !CommandRunsExecutable("~/"+name, exe, "/", dir) {
		t.Error("~/ with the hook's home not recognised")
	}
}

func TestHeldLockEndsInTime(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // it waits LockWait (5 s)
	_, c := project(t)
	other := New(Options{Root: c.root, StateDir: filepath.Dir(c.Dir())})
	unlock, err := other.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	start := time.Now()
	err = c.Settle(context.Background(), ".des/config.json") // no deadline of its own
	if err == nil || time.Since(start) > LockWait+2*time.Second {
		t.Fatalf("Settle with the lock held: %v after %v", err, time.Since(start))
	}
}

func TestCallsRunning(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	now := time.Now()
	c := New(Options{Root: t.TempDir(), StateDir: filepath.Join(base, "projects", "k1"), Now: func() time.Time { return now }})
	if got := CallsRunning(base, os.Getpid(), now); len(got) != 0 {
		t.Fatalf("no calls yet: %v", got)
	}
	if _, err := c.Begin(context.Background(), "toolu_1", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := CallsRunning(base, os.Getpid(), now); len(got) != 1 || got[0] != "k1/toolu_1" {
		t.Errorf("one call running: %v", got)
	}
	if got := CallsRunning(base, os.Getpid(), now.Add(2*time.Minute)); len(got) != 0 {
		t.Errorf("an expired record counts: %v", got)
	}
}

// A call whose End never came is not taken as having ended between calls:
// once its lifetime passes, the next Begin keeps the baseline, so the
// next End undoes what the lost call changed; the Begin after that takes
// the disk again.
func TestLapsedCallKeepsBaseline(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	now := time.Now()
	c.now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_lost", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".des/config.json", `{}`)
	now = now.Add(2 * time.Minute)
	refreshed, err := c.Begin(ctx, "toolu_next", nil, time.Minute)
	if err != nil || refreshed {
		t.Fatalf("Begin after a lapsed call: refreshed %v, %v", refreshed, err)
	}
	rep, err := c.End(ctx, "toolu_next", false)
	if err != nil || len(rep.Changes) != 1 || !rep.Restored() {
		t.Fatalf("End: %+v %v", rep, err)
	}
	if got := readFile(t, root, ".des/config.json"); got != `{"stale_threshold_minutes": 30}` {
		t.Errorf("not restored: %s", got)
	}
	write(t, root, ".des/config.json", `{"a": 1}`) // a hand edit between calls
	if refreshed, err := c.Begin(ctx, "toolu_after", nil, time.Minute); err != nil || !refreshed {
		t.Fatalf("the Begin after: refreshed %v, %v", refreshed, err)
	}
}

// SettleAll records each announced write in the baseline (so a later
// change to it during a call is undone) and nothing that was not announced.
func TestSettleAllRecordsEachAnnouncedWrite(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_long", nil, 0); err != nil {
		t.Fatal(err)
	}
	a, b, forged := ".des/runs/toolu_2.json", ".des/runs/prompt-2.json", ".des/runs/forged.json"
	for _, p := range []string{a, b} {
		if err := c.Expect(p, []byte(`{"n": 2}`)); err != nil {
			t.Fatal(err)
		}
		write(t, root, p, `{"n": 2}`)
	}
	write(t, root, forged, `{"n": 2}`)
	if err := c.SettleAll(ctx, a, b, forged); err != nil {
		t.Fatal(err)
	}
	// The call in flight deletes both records: the baseline has them now.
	for _, p := range []string{a, b} {
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := c.End(ctx, "toolu_long", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, b} {
		if got := readFile(t, root, p); got != `{"n": 2}` {
			t.Errorf("%s = %q, want it restored", p, got)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, forged)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the unannounced %s was settled: %v (report %+v)", forged, err, rep)
	}
}

// WriteOwn writes under the lock and records DES's content in the baseline
// without announcing it; content other than the data given is not taken.
func TestWriteOwnRecordsWithoutAnnouncing(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_long", nil, 0); err != nil {
		t.Fatal(err)
	}
	a, b := ".des/runs/toolu_2.json", ".des/runs/prompt-2.json"
	data := []byte(`{"n": 2}`)
	ran, err := c.WriteOwn(ctx, []string{a, b}, data, func() error {
		write(t, root, a, string(data))
		write(t, root, b, `{"n": "raced"}`) // not what DES said it writes
		return nil
	})
	if !ran || err != nil {
		t.Fatalf("WriteOwn = %v, %v", ran, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(c.dir, "expect")); len(ents) != 0 {
		t.Errorf("announcements left: %v", ents)
	}
	if err := os.Remove(filepath.Join(root, a)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.End(ctx, "toolu_long", false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, root, a); got != string(data) {
		t.Errorf("%s = %q, want it restored from the baseline", a, got)
	}
	if _, err := os.Lstat(filepath.Join(root, b)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s with content DES did not write was taken: %v", b, err)
	}

	// Removals (nil data) are recorded as absent.
	ran, err = c.WriteOwn(ctx, []string{a}, nil, func() error { return os.Remove(filepath.Join(root, a)) })
	if !ran || err != nil {
		t.Fatalf("WriteOwn removal = %v, %v", ran, err)
	}
	if rep := call(t, c, "toolu_after", func() {}); len(rep.Changes) != 0 {
		t.Errorf("the removal was undone: %+v", rep)
	}
	if _, err := os.Lstat(filepath.Join(root, a)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s came back: %v", a, err)
	}
}

// While a check holds the lock, WriteOwn declines at once and runs nothing:
// the caller announces the write instead of waiting out the check.
func TestWriteOwnDeclinesWhileACheckRuns(t *testing.T) {
	t.Parallel()
	_, c := project(t)
	unlock, err := c.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	start := time.Now()
	ran, err := c.WriteOwn(context.Background(), []string{".des/runs/x.json"}, []byte("{}"), func() error {
		t.Error("write ran while the lock was held")
		return nil
	})
	if ran || err != nil || time.Since(start) > time.Second {
		t.Errorf("WriteOwn = %v, %v after %v; want false at once", ran, err, time.Since(start))
	}
}

// A cached baseline is used only while its file is the one it was read
// from or saved to: a save by another process (a Checker without the
// cache) is seen by the next use, and a use's changes to its copy that
// were not saved are not.
func TestBaselineCacheSeesOtherSaves(t *testing.T) {
	t.Parallel()
	root, c := project(t) // with a cache
	ctx := context.Background()
	other := New(Options{Root: root, StateDir: filepath.Dir(c.Dir())})
	rec := ".des/runs/toolu_9.json"
	if ran, err := other.WriteOwn(ctx, []string{rec}, []byte(`{"n": 9}`), func() error {
		write(t, root, rec, `{"n": 9}`)
		return nil
	}); !ran || err != nil {
		t.Fatalf("WriteOwn = %v, %v", ran, err)
	}
	m, err := c.load()
	if err != nil || m.Entries[rec] == nil {
		t.Fatalf("the cached checker does not see the other's save: %v", err)
	}
	if m, err = c.load(); err != nil || m.Entries[rec] == nil { // from the cache now
		t.Fatalf("second load: %v", err)
	}
	delete(m.Entries, rec) // a use's own copy, not saved
	if m, err := c.load(); err != nil || m.Entries[rec] == nil {
		t.Fatalf("an unsaved change to a loaded copy leaked into the cache: %v", err)
	}
	if _, err := c.Begin(ctx, "toolu_x", nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, rec)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.End(ctx, "toolu_x", false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, root, rec); got != `{"n": 9}` {
		t.Errorf("%s = %q, want it restored", rec, got)
	}
}

// A path SettleAll cannot settle (here a file over the read bound) does not
// cost the paths settled before it their record: their announcements are
// consumed, so the baseline is saved with them.
func TestSettleAllKeepsWhatSettledBeforeAFailure(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_long", nil, 0); err != nil {
		t.Fatal(err)
	}
	a, b := ".des/runs/toolu_a.json", ".des/runs/prompt-x.json"
	data := []byte("{\"tool_use_id\":\"toolu_a\"}\n")
	for _, p := range []string{a, b} {
		if err := c.Expect(p, data); err != nil {
			t.Fatal(err)
		}
	}
	write(t, root, a, string(data))
	f, err := os.Create(filepath.Join(root, b)) // b as an agent left it: past the bound
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := c.SettleAll(ctx, a, b); err == nil {
		t.Error("SettleAll reported no error for the file it could not read")
	}
	for _, p := range []string{a, b} { // the call in flight removes both
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.End(ctx, "toolu_long", false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, root, a); got != string(data) {
		t.Errorf("%s = %q: settled before the failure, it should be restored", a, got)
	}
}
