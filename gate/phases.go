package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/shell"
	"github.com/deterministic-exec/des/policy"
)

// The phase workflow guards are rules of des.gates.pre_invocation
// (Agent, Task, Skill) and des.gates.tool_use (Bash git commits, and the
// PostToolUse observers). Go gathers the facts: the workflow state, the
// branch a commit would land on, the subagent's response; Rego decides.

// Tool names of the calls Gate 1 judges.
const (
	ToolAgent = "Agent"
	ToolTask  = "Task" // Agent's name before Claude Code 2.1.63
	ToolSkill = "Skill"
)

// Workflow is how the gates learn about a multi-phase workflow. Package des
// fills it from internal/isdlc; a zero Workflow finds none, and the phase
// guards then give no opinion.
type Workflow struct {
	// Facts returns the "workflow" fact object (internal/isdlc's
	// shape) for a call made in cwd (absolute; "" = the project root), or
	// nil when no state file exists. An error means a state file exists
	// but its facts could not be gathered (a requirement file of the
	// settings unreadable, say); a state that is no JSON object is no
	// error but a fact ("problem"), for the policy to judge.
	Facts func(ctx context.Context, cwd string) (map[string]any, error)
	// Branch returns the "branch" facts of the repository holding dir
	// (absolute), read without starting git: readable, current, detached,
	// workflow_branch_exists (whether workflowBranch exists as a ref).
	Branch func(dir, workflowBranch string) map[string]any
	// Switches tells how replacing the state selector
	// (.isdlc/monorepo.json) with content would change the state in
	// effect, for a call made in cwd: one object per place it would change
	// {cwd, isdlc_project, from, to, from_project, to_project,
	// from_active_workflow}. nil switches nothing.
	Switches func(ctx context.Context, cwd string, content []byte) ([]any, error)
	// Evidence returns what des itself saw of the active workflow of
	// state, the workflow state stateFile would hold (the "evidence" of
	// the workflow facts: each phase's test iterations, derived from the
	// test runs des recorded in that workflow). nil when state holds no
	// active workflow, or when unset.
	Evidence func(ctx context.Context, stateFile string, state map[string]any) (map[string]any, error)
}

// switches is Switches, none when unset.
func (w Workflow) switches(ctx context.Context, cwd string, content []byte) ([]any, error) {
	if w.Switches == nil {
		return []any{}, nil
	}
	out, err := w.Switches(ctx, cwd, content)
	if out == nil {
		out = []any{}
	}
	return out, err
}

// find returns the workflow facts for cwd, nil when there is no state.
func (w Workflow) find(ctx context.Context, cwd string) (map[string]any, error) {
	if w.Facts == nil {
		return nil, nil
	}
	return w.Facts(ctx, cwd)
}

// invocationTool is the tool of an invocation, Agent when unset.
func (inv Invocation) tool() string {
	if inv.Tool == "" {
		return ToolAgent
	}
	return inv.Tool
}

// callFacts is input.call: what the policy reads of the call itself.
func (inv Invocation) callFacts() map[string]any {
	if inv.tool() == ToolSkill {
		return map[string]any{"skill": inv.Skill, "args": inv.Args}
	}
	return map[string]any{"subagent_type": inv.AgentType, "prompt": inv.Prompt, "description": inv.Description}
}

// phasesInfo is what the policy's decision info "phases" says about a call.
type phasesInfo struct {
	Current, Target string
	By              string // how a delegation was found (agent, marker, text), when the policy says
	Delegation      bool
	Advancement     bool // optional in the info: a policy that does not say so leaves it false
	Escalations     []escalation
}

type escalation struct {
	Type, Phase string
	Codes       []string
}

