package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBash runs command with bash in dir, as Claude Code would after an
// allow, with a deadline.
func runBash(t *testing.T, dir, command string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = cleanEnviron()
	cmd.WaitDelay = 5 * time.Second
	asClaudeCodeRuns(cmd)
	_ = cmd.Run() // a failing command is fine: the files on disk are what the test compares
}

// linkChain makes n symbolic links l1 -> l0 ... in dir under root, l0 a
// directory, and returns the path of the last one relative to root.
func linkChain(t *testing.T, root, dir string, n int) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, dir, "l0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := os.Symlink(fmt.Sprintf("l%d", i-1), filepath.Join(root, dir, fmt.Sprintf("l%d", i))); err != nil {
			t.Skip("symlinks unavailable:", err)
		}
	}
	return fmt.Sprintf("%s/l%d", dir, n)
}

// A deep symbolic link chain is resolved within the kernel's 40 links, fast;
// past that, a write that could name DES's files fails closed instead of
// hanging (a hook that times out is an allow).
func TestE2ELinkChainsNeverHang(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".isdlc/state.json", stateV5)
	deep := linkChain(t, root, "deep", 24)
	if err := os.Symlink(filepath.Join(root, ".isdlc"), filepath.Join(root, "deep", "l0", "isdlc")); err != nil {
		t.Fatal(err)
	}
	over := linkChain(t, root, "over", 100)
	cases := []struct {
		name  string
		event map[string]any
		code  string // "" = no opinion
	}{
		{"Write through 24 links to the state", writeToolEvent(root, "Write", deep+"/isdlc/state.json", map[string]any{"content": "{}"}), "DES-STATE-V7-UNVERSIONED"},
		{"Bash through 24 links to the state", bashEvent(t, root, "echo '{}' > "+deep+"/isdlc/state.json"), "DES-STATE-BASH-WRITE"},
		{"Bash through 24 links elsewhere", bashEvent(t, root, "echo hi > "+deep+"/notes.txt"), ""},
		{"Write past 40 links", writeToolEvent(root, "Write", over+"/x.json", map[string]any{"content": "{}"}), "DES-INTERNAL"},
		{"Bash past 40 links", bashEvent(t, root, "echo '{}' > "+over+"/x.json"), "DES-INTERNAL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r := runHookProcess(t, root, nil, c.event)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v", took)
			}
			reason := denyReason(t, r)
			if (c.code == "") != (reason == "") || c.code != "" && !strings.Contains(reason, "["+c.code+"]") {
				t.Errorf("want %q, got %q", c.code, reason)
			}
		})
	}
	if raw, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json")); string(raw) != stateV5 {
		t.Error("the state changed")
	}
}

// A relative file_path is where Claude Code writes it: against the event's
// cwd, not the project root.
func TestE2ERelativeWritePathsFollowCwd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".isdlc/state.json", stateV5)
	writeFile(t, root, "sub/keep.txt", "")
	event := func(cwd, path string) map[string]any {
		ev := writeToolEvent(root, "Write", "", map[string]any{"content": "{}"})
		ev["cwd"], ev["tool_input"].(map[string]any)["file_path"] = cwd, path
		return ev
	}
	cases := []struct {
		name  string
		event map[string]any
		deny  bool
	}{
		{"state.json from .isdlc", event(filepath.Join(root, ".isdlc"), "state.json"), true},
		{"../.isdlc/state.json from sub", event(filepath.Join(root, "sub"), "../.isdlc/state.json"), true},
		{".isdlc/state.json from sub is another file", event(filepath.Join(root, "sub"), ".isdlc/state.json"), false},
		{"../.des/config.json from sub", event(filepath.Join(root, "sub"), "../.des/config.json"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if reason := denyReason(t, runHookProcess(t, root, nil, c.event)); (reason != "") != c.deny {
				t.Errorf("deny = %v, want %v: %s", reason != "", c.deny, reason)
			}
		})
	}
}

