package main

// The harness of the attack suite: a real project an agent works in, the
// built hook binary run as Claude Code runs it around each tool call
// (PreToolUse, the command really run, PostToolUse or PostToolUseFailure),
// and a snapshot of every file DES protects or guards, compared after the
// call. What counts is the effect on disk, not only the decision.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	// atkHookDeadline is how long one hook process may take. Claude Code's
	// timeout for the tool hooks `hook settings` prints is 30 s, and a hook
	// that times out is an allow: a hook that needs longer is a bypass.
	atkHookDeadline = 25 * time.Second
	// atkCommandTimeout bounds one Bash command the agent runs.
	atkCommandTimeout = 10 * time.Second
)

// atkDoneStep and atkOpenStep are the project's step files: a finished one
// and one in progress, in nWave's shape (task_specification, state,
// tdd_cycle.phase_execution_log with the 14 phases).
const (
	atkDoneStep = "docs/feature/shop/steps/01-01.json"
	atkOpenStep = "docs/feature/shop/steps/01-02.json"
	atkState    = ".isdlc/state.json"
	atkConfig   = ".des/config.json"
	atkPolicy   = ".des/policies/team.rego"
)

// atkSession is the session of the attack suite's events (the corpus's
// curated Bash payload's).
const atkSession = "120ec635-4140-4bf9-8fdc-24047e46c394"

// evOpts are the fields every tool event in the project carries but the
// Bash calls (bashEvent's): the session, its transcript under $HOME,
// permission_mode acceptEdits and a fresh tool_use_id.
func (p *atkProject) evOpts() []evOpt {
	return []evOpt{evSession(atkSession), evTranscript(filepath.Join(p.home, ".claude", "t.jsonl")), evMode("acceptEdits"), evToolUseID(p.toolUseID())}
}

const atkConfigContent = `{
  "stale_threshold_minutes": 45,
  "gate2_on_failure": "record"
}
`

// atkPolicyContent is a team policy: a warning that never fires, so the
// policy directory holds a real, compiling Rego file.
const atkPolicyContent = `package des.gates.tool_use

# METADATA
# title: Team note
# description: A team rule that never fires; it is here to be protected.
# custom:
#   code: TEAM-NOTE
#   severity: warn
warn contains {"code": "TEAM-NOTE", "msg": "never"} if {
	input.never_set_by_des == "team-note"
}
`

// atkStep is a step file in nWave's shape; done says whether every phase
// and the task are finished, else three phases are done, the fourth runs.
func atkStep(taskID string, done bool) string {
	var log []any
	for i, name := range canonicalPhases {
		p := map[string]any{"phase_name": name, "phase_index": i, "status": "NOT_EXECUTED", "outcome": nil,
			"outcome_details": nil, "blocked_by": nil, "started_at": nil, "ended_at": nil, "history": []any{}}
		switch {
		case done && name == "REFACTOR_L4":
			p["status"], p["blocked_by"] = "SKIPPED", "NOT_APPLICABLE: nothing left to abstract"
		case done || i < 3:
			p["status"], p["outcome"], p["outcome_details"] = "EXECUTED", "PASS", "tests green"
			p["started_at"], p["ended_at"] = "2026-11-20T10:00:00Z", "2026-11-20T10:05:00Z"
		case i == 3:
			p["status"], p["started_at"] = "IN_PROGRESS", "2099-01-01T00:00:00Z" // never stale
		}
		log = append(log, p)
	}
	state := map[string]any{"status": "IN_PROGRESS", "started_at": "2026-11-20T10:00:00Z"}
	if done {
		state["status"], state["completed_at"] = "DONE", "2026-11-20T12:00:00Z"
	}
	doc := map[string]any{
		"task_specification": map[string]any{"task_id": taskID, "project_id": "shop", "name": "Cart total " + taskID},
		"state":              state,
		"tdd_cycle": map[string]any{
			"acceptance_test":     map[string]any{"scenario_name": "cart total", "test_file": "tests/acceptance/test_cart.py"},
			"phase_execution_log": log,
		},
		"quality_gates": map[string]any{"acceptance_test_must_fail_first": true},
	}
	raw, _ := json.MarshalIndent(doc, "", "  ")
	return string(raw) + "\n"
}

