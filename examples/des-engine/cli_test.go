package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/version"

	"github.com/deterministic-exec/des/policy"
	builtin "github.com/deterministic-exec/des/rego"
)

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env envMap, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr, env.lookup)
	return cliResult{code, stdout.String(), stderr.String()}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, res cliResult, wantCommand string) {
		t.Helper()
		if res.code != 0 || !strings.Contains(res.stderr, "onFailure") {
			t.Fatalf("code %d, stderr %q; want the version notes on stderr", res.code, res.stderr)
		}
		var s struct {
			Hooks map[string][]struct {
				Matcher string `json:"matcher"`
				Hooks   []struct {
					Type      string `json:"type"`
					Command   string `json:"command"`
					Timeout   int    `json:"timeout"`
					OnFailure string `json:"onFailure"`
				} `json:"hooks"`
			} `json:"hooks"`
			Permissions struct {
				Deny []string `json:"deny"`
			} `json:"permissions"`
			Sandbox struct {
				Enabled                  bool  `json:"enabled"`
				AllowUnsandboxedCommands *bool `json:"allowUnsandboxedCommands"`
				Filesystem               struct {
					DenyWrite []string `json:"denyWrite"`
				} `json:"filesystem"`
			} `json:"sandbox"`
			StatusLine struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"statusLine"`
		}
		dec := json.NewDecoder(strings.NewReader(res.stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("settings output is not the settings fragment: %v\n%s", err, res.stdout)
		}
		if dec.More() {
			t.Fatalf("stdout holds more than one JSON value:\n%s", res.stdout)
		}
		want := map[string]string{
			"PreToolUse":         "Agent|Task|Skill|Write|Edit|MultiEdit|Bash|NotebookEdit|mcp__.*",
			"PostToolUse":        "Agent|Task|Write|Edit|MultiEdit|Bash|NotebookEdit|AskUserQuestion|mcp__.*",
			"PostToolUseFailure": "Bash|NotebookEdit|mcp__.*",
			"SubagentStop":       "",
			"SubagentStart":      "",
			"UserPromptSubmit":   "",
			"SessionStart":       "",
			"PostToolBatch":      "",
		}
		if s.StatusLine.Type != "command" || s.StatusLine.Command != wantCommand+" statusline" {
			t.Errorf("statusLine = %+v, want the command %q", s.StatusLine, wantCommand+" statusline")
		}
		if len(s.Hooks) != len(want) {
			t.Errorf("events %v, want the %d of %v", s.Hooks, len(want), want)
		}
		for event, matcher := range want {
			ms := s.Hooks[event]
			if len(ms) != 1 || ms[0].Matcher != matcher || len(ms[0].Hooks) != 1 {
				t.Errorf("%s: %+v, want one matcher %q with one hook", event, ms, matcher)
				continue
			}
			h := ms[0].Hooks[0]
			if h.Type != "command" || h.Command != wantCommand || h.Timeout <= 0 {
				t.Errorf("%s hook = %+v, want command %q", event, h, wantCommand)
			}
			if (event == "PreToolUse") != (h.OnFailure == "block") {
				t.Errorf("%s onFailure = %q; want \"block\" on PreToolUse only", event, h.OnFailure)
			}
		}
		for _, rule := range []string{"Edit(/.des/config.json)", "Edit(/.des/policies/**)", "Edit(/.des/runs/**)", "Edit(/.des/sessions/**)", "Edit(/.git/hooks/**)", "Edit(/.des/bundles/**)", "Edit(/.des/decisions/**)"} {
			if !slices.Contains(s.Permissions.Deny, rule) {
				t.Errorf("permissions.deny %v lacks %s", s.Permissions.Deny, rule)
			}
		}
		if !s.Sandbox.Enabled {
			t.Error("sandbox.enabled is not true")
		}
		// Claude Code's default runs a Bash call that asks for it outside
		// the sandbox, where denyWrite does not hold.
		if u := s.Sandbox.AllowUnsandboxedCommands; u == nil || *u {
			t.Error("sandbox.allowUnsandboxedCommands is not false")
		}
		// The spellings the real sandbox honours on Linux: "./x" from the
		// project root (a bare "/x" is absolute there), no globs.
		for _, p := range []string{"./.des/config.json", "./.des/policies", "./.claude/settings.json", "./.des/sessions", "./.claude/state/active_task_graph.json", "./.des/bundles"} {
			if !slices.Contains(s.Sandbox.Filesystem.DenyWrite, p) {
				t.Errorf("sandbox.filesystem.denyWrite %v lacks %s", s.Sandbox.Filesystem.DenyWrite, p)
			}
		}
		for _, p := range s.Sandbox.Filesystem.DenyWrite {
			// Path elements, not substrings: the project may sit in a
			// directory named like wt-testruns.
			if elems := strings.Split(p, "/"); slices.Contains(elems, "audit") || slices.Contains(elems, "runs") {
				t.Errorf("denyWrite lists %s: a git commit from sandboxed Bash must still append there", p)
			}
		}
		var state string
		for _, p := range s.Sandbox.Filesystem.DenyWrite {
			if strings.HasPrefix(p, "//") && strings.Contains(p, "/projects/") {
				state = p
			}
		}
		// The binary Claude Code runs is protected like des's files:
		// replacing it switches des off.
		if bin := "/" + strings.Trim(wantCommand, "'"); !slices.Contains(s.Sandbox.Filesystem.DenyWrite, bin) || !slices.Contains(s.Permissions.Deny, "Edit("+bin+")") {
			t.Errorf("the hook binary %s is not protected: denyWrite %v, deny %v", bin, s.Sandbox.Filesystem.DenyWrite, s.Permissions.Deny)
		}
		if state == "" || !slices.Contains(s.Permissions.Deny, "Edit("+state+"/**)") {
			t.Errorf("the state directory is not protected: denyWrite %v, deny %v", s.Sandbox.Filesystem.DenyWrite, s.Permissions.Deny)
		}
	}

	t.Run("default command", func(t *testing.T) {
		exe, err := os.Executable()
		if err != nil {
			t.Skip(err)
		}
		check(t, runCLI(t, envMap{}, "settings"), shellQuote(exe))
	})
	t.Run("--command with a space", func(t *testing.T) {
		check(t, runCLI(t, envMap{}, "settings", "--command", "/opt/my tools/hook"), "'/opt/my tools/hook'")
	})
	t.Run("-command=plain", func(t *testing.T) {
		check(t, runCLI(t, envMap{}, "settings", "-command=/usr/local/bin/des-hook"), "/usr/local/bin/des-hook")
	})
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/usr/local/bin/hook":              "/usr/local/bin/hook",
		"/a/b-c_d.e+f@g%h=i:j,k":           "/a/b-c_d.e+f@g%h=i:j,k",
		"/opt/my tools/hook":               "'/opt/my tools/hook'",
		`C:\Users\me\CLAUDE CODE\hook.exe`: `'C:\Users\me\CLAUDE CODE\hook.exe'`,
		"/tmp/it's/hook":                   `'/tmp/it'\''s/hook'`,
		"/x/$HOME/`id`;rm":                 "'/x/$HOME/`id`;rm'",
		"~/bin/hook":                       "'~/bin/hook'",
		"/path/*glob?[x]":                  "'/path/*glob?[x]'",
		"/a&b|c<d>e(f)g{h}#!^\"":           "'/a&b|c<d>e(f)g{h}#!^\"'",
		"/\u00e9t\u00e9/hook":              "'/\u00e9t\u00e9/hook'",
		"":                                 "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	// The quoted word reaches a real shell as the one argument it was.
	sh, err := exec.LookPath("sh")
	if err != nil || runtime.GOOS == "windows" {
		t.Skip("no POSIX shell")
	}
	for _, in := range []string{"/opt/my tools/hook", "/tmp/it's/hook", "/x/$HOME/`id`;rm", "/a\nb", "*"} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellQuote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh read %q back as %q (%v)", in, out, err)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	res := runCLI(t, envMap{"CLAUDE_PROJECT_DIR": t.TempDir()}, "version")
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("code %d, stderr %q", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	if len(lines) != 6 || lines[3] != "policies "+builtin.Revision() || lines[4] != "decisions: embedded" || lines[5] != "bundles: none" {
		t.Fatalf("version output %q, want the versions, the built-in policies' revision, then decisions: embedded and bundles: none", res.stdout)
	}
	if !strings.HasPrefix(lines[0], "des ") || len(lines[0]) <= len("des ") {
		t.Errorf("des line %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "go go1.") {
		t.Errorf("go line %q", lines[1])
	}
	if lines[2] != "opa "+version.Version {
		t.Errorf("opa line %q, want %q", lines[2], "opa "+version.Version)
	}
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	env := envMap{"CLAUDE_PROJECT_DIR": t.TempDir()}

	res := runCLI(t, env, "policies")
	if res.code != 0 {
		t.Fatalf("code %d, stderr %q", res.code, res.stderr)
	}
	lines := strings.Split(res.stdout, "\n")
	if fields := strings.Fields(lines[0]); !slices.Equal(fields, []string{"CODE", "SEVERITY", "PACKAGE", "TITLE"}) {
		t.Errorf("header %q", lines[0])
	}
	for _, code := range []string{"DES-STEPFILE-OBSOLETE", "DES-PROTECTED-PATH"} {
		found := false
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == code && f[1] == "deny" && strings.HasPrefix(f[2], "des.") {
				found = true
			}
		}
		if !found {
			t.Errorf("table lacks %s:\n%s", code, res.stdout)
		}
	}

	res = runCLI(t, env, "policies", "--json")
	if res.code != 0 {
		t.Fatalf("--json: code %d, stderr %q", res.code, res.stderr)
	}
	var rules []policy.Rule
	if err := json.Unmarshal([]byte(res.stdout), &rules); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, res.stdout)
	}
	codes := map[string]policy.Rule{}
	for _, r := range rules {
		codes[r.Code] = r
	}
	for _, code := range []string{"DES-STEPFILE-OBSOLETE", "DES-PROTECTED-PATH"} {
		if r, ok := codes[code]; !ok || r.Severity != policy.Deny || r.Package == "" || r.Title == "" {
			t.Errorf("--json entry for %s = %+v", code, r)
		}
	}
}

