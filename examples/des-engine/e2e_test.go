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
)

// hookRun is one run of the built binary.
type hookRun struct {
	code           int
	stdout, stderr string
}

// runHookProcess runs the built hook on one event in project root, with
// extra environment variables, as Claude Code does.
//
// By default the call is decided in this process by the warm server's
// handler (DES_TEST_HOOK, see runHookInProcess); a test that checks what
// only processes show calls runHookBinary.
func runHookProcess(t *testing.T, root string, env []string, event any) hookRun {
	t.Helper()
	// A test that names the decision server's settings is about the
	// client and the server: it runs them.
	if testHookInProcess && lastValue(env, "DES_DECISION_SERVER") == "" && lastValue(env, "XDG_RUNTIME_DIR") == "" {
		raw := eventBytes(t, event)
		if r, ok := runHookInProcess(t, root, hookEnviron(root, env), raw); ok {
			return r
		}
	}
	return runHookBinary(t, hookBin, root, env, event)
}

// eventBytes is event as the hook reads it: raw bytes as they are, anything
// else as JSON.
func eventBytes(t *testing.T, event any) []byte {
	t.Helper()
	if raw, ok := event.([]byte); ok {
		return raw
	}
	raw, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// testBudget is the evaluation budget of the tests' hook calls unless a
// test sets its own: these tests check decisions, and a test machine
// sharing 2 cores with other packages (or a hook process per event, each
// compiling its policies) can stretch an evaluation past the 500 ms default
// into DES-INTERNAL. Speed is measured by the benchmarks
// (docs/performance.md).
const testBudget = "DES_VALIDATION_TIMEOUT_MS=5000"

// hookEnviron is the environment the tests run the hook with in root.
func hookEnviron(root string, env []string) []string {
	return append(append(slices.Clip(cleanEnviron()), "CLAUDE_PROJECT_DIR="+root, testBudget), env...)
}

// runHookBinary is runHookProcess with the hook client at bin (another
// install of the same build, say).
func runHookBinary(t *testing.T, bin, root string, env []string, event any) hookRun {
	t.Helper()
	raw := eventBytes(t, event)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = hookEnviron(root, env)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(raw)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run hook: %v", err)
		}
	}
	return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// writeEvent is a PreToolUse of a file tool on file with the tool's
// smallest input (fileEv).
func writeEvent(root, tool, file string) map[string]any {
	return fileEv("PreToolUse", tool, root, filepath.Join(root, file), nil, evSession("s"), evToolUseID("toolu_1"))
}

// denyReason returns the PreToolUse deny reason of a run, or "" when the run
// did not deny. It fails the test on any output that is not one JSON object.
func denyReason(t *testing.T, r hookRun) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit status %d; stderr: %s", r.code, r.stderr)
	}
	if strings.TrimSpace(r.stdout) == "" {
		return ""
	}
	var out struct {
		HookSpecificOutput struct {
			HookEventName            string `json:"hookEventName"`
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	h := out.HookSpecificOutput
	if h.HookEventName != "PreToolUse" || h.PermissionDecision != "deny" {
		t.Fatalf("unexpected output: %s", r.stdout)
	}
	return h.PermissionDecisionReason
}

func TestE2EProtectedPaths(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cases := []struct {
		tool, file string
		deny       bool
	}{
		{"Write", ".des/policies/relax.rego", true},
		{"Edit", ".des/config.json", true},
		{"MultiEdit", ".des/audit/audit-2026-11-22.log", true},
		{"Write", ".des/runs/toolu_1.json", true},
		{"Write", ".des/state.json", false}, // DES's document, not DES's rules: the write guard's business
		{"Write", "src/main.go", false},
		{"Edit", ".des-notes/x.md", false},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.file, func(t *testing.T) {
			reason := denyReason(t, runHookProcess(t, root, nil, writeEvent(root, c.tool, c.file)))
			if (reason != "") != c.deny {
				t.Fatalf("deny = %v, want %v (reason %q)", reason != "", c.deny, reason)
			}
			if c.deny && (!strings.HasPrefix(reason, "[DES-PROTECTED-PATH] ") || !strings.Contains(reason, c.file) || !strings.Contains(reason, "\nRecovery:\n- ")) {
				t.Errorf("reason does not follow [CODE] message + recovery: %q", reason)
			}
		})
	}
}