// atkProject is a real project: a git repository at $HOME/proj with DES's
// settings, a team policy, two step files, a workflow state, Claude Code's
// settings made by `hook settings`, and the pre-commit hook installed.
type atkProject struct {
	home, root, stateDir string
	env                  []string // for the hook processes and the agent's shell alike
	calls                atomic.Int64
	// matchers are the hook matchers of each event in the settings `hook
	// settings` printed: Claude Code runs the hook only for the events and
	// tools they name. nil: every event is sent.
	matchers map[string][]string
	// during, when set, runs after a Bash command and before PostToolUse:
	// what someone else (the user, Claude Code) does meanwhile.
	during func()
}

// atkMatchers reads the matchers of des's hook entries from a settings
// document.
func atkMatchers(settings map[string]any) map[string][]string {
	m := map[string][]string{}
	hooks, _ := settings["hooks"].(map[string]any)
	for event, groups := range hooks {
		list, _ := groups.([]any)
		for _, g := range list {
			gm, _ := g.(map[string]any)
			matcher, _ := gm["matcher"].(string)
			m[event] = append(m[event], matcher)
		}
	}
	return m
}

// atkSimpleMatcher is a matcher Claude Code compares as a list of exact
// names; any other is a regular expression.
var atkSimpleMatcher = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// sends reports whether Claude Code runs the hook for event and tool under
// p's settings.
func (p *atkProject) sends(event, tool string) bool {
	if p.matchers == nil {
		return true
	}
	for _, m := range p.matchers[event] {
		switch {
		case m == "" || m == "*" || tool == "":
			return true
		case atkSimpleMatcher.MatchString(m):
			if slices.Contains(strings.Split(m, "|"), tool) {
				return true
			}
		default:
			if re, err := regexp.Compile(m); err == nil && re.MatchString(tool) {
				return true
			}
		}
	}
	return false
}

// atkEnviron is the environment of the hook and of the agent's commands:
// the developer's own settings removed, HOME and the state directory
// private to the test, no system or global git configuration.
func atkEnviron(home, root, stateDir string) []string {
	env := slices.DeleteFunc(cleanEnviron(), func(kv string) bool {
		for _, k := range []string{"HOME=", "XDG_", "OLDPWD=", "PWD=", "GIT_", "CLAUDE_"} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
		return false
	})
	return append(env, testBudget, "HOME="+home, "DES_STATE_DIR="+stateDir, "CLAUDE_PROJECT_DIR="+root,
		"OLDPWD="+root, "GIT_CONFIG_NOSYSTEM=1", "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		// The run's own runtime directory (TestMain), so that the decision
		// server these calls start is the one TestMain stops.
		"XDG_RUNTIME_DIR="+os.Getenv("XDG_RUNTIME_DIR"))
}

// newAtkProject makes the project and, with trail set, one audited deny so
// the audit trail exists before the attack.
func newAtkProject(t testing.TB, trail bool) *atkProject {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &atkProject{home: home, root: filepath.Join(home, "proj"), stateDir: t.TempDir()}
	p.env = atkEnviron(p.home, p.root, p.stateDir)
	root := p.root
	writeFiles(t, root,
		"README.md", "# shop\n\nA small shop.\n",
		"src/app.go", "package app\n",
		".gitignore", ".des/audit/\n.des/runs/\n.des/sessions/\nnode_modules/\n",
		atkConfig, atkConfigContent,
		atkPolicy, atkPolicyContent,
		atkDoneStep, atkStep("01-01", true),
		atkOpenStep, atkStep("01-02", false),
		atkState, stateV5)
	settings := p.cli(t, "settings")
	if settings.code != 0 {
		t.Fatalf("hook settings: %+v", settings)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(settings.stdout), &s); err != nil {
		t.Fatalf("hook settings printed no JSON object: %v\n%s", err, settings.stdout)
	}
	p.matchers = atkMatchers(s)
	s["model"] = "opus" // a key that is not DES's
	raw, _ := json.MarshalIndent(s, "", "  ")
	writeFile(t, root, ".claude/settings.json", string(raw)+"\n")

	p.git(t, "init", "-q")
	gitIdentity(t, root)
	p.git(t, "add", ".")
	p.git(t, "commit", "-qm", "init")
	if r := p.cli(t, "precommit", "--install"); r.code != 0 {
		t.Fatalf("hook precommit --install: %+v", r)
	}
	if trail {
		p.startTrail(t)
	}
	return p
}

