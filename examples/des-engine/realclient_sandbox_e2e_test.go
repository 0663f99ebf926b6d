package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/modelserver"
	"github.com/deterministic-exec/des/internal/realclient"
)

// requireSandbox skips unless Claude Code's sandbox can run here: Linux
// with bubblewrap and socat on PATH (.ci/run installs them as root).
func requireSandbox(t *testing.T) *realclient.Client {
	t.Helper()
	c := realClient(t)
	for _, tool := range []string{"bwrap", "socat"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the sandbox cannot run here: %s is not on PATH (Debian: apt-get install bubblewrap socat)", tool)
		}
	}
	return c
}

// sandboxRun runs one sandboxed Bash command through the real client in
// root, whose .claude/settings.json is settings (and nothing else: no
// hooks, so that only the sandbox stands in the way), and returns what the
// command printed.
func sandboxRun(t *testing.T, c *realclient.Client, root string, settings map[string]any, commands ...string) string {
	t.Helper()
	settings["permissions"] = map[string]any{"allow": []any{"Bash"}}
	sb, _ := settings["sandbox"].(map[string]any)
	sb["autoAllowBashIfSandboxed"] = true
	writeJSONFile(t, filepath.Join(root, ".claude", "settings.json"), settings)
	var replies []modelserver.Reply
	for i, cmd := range commands {
		replies = append(replies, scripted("sb"+itoa(i), "Bash", map[string]any{"command": cmd, "description": "sandboxed"}))
	}
	model := modelserver.Start(t, conversation("in the sandbox", replies...))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	debug := filepath.Join(t.TempDir(), "debug.log")
	cmd := exec.CommandContext(ctx, c.CLI, "-p", "in the sandbox", "--output-format", "stream-json", "--verbose", "--debug-file", debug)
	cmd.Dir = root
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "ANTHROPIC_")
	}), "HOME="+realclient.Home(t, root), "ANTHROPIC_BASE_URL="+model.URL, "ANTHROPIC_API_KEY=sk-des-test", "DISABLE_AUTOUPDATER=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	var told []string
	for i := range commands {
		b, ok := model.ToolResultFor(toolID("sb" + itoa(i)))
		if !ok {
			t.Fatalf("no result for command %d", i)
		}
		told = append(told, b.ResultText())
	}
	return strings.Join(told, "\n")
}

// Which denyWrite spellings the real sandbox honours on Linux (Claude Code
// 2.1.328, bubblewrap): "./x" and "x" from the project root, "//abs" and
// "/abs" absolute; a bare "/x" meant as project-relative is absolute (so it
// protects nothing in the project), and globs are skipped. Directories
// protect what is below them, and a file that does not exist yet cannot be
// created. des-hook settings writes only spellings from the honoured half.
func TestRealClientSandboxSpellings(t *testing.T) {
	t.Parallel()
	c := requireSandbox(t)
	root := t.TempDir()
	honoured := map[string]string{ // file -> spelling
		"dot.txt":   "./dot.txt",
		"bare.txt":  "bare.txt",
		"abs2.txt":  "//" + root + "/abs2.txt",
		"abs1.txt":  root + "/abs1.txt",
		"dir/x.txt": "./dir",
		"later.txt": "./later.txt",
	}
	ignored := map[string]string{
		"slash.txt":              "/slash.txt",
		"a/steps/01-01.json":     "/**/steps/*.json",
		"b/steps/01-01.json":     "**/steps/*.json",
		"c/x/steps/01-01.json":   "./c/*/steps/*.json",
		".isdlc/projects/p/s.js": "./.isdlc/projects/*/s.js",
	}
	var deny, cmds []string
	for _, set := range []map[string]string{honoured, ignored} {
		for f, spelling := range set {
			if f != "later.txt" {
				writeFile(t, root, f, "orig")
			}
			deny = append(deny, spelling)
			cmds = append(cmds, "(echo changed > "+f+") 2>&1")
		}
	}
	writeFile(t, root, "sub/keep", "x")
	told := sandboxRun(t, c, root, map[string]any{"sandbox": map[string]any{"enabled": true, "allowUnsandboxedCommands": false, "filesystem": map[string]any{"denyWrite": deny}}},
		"cd sub", "cd .. && "+strings.Join(cmds, "; ")+"; echo free > free.txt")
	if got := strings.TrimSpace(readFileString(t, root, "free.txt")); got != "free" {
		t.Fatalf("an ordinary file was not written (is the sandbox running?): %q\n%s", got, told)
	}
	for f, spelling := range honoured {
		data, _ := os.ReadFile(filepath.Join(root, f))
		if strings.Contains(string(data), "changed") {
			t.Errorf("denyWrite %q: %s was written; the sandbox no longer honours it", spelling, f)
		}
	}
	for f, spelling := range ignored {
		if got := strings.TrimSpace(readFileString(t, root, f)); got != "changed" {
			t.Logf("denyWrite %q now protects %s: des could use it (see protectedPaths)", spelling, f)
		}
	}
}

