package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/integrity"
	"github.com/deterministic-exec/des/internal/proctree"
	"github.com/deterministic-exec/des/internal/program"
	"github.com/deterministic-exec/des/internal/shell"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/watchset"
	"github.com/deterministic-exec/des/policy"
)

// integrityBudget bounds the effect check of one event, lock wait
// included: well below the 30 s Claude Code gives the hook, so that running
// out of time is DES-INTERNAL, never a hook killed by its timeout (which
// Claude Code would take as no opinion).
const integrityBudget = 10 * time.Second

// checker returns the project's effect checker (internal/integrity), nil
// when the project root is not a directory (an event from elsewhere).
// Building it touches nothing on disk.
func (h *hookEnv) checker() *integrity.Checker {
	h.checkerOnce.Do(func() {
		h.chk = integrity.ForProject(h.root, h.lookupEnv, integrity.Options{
			Logger: h.logger,
			Cache:  h.baselines,
			// The calls' processes are found under the hook's parents:
			// this process, or the warm server's client.
			Client:      h.clientPID(),
			OwnBinaries: h.binaries(),
		})
		if h.chk != nil {
			h.exe, _ = program.CommandPath(h.lookupEnv)
		}
	})
	return h.chk
}

// isDESCommand tells a command that runs this executable: a hook entry
// or a git hook line des wrote, a bare name ("des-hook", as settings
// --write writes it when PATH finds this binary) included.
func (h *hookEnv) isDESCommand(command string) bool {
	h.checker() // sets h.exe
	if h.exe == "" {
		return false
	}
	return program.Runs(command, h.exe, h.root, h.lookupEnv)
}

// watched is the watched set of the settings in force, nil when they do
// not load (the checker then uses the one its baseline recorded).
func (h *hookEnv) watched(ctx context.Context) *integrity.Watch {
	eng, err := h.engine(ctx)
	if err != nil {
		return nil
	}
	return watchset.For(h.root, eng.Config())
}

// beginEffects starts watching a tool call's effects (PreToolUse): the
// baseline is refreshed when no other call is running, and the call is
// recorded as running. The error is DES's failure to watch.
func (h *hookEnv) beginEffects(ctx context.Context, ev *Event) error {
	c := h.checker()
	if c == nil {
		return nil
	}
	w := h.watched(ctx)
	ctx, cancel := context.WithTimeout(ctx, integrityBudget)
	defer cancel()
	if _, err := c.Begin(ctx, ev.ToolUseID, w, callLifetime(ev)); err != nil {
		return fmt.Errorf("cannot record DES's files before the %s call: %w", ev.ToolName, err)
	}
	return nil
}

// cancelEffects forgets a call that will not run (DES denied it).
func (h *hookEnv) cancelEffects(ev *Event) {
	if c := h.checker(); c != nil {
		c.Cancel(ev.ToolUseID)
	}
}

// callLifetime is how long a call may run: a Bash command's own timeout
// (2 minutes by default) and a minute more; other tools, and commands left
// running in the background, the longest.
func callLifetime(ev *Event) time.Duration {
	if ev.ToolName != toolBash {
		return integrity.InFlightLifetime
	}
	var in struct {
		Timeout    float64 `json:"timeout"`
		Background bool    `json:"run_in_background"`
	}
	_ = ev.toolInput(&in)
	// A command that may leave something running ("&", nohup, setsid, ...)
	// is counted as running for the longest time from its start, whatever
	// its own timeout: its background job outlives the timeout.
	if in.Background || runsOn(ev) {
		return integrity.InFlightLifetime
	}
	d := 2 * time.Minute
	if in.Timeout > 0 {
		d = time.Duration(in.Timeout) * time.Millisecond
	}
	return d + time.Minute
}