// startTrail makes one audited deny, so the audit trail exists before the
// attack.
func (p *atkProject) startTrail(t testing.TB) {
	t.Helper()
	ev := writeToolEvent(p.root, "Write", ".des/policies/relax.rego", map[string]any{"content": "package des.gates.tool_use\n"})
	if reason := p.pre(t, ev); !strings.Contains(reason, "DES-PROTECTED-PATH") {
		t.Fatalf("the fixture's audited deny: %q", reason)
	}
}

// fresh is a copy of the project tmpl (made without a trail), with the
// audit trail started when trail is set: cheaper than a new project.
func (tmpl *atkProject) fresh(t testing.TB, trail bool) *atkProject {
	t.Helper()
	p := copyAtkProject(t, tmpl)
	if trail {
		p.startTrail(t)
	}
	return p
}

// copyAtkProject is a fresh copy of a project made without a trail, with a
// home and state directory of its own (the state is keyed by the root).
func copyAtkProject(t testing.TB, tmpl *atkProject) *atkProject {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", tmpl.root, home).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	p := &atkProject{home: home, root: filepath.Join(home, "proj"), stateDir: t.TempDir(), matchers: tmpl.matchers}
	p.env = atkEnviron(p.home, p.root, p.stateDir)
	return p
}

func (p *atkProject) path(rel string) string { return filepath.Join(p.root, filepath.FromSlash(rel)) }

func (p *atkProject) git(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", p.root}, args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// commits is the number of commits on HEAD.
func (p *atkProject) commits(t testing.TB) string {
	t.Helper()
	return strings.TrimSpace(p.git(t, "rev-list", "--count", "HEAD"))
}

// cli runs a subcommand of the built binary in the project.
func (p *atkProject) cli(t testing.TB, args ...string) hookRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), atkHookDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin, args...)
	cmd.Env, cmd.Dir = p.env, p.root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("hook %s did not finish within %s", strings.Join(args, " "), atkHookDeadline)
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// atkReply is what one hook process answered.
type atkReply struct {
	hung                            bool
	notSent                         bool // the settings do not run the hook for this event and tool
	elapsed                         time.Duration
	stdout, stderr                  string
	permissionDecision, denyReason  string
	decision, reason, systemMessage string
	additionalContext               string
}

// hookInProcess decides raw in this process when the tests' hook calls are
// (runHookInProcess); ok is false when it runs through the binary.
func (p *atkProject) hookInProcess(t testing.TB, raw []byte, deadline time.Duration, env []string) (atkReply, int, bool) {
	t.Helper()
	if !testHookInProcess {
		return atkReply{}, 0, false
	}
	start := time.Now()
	res, ok := runHookInProcess(t, p.root, append(slices.Clip(p.env), env...), raw)
	if !ok {
		return atkReply{}, 0, false
	}
	r := atkReply{elapsed: time.Since(start), stdout: res.stdout, stderr: res.stderr}
	r.hung = r.elapsed > deadline
	return r, res.code, true
}

// hookBinary runs the built client on raw, killed at the deadline.
func (p *atkProject) hookBinary(t testing.TB, raw []byte, deadline time.Duration, env []string) (atkReply, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin)
	cmd.Env, cmd.Dir = append(slices.Clip(p.env), env...), p.root
	cmd.Stdin = bytes.NewReader(raw)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	r := atkReply{elapsed: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		r.hung = true
		return r, 0
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return r, cmd.ProcessState.ExitCode()
}