func readPhasesInfo(d policy.Decision) (phasesInfo, bool) {
	raw, ok := d.Info["phases"].(map[string]any)
	if !ok {
		return phasesInfo{}, false
	}
	var p phasesInfo
	p.Current, _ = raw["current"].(string)
	p.Target, _ = raw["target"].(string)
	p.By, _ = raw["by"].(string)
	p.Delegation, _ = raw["delegation"].(bool)
	p.Advancement, _ = raw["advancement"].(bool)
	list, _ := raw["escalations"].([]any)
	for _, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		e := escalation{}
		e.Type, _ = m["type"].(string)
		e.Phase, _ = m["phase"].(string)
		codes, _ := m["codes"].([]any)
		for _, c := range codes {
			if s, ok := c.(string); ok {
				e.Codes = append(e.Codes, s)
			}
		}
		if e.Type != "" {
			e.Codes = nonNil(e.Codes)
			p.Escalations = append(p.Escalations, e)
		}
	}
	return p, true
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// deniedEscalations keeps, of each escalation, the codes the decision still
// denies: a code the team waived (exception) blocked nothing, so it
// escalates nothing.
func deniedEscalations(es []escalation, d policy.Decision) []escalation {
	denied := map[string]bool{}
	for _, v := range d.Deny {
		denied[v.Code] = true
	}
	var out []escalation
	for _, e := range es {
		var codes []string
		for _, c := range e.Codes {
			if denied[c] {
				codes = append(codes, c)
			}
		}
		if len(codes) > 0 {
			e.Codes = codes
			out = append(out, e)
		}
	}
	return out
}

// EscalationWindow is how long a PHASE_ESCALATION of one type and phase
// stands for its repeats: within it, the same escalation is not recorded
// again (at most once a minute).
const EscalationWindow = time.Minute

// recordEscalations audits each escalation of the decision as
// PHASE_ESCALATION, unless the trail already holds one of the same type
// and phase from the last EscalationWindow. The check reads the trail under
// its lock (audit.Log.AppendNew), so hook processes deciding at once
// record it once.
func recordEscalations(ctx context.Context, log *audit.Log, now time.Time, es []escalation, fields map[string]any) error {
	if log == nil || len(es) == 0 {
		return nil
	}
	entries := make([]audit.Entry, len(es))
	for i, e := range es {
		f := map[string]any{"type": e.Type, "phase": e.Phase, "codes": e.Codes}
		for k, v := range fields {
			f[k] = v
		}
		entries[i] = audit.Entry{Time: now, Event: audit.PhaseEscalation, Fields: f}
	}
	q := audit.Query{Events: []audit.EventType{audit.PhaseEscalation, audit.TaskInvocationValidated}, Since: now.Add(-EscalationWindow)}
	_, err := log.AppendNew(ctx, q, sameEscalation, entries...)
	return err
}

// sameEscalation reports whether recorded holds e's type and phase within
// EscalationWindow before e (a clock set back counts as within), with no
// allowed advancement out of that phase after it: an escalation closed by
// an advancement (see des.Engine.Escalations) is recorded again when the
// phase is blocked again, so that it shows as open.
func sameEscalation(recorded []audit.Entry, e audit.Entry) bool {
	same := false
	for _, r := range recorded { // in the trail's order
		switch {
		case r.Event == audit.TaskInvocationValidated:
			if adv, _ := r.Fields["advancement"].(bool); adv && r.Fields["phase"] == e.Fields["phase"] {
				same = false
			}
		case r.Fields["type"] == e.Fields["type"] && r.Fields["phase"] == e.Fields["phase"] && e.Time.Sub(r.Time) < EscalationWindow:
			same = true
		}
	}
	return same
}

// workflowPhaseFields are the audit fields of a phase decision.
func workflowPhaseFields(p phasesInfo) map[string]any {
	f := map[string]any{"phase": p.Current, "target": p.Target, "delegation": p.Delegation}
	if p.By != "" {
		f["by"] = p.By
	}
	if p.Advancement {
		f["advancement"] = true
	}
	return f
}