// runsOn reports a Bash command that may leave something running once it
// returns (run_in_background, "&", nohup, setsid, ...): its effects may come
// after PostToolUse, so it stays in flight for its lifetime, and the checks
// of later calls keep comparing with the baseline taken before it instead
// of taking the disk as the new one. Reading the command can only keep a
// call in flight longer, never shorter.
func runsOn(ev *Event) bool {
	var in struct {
		Command    string `json:"command"`
		Background bool   `json:"run_in_background"`
	}
	if ev.ToolName != toolBash || ev.toolInput(&in) != nil {
		return false
	}
	if in.Background {
		return true
	}
	if !detaches().MatchString(in.Command) {
		return false
	}
	// The pattern reads the text, quotes and all: an "&" in an argument
	// (echo "Tom & Jerry", git commit -m "a & b") matches it too, and a
	// call counted as running for eleven minutes takes every hand edit
	// made meanwhile for its doing. The parsed command decides, unless
	// part of it could not be read (Dynamic, ParseError): then the
	// pattern's answer stands.
	a := shell.Analyze(in.Command)
	return a.Detaches || a.Dynamic || a.ParseError != ""
}

// runInBackground reports a Bash call Claude Code runs in the background
// (run_in_background): its PostToolUse comes while it runs.
func runInBackground(ev *Event) bool {
	var in struct {
		Background bool `json:"run_in_background"`
	}
	return ev.ToolName == toolBash && ev.toolInput(&in) == nil && in.Background
}

// bashCommand is a Bash call's command, "" for other tools.
func bashCommand(ev *Event) string {
	var in struct {
		Command string `json:"command"`
	}
	if ev.ToolName != toolBash || ev.toolInput(&in) != nil {
		return ""
	}
	return in.Command
}