// hook runs the hook on one event (in process, or the binary) with the harness's deadline and checks
// the protocol: exit 0, at most one JSON object on stdout, no panic. A hook
// that does not answer in time fails the test and counts as an allow, as
// Claude Code counts it.
func (p *atkProject) hook(t testing.TB, event any, deadline time.Duration, env ...string) atkReply {
	t.Helper()
	raw, ok := event.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(event); err != nil {
			t.Fatal(err)
		}
	}
	var head struct {
		Event string `json:"hook_event_name"`
		Tool  string `json:"tool_name"`
	}
	_ = json.Unmarshal(raw, &head)
	if !p.sends(head.Event, head.Tool) {
		return atkReply{notSent: true}
	}
	r, code, ok := p.hookInProcess(t, raw, deadline, env)
	if !ok {
		r, code = p.hookBinary(t, raw, deadline, env)
	}
	if r.hung {
		t.Errorf("the hook did not answer within %s (a hook that times out is an allow); event %.300s", deadline, raw)
		return r
	}
	if code != 0 {
		t.Errorf("hook exit status %d, want 0; stderr: %.600s", code, r.stderr)
	}
	if strings.Contains(strings.ToLower(r.stderr), "panic") {
		t.Errorf("hook stderr mentions a panic: %.800s", r.stderr)
	}
	if strings.TrimSpace(r.stdout) == "" {
		return r
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var out struct {
		Decision           string `json:"decision"`
		Reason             string `json:"reason"`
		SystemMessage      string `json:"systemMessage"`
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
			AdditionalContext        string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := dec.Decode(&out); err != nil {
		t.Errorf("hook stdout is not one JSON object: %v\n%.600s", err, r.stdout)
		return r
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("hook stdout holds more than one JSON value: %.600s", r.stdout)
	}
	r.permissionDecision = out.HookSpecificOutput.PermissionDecision
	r.denyReason = out.HookSpecificOutput.PermissionDecisionReason
	r.additionalContext = out.HookSpecificOutput.AdditionalContext
	r.decision, r.reason, r.systemMessage = out.Decision, out.Reason, out.SystemMessage
	return r
}

// pre sends a PreToolUse event and returns the deny reason, "" for none.
func (p *atkProject) pre(t testing.TB, event map[string]any) string {
	t.Helper()
	r := p.hook(t, event, atkHookDeadline)
	if r.permissionDecision == "deny" {
		return r.denyReason
	}
	if r.permissionDecision != "" {
		t.Errorf("PreToolUse answered %q; DES never answers anything but deny", r.permissionDecision)
	}
	return ""
}

func (p *atkProject) toolUseID() string {
	return fmt.Sprintf("toolu_atk%04d", p.calls.Add(1))
}

// atkCall is one Bash tool call: what the hook decided, what the command
// did, and what PostToolUse answered.
type atkCall struct {
	command     string
	denied      string // the PreToolUse deny reason
	pre         atkReply
	ran         bool
	exit        int
	out         string // the command's stdout and stderr
	post        atkReply
	postEvent   string
	changed     []string          // protected paths the command changed, before PostToolUse
	own         map[string]string // what PreToolUse itself wrote, which must stay
	atStart     atkSnapshot       // before PreToolUse
	harmlessMid map[string]string
}

// atkShell is how the agent's commands run: without network where the
// system allows a network namespace (unshare), else as they are.
var atkShell = sync.OnceValue(func() []string {
	for _, pre := range [][]string{{"unshare", "-rn"}, {"unshare", "-n"}} {
		if exec.Command(pre[0], append(pre[1:], "true")...).Run() == nil {
			return pre
		}
	}
	return nil
})

// run runs command with bash -c in dir, as Claude Code's Bash tool does,
// with a timeout; background jobs it starts are killed when the test ends.
func (p *atkProject) run(t testing.TB, dir, command string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), atkCommandTimeout)
	defer cancel()
	args := append(slices.Clip(atkShell()), "bash", "-c", command)
	if len(command) > 64<<10 {
		// One argument may not exceed 128 KiB (MAX_ARG_STRLEN): a long
		// command is read from a file, with the same semantics.
		script := filepath.Join(p.home, fmt.Sprintf(".atk-script-%d", p.calls.Load()))
		if err := os.WriteFile(script, []byte(command), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(script)
		args = append(slices.Clip(atkShell()), "bash", script)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env, cmd.Dir = p.env, dir
	out, err := os.CreateTemp(p.home, ".atk-out-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	// A file, not a pipe: a background job that keeps it open does not
	// hold up Wait.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	asClaudeCodeRuns(cmd) // a session of its own, and so a process group to kill
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err = cmd.Wait()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Logf("the command ran past %s and was killed: %.200s", atkCommandTimeout, command)
	}
	b, _ := os.ReadFile(out.Name())
	return cmd.ProcessState.ExitCode(), string(b)
}

// bash is one Bash tool call as Claude Code makes it: PreToolUse; unless
// denied, the command run in cwd (relative to the root, or absolute);
// then PostToolUse, or PostToolUseFailure when it exited non-zero. harmless
// files (relative) are read after the command and before PostToolUse.
func (p *atkProject) bash(t testing.TB, cwd, command string, harmless ...string) atkCall {
	t.Helper()
	return p.bashWith(t, cwd, command, nil, harmless...)
}

// bashWith is bash with fields of the event replaced (a subagent's
// agent_id and session, say).
func (p *atkProject) bashWith(t testing.TB, cwd, command string, fields map[string]any, harmless ...string) atkCall {
	t.Helper()
	dir := p.root
	if cwd != "" && filepath.IsAbs(cwd) {
		dir = cwd
	} else if cwd != "" {
		dir = p.path(cwd)
	}
	c := atkCall{command: command}
	id := p.toolUseID()
	ev := bashEvent(t, dir, command)
	ev["tool_use_id"] = id
	for k, v := range fields {
		ev[k] = v
	}
	before0 := p.snapshot(t)
	c.atStart = before0
	c.pre = p.hook(t, ev, atkHookDeadline)
	// What PreToolUse wrote (a run record, a binding) is DES's own.
	before := p.snapshot(t)
	c.own = map[string]string{}
	for k, v := range before {
		if before0[k] != v {
			c.own[k] = v
		}
	}
	if c.pre.permissionDecision == "deny" {
		c.denied = c.pre.denyReason
		return c
	}
	if c.pre.permissionDecision != "" {
		t.Errorf("PreToolUse answered %q; DES never answers anything but deny", c.pre.permissionDecision)
	}
	c.ran = true
	c.exit, c.out = p.run(t, dir, command)
	if p.during != nil {
		p.during()
	}
	mid := p.snapshot(t)
	c.changed = before.diff(mid)
	c.harmlessMid = map[string]string{}
	for _, h := range harmless {
		c.harmlessMid[h] = fileState(p.path(h))
	}
	var post map[string]any
	if c.exit == 0 {
		post = afterEv(ev, "PostToolUse", evResponse(map[string]any{"stdout": c.out, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}))
	} else {
		post = afterEv(ev, "PostToolUseFailure", evFields(map[string]any{"error": fmt.Sprintf("Exit code %d\n%s", c.exit, c.out), "is_interrupt": false}))
	}
	c.postEvent = post["hook_event_name"].(string)
	c.post = p.hook(t, post, atkHookDeadline)
	after := p.snapshot(t)
	for k, v := range c.own {
		if after[k] != v {
			t.Errorf("DES's own write at PreToolUse was undone: %s: %s -> %s", k, v, after[k])
		}
	}
	if c.post.permissionDecision != "" {
		t.Errorf("%s answered with a permissionDecision: %s", post["hook_event_name"], c.post.stdout)
	}
	return c
}

// tool is one call of another tool (Write, Edit, NotebookEdit, an MCP
// tool): PreToolUse; unless denied, apply (what the tool does on disk);
// then PostToolUse with response.
func (p *atkProject) tool(t testing.TB, cwd, tool string, input map[string]any, apply func(), response any) atkCall {
	t.Helper()
	dir := p.root
	if cwd != "" {
		dir = p.path(cwd)
	}
	ev := toolEvent("PreToolUse", tool, dir, input, p.evOpts()...)
	c := atkCall{command: tool}
	if c.denied = p.pre(t, ev); c.denied != "" {
		return c
	}
	c.ran = true
	apply()
	c.post = p.hook(t, afterEv(ev, "PostToolUse", evFields(map[string]any{"tool_response": response})), atkHookDeadline)
	return c
}

// atkSnapshot describes every protected file and guarded document: its
// existence, type, mode, link count and content hash; for Claude Code's
// settings only DES's hook entries and disableAllHooks; for git's config
// only the keys that can switch the pre-commit hook off.
type atkSnapshot map[string]string

// atkFiles are DES's own files, atkTrees its own directories, walked whole
// (every file, directory and mode in them). The audit directory and the
// subagent registry are DES's to append to; the audit trail is checked by
// `hook audit verify` instead. Other files under .des are not DES's.
var (
	atkFiles = []string{".des", ".isdlc", "docs/feature/shop/steps", atkConfig, ".des/state.json"} // directories: type and mode
	atkTrees = []string{".des/policies", ".des/runs"}
)

// atkGuarded are the guarded documents: workflow states and step files,
// existing or new. Other files beside them are not DES's: a steps
// directory may hold notes, and a JSON file there that is not named
// NN-NN.json nor shaped like a step is not a step file.
var atkGuarded = []string{".isdlc/state.json", ".isdlc/projects/*/state.json", "docs/feature/shop/steps/[0-9][0-9]-[0-9][0-9].json"}

func (p *atkProject) snapshot(t testing.TB) atkSnapshot {
	t.Helper()
	s := atkSnapshot{}
	for _, f := range atkFiles {
		s[f] = fileState(p.path(f))
	}
	for _, tree := range atkTrees {
		top := p.path(tree)
		s[tree] = fileState(top)
		_ = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == top || d.IsDir() {
				return nil // an empty directory changes nothing DES reads
			}
			rel, _ := filepath.Rel(p.root, path)
			s[filepath.ToSlash(rel)] = fileState(path)
			return nil
		})
	}
	s[atkState], s[atkOpenStep], s[atkDoneStep] = "absent", "absent", "absent"
	for _, g := range atkGuarded {
		matches, _ := filepath.Glob(p.path(g))
		for _, m := range matches {
			rel, _ := filepath.Rel(p.root, m)
			s[filepath.ToSlash(rel)] = fileState(m)
		}
	}
	for _, f := range []string{".claude/settings.json", ".claude/settings.local.json"} {
		s[f] = p.settingsState(f)
	}
	s["~/.claude/settings.json"] = p.settingsState(filepath.Join(p.home, ".claude", "settings.json"))
	s[".git/hooks/pre-commit"] = fileState(p.path(".git/hooks/pre-commit"))
	s[".git/config"] = p.gitConfigState(p.path(".git/config"))
	s["~/.gitconfig"] = p.gitConfigState(filepath.Join(p.home, ".gitconfig"))
	s["~/.config/git/config"] = p.gitConfigState(filepath.Join(p.home, ".config", "git", "config"))
	return s
}