// CheckCommitBranches is the branch guard (DES-BRANCH-PROTECTED,
// DES-BRANCH-INTERMEDIATE): when a Bash command makes commits
// (shell.Analyze's GitCommits, every form: aliases and commands DES cannot
// read included) and a workflow state is found, it asks des.gates.tool_use
// about the branch each commit would land on. Any other command is not
// evaluated (Result.Evaluated false). The writes of the command are
// CheckBash's business: this input has none. A deny is recorded as
// COMMIT_VALIDATION_FAILED with gate "tool_use" and no step file.
func (t ToolUse) CheckCommitBranches(ctx context.Context, ev Evaluator, wf Workflow, call BashCall) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	cwd := call.Cwd
	if cwd == "" {
		cwd = t.Root
	}
	a := shell.Analyze(call.Command, t.shellOptions(call, cwd)...)
	if len(a.GitCommits) == 0 {
		return res, nil
	}
	facts, err := wf.find(ctx, cwd)
	if err != nil {
		return res, fmt.Errorf("tool_use: workflow state: %w", err)
	}
	if facts == nil {
		return res, nil
	}
	branch := workflowBranch(facts)
	commits := make([]any, 0, len(a.GitCommits))
	home := call.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	for _, c := range a.GitCommits {
		dir := bashDir(cwd, c.Dir, home)
		if gd, ok := gitDirOption(c.Options); ok {
			// git commits in the repository --git-dir (else GIT_DIR)
			// names, read from the directory git ends up in (after
			// every -C).
			dir = bashDir(dir, gd, home)
		} else if c.GitDir != "" {
			dir = bashDir(dir, c.GitDir, home)
		}
		rel := filepath.ToSlash(dir)
		if r, ok := within(t.Root, dir); ok {
			rel = r
		}
		var b map[string]any
		if wf.Branch != nil {
			b = wf.Branch(dir, branch)
		}
		if b == nil {
			b = map[string]any{"readable": false, "current": "", "detached": false, "workflow_branch_exists": false}
		}
		// What git runs, for the policy to tell a commit onto the current
		// branch (commit, merge, ...) from one that moves no branch
		// (commit-tree); alias and dynamic mean DES cannot read it.
		commits = append(commits, map[string]any{"dir": rel, "branch": b, "subcommand": c.Subcommand, "alias": c.Alias, "dynamic": c.Dynamic})
	}
	in := map[string]any{"tool": "Bash", "writes": []any{}, "command": call.Command, "workflow": facts, "commits": commits}
	d, err := ev.Evaluate(ctx, policy.ToolUse, in)
	if err != nil {
		return res, fmt.Errorf("tool_use: %w", err)
	}
	res.Decision, res.Evaluated = d, true
	if !res.Denied() || t.Audit == nil {
		return res, nil
	}
	err = t.Audit.Append(ctx, audit.Entry{Event: audit.CommitValidationFailed, Fields: withAgent(map[string]any{
		"step_file": "", "codes": d.Codes(), "source": SourceClaudeCode, "gate": string(policy.ToolUse),
		"tool_use_id": call.ToolUseID, "session_id": call.SessionID,
	}, call.AgentID)})
	if err != nil {
		return res, fmt.Errorf("tool_use: %w: %w", ErrNotRecorded, err)
	}
	return res, nil
}

// MakesCommits reports whether a Bash command may make git commits, in any
// form shell.Analyze reports (aliases and commands DES cannot read
// included): when the branch guard judges it, given a workflow state.
func (t ToolUse) MakesCommits(call BashCall) bool {
	cwd := call.Cwd
	if cwd == "" {
		cwd = t.Root
	}
	return len(shell.Analyze(call.Command, t.shellOptions(call, cwd)...).GitCommits) > 0
}

// shellOptions are the options shell.Analyze reads a command with, as
// bashWrites builds them.
func (t ToolUse) shellOptions(call BashCall, cwd string) []shell.Option {
	opts := []shell.Option{shell.WithCwd(cwd)}
	if call.Home != "" {
		opts = append(opts, shell.WithHome(call.Home))
	}
	if call.Env != nil {
		opts = append(opts, shell.WithEnv(call.Env))
	}
	if call.OldPwd != "" {
		opts = append(opts, shell.WithOldPwd(call.OldPwd))
	}
	return opts
}

