package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/deterministic-exec/des/internal/statedir"
)

// The effect check end to end: the built hook at PreToolUse, the command
// really run by bash in the project, the hook at PostToolUse, then the
// files compared on disk.
//
// The command runs even when PreToolUse denies it: whatever the reading of
// a command catches, the check after it must hold on its own.

const (
	effStep  = "docs/feature/shop/steps/01-01.json"
	effState = ".isdlc/state.json"
	effCfg   = `{"stale_threshold_minutes": 30}`
)

// effProject is a git repository with DES installed: settings, a team
// policy, a run record, a step file, a workflow state, Claude Code settings
// with DES's hooks beside a user's own, and DES's pre-commit hook.
func effProject(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("runs commands with bash")
	}
	root := t.TempDir()
	git(t, root, "init", "-q", ".")
	writeFile(t, root, ".des/config.json", effCfg)
	writeFile(t, root, ".des/policies/team.rego", "package des.team\n")
	writeFile(t, root, ".des/runs/toolu_old.json", `{"step_file": "`+effStep+`"}`+"\n")
	writeFile(t, root, effStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`+"\n")
	writeFile(t, root, effState, `{"state_version": 1}`+"\n")
	testenv.WriteExecutable(t, filepath.Join(root, ".git/hooks/pre-commit"), []byte("#!/bin/sh\nexec "+hookBin+" precommit\n"))
	settings := map[string]any{
		"hooks": map[string]any{
			"PreToolUse":  []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": hookBin}, map[string]any{"type": "command", "command": "./lint.sh"}}}},
			"PostToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": hookBin}}}},
		},
		"permissions": map[string]any{"allow": []any{"Bash(ls)"}},
	}
	data, _ := json.MarshalIndent(settings, "", "  ")
	writeFile(t, root, ".claude/settings.json", string(data))
	return root
}

func effBashEvent(root, event, id, command string) map[string]any {
	var response any
	if event != "PreToolUse" {
		response = map[string]any{"stdout": "", "stderr": "", "interrupted": false}
	}
	return bashEv(event, root, command, evToolUseID(id), evResponse(response))
}

// afterTool reads a PostToolUse (or PostToolUseFailure) response.
type afterTool struct {
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	SystemMessage string `json:"systemMessage"`
	Specific      struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func readAfter(t *testing.T, r hookRun) afterTool {
	t.Helper()
	var out afterTool
	if r.code != 0 {
		t.Fatalf("exit status %d; stderr: %s", r.code, r.stderr)
	}
	if strings.TrimSpace(r.stdout) == "" {
		return out
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&out); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	return out
}

// bashToolCall is one Bash tool call: PreToolUse, the command, PostToolUse.
func bashToolCall(t *testing.T, root, id, command string) (pre string, post afterTool) {
	t.Helper()
	pre = denyReason(t, runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", id, command)))
	sh(t, root, command)
	post = readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", id, command)))
	return pre, post
}

func sh(t *testing.T, root, command string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = root
	cmd.Env = append(cleanEnviron(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	asClaudeCodeRuns(cmd)
	out, err := cmd.CombinedOutput()
	t.Logf("$ %s\n%s(%v)", command, out, err)
}

// fileText is readFileString.
func fileText(t *testing.T, root, rel string) string {
	t.Helper()
	return readFileString(t, root, rel)
}

// begin starts watching a project (the first call of a session).
func begin(t *testing.T, root string) {
	t.Helper()
	if _, post := bashToolCall(t, root, "toolu_begin", "true"); post.Decision != "" {
		t.Fatalf("a command that changes nothing was reported: %+v", post)
	}
}

func wantRestored(t *testing.T, post afterTool, paths ...string) {
	t.Helper()
	if post.Decision != "block" || !strings.Contains(post.Reason, "[DES-INTEGRITY]") {
		t.Fatalf("PostToolUse = %+v; want a block with DES-INTEGRITY", post)
	}
	for _, p := range paths {
		if !strings.Contains(post.Reason, p) {
			t.Errorf("the reason does not name %s:\n%s", p, post.Reason)
		}
	}
	if strings.Contains(post.Reason, "NOT restored") {
		t.Errorf("something was not restored:\n%s", post.Reason)
	}
}

func TestE2EEffectsUndone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, command string
		check         func(t *testing.T, root string)
		paths         []string
	}{
		{"settings clobbered", `echo '{}' > .claude/settings.json`, func(t *testing.T, root string) {
			if s := fileText(t, root, ".claude/settings.json"); !strings.Contains(s, hookBin) || strings.Count(s, hookBin) != 2 {
				t.Errorf("DES's hooks not restored:\n%s", s)
			}
		}, []string{".claude/settings.json"}},
		{"rm -rf .des", `rm -rf .des`, func(t *testing.T, root string) {
			if fileText(t, root, ".des/config.json") != effCfg || fileText(t, root, ".des/policies/team.rego") != "package des.team\n" {
				t.Error(".des not restored")
			}
			fileText(t, root, ".des/runs/toolu_old.json")
		}, []string{".des/config.json", ".des/policies/team.rego"}},
		{"config no longer parses", `F=.des/config.json; echo x > $F`, func(t *testing.T, root string) {
			if fileText(t, root, ".des/config.json") != effCfg {
				t.Error("config not restored")
			}
		}, []string{".des/config.json"}},
		{"hard link then write", `ln .des/config.json c.json && echo '{"guarded_state_files":["none/x.json"]}' > c.json`, func(t *testing.T, root string) {
			if fileText(t, root, ".des/config.json") != effCfg {
				t.Error("config not restored")
			}
			writeFile(t, root, "c.json", "later")
			if fileText(t, root, ".des/config.json") != effCfg {
				t.Error("the link still reaches the config")
			}
		}, []string{".des/config.json"}},
		{"find -delete", `find .des -type f -delete`, func(t *testing.T, root string) {
			fileText(t, root, ".des/policies/team.rego")
			fileText(t, root, ".des/runs/toolu_old.json")
		}, []string{".des/runs/toolu_old.json"}},
		{"step file deleted", `rm ` + effStep, func(t *testing.T, root string) {
			fileText(t, root, effStep)
		}, []string{effStep}},
		{"python writes the state", `python3 -c "open('` + effState + `','w').write('{}')" || printf '{}' > ` + effState, func(t *testing.T, root string) {
			if s := fileText(t, root, effState); !strings.Contains(s, `"state_version": 1`) {
				t.Errorf("state = %s", s)
			}
		}, []string{effState}},
		{"new policy and new state", `echo 'package des.gates.tool_use' > .des/policies/evil.rego; printf '{}' > .des/state.json`, func(t *testing.T, root string) {
			for _, p := range []string{".des/policies/evil.rego", ".des/state.json"} {
				if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
					t.Errorf("%s was not removed (%v)", p, err)
				}
			}
		}, []string{".des/policies/evil.rego", ".des/state.json"}},
		{"git hooks switched off", `git config core.hooksPath /dev/null; rm .git/hooks/pre-commit`, func(t *testing.T, root string) {
			if s := fileText(t, root, ".git/config"); strings.Contains(s, "hooksPath") {
				t.Errorf("core.hooksPath still set:\n%s", s)
			}
			if fi, err := os.Stat(filepath.Join(root, ".git/hooks/pre-commit")); err != nil || fi.Mode().Perm()&0o100 == 0 {
				t.Errorf("pre-commit not restored executable: %v %v", fi, err)
			}
		}, []string{"hooksPath", "pre-commit"}},
		{"policies replaced by a link", `mv .des/policies /tmp/des-e2e-moved-$$; ln -s /tmp .des/policies`, func(t *testing.T, root string) {
			if fi, err := os.Lstat(filepath.Join(root, ".des/policies")); err != nil || !fi.IsDir() {
				t.Errorf(".des/policies = %v, %v; want a directory", fi, err)
			}
			fileText(t, root, ".des/policies/team.rego")
		}, []string{".des/policies"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := effProject(t)
			begin(t, root)
			pre, post := bashToolCall(t, root, "toolu_attack", c.command)
			t.Logf("PreToolUse: %q", pre)
			wantRestored(t, post, c.paths...)
			c.check(t, root)
			// DES starts again: the next call is judged normally.
			if _, post := bashToolCall(t, root, "toolu_next", "true"); post.Decision != "" {
				t.Errorf("the call after the restore was reported: %+v", post)
			}
			audit := auditText(t, root)
			if !strings.Contains(audit, `"INTEGRITY_VIOLATION"`) || !strings.Contains(audit, "toolu_attack") {
				t.Errorf("no INTEGRITY_VIOLATION for toolu_attack in the audit trail:\n%s", audit)
			}
		})
	}
}

func auditText(t *testing.T, root string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, ".des/audit/audit-*.log"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}

func TestE2EClaudeCodeRewriteKept(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	// Claude Code adds a permission while the call waits (a prompt answered
	// "don't ask again"); the command then drops DES's hooks, keeping the rest.
	pre := denyReason(t, runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_a", "python3 edit")))
	t.Logf("PreToolUse: %q", pre)
	var doc map[string]any
	_ = json.Unmarshal([]byte(fileText(t, root, ".claude/settings.json")), &doc)
	doc["permissions"] = map[string]any{"allow": []any{"Bash(ls)", "Bash(npm test)"}}
	data, _ := json.Marshal(doc)
	writeFile(t, root, ".claude/settings.json", string(data))
	sh(t, root, `python3 - <<'EOF'
import json
p='.claude/settings.json'
d=json.load(open(p))
d.pop('hooks')
d['model']='cheap'
json.dump(d, open(p,'w'))
EOF`)
	post := readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_a", "python3 edit")))
	wantRestored(t, post, ".claude/settings.json")
	s := fileText(t, root, ".claude/settings.json")
	for _, want := range []string{hookBin, "Bash(npm test)", `"cheap"`} {
		if !strings.Contains(s, want) {
			t.Errorf("settings lack %s:\n%s", want, s)
		}
	}
	// Every hook is guarded, not only des's: the user's own hook, which
	// the command dropped too, is back (a hook runs code outside the
	// sandbox, so dropping or adding one is not the agent's to do).
	if !strings.Contains(s, "./lint.sh") {
		t.Errorf("the user's hook the command dropped was not restored:\n%s", s)
	}
}

func TestE2EFailedCommandIsCheckedToo(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	cmd := "rm .des/config.json; exit 3"
	runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_f", cmd))
	sh(t, root, cmd)
	ev := effBashEvent(root, "PostToolUseFailure", "toolu_f", cmd)
	ev["error"] = "Exit code 3"
	post := readAfter(t, runHookProcess(t, root, nil, ev))
	if post.Specific.HookEventName != "PostToolUseFailure" || !strings.Contains(post.Specific.AdditionalContext, "[DES-INTEGRITY]") || post.Decision != "" {
		t.Fatalf("PostToolUseFailure = %+v", post)
	}
	if fileText(t, root, ".des/config.json") != effCfg {
		t.Error("config not restored")
	}
}

func TestE2EAllowedWritesKept(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	// A long command of another agent is running meanwhile.
	runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_long", "sleep 1"))

	// An allowed Write of the workflow state.
	next := `{"state_version": 2}` + "\n"
	pre := runHookProcess(t, root, nil, writeToolEvent(root, "Write", effState, map[string]any{"content": next}))
	if r := denyReason(t, pre); r != "" {
		t.Fatalf("the Write was denied: %s", r)
	}
	writeFile(t, root, effState, next)
	runHookProcess(t, root, nil, afterEv(writeToolEvent(root, "Write", effState, map[string]any{"content": next}), "PostToolUse"))

	// Gate 1 starts the step: DES rewrites it and records the run.
	prompt := renderPrompt(t, "execute-step")
	if r := denyReason(t, runHookProcess(t, root, nil, agentEvent(root, "Agent", prompt))); r != "" {
		t.Fatalf("Gate 1 denied: %s", r)
	}

	if got := readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_long", "sleep 1"))); got.Decision != "" {
		t.Fatalf("allowed writes were reported: %+v", got)
	}
	if fileText(t, root, effState) != next {
		t.Error("the allowed Write was undone")
	}
	if s := fileText(t, root, effStep); !strings.Contains(s, "IN_PROGRESS") {
		t.Errorf("Gate 1's rewrite was undone:\n%s", s)
	}
	fileText(t, root, ".des/runs/toolu_e2e.json")
}

func TestE2EHandEditBetweenCallsAccepted(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	edited := `{"stale_threshold_minutes": 45}`
	writeFile(t, root, ".des/config.json", edited) // the user, by hand
	if _, post := bashToolCall(t, root, "toolu_next", "ls"); post.Decision != "" {
		t.Fatalf("a hand edit between calls was reported: %+v", post)
	}
	if fileText(t, root, ".des/config.json") != edited {
		t.Error("the hand edit was undone")
	}
}

func TestE2EParallelCalls(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	// Agent A's command starts and rewrites the settings while it runs.
	runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_A", "slow"))
	sh(t, root, `echo '{"guarded_step_files": ["none"]}' > .des/config.json`)
	// Agent B's calls start and end meanwhile: B's PreToolUse must not take
	// A's write as the baseline, and B's PostToolUse undoes it.
	var wg sync.WaitGroup
	posts := make([]afterTool, 4)
	for i := range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("toolu_B%d", i)
			runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", id, "ls"))
			posts[i] = readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", id, "ls")))
		}()
	}
	wg.Wait()
	reported := 0
	for _, p := range posts {
		if p.Decision == "block" {
			reported++
		}
	}
	if reported == 0 {
		t.Errorf("no call reported the running command's write: %+v", posts)
	}
	if fileText(t, root, ".des/config.json") != effCfg {
		t.Error("the running command's write was kept")
	}
	if got := readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_A", "slow"))); got.Decision != "" {
		t.Errorf("A's own check found something left: %+v", got)
	}
}

func TestE2EIntegrityCommand(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	edited := `{"stale_threshold_minutes": 50}`

	// While an agent's command runs, accept refuses: the command could be
	// accepting its own changes.
	runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_run", "hook integrity accept"))
	writeFile(t, root, ".des/config.json", edited)
	if r := runBinCLI(t, root, "integrity", "accept"); r.code != 2 || !strings.Contains(r.stderr, "toolu_run") {
		t.Fatalf("accept during a call: code %d, stderr %s", r.code, r.stderr)
	}
	wantRestored(t, readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_run", "hook integrity accept"))), ".des/config.json")

	// Between calls, accept takes the hand edit; check then finds nothing.
	writeFile(t, root, ".des/config.json", edited)
	if r := runBinCLI(t, root, "integrity", "accept"); r.code != 0 {
		t.Fatalf("accept: code %d, stderr %s", r.code, r.stderr)
	}
	if r := runBinCLI(t, root, "integrity", "check"); r.code != 0 || fileText(t, root, ".des/config.json") != edited {
		t.Fatalf("check after accept: code %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
	// check restores what changed since.
	writeFile(t, root, ".des/policies/new.rego", "package des.x\n")
	if r := runBinCLI(t, root, "integrity", "check"); r.code != 1 || !strings.Contains(r.stdout, ".des/policies/new.rego: created (restored)") {
		t.Fatalf("check: code %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
}

func TestE2EEditOfClaudeSettings(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	settings := fileText(t, root, ".claude/settings.json")
	edit := func(old, new string) string {
		return denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, "Edit", ".claude/settings.json", map[string]any{"old_string": old, "new_string": new, "replace_all": true})))
	}
	// Claude Code's own kind of change: a permission.
	if r := edit(`"Bash(ls)"`, `"Bash(ls)", "Bash(npm test)"`); r != "" {
		t.Errorf("an Edit that keeps DES's hooks was denied: %s", r)
	}
	// DES's hook entry pointed elsewhere, or hooks switched off.
	if r := edit(`"command": "`+hookBin+`"`, `"command": "true"`); !strings.Contains(r, "[DES-PROTECTED-PATH]") {
		t.Errorf("an Edit of DES's hook entry was not denied: %q", r)
	}
	if r := edit(`"permissions": {`, `"disableAllHooks": true, "permissions": {`); !strings.Contains(r, "[DES-PROTECTED-PATH]") {
		t.Errorf("disableAllHooks was not denied: %q", r)
	}
	// A Write of git's config that switches the pre-commit hook off.
	cfg := fileText(t, root, ".git/config")
	r := denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, "Write", ".git/config", map[string]any{"content": cfg + "[core]\n\thooksPath = /dev/null\n"})))
	if !strings.Contains(r, "[DES-PROTECTED-PATH]") {
		t.Errorf("a Write setting core.hooksPath was not denied: %q", r)
	}
	if r := denyReason(t, runHookProcess(t, root, nil, writeToolEvent(root, "Write", ".git/config", map[string]any{"content": cfg + "[user]\n\tname = x\n"}))); r != "" {
		t.Errorf("a Write of git's config that keeps core.hooksPath was denied: %s", r)
	}
	if fileText(t, root, ".claude/settings.json") != settings {
		t.Error("PreToolUse changed the settings")
	}
}

func TestE2ENotebookAndMCP(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	tool := func(event, name, id string, input map[string]any) hookRun {
		return runHookProcess(t, root, nil, toolEvent(event, name, root, input, evToolUseID(id), evResponse(map[string]any{})))
	}
	// A notebook among des's policies is refused before it is written.
	nb := map[string]any{"notebook_path": filepath.Join(root, ".des/policies/x.ipynb"), "new_source": "x", "cell_id": "c1"}
	if r := denyReason(t, tool("PreToolUse", "NotebookEdit", "toolu_nb", nb)); !strings.Contains(r, "[DES-PROTECTED-PATH]") {
		t.Errorf("NotebookEdit under .des/policies: %q", r)
	}
	// An MCP tool gets no opinion before, and its effect is checked after.
	in := map[string]any{"path": filepath.Join(root, effState), "content": "{}"}
	mcp := func(event string) hookRun {
		return runHookProcess(t, root, nil, mcpEv(event, root, "filesystem", "write_file", in, evToolUseID("toolu_mcp"), evResponse(map[string]any{})))
	}
	if r := mcp("PreToolUse"); r.stdout != "" || r.code != 0 {
		t.Fatalf("PreToolUse for an MCP tool: %+v", r)
	}
	writeFile(t, root, effState, "{}") // what the MCP server did
	post := readAfter(t, mcp("PostToolUse"))
	wantRestored(t, post, effState)
	if s := fileText(t, root, effState); !strings.Contains(s, `"state_version": 1`) {
		t.Errorf("state = %s", s)
	}
	// A notebook elsewhere is watched the same way.
	nb = map[string]any{"notebook_path": filepath.Join(root, "analysis.ipynb"), "new_source": "x", "cell_id": "c1"}
	if r := denyReason(t, tool("PreToolUse", "NotebookEdit", "toolu_nb2", nb)); r != "" {
		t.Fatalf("NotebookEdit of an ordinary notebook denied: %s", r)
	}
	sh(t, root, "rm .des/runs/toolu_old.json")
	wantRestored(t, readAfter(t, tool("PostToolUse", "NotebookEdit", "toolu_nb2", nb)), ".des/runs/toolu_old.json")
}

func TestE2EStateDirProtected(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	state := statedir.For(root, func(k string) (string, bool) {
		if k == statedir.EnvVar {
			return testStateDir, true
		}
		return "", false
	})
	manifest := filepath.Join(state, "integrity", "manifest.json")
	if _, err := os.Stat(manifest); err != nil {
		t.Fatalf("no baseline where expected: %v", err)
	}
	for _, cmd := range []string{"rm -rf " + state, "echo '{}' > " + manifest} {
		if r := denyReason(t, runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_s", cmd))); !strings.Contains(r, "[DES-PROTECTED-PATH]") {
			t.Errorf("%s: %q", cmd, r)
		}
	}
	ev := fileEv("PreToolUse", "Write", root, manifest, nil, evToolUseID("toolu_w"))
	if r := denyReason(t, runHookProcess(t, root, nil, ev)); !strings.Contains(r, "[DES-PROTECTED-PATH]") {
		t.Errorf("Write of the baseline: %q", r)
	}
}

// The user's own Claude Code settings are guarded for every tool, not only
// after Bash: a Write that sets disableAllHooks (or a hook, or env) there
// is denied; one that changes the model is not.
func TestE2EUserClaudeSettingsWrite(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	home := t.TempDir()
	writeFile(t, home, ".claude/settings.json", `{"model": "x"}`)
	env := []string{"HOME=" + home}
	path := filepath.Join(home, ".claude", "settings.json")
	for content, deny := range map[string]bool{
		`{"model": "x", "disableAllHooks": true}`:                                                                      true,
		`{"model": "x", "env": {"XDG_STATE_HOME": "/tmp/fresh"}}`:                                                      true,
		`{"model": "x", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "sh /tmp/agent.sh"}]}]}}`: true,
		`{"model": "y", "permissions": {"allow": ["Bash(ls)"]}}`:                                                       false,
	} {
		// Directly, and through a link to the file in the project.
		link := filepath.Join(root, "settings-link.json")
		_ = os.Remove(link)
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{path, link} {
			ev := writeToolEvent(root, "Write", "x", map[string]any{"content": content})
			ev["tool_input"].(map[string]any)["file_path"] = target
			reason := denyReason(t, runHookProcess(t, root, env, ev))
			if got := strings.Contains(reason, "[DES-PROTECTED-PATH]"); got != deny {
				t.Errorf("Write %s to %s: reason %q; want deny %v", content, target, reason, deny)
			}
		}
	}
}

// One file des cannot read (17 MiB in .des/runs) written in the same call
// as a forged workflow state does not stop the undo: the state is restored
// and the poison file removed; and a poison file left between calls does
// not make every later call DES-INTERNAL.
func TestE2EPoisonFileDoesNotStopTheUndo(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	good := fileText(t, root, ".isdlc/state.json")
	begin(t, root)
	cmd := "head -c 17825792 /dev/zero > .des/runs/poison.json; echo '{}' > .isdlc/state.json"
	runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_p", "python3 x"))
	sh(t, root, cmd)
	post := readAfter(t, runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_p", "python3 x")))
	if !strings.Contains(post.Reason, "DES-INTEGRITY") || strings.Contains(post.Reason, "DES-INTERNAL") {
		t.Fatalf("PostToolUse: %+v", post)
	}
	if got := fileText(t, root, ".isdlc/state.json"); got != good {
		t.Errorf("the forged state stayed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, ".des", "runs", "poison.json")); !os.IsNotExist(err) {
		t.Errorf("the poison file stayed: %v", err)
	}
	// Left between calls: the next call starts, and its check removes it.
	sh(t, root, "head -c 17825792 /dev/zero > .des/runs/poison2.json")
	pre := runHookProcess(t, root, nil, effBashEvent(root, "PreToolUse", "toolu_q", "ls"))
	if strings.Contains(pre.stdout, "DES-INTERNAL") {
		t.Fatalf("a poison file between calls: PreToolUse %s", pre.stdout)
	}
	runHookProcess(t, root, nil, effBashEvent(root, "PostToolUse", "toolu_q", "ls"))
	if _, err := os.Stat(filepath.Join(root, ".des", "runs", "poison2.json")); !os.IsNotExist(err) {
		t.Errorf("the poison file left between calls stayed: %v", err)
	}
}