// detaches matches a shell's background operator (a lone "&", not "&&",
// "&>", ">&" or "|&") and the commands that outlive their caller.
var detaches = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|[^&><|])&([^&>]|$)|\b(nohup|setsid|disown|coproc|daemonize|start-stop-daemon|systemd-run|crontab|screen|tmux)\b`)
})

// preToolUseMCP starts watching an MCP tool's effects, beside the
// delegation rules: under delegation_mode an MCP tool that writes files or
// commits (the policy's mcp_work_tool_patterns) is the main agent's work
// like Write and Bash.
func preToolUseMCP(ctx context.Context, h *hookEnv, ev *Event) response {
	return withDelegation(ctx, h, ev, mcpGuard)
}

// mcpGuard is preToolUseMCP without the delegation rules. DES has no
// opinion on what an MCP tool is asked to do; a failure to watch is logged,
// and the check after the call still compares with the last baseline.
func mcpGuard(ctx context.Context, h *hookEnv, ev *Event) response {
	if err := h.beginEffects(ctx, ev); err != nil {
		h.logger.Error("hook: "+err.Error()+"; the check after the call compares with the last baseline", "tool", ev.ToolName)
	}
	return noOpinion()
}

// preToolUseNotebook judges a NotebookEdit on DES's protected files
// (DES-PROTECTED-PATH), then starts watching its effects. Claude Code edits
// only .ipynb files with it, so a guarded document (JSON) cannot be its
// target; the check after the call covers what it may do anyway.
func preToolUseNotebook(ctx context.Context, h *hookEnv, ev *Event) response {
	return withDelegation(ctx, h, ev, notebookGuard)
}

// notebookGuard is preToolUseNotebook without the delegation rules.
func notebookGuard(ctx context.Context, h *hookEnv, ev *Event) response {
	var in struct {
		Path string `json:"notebook_path"`
	}
	_ = ev.toolInput(&in)
	if in.Path = toolFilePath(ev, h, in.Path); in.Path != "" {
		// What the edit leaves in a partly guarded file cannot be computed:
		// it is taken as changing DES's part.
		call := gate.ToolCall{Tool: ev.ToolName, Paths: []string{in.Path}, Facts: map[string]any{"des_hooks_changed": true, "hooks_path_changed": true}, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID}
		eng, err := h.engine(ctx)
		switch {
		case err != nil:
			if (gate.ToolUse{Root: h.root, Self: h.self}).Concerns(call) {
				return h.internalError(true, err)
			}
		case eng.ToolUseGate().Concerns(call):
			h.requireValidation()
			res, err := eng.CheckToolUse(ctx, call)
			if err != nil && !res.Evaluated {
				return h.internalError(true, err)
			}
			if res.Denied() {
				return preToolUseResponse(res)
			}
		}
	}
	if err := h.beginEffects(ctx, ev); err != nil {
		h.requireValidation()
		return h.internalError(true, err)
	}
	return noOpinion()
}

// postToolUseEffects checks what a tool call did to DES's files (PostToolUse
// and PostToolUseFailure for Bash, NotebookEdit and MCP tools), before and
// without loading settings or policies, restores what changed outside an
// allowed write, then records and reports it (DES-INTEGRITY).
func postToolUseEffects(ctx context.Context, h *hookEnv, ev *Event) response {
	return checkEffects(ctx, h, ev, false)
}

// postToolBatch ends the calls of a batch that DES watches (Bash,
// NotebookEdit, MCP tools) and whose End never came, with the check their
// PostToolUse would have made: a call the user declined (or a hook denied)
// has no PostToolUse, and until then it counted as running for its whole
// lifetime, keeping every later call from taking a person's edit made
// meanwhile. A call whose End came is left alone.
func postToolBatch(ctx context.Context, h *hookEnv, ev *Event) response {
	var calls []json.RawMessage
	if len(ev.ToolCalls) == 0 || json.Unmarshal(ev.ToolCalls, &calls) != nil {
		return noOpinion()
	}
	var rs []response
	for _, raw := range calls {
		// Each call on its own: one that does not decode costs the others
		// nothing.
		var tc struct {
			ToolName  string          `json:"tool_name"`
			ToolInput json.RawMessage `json:"tool_input"`
			ToolUseID string          `json:"tool_use_id"`
		}
		if json.Unmarshal(raw, &tc) != nil || tc.ToolUseID == "" || tc.ToolName != toolBash && tc.ToolName != toolNotebook && !strings.HasPrefix(tc.ToolName, "mcp__") {
			continue
		}
		call := *ev
		call.ToolName, call.ToolInput, call.ToolUseID = tc.ToolName, tc.ToolInput, tc.ToolUseID
		if r := checkEffects(ctx, h, &call, true); !r.isNoOpinion() {
			rs = append(rs, r)
		}
	}
	return joinAfterTool(ev.HookEventName, rs)
}

// checkEffects is the check after a call; open: only when the call's End
// never came (integrity.Checker.EndOpen).
func checkEffects(ctx context.Context, h *hookEnv, ev *Event, open bool) response {
	c := h.checker()
	if c == nil {
		return noOpinion()
	}
	cctx, cancel := context.WithTimeout(ctx, integrityBudget)
	var gitCmds []string
	if !open {
		// A call whose End never came may never have run (declined): its
		// git commands tell nothing of what changed.
		gitCmds = gitCommands(ev)
	}
	// Where des can read the process tree, every Bash call is looked at
	// for what it left running: a script can fork a writer without any
	// word that says so. Elsewhere only a command that reads as leaving
	// something running stays in flight (for its fixed lifetime).
	stillRunning := runsOn(ev) || ev.ToolName == toolBash && (proctree.Tree{}).Supported()
	// Only a command Claude Code keeps running in the background still has
	// its shell at PostToolUse: any other shell running the same command
	// then is another call's (a parallel subagent's go test).
	call := integrity.Call{ID: ev.ToolUseID, StillRunning: stillRunning, GitCommands: gitCmds}
	if runInBackground(ev) {
		call.Command = bashCommand(ev)
	}
	if ev.ToolName == toolBash && !open {
		// A document git checked out is taken only from a commit des
		// judged: not one made with git's hooks off, which the ref check
		// after this moves back.
		call.TrustHead = func(ctx context.Context, commit string) bool { return h.headTrusted(ctx, ev, commit) }
		call.AcceptSync = func(ctx context.Context, key string, was, now []byte) bool {
			return h.syncAccepted(ctx, ev, key, was, now)
		}
	}
	var rep integrity.Report
	var err error
	if open {
		var ended bool
		if rep, ended, err = c.EndOpen(cctx, call); !ended && err == nil {
			cancel()
			return noOpinion()
		}
		if ev.ToolName == toolBash {
			// The ref snapshot PreToolUse kept for the call's check: a call
			// that may never have run moved no ref (the ref-transaction hook
			// judged any move made meanwhile).
			_ = os.Remove(h.refSnapshotFile(ev.ToolUseID))
		}
	} else {
		rep, err = c.EndCall(cctx, call)
	}
	cancel()
	if len(rep.Synced) > 0 {
		h.recordGitSync(ctx, ev, gitCmds, rep)
	}
	if errors.Is(err, integrity.ErrNoBaseline) {
		// DES never recorded this project's files (installed during the
		// call), or its state directory was removed during it: there is
		// nothing to compare with. The next PreToolUse records a baseline.
		h.logger.Warn("hook: no baseline of DES's files to compare the call with", "tool", ev.ToolName, "state", c.Dir())
		return noOpinion()
	}
	if err != nil && len(rep.Changes) == 0 {
		h.requireValidation()
		h.logger.Error("DES internal error: the effect check could not run", "tool", ev.ToolName, "err", err)
		text := gate.Internal(policy.ToolUse, fmt.Errorf("DES could not check what the %s call changed in its files: %w", ev.ToolName, err),
			"Retry the call; if this persists, check that nothing holds DES's state directory "+c.Dir()+" (its lock), then run `des-hook integrity check`.").Reason()
		return blockAfterTool(ev.HookEventName, text, "DES could not check the effects of the last "+ev.ToolName+" call: "+err.Error())
	}
	if len(rep.Changes) == 0 {
		return noOpinion()
	}
	h.requireValidation()
	eff := gate.Effects{Tool: ev.ToolName, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID, KeptDir: c.KeptDir()}
	for _, ch := range rep.Changes {
		eff.Changes = append(eff.Changes, gate.EffectChange{Path: ch.Path, Kind: ch.Kind, What: ch.What, Was: ch.Was, Now: ch.Now, Restored: ch.Restored, Error: ch.Error, Kept: ch.Kept})
	}
	var res gate.Result
	eng, eerr := h.engine(ctx)
	if eerr != nil {
		h.logger.Error("hook: DES-INTEGRITY worded and not recorded: DES does not start", "err", eerr)
		res = gate.Result{Gate: policy.ToolUse, Evaluated: true}
		res.Decision.Deny = []policy.Violation{gate.EffectsFallback(eff)}
	} else if res, eerr = eng.CheckEffects(ctx, eff); eerr != nil {
		h.logger.Error("hook: DES-INTEGRITY not fully recorded", "err", eerr)
	}
	reason := res.Reason()
	if err != nil {
		reason += "\nThe check stopped early: " + err.Error()
	}
	n := len(rep.Changes)
	verb := "restored"
	if !rep.Restored() {
		verb = "found (not all could be restored)"
	}
	return blockAfterTool(ev.HookEventName, reason, fmt.Sprintf("DES %s %d change(s) the %s call made to its files: %s", verb, n, ev.ToolName, strings.Join(rep.Paths(), ", ")))
}

// gitCommands are the git subcommands a Bash command runs, as DES reads
// it: one that rewrites the work tree (checkout, stash, ...) lets the
// effect check take what git changed honestly even when HEAD did not move.
func gitCommands(ev *Event) []string {
	var in struct {
		Command string `json:"command"`
	}
	if ev.ToolName != toolBash || ev.toolInput(&in) != nil || !strings.Contains(in.Command, "git") {
		return nil
	}
	var out []string
	for _, r := range shell.Analyze(in.Command).GitRuns {
		if !slices.Contains(out, r.Subcommand) {
			out = append(out, r.Subcommand)
		}
	}
	return out
}

// recordGitSync audits the guarded documents the effect check took as git
// left them (GIT_SYNC) and drops des's memories of them. The documents
// stay taken whatever this records.
func (h *hookEnv) recordGitSync(ctx context.Context, ev *Event, gitCmds []string, rep integrity.Report) {
	s := gate.GitSync{Tool: ev.ToolName, ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID, GitCommands: gitCmds,
		Before: gate.GitHead(rep.GitBefore), After: gate.GitHead(rep.GitAfter)}
	for _, f := range rep.Synced {
		s.Files = append(s.Files, gate.GitSyncFile(f))
	}
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Error("hook: GIT_SYNC not recorded: DES does not start", "paths", rep.Paths(), "err", err)
		for _, f := range s.Files {
			if ferr := gate.ForgetStateMemory(ctx, statedir.For(h.root, h.lookupEnv), f.Path); ferr != nil {
				h.logger.Warn("hook: des's memory of a document git replaced is kept", "path", f.Path, "err", ferr)
			}
		}
		return
	}
	if err := eng.RecordGitSync(ctx, s); err != nil {
		h.logger.Error("hook: GIT_SYNC not fully recorded", "err", err)
	}
}

// partialFacts are the facts des.protected needs for a Write or Edit of a
// file DES guards only in part: whether it changes Claude Code's settings
// (the project's or the user's own) in anything but the allow rules and the
// model, or core.hooksPath in one of the git config files that can set it
// for the project (git_config: the repository's config and config.worktree
// files, ~/.gitconfig, $XDG_CONFIG_HOME/git/config, the files their
// includes name). The git file after the write is read by git itself, on a
// copy, so the verdict is on what git would take from it, not on the
// file's name: user.name or an alias passes.
func (h *hookEnv) partialFacts(call gate.WriteCall) map[string]any {
	rel := gate.ProjectPath(h.root, call.Path)
	var fact, file string
	facts := map[string]any{}
	switch rel {
	case ".claude/settings.json", ".claude/settings.local.json":
		fact, file = "des_hooks_changed", filepath.Join(h.root, filepath.FromSlash(rel))
	default:
		// The user's own Claude Code settings, outside the project:
		// disableAllHooks there switches des off everywhere.
		// Compared with links resolved, the file's own included: a
		// Write through a link to the file writes the file.
		abs := resolvedPath(filepath.Clean(call.Path))
		for f, kind := range integrity.UserFiles(h.lookupEnv) {
			if kind != integrity.KindClaudeSettings {
				continue
			}
			if f = resolvedPath(f); f == abs {
				fact, file = "des_hooks_changed", f
				facts["user_claude_settings"] = true
			}
		}
		if fact == "" {
			if file = h.gitConfigFile(rel); file == "" {
				return nil
			}
			fact = "hooks_path_changed"
			facts["git_config"] = true
		}
	}
	disk, err := os.ReadFile(file)
	if err != nil {
		disk = nil
	}
	after, ok := gate.Incoming(call, disk)
	if !ok {
		return nil // Claude Code refuses the call itself
	}
	changed := integrity.HooksPathChanged(disk, after)
	if fact == "des_hooks_changed" {
		changed = integrity.ClaudeSettingsChanged(disk, after)
	}
	facts[fact] = changed
	return facts
}

// resolvedPath is p with its links resolved: the file's own when it
// exists, else its directory's.
func resolvedPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(r, filepath.Base(p))
	}
	return p
}

// gitConfigFile is the absolute path of the git config file a project
// path (gate.ProjectPath form) names, "" when it names none.
func (h *hookEnv) gitConfigFile(rel string) string {
	abs := rel
	if !filepath.IsAbs(filepath.FromSlash(rel)) {
		abs = filepath.Join(h.root, filepath.FromSlash(rel))
	}
	if rel == ".git/config" {
		return abs
	}
	c := h.checker()
	if c == nil {
		return ""
	}
	for _, f := range c.GitConfigFiles() {
		if gate.ProjectPath(h.root, f) == rel {
			return abs
		}
	}
	return ""
}

// settleWrite records, after a Write or Edit the write guard allowed, the
// new content as the baseline (it was announced with the content judged).
func (h *hookEnv) settleWrite(ctx context.Context, path string) {
	c := h.checker()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, integrityBudget)
	defer cancel()
	if err := c.Settle(ctx, path); err != nil {
		h.logger.Warn("hook: cannot record an allowed write in DES's baseline; a later check may undo it", "path", path, "err", err)
	}
}

// settleReformatted takes data, the bytes a formatter hook left at path
// after an allowed write of the same JSON value, into DES's baseline:
// announced, then settled, so the baseline takes exactly those bytes and
// nothing a command put there since.
func (h *hookEnv) settleReformatted(ctx context.Context, path string, data []byte) {
	c := h.checker()
	if c == nil {
		return
	}
	if err := c.Expect(path, data); err != nil {
		h.logger.Warn("hook: cannot announce a reformatted write to DES's baseline; a later check may undo it", "path", path, "err", err)
		return
	}
	h.settleWrite(ctx, path)
}

// lookupValue is the value of an environment variable, "" when unset.
func lookupValue(lookupEnv func(string) (string, bool), name string) string {
	v, _ := lookupEnv(name)
	return v
}

// syncAccepted says whether a guarded document git changed during the call
// (was → now; key relative to the root) may be taken: it is judged as a
// Write of it would be, and refused when the write guard denies it with a
// code of data.des.integrity.sync_refused_codes: progress des did not see
// (a workflow state or task graph checked out from a commit the agent
// made, with a phase moved on past its unseen tests). Git going back (a
// reset, a stash, an older branch) is honest and breaks the order rules a
// Write must keep: those codes do not refuse it. A refused change is
// undone like a write around the guard, and kept. A document git removed
// is taken (a Write cannot remove one, and a state made again is judged).
// When des cannot judge, the change is undone.
func (h *hookEnv) syncAccepted(ctx context.Context, ev *Event, key string, was, now []byte) bool {
	if now == nil {
		return true
	}
	eng, err := h.engine(ctx)
	if err != nil {
		h.logger.Warn("hook: cannot judge what git checked out; undoing it", "path", key, "err", err)
		return false
	}
	content := string(now)
	call := gate.WriteCall{Tool: toolWrite, Path: filepath.Join(h.root, filepath.FromSlash(key)), Content: &content,
		ToolUseID: ev.ToolUseID, SessionID: ev.SessionID, AgentID: ev.AgentID, Cwd: eventDir(ev, h.root)}
	res, err := eng.DocumentWriteGate().CheckSync(ctx, eng, call, was)
	if err != nil {
		h.logger.Warn("hook: cannot judge what git checked out; undoing it", "path", key, "err", err)
		return false
	}
	if !res.Denied() {
		return true
	}
	pe, err := eng.Policy(ctx)
	if err != nil {
		return false
	}
	raw, _ := pe.Data(syncRefusedData)
	refusing, _ := raw.([]any)
	for _, c := range res.Decision.Codes() {
		if slices.Contains(refusing, any(c)) {
			h.logger.Info("hook: what git checked out claims progress des did not see; undoing it", "path", key, "codes", res.Decision.Codes())
			return false
		}
	}
	return true
}

// syncRefusedData is where the policies list the codes that refuse a
// document git brought.
const syncRefusedData = "des.integrity.sync_refused_codes"