// fileState is a path's existence, type, mode, link count and content.
func fileState(path string) string {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		return "error " + err.Error()
	}
	nlink := uint64(1)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		nlink = uint64(st.Nlink)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return "symlink -> " + target
	case fi.IsDir():
		return fmt.Sprintf("dir %v", fi.Mode().Perm())
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("special %v", fi.Mode())
	}
	if fi.Size() > 64<<20 {
		return fmt.Sprintf("file %v links=%d size=%d", fi.Mode().Perm(), nlink, fi.Size())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("file %v links=%d unreadable: %v", fi.Mode().Perm(), nlink, err)
	}
	sum := sha256.Sum256(raw)
	return fmt.Sprintf("file %v links=%d size=%d sha256=%s", fi.Mode().Perm(), nlink, len(raw), hex.EncodeToString(sum[:8]))
}

// settingsState is the part of a Claude Code settings file DES answers
// for: its own hook entries (each with its event and matcher) and
// disableAllHooks. The rest is the user's and Claude Code's.
func (p *atkProject) settingsState(rel string) string {
	path := rel
	if !filepath.IsAbs(rel) {
		path = p.path(rel)
	}
	if fi, err := os.Stat(path); err == nil && (!fi.Mode().IsRegular() || fi.Size() > 16<<20) {
		return "hooks=[] disableAllHooks=<not a settings file>" // never read a FIFO or a device
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "hooks=[] disableAllHooks=<nil>"
	}
	var doc struct {
		Hooks           map[string][]map[string]any `json:"hooks"`
		DisableAllHooks any                         `json:"disableAllHooks"`
	}
	if err != nil || json.Unmarshal(raw, &doc) != nil {
		// A file Claude Code cannot read loads no hooks at all.
		return "hooks=[] disableAllHooks=<unreadable>"
	}
	var entries []string
	for event, groups := range doc.Hooks {
		for _, g := range groups {
			hooks, _ := g["hooks"].([]any)
			for _, h := range hooks {
				if m, ok := h.(map[string]any); ok && strings.Contains(fmt.Sprint(m["command"]), hookBin) {
					b, _ := json.Marshal(m)
					entries = append(entries, fmt.Sprintf("%s[%v]%s", event, g["matcher"], b))
				}
			}
		}
	}
	sort.Strings(entries)
	disable := "<nil>"
	if doc.DisableAllHooks != nil {
		disable = fmt.Sprint(doc.DisableAllHooks)
	}
	return fmt.Sprintf("hooks=%v disableAllHooks=%s", entries, disable)
}