// gitDirOption is the value of the last --git-dir among git's global
// options (`--git-dir=X` or `--git-dir X`), the repository git then uses
// whatever directory it runs in.
func gitDirOption(options []string) (string, bool) {
	dir, found := "", false
	for i := 0; i < len(options); i++ {
		o := options[i]
		if v, ok := strings.CutPrefix(o, "--git-dir="); ok {
			dir, found = v, true
		} else if o == "--git-dir" && i+1 < len(options) {
			i++
			dir, found = options[i], true
		}
	}
	return dir, found && dir != ""
}

// workflowBranch is active_workflow.git_branch.name of the state, "" when
// absent: the ref the branch facts look for.
func workflowBranch(facts map[string]any) string {
	state, _ := facts["state"].(map[string]any)
	aw, _ := state["active_workflow"].(map[string]any)
	gb, _ := aw["git_branch"].(map[string]any)
	name, _ := gb["name"].(string)
	return name
}

// SubagentResult is a finished Agent or Task call, as PostToolUse reports it.
type SubagentResult struct {
	Tool         string // Agent or Task ("" = Agent)
	SubagentType string
	Prompt       string
	Description  string
	Cwd          string // the event's cwd, absolute; "" = the project root
	// Response is Claude Code's tool_response as sent: a string, an object
	// with content blocks ({"content": [{"type": "text", "text": ...}]}),
	// an asynchronous launch ({"status": "async_launched", "agentId": ...}),
	// or absent (nil or JSON null).
	Response json.RawMessage
}

// ObserveSubagent runs the PostToolUse observers (DES-WALKTHROUGH-MISSING,
// DES-DISCOVER-MENU) on a finished subagent call: des.gates.tool_use with
// event "PostToolUse", the call, the response text and, when a state is
// found, the workflow. They only warn. Every call is evaluated, with or
// without a workflow state: iSDLC's discover runs before there is a state,
// and which calls are discover calls is the policy's table
// (data.des.phases.discover_agents, discover_commands), not Go's. A
// subagent runs for minutes; the evaluation costs milliseconds.
func (t ToolUse) ObserveSubagent(ctx context.Context, ev Evaluator, wf Workflow, r SubagentResult) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	cwd := r.Cwd
	if cwd == "" {
		cwd = t.Root
	}
	facts, err := wf.find(ctx, cwd)
	if err != nil {
		return res, fmt.Errorf("tool_use: workflow state: %w", err)
	}
	tool := r.Tool
	if tool == "" {
		tool = ToolAgent
	}
	present, text := ResponseText(r.Response)
	in := map[string]any{
		"event": "PostToolUse", "tool": tool, "writes": []any{},
		"call":     map[string]any{"subagent_type": r.SubagentType, "prompt": r.Prompt, "description": r.Description},
		"response": map[string]any{"present": present, "text": text},
	}
	if facts != nil {
		in["workflow"] = facts
	}
	d, err := ev.Evaluate(ctx, policy.ToolUse, in)
	if err != nil {
		return res, fmt.Errorf("tool_use: %w", err)
	}
	res.Decision, res.Evaluated = d, true
	return res, nil
}

// ResponseText reads the text of a tool_response: a JSON string; the
// "text" blocks of a "content" list (or of a list of blocks), joined by
// newlines; else a "result" or "text" string field. present is false when
// the response is absent or JSON null. An asynchronous launch has no text.
func ResponseText(raw json.RawMessage) (present bool, text string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false, ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return true, ""
	}
	return true, textOf(v)
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, b := range x {
			m, ok := b.(map[string]any)
			if !ok {
				if s, ok := b.(string); ok {
					parts = append(parts, s)
				}
				continue
			}
			if typ, _ := m["type"].(string); typ != "" && typ != "text" {
				continue
			}
			if s, ok := m["text"].(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if c, ok := x["content"]; ok {
			if s := textOf(c); s != "" {
				return s
			}
		}
		for _, k := range []string{"result", "text"} {
			if s, ok := x[k].(string); ok {
				return s
			}
		}
	}
	return ""
}