// des's own settings, as settings --write installs them, against sandboxed
// Bash: every protected path and guarded document stays as it was, a step
// file added to an existing steps directory cannot be created, and an
// ordinary file is written.
func TestRealClientSandboxHoldsDesSettings(t *testing.T) {
	t.Parallel()
	c := requireSandbox(t)
	root := t.TempDir()
	const step = "docs/feature/shop/steps/01-01.json"
	for f, content := range map[string]string{
		".des/config.json":                     `{}`,
		".des/policies/team.rego":              "package team\n",
		step:                                   `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`,
		".isdlc/state.json":                    `{"state_version": 1}`,
		".isdlc/projects/web/state.json":       `{"state_version": 1}`,
		".claude/state/active_task_graph.json": `{}`,
		"src/main.go":                          "package main\n",
	} {
		writeFile(t, root, f, content)
	}
	files := installSettings(t, root)
	// Only the sandbox: des's hooks would deny most of these commands
	// first, which is not what this test is about.
	merged := map[string]any{}
	var deny []any
	for _, name := range []string{".claude/settings.json", ".claude/settings.local.json"} {
		if sb, ok := files[name]["sandbox"].(map[string]any); ok {
			if fsys, ok := sb["filesystem"].(map[string]any); ok {
				deny = append(deny, fsys["denyWrite"].([]any)...)
			}
		}
	}
	merged["sandbox"] = map[string]any{"enabled": true, "allowUnsandboxedCommands": false, "filesystem": map[string]any{"denyWrite": deny}}
	if err := os.Remove(filepath.Join(root, ".claude", "settings.local.json")); err != nil {
		t.Fatal(err)
	}
	targets := []string{".des/config.json", ".des/policies/team.rego", ".des/policies/new.rego", step, "docs/feature/shop/steps/01-02.json",
		".isdlc/state.json", ".isdlc/projects/web/state.json", ".claude/state/active_task_graph.json", ".claude/settings.json"}
	before := map[string]string{}
	for _, f := range targets {
		data, _ := os.ReadFile(filepath.Join(root, f))
		before[f] = string(data)
	}
	var cmds []string
	for _, f := range targets {
		cmds = append(cmds, "(echo '{\"forged\": true}' > "+f+") 2>&1")
	}
	told := sandboxRun(t, c, root, merged, strings.Join(cmds, "; ")+"; echo changed >> src/main.go")
	if !strings.Contains(readFileString(t, root, "src/main.go"), "changed") {
		t.Fatalf("an ordinary file was not written (is the sandbox running?):\n%s", told)
	}
	for _, f := range targets {
		if f == ".claude/settings.json" {
			continue // rewritten by sandboxRun itself; checked below
		}
		data, _ := os.ReadFile(filepath.Join(root, f))
		if string(data) != before[f] {
			t.Errorf("sandboxed Bash wrote %s: %q", f, data)
		}
	}
	if strings.Contains(readFileString(t, root, ".claude/settings.json"), "forged") {
		t.Errorf("sandboxed Bash wrote .claude/settings.json")
	}
}

// Sandboxed Bash cannot make a Unix socket (the sandbox's seccomp filter
// on Linux), so it can neither serve nor reach a decision server of its
// own in des's runtime directory.
func TestRealClientSandboxNoUnixSockets(t *testing.T) {
	t.Parallel()
	c := requireSandbox(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH")
	}
	root := t.TempDir()
	told := sandboxRun(t, c, root, map[string]any{"sandbox": map[string]any{"enabled": true, "allowUnsandboxedCommands": false}},
		`python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("s.sock"); print("BOUND")' 2>&1; echo done`)
	if strings.Contains(told, "BOUND") || !strings.Contains(told, "done") {
		t.Errorf("sandboxed Bash made a Unix socket: %s", told)
	}
}
