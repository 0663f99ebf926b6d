package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

// doctorRun runs the built `des-hook doctor --json` in root with a home and
// a managed settings directory of the test's own.
func doctorRun(t *testing.T, root, home, managed string, extra ...string) (int, doctorReport, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin, "doctor", "--json")
	cmd.Dir = root
	cmd.Env = append(slices.Clip(cleanEnviron()), append([]string{"CLAUDE_PROJECT_DIR=" + root, "HOME=" + home, managedDirEnv + "=" + managed}, extra...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	var rep doctorReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("doctor --json printed %q (stderr %q): %v", stdout.String(), stderr.String(), err)
	}
	return cmd.ProcessState.ExitCode(), rep, stdout.String()
}

// installed is a project with des installed by the built binary's
// settings --write.
func installed(t *testing.T) (root, home string) {
	t.Helper()
	root, home = t.TempDir(), t.TempDir()
	cmd := exec.Command(hookBin, "settings", "--write")
	cmd.Dir = root
	cmd.Env = append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root, "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("settings --write: %v\n%s", err, out)
	}
	return root, home
}

func findingFor(rep doctorReport, check string) (finding, bool) {
	for _, f := range rep.Findings {
		if f.Check == check && f.Severity != sevOK {
			return f, true
		}
	}
	return finding{}, false
}

func TestE2EDoctorInstalledProject(t *testing.T) {
	t.Parallel()
	root, home := installed(t)
	code, rep, out := doctorRun(t, root, home, t.TempDir())
	if code != 0 || !rep.Running {
		t.Fatalf("doctor on an installed project: exit %d\n%s", code, out)
	}
	if f, ok := findingFor(rep, "sessions"); !ok || !strings.Contains(f.Message, "no Claude Code session start") {
		t.Errorf("before any session: %+v; want the settings-present-but-no-event warning", rep.Findings)
	}
	// A session starts: des records it, doctor says so.
	ev := sessionStartEv(root, "startup", evSession("sess-1"), evFields(map[string]any{"model": "claude-x"}))
	if r := runHookProcess(t, root, nil, ev); r.code != 0 || r.stdout != "" {
		t.Fatalf("SessionStart: %+v; want no output", r)
	}
	_, rep, out = doctorRun(t, root, home, t.TempDir())
	if rep.LastSession == nil || rep.LastSession.SessionID != "sess-1" || rep.LastSession.Source != "startup" {
		t.Errorf("after a session start: %s", out)
	}
}

// A managed policy that switches hooks off: doctor names it and the file,
// and exits 1, whatever the project's settings say.
func TestE2EDoctorManagedPolicy(t *testing.T) {
	t.Parallel()
	root, home := installed(t)
	for name, policy := range map[string]string{
		"disableAllHooks":       `{"disableAllHooks": true}`,
		"allowManagedHooksOnly": `{"allowManagedHooksOnly": true}`,
	} {
		t.Run(name, func(t *testing.T) {
			managed := t.TempDir()
			writeFile(t, managed, "managed-settings.json", policy)
			code, rep, out := doctorRun(t, root, home, managed)
			if code != 1 || rep.Running {
				t.Fatalf("exit %d, running %v; want 1 and not running\n%s", code, rep.Running, out)
			}
			if !strings.Contains(rep.Verdict, name) || !strings.Contains(out, filepath.Join(managed, "managed-settings.json")) {
				t.Errorf("the verdict does not name the policy and its file:\n%s", out)
			}
		})
	}
	// The same in the project's local file: named too.
	writeFile(t, root, ".claude/settings.local.json", `{"disableAllHooks": true}`)
	if code, rep, _ := doctorRun(t, root, home, t.TempDir()); code != 1 || !strings.Contains(rep.Verdict, "disableAllHooks") {
		t.Errorf("disableAllHooks in settings.local.json: exit %d, %s", code, rep.Verdict)
	}
}