// JSON under a steps/ folder that is not a DES step file gets no opinion,
// from Write and from Bash; a real step file there is still guarded.
func TestE2EStepLookAlikesAreNotGuarded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, "src/onboarding/steps/welcome.json", `{"title": "Welcome"}`)
	writeFile(t, root, ".github/workflows/steps/build.json", `{"run": "make"}`)
	step := `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`
	writeFile(t, root, "plans/steps/setup.json", step)
	cases := []struct {
		name  string
		event map[string]any
		deny  bool
		file  string // for Bash: the file the command changes when it runs
	}{
		{"Write welcome.json", writeToolEvent(root, "Write", "src/onboarding/steps/welcome.json", map[string]any{"content": `{"title": "Hi"}`}), false, ""},
		{"Bash build.json", bashEvent(t, root, `echo '{"run": "make all"}' > .github/workflows/steps/build.json`), false, ".github/workflows/steps/build.json"},
		{"Bash rm -rf the onboarding steps", bashEvent(t, root, `rm -rf src/onboarding/steps`), false, "src/onboarding/steps/welcome.json"},
		{"Write step content to a new name", writeToolEvent(root, "Write", "src/onboarding/steps/next.json", map[string]any{"content": `{"task_id": "", "tdd_cycle": {}}`}), true, ""},
		{"Write a task_id alone to a new name", writeToolEvent(root, "Write", "src/onboarding/steps/other.json", map[string]any{"content": `{"task_id": ""}`}), false, ""},
		{"Bash onto a step file by content", bashEvent(t, root, `echo '{}' > plans/steps/setup.json`), true, ""},
		{"Bash a new step file by name", bashEvent(t, root, `mkdir -p d/steps && echo '{}' > d/steps/01-01.json`), true, ""},
		{"Bash rm -rf a folder holding a step file", bashEvent(t, root, `rm -rf plans`), true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reason := denyReason(t, runHookProcess(t, root, nil, c.event))
			if (reason != "") != c.deny {
				t.Fatalf("deny = %v, want %v: %s", reason != "", c.deny, reason)
			}
			if c.file != "" {
				before, _ := os.ReadFile(filepath.Join(root, c.file))
				runBash(t, root, c.event["tool_input"].(map[string]any)["command"].(string))
				if after, _ := os.ReadFile(filepath.Join(root, c.file)); string(after) == string(before) {
					t.Errorf("the allowed command did not change %s", c.file)
				}
			}
		})
	}
	if raw, _ := os.ReadFile(filepath.Join(root, "plans/steps/setup.json")); string(raw) != step {
		t.Error("the step file changed")
	}
}

// A write to a file with more than one hard link writes every name: a
// write to another name of DES's settings or of a guarded document is
// judged as a write to it.
func TestE2EHardLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const config = `{"stale_threshold_minutes": 30}`
	writeFile(t, root, ".des/config.json", config)
	writeFile(t, root, ".isdlc/state.json", stateV5)
	writeFile(t, root, "a.txt", "a")
	for old, name := range map[string]string{".des/config.json": "c.json", ".isdlc/state.json": "sub/s.json", "a.txt": "b.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(root, old), filepath.Join(root, name)); err != nil {
			t.Skip("hard links unavailable:", err)
		}
	}
	cases := []struct {
		name  string
		event map[string]any
		code  string // "" = no opinion
		file  string // with no opinion: the file the command changes when it runs
	}{
		{"Write the settings' other name", writeToolEvent(root, "Write", "c.json", map[string]any{"content": `{"guarded_state_files": ["none/x.json"]}`}), "DES-PROTECTED-PATH", ""},
		{"Edit the settings' other name", writeToolEvent(root, "Edit", "c.json", map[string]any{"old_string": "30", "new_string": "99"}), "DES-PROTECTED-PATH", ""},
		{"Bash the settings' other name", bashEvent(t, root, `echo '{"guarded_state_files":["none/x.json"]}' > c.json`), "DES-PROTECTED-PATH", ""},
		{"Write the state's other name", writeToolEvent(root, "Write", "sub/s.json", map[string]any{"content": "{}"}), "DES-STATE-V7-UNVERSIONED", ""},
		{"Bash the state's other name", bashEvent(t, root, `cd sub && echo '{}' > s.json`), "DES-STATE-BASH-WRITE", ""},
		{"Bash an ordinary hard link", bashEvent(t, root, `echo b > b.txt`), "", "a.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reason := denyReason(t, runHookProcess(t, root, nil, c.event))
			if (c.code == "") != (reason == "") || c.code != "" && !strings.Contains(reason, "["+c.code+"]") {
				t.Fatalf("want %q, got %q", c.code, reason)
			}
			if c.file != "" {
				runBash(t, root, c.event["tool_input"].(map[string]any)["command"].(string))
				if raw, _ := os.ReadFile(filepath.Join(root, c.file)); string(raw) != "b\n" {
					t.Errorf("the allowed command did not write %s: %q", c.file, raw)
				}
			}
		})
	}
	if raw, _ := os.ReadFile(filepath.Join(root, ".des/config.json")); string(raw) != config {
		t.Error("the settings changed")
	}
	if raw, _ := os.ReadFile(filepath.Join(root, ".isdlc/state.json")); string(raw) != stateV5 {
		t.Error("the state changed")
	}
}