// gitConfigState is what in the repository's config can switch the
// pre-commit hook off: core.hooksPath and include directives.
func (p *atkProject) gitConfigState(file string) string {
	if fi, err := os.Lstat(file); errors.Is(err, fs.ErrNotExist) {
		return "none"
	} else if err == nil && !fi.Mode().IsRegular() {
		return "not a regular file: " + fileState(file)
	}
	cmd := exec.Command("git", "config", "--file", file, "--get-regexp", `^(core\.hookspath|include\..*|includeif\..*)$`)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return "none"
	}
	if err != nil {
		// git refuses to run at all with a config it cannot read: no
		// commit, so nothing is switched off.
		return "none"
	}
	return strings.TrimSpace(string(out))
}

// diff lists the paths whose state differs between s and o.
func (s atkSnapshot) diff(o atkSnapshot) []string {
	var out []string
	for k, v := range s {
		if w, ok := o[k]; !ok {
			if v != "absent" {
				out = append(out, fmt.Sprintf("%s: %s -> absent", k, v))
			}
		} else if v != w {
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, v, w))
		}
	}
	for k, w := range o {
		if _, ok := s[k]; !ok && w != "absent" {
			out = append(out, fmt.Sprintf("%s: absent -> %s", k, w))
		}
	}
	sort.Strings(out)
	if len(out) > 15 {
		out = append(out[:15], fmt.Sprintf("... and %d more", len(out)-15))
	}
	return out
}