func TestE2EConfiguredPolicyDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runHookProcess(t, root, []string{"DES_POLICY_DIRS=rules"}, writeEvent(root, "Write", "rules/weaker.rego"))
	if reason := denyReason(t, r); !strings.Contains(reason, "DES-PROTECTED-PATH") {
		t.Errorf("write into the configured policy dir: %q", reason)
	}
}

// Fail posture: a bad setting denies with DES-INTERNAL where DES is in
// charge, and gives no opinion (logging the error) elsewhere.
func TestE2EBadSettingFailsClosedOnlyWhereRequired(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bad := []string{"DES_STALE_THRESHOLD_MINUTES=soon"}
	reason := denyReason(t, runHookProcess(t, root, bad, writeEvent(root, "Write", ".des/policies/x.rego")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "stale_threshold_minutes") {
		t.Errorf("reason = %q, want DES-INTERNAL naming the setting", reason)
	}
	r := runHookProcess(t, root, bad, writeEvent(root, "Write", "src/main.go"))
	if denyReason(t, r) != "" || r.stdout != "" {
		t.Errorf("unrelated write with a bad setting: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "stale_threshold_minutes") {
		t.Errorf("the error was not logged: %q", r.stderr)
	}
}

func TestE2EBrokenTeamPolicyFailsClosed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".des/policies/team.rego", "package des.gates.tool_use\n\ndeny contains x if {\n")
	reason := denyReason(t, runHookProcess(t, root, nil, writeEvent(root, "Edit", ".des/config.json")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "team.rego:") {
		t.Errorf("reason = %q, want DES-INTERNAL naming team.rego:line", reason)
	}
	// Elsewhere the broken policy costs nothing: it is not even compiled.
	if r := runHookProcess(t, root, nil, writeEvent(root, "Edit", "README.md")); r.stdout != "" || r.stderr != "" {
		t.Errorf("unrelated edit: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// The README's quickstart fixture denies, run from any project directory.
func TestE2EQuickstartFixture(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/protected-write.json")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	reason := denyReason(t, runHookProcess(t, root, nil, raw))
	if !strings.Contains(reason, "[DES-PROTECTED-PATH] Write may not write .des/policies/relax.rego") {
		t.Errorf("reason = %q", reason)
	}
}

// des's own programs are protected like its settings: an agent that
// replaces des-engine beside the client switches des off. A Write and a
// Bash `mv` onto either binary are denied.
func TestE2EBinariesProtected(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	engine := filepath.Join(filepath.Dir(hookBin), "des-engine")
	for _, target := range []string{engine, hookBin} {
		ev := writeToolEvent(root, "Write", "x", map[string]any{"content": "#!/bin/sh\nexit 0\n"})
		ev["tool_input"].(map[string]any)["file_path"] = target
		if reason := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
			t.Errorf("Write %s: reason %q; want DES-PROTECTED-PATH", target, reason)
		}
		bash := bashEvent(t, root, "cp /bin/true .n && mv -f .n "+target)
		if reason := denyReason(t, runHookProcess(t, root, nil, bash)); !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
			t.Errorf("Bash mv onto %s: reason %q; want DES-PROTECTED-PATH", target, reason)
		}
	}
	// des-hook settings lists both in permissions.deny and denyWrite.
	out, err := exec.Command(hookBin, "settings", "--command", hookBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Edit(" + settingsPath(engine) + ")", settingsPath(engine)} {
		if !strings.Contains(string(out), `"`+want+`"`) {
			t.Errorf("des-hook settings lacks %s:\n%s", want, out)
		}
	}
}