// Broad commands are denied only when they would change a guarded document
// or DES's files: the command is judged, then (when allowed) really run and
// the files compared.
func TestE2EBroadCommandsOnlyWhenTheyChangeAGuardedDocument(t *testing.T) {
	t.Parallel()
	const step = `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}` + "\n"
	setup := func(t *testing.T) string {
		root := gitProject(t)
		writeFile(t, root, ".isdlc/state.json", stateV5)
		writeFile(t, root, "docs/feature/x/steps/01-01.json", step)
		writeFile(t, root, "src/main.go", "package main\n")
		writeFile(t, root, "build/out.bin", "x")
		git(t, root, "add", ".")
		git(t, root, "commit", "-qm", "docs")
		return root
	}
	const edited = "package main // edited\n"
	cases := []struct {
		name    string
		prepare func(t *testing.T, root string)
		command string
		code    string // "" = no opinion, then the command runs
	}{
		{"git checkout . restoring only code", nil, "git checkout .", ""},
		{"git restore . restoring only code", nil, "git restore .", ""},
		{"git checkout . over an edited state", func(t *testing.T, root string) {
			writeFile(t, root, ".isdlc/state.json", "{}")
		}, "git checkout .", "DES-STATE-BASH-WRITE"},
		{"git restore docs over an edited step", func(t *testing.T, root string) {
			writeFile(t, root, "docs/feature/x/steps/01-01.json", `{"task_id": "01-01", "state": {"status": "IN_PROGRESS"}, "tdd_cycle": {"phase_execution_log": []}}`)
		}, "git restore docs", "DES-STATE-BASH-WRITE"},
		{"git checkout -- . when the state is staged", func(t *testing.T, root string) {
			writeFile(t, root, ".isdlc/state.json", "{}")
			git(t, root, "add", ".isdlc/state.json")
		}, "git checkout -- .", ""},
		{"git checkout HEAD -- . when the state is staged", func(t *testing.T, root string) {
			writeFile(t, root, ".isdlc/state.json", "{}")
			git(t, root, "add", ".isdlc/state.json")
		}, "git checkout HEAD -- .", "DES-STATE-BASH-WRITE"},
		{"git checkout of an unknown tree", nil, "git checkout nosuchbranch -- .", "DES-STATE-BASH-WRITE"},
		{"chmod -R u+w . changing nothing of DES's", nil, "chmod -R u+w .", ""},
		{"chmod 644 on a 644 state", nil, "chmod 644 .isdlc/state.json", ""},
		{"chmod -R a-w .", nil, "chmod -R a-w .", "DES-STATE-BASH-WRITE"},
		{"chmod 000 the state", nil, "chmod 000 .isdlc/state.json", "DES-STATE-BASH-WRITE"},
		{"chmod with a mode DES cannot read", nil, "chmod --reference=README.md -R .", "DES-STATE-BASH-WRITE"},
		{"rm -rf build/", nil, "rm -rf build/", ""},
		{"rm -rf docs", nil, "rm -rf docs", "DES-STATE-BASH-WRITE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := setup(t)
			writeFile(t, root, "src/main.go", edited)
			if err := os.Chmod(filepath.Join(root, ".isdlc", "state.json"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.prepare != nil {
				c.prepare(t, root)
			}
			state, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json"))
			reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, c.command)))
			if (c.code == "") != (reason == "") || c.code != "" && !strings.Contains(reason, "["+c.code+"]") {
				t.Fatalf("want %q, got %q", c.code, reason)
			}
			if c.code != "" {
				return
			}
			runBash(t, root, c.command)
			if now, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json")); string(now) != string(state) {
				t.Errorf("the allowed command changed the state: %q", now)
			}
			if raw, _ := os.ReadFile(filepath.Join(root, "docs/feature/x/steps/01-01.json")); string(raw) != step {
				t.Errorf("the allowed command changed the step: %q", raw)
			}
			if raw, _ := os.ReadFile(filepath.Join(root, "src/main.go")); strings.HasPrefix(c.command, "git") && string(raw) == edited {
				t.Error("the allowed command did not restore the code")
			}
		})
	}
}

// DES's look at the index runs none of the repository's filters: an agent
// that configures a clean filter does not get code run inside the hook.
func TestE2EBroadCommandsRunNoRepositoryFilter(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, ".isdlc/state.json", stateV5)
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "state")
	marker := filepath.Join(t.TempDir(), "ran")
	git(t, root, "config", "filter.x.clean", "touch "+marker+"; cat")
	writeFile(t, root, ".gitattributes", "* filter=x\n")
	if err := os.Chtimes(filepath.Join(root, ".isdlc", "state.json"), time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err) // stat-dirty, so that git itself would run the filter
	}
	if reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, "git checkout ."))); reason != "" {
		t.Errorf("denied: %s", reason)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the hook ran the repository's clean filter")
	}
}