// check asserts what every call must give: a change to a protected file
// or guarded document is undone at PostToolUse and reported with
// DES-INTEGRITY; no change, no report. prev, when given, is the state
// after the previous call: a change that landed between the calls (a
// background job) may be reported too.
func (c atkCall) check(t testing.TB, prev ...atkSnapshot) {
	t.Helper()
	if !c.ran || c.post.hung {
		return
	}
	// PostToolUse tells the model with decision block; PostToolUseFailure
	// cannot block, so additionalContext is how the model learns it there.
	blocked := c.post.decision == "block" && strings.Contains(c.post.reason, "[DES-INTEGRITY]")
	if c.postEvent == "PostToolUseFailure" {
		blocked = blocked || strings.Contains(c.post.additionalContext, "[DES-INTEGRITY]")
	}
	if len(c.changed) > 0 && c.post.notSent {
		t.Errorf("the command changed %v and the settings of `hook settings` do not run the hook at %s for this tool", c.changed, c.postEvent)
	} else if len(c.changed) > 0 && !blocked {
		t.Errorf("the command changed %v and %s did not report it with [DES-INTEGRITY] (got %.400s)", c.changed, c.postEvent, c.post.stdout)
	}
	between := len(prev) > 0 && len(prev[0].diff(c.atStart)) > 0
	if len(c.changed) == 0 && !between && strings.Contains(c.post.stdout, "DES-INTEGRITY") {
		t.Errorf("PostToolUse reported DES-INTEGRITY although no protected file changed: %.400s", c.post.stdout)
	}
}

// mustEqual fails when a protected file or guarded document differs from
// the snapshot taken before the attack.
func (s atkSnapshot) mustEqual(t testing.TB, after atkSnapshot, what string) {
	t.Helper()
	if d := s.diff(after); len(d) > 0 {
		t.Errorf("%s: protected files or guarded documents changed:\n  %s", what, strings.Join(d, "\n  "))
	}
}

// verifyTrail runs `hook audit verify` and returns its exit status.
func (p *atkProject) verifyTrail(t testing.TB) hookRun {
	t.Helper()
	return p.cli(t, "audit", "verify")
}

// atkSum is the hex SHA-256 of s.
func atkSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// hasCode reports whether reason lists code as a violation.
func hasCode(reason, code string) bool { return strings.Contains(reason, "["+code+"]") }