// Entries that point at a binary that is gone, or a client without
// des-engine beside it, or no entries at all: not running.
func TestE2EDoctorBrokenInstall(t *testing.T) {
	t.Parallel()
	root, home := t.TempDir(), t.TempDir()
	if code, rep, _ := doctorRun(t, root, home, t.TempDir()); code != 1 || !strings.Contains(rep.Verdict, "no settings file has a hook") {
		t.Errorf("no entries: exit %d, %s", code, rep.Verdict)
	}
	alone := filepath.Join(t.TempDir(), "des-hook")
	if err := os.Link(hookBin, alone); err != nil {
		data, _ := os.ReadFile(hookBin)
		testenv.WriteExecutable(t, alone, data)
	}
	for name, command := range map[string]string{"missing": "/nonexistent/des-hook", "no des-engine beside it": alone} {
		settings := `{"hooks": {"PreToolUse": [{"matcher": "Agent|Task|Skill|Write|Edit|MultiEdit|Bash|NotebookEdit|mcp__.*", "hooks": [{"type": "command", "command": "` + command + `", "onFailure": "block"}]}]}}`
		writeFile(t, root, ".claude/settings.json", settings)
		code, rep, out := doctorRun(t, root, home, t.TempDir())
		if f, ok := findingFor(rep, "binary"); code != 1 || !ok || f.Severity != sevError {
			t.Errorf("%s: exit %d\n%s", name, code, out)
		}
	}
	// A matcher that leaves Bash out.
	writeFile(t, root, ".claude/settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Agent|Write", "hooks": [{"type": "command", "command": "`+hookBin+`", "onFailure": "block"}]}]}}`)
	if code, rep, out := doctorRun(t, root, home, t.TempDir()); code != 1 || !strings.Contains(out, "does not match the Bash tool") {
		t.Errorf("a matcher without Bash: exit %d, %s\n%s", code, rep.Verdict, out)
	}
	// An install from before des recorded AskUserQuestion answers: told to
	// install the matchers again.
	writeFile(t, root, ".claude/settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Agent|Task|Skill|Write|Edit|MultiEdit|Bash|NotebookEdit|mcp__.*", "hooks": [{"type": "command", "command": "`+hookBin+`", "onFailure": "block"}]}],
		"PostToolUse": [{"matcher": "Agent|Task|Write|Edit|MultiEdit|Bash|NotebookEdit|mcp__.*", "hooks": [{"type": "command", "command": "`+hookBin+`"}]}]}}`)
	if _, _, out := doctorRun(t, root, home, t.TempDir()); !strings.Contains(out, "des's PostToolUse hook does not match the AskUserQuestion tool") || !strings.Contains(out, "des-hook settings --write") {
		t.Errorf("an old PostToolUse matcher:\n%s", out)
	}
	// An install from before des registered PostToolBatch: des runs, and
	// doctor says what is missing and how to install it. (The hooks of a
	// binary outside the project are written to the local file.)
	root, home = installed(t)
	var settings map[string]any
	if err := json.Unmarshal([]byte(readFileString(t, root, ".claude/settings.local.json")), &settings); err != nil {
		t.Fatal(err)
	}
	delete(settings["hooks"].(map[string]any), "PostToolBatch")
	writeJSONFile(t, filepath.Join(root, ".claude", "settings.local.json"), settings)
	code, rep, out := doctorRun(t, root, home, t.TempDir())
	if f, ok := findingFor(rep, "hook entries"); code != 0 || !ok || f.Severity != sevWarning || !strings.Contains(f.Message, "no des hook for PostToolBatch: a call you decline") || !strings.Contains(f.Fix, "des-hook settings --write") {
		t.Errorf("an install without PostToolBatch: exit %d\n%s", code, out)
	}
}

func TestMatcherMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		matcher, tool string
		want          bool
	}{
		{"", "Bash", true}, {"*", "Bash", true}, {"Bash", "Bash", true}, {"Bash", "BashX", false},
		{"Agent|Task|Bash", "Task", true}, {"mcp__.*", "mcp__server__tool", true}, {"Write|Edit", "MultiEdit", false},
	} {
		if got := matcherMatches(c.matcher, c.tool); got != c.want {
			t.Errorf("matcherMatches(%q, %q) = %v, want %v", c.matcher, c.tool, got, c.want)
		}
	}
	if !versionBelow("2.1.294", onFailureVersion) || versionBelow("2.1.295", onFailureVersion) || versionBelow("2.2.0", onFailureVersion) || !versionBelow("1.9.999", onFailureVersion) {
		t.Error("versionBelow")
	}
}