// The spellings of the project's paths, hard links made by the
// command, and targets DES cannot know: each denied command is judged
// only, each allowed one is really run with bash and its effect checked.
func TestE2EBashSpellingsLinksAndDynamicTargets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	root := filepath.Join(home, "proj")
	writeFile(t, root, ".isdlc/state.json", stateV5)
	writeFile(t, root, ".des/config.json", "{}")
	writeFile(t, root, "docs/feature/x/steps/01-01.json", `{"task_id": "01-01", "tdd_cycle": {"phase_execution_log": []}}`)
	writeFile(t, root, "a.txt", "a")
	writeFile(t, root, "build/x.o", "o")
	writeFile(t, root, "sub/keep", "")
	env := []string{"HOME=" + home, "OLDPWD=" + root}
	cases := []struct {
		name, cwd, command string
		code               string // "" = no opinion: the command runs
		effect             string // with no opinion: a file the command must leave behind
	}{
		{"~ spells the project", "", `echo '{}' > ~/proj/.isdlc/state.json`, "DES-STATE-BASH-WRITE", ""},
		{"$HOME spells the project", "", `echo '{}' > "$HOME/proj/.isdlc/state.json"`, "DES-STATE-BASH-WRITE", ""},
		{"~+ is the cwd", "", `echo '{}' > ~+/.isdlc/state.json`, "DES-STATE-BASH-WRITE", ""},
		{"$PWD is the cwd", "sub", `echo '{}' > $PWD/../.isdlc/state.json`, "DES-STATE-BASH-WRITE", ""},
		{"~- is the previous directory", "sub", `echo '{}' > ~-/.isdlc/state.json`, "DES-STATE-BASH-WRITE", ""},
		{"$OLDPWD is the previous directory", "sub", `echo '{}' > "$OLDPWD/.des/config.json"`, "DES-PROTECTED-PATH", ""},
		{"a cd that fails", "", `cd /nonexistent; echo X > .isdlc/state.json`, "DES-STATE-BASH-WRITE", ""},
		{"a cd that does not run", "", `false && cd /tmp; echo X > .isdlc/state.json`, "DES-STATE-BASH-WRITE", ""},
		{"~ elsewhere", "", `echo hi > ~/notes.txt`, "", filepath.Join(home, "notes.txt")},
		{"ln to the settings", "", `ln .des/config.json c.json && echo '{"guarded_state_files":["none/x.json"]}' > c.json`, "DES-PROTECTED-PATH", ""},
		{"cp -l of the state", "", `cp -l .isdlc/state.json s.json`, "DES-STATE-BASH-WRITE", ""},
		{"link to a step file", "", `link docs/feature/x/steps/01-01.json s.json`, "DES-STATE-BASH-WRITE", ""},
		{"ln of an ordinary file", "", `ln a.txt b.txt`, "", "b.txt"},
		{"a variable in a guarded directory", "", `echo x > .isdlc/$X`, "DES-STATE-BASH-WRITE", ""},
		{"a variable before a guarded name", "", `echo '{}' > "$D/state.json"`, "DES-STATE-BASH-WRITE", ""},
		{"a variable before a step file's name", "", `echo '{}' > "$(pwd)/docs/x/steps/$N/01-02.json"`, "DES-STATE-BASH-WRITE", ""},
		{"a variable starting DES's directory", "", `echo '{}' > .d$X/config.json`, "DES-PROTECTED-PATH", ""},
		{"a variable writing elsewhere", "", `echo ok > "$(echo build)/report.json"`, "", "build/report.json"},
		{"a glob naming the state", "", `echo '{}' > .isdlc/stat?.json`, "DES-STATE-BASH-WRITE", ""},
		{"a glob matching step files", "", `rm docs/*/x/steps/*.json`, "DES-STATE-BASH-WRITE", ""},
		{"a glob elsewhere", "", `rm build/*.o`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cwd := filepath.Join(root, c.cwd)
			reason := denyReason(t, runHookProcess(t, root, env, bashEvent(t, cwd, c.command)))
			if (c.code == "") != (reason == "") || c.code != "" && !strings.Contains(reason, "["+c.code+"]") {
				t.Fatalf("want %q, got %q", c.code, reason)
			}
			if c.code != "" {
				return
			}
			cmd := exec.CommandContext(t.Context(), "bash", "-c", c.command)
			cmd.Dir, cmd.Env, cmd.WaitDelay = cwd, append(cleanEnviron(), env...), 5*time.Second
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the allowed command failed: %v\n%s", err, out)
			}
			if c.effect != "" {
				p := c.effect
				if !filepath.IsAbs(p) {
					p = filepath.Join(root, p)
				}
				if _, err := os.Stat(p); err != nil {
					t.Errorf("the allowed command left no %s: %v", c.effect, err)
				}
			}
		})
	}
	if raw, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json")); string(raw) != stateV5 {
		t.Error("the state changed")
	}
	if raw, _ := os.ReadFile(filepath.Join(root, ".des", "config.json")); string(raw) != "{}" {
		t.Error("the settings changed")
	}
}