func TestPoliciesErrors(t *testing.T) {
	t.Parallel()
	t.Run("bad setting", func(t *testing.T) {
		res := runCLI(t, envMap{"CLAUDE_PROJECT_DIR": t.TempDir(), "DES_STALE_THRESHOLD_MINUTES": "soon"}, "policies")
		if res.code != 2 || res.stdout != "" || !strings.Contains(res.stderr, "stale_threshold_minutes") {
			t.Errorf("code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
		}
	})
	t.Run("bad policy", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, ".des/policies/team.rego", "package des.gates.pre_invocation\n\ndeny contains {\n")
		res := runCLI(t, envMap{"CLAUDE_PROJECT_DIR": root}, "policies", "--json")
		if res.code != 2 || res.stdout != "" || !strings.Contains(res.stderr, "team.rego") {
			t.Errorf("code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
		}
	})
}

func TestCommandRoot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := commandRoot(ctx, envMap{"CLAUDE_PROJECT_DIR": "/proj"}.lookup); got != "/proj" {
		t.Errorf("with CLAUDE_PROJECT_DIR: %q", got)
	}
	want, _ := os.Getwd()
	if out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output(); err == nil {
		want = filepath.FromSlash(strings.TrimSpace(string(out)))
	}
	if got := commandRoot(ctx, envMap{"CLAUDE_PROJECT_DIR": ""}.lookup); got != want {
		t.Errorf("without CLAUDE_PROJECT_DIR: %q, want %q", got, want)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"bogus"}, 2, `unknown subcommand "bogus"`},
		{[]string{"--json"}, 2, "unknown subcommand"},
		{[]string{""}, 2, "unknown subcommand"},
		{[]string{"settings", "--bogus"}, 2, "usage: des-hook settings"},
		{[]string{"settings", "extra"}, 2, "unexpected arguments"},
		{[]string{"settings", "--command"}, 2, "needs an argument"},
		{[]string{"policies", "--json=maybe"}, 2, "usage: des-hook policies"},
		{[]string{"policies", "x"}, 2, "unexpected arguments"},
		{[]string{"version", "-v"}, 2, "usage: des-hook version"},
		{[]string{"version", "now"}, 2, "unexpected arguments"},
		{[]string{"settings", "-h"}, 0, "usage: des-hook settings"},
	} {
		res := runCLI(t, envMap{}, tc.args...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.inStderr) {
			t.Errorf("%q: code %d, stderr %q; want %d and %q", tc.args, res.code, res.stderr, tc.code, tc.inStderr)
		}
		if tc.code == 2 && !strings.Contains(res.stderr, "usage:") {
			t.Errorf("%q: no usage on stderr: %q", tc.args, res.stderr)
		}
		if tc.code == 2 && res.stdout != "" {
			t.Errorf("%q: stdout %q", tc.args, res.stdout)
		}
	}
	res := runCLI(t, envMap{}, "help")
	if res.code != 0 || !strings.Contains(res.stdout, "hook settings") || !strings.Contains(res.stdout, "hook policies") {
		t.Errorf("help: code %d, stdout %q", res.code, res.stdout)
	}
}
