package des

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
)

// The phase workflow guards: multi-phase workflows (iSDLC)
// kept in a workflow state document. Go finds the state and gathers the
// facts (internal/isdlc); the rules are Rego (package des.phases, run by
// des.gates.pre_invocation and des.gates.tool_use).

// WithWorkflow replaces how DES finds a multi-phase workflow state and the
// branch a commit lands on (by default internal/isdlc: .des/
// state.json, the iSDLC monorepo layout, .isdlc/state.json). A zero
// gate.Workflow finds none, which turns the phase guards off.
func WithWorkflow(w gate.Workflow) Option {
	return func(o *options) { o.workflow = &w }
}

// CheckSkill runs Gate 1 on a Skill call (inv.Skill, inv.Args; inv.Tool is
// set to gate.ToolSkill): only the phase guards judge it, and only when a
// workflow state is found (Result.Workflow). An error there means DES could
// not decide on a call it is in charge of: fail closed.
func (e *Engine) CheckSkill(ctx context.Context, inv gate.Invocation) (gate.InvocationResult, error) {
	inv.Tool = gate.ToolSkill
	return e.PreInvocation(ctx, inv)
}

// CheckCommitBranches runs the branch guard on a Bash command about to run
// (DES-BRANCH-PROTECTED, DES-BRANCH-INTERMEDIATE): evaluated only when the
// command makes git commits and a workflow state is found. CheckBash judges
// the same command's writes; a caller merges both results (deny when either
// denies). An error on an evaluated command's facts means DES could not
// decide: fail closed.
func (e *Engine) CheckCommitBranches(ctx context.Context, call gate.BashCall) (gate.Result, error) {
	return e.ToolUseGate().CheckCommitBranches(ctx, e, e.workflow, call)
}

// CheckRefBranches runs the branch guard on branch moves that commit,
// however git made them (gate.CommitsOnBranches lists them): a ref move
// onto a protected branch is a commit on it. dir is the repository's work
// tree. Evaluated only when a workflow state is found.
func (e *Engine) CheckRefBranches(ctx context.Context, dir string, branches []string) (gate.Result, error) {
	return e.ToolUseGate().CheckRefBranches(ctx, e, e.workflow, dir, branches)
}

// ObserveSubagent runs the PostToolUse observers on a finished Agent or
// Task call (DES-WALKTHROUGH-MISSING, DES-DISCOVER-MENU): warnings only,
// for the orchestrator to read. Every call is evaluated, the workflow state
// added when one is found (discover runs before there is one).
func (e *Engine) ObserveSubagent(ctx context.Context, r gate.SubagentResult) (gate.Result, error) {
	return e.ToolUseGate().ObserveSubagent(ctx, e, e.workflow, r)
}

// WorkflowFacts returns the "workflow" facts the phase guards see for a
// call made in cwd (absolute; "" = the root), nil when no state file
// exists.
func (e *Engine) WorkflowFacts(ctx context.Context, cwd string) (map[string]any, error) {
	if e.workflow.Facts == nil {
		return nil, nil
	}
	if cwd == "" {
		cwd = e.root
	}
	return e.workflow.Facts(ctx, cwd)
}

// Escalation is a group of PHASE_ESCALATION entries of the audit trail:
// one type and phase.
type Escalation struct {
	Type, Phase string
	Count       int       // entries recorded (at most one a minute)
	First, Last time.Time // first and last recorded
	Codes       []string  // every code of them, sorted, distinct
	// Open reports that the orchestrator has not got past what blocked
	// it: Phase is still the workflow's current phase, and no advancement
	// out of Phase was allowed since the escalation's last entry.
	Open bool
	// Advanced is when an advancement out of Phase was allowed
	// (TASK_INVOCATION_VALIDATED with advancement) after the escalation's
	// last entry: what closed it while the state still names Phase as
	// current (the orchestrator writes the next phase after the call).
	// Zero when none was.
	Advanced time.Time
}

// Escalations groups the trail's PHASE_ESCALATION entries by type and
// phase, in order of their last entry, newest last. Without all only the
// open ones are returned: those whose phase is still the current phase of
// the workflow state found in cwd (none when there is no state), and out
// of which no advancement was allowed since (a gate that passes once the
// tests do, or after `des-hook escalations approve`: the blocker is gone
// though the state names the next phase only once the orchestrator writes
// it). An escalation recorded again after the advancement is open again.
func (e *Engine) Escalations(ctx context.Context, cwd string, all bool) ([]Escalation, error) {
	entries, err := e.audit.Read(ctx, audit.Query{Events: []audit.EventType{audit.PhaseEscalation, audit.TaskInvocationValidated}})
	if err != nil {
		return nil, fmt.Errorf("des: escalations: %w", err)
	}
	current := ""
	facts, err := e.WorkflowFacts(ctx, cwd)
	if err != nil {
		return nil, fmt.Errorf("des: escalations: %w", err)
	}
	if facts != nil {
		current = e.normalisePhase(ctx, currentPhase(facts))
	}
	var out []Escalation
	index := map[[2]string]int{}
	for _, en := range entries {
		typ, _ := en.Fields["type"].(string)
		phase, _ := en.Fields["phase"].(string)
		if en.Event == audit.TaskInvocationValidated {
			// An allowed advancement out of phase closes the escalations
			// of phase recorded before it.
			if adv, _ := en.Fields["advancement"].(bool); adv && phase != "" {
				for i := range out {
					if out[i].Phase == phase && out[i].Advanced.IsZero() {
						out[i].Advanced = en.Time
					}
				}
			}
			continue
		}
		k := [2]string{typ, phase}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Escalation{Type: typ, Phase: phase, First: en.Time, Open: current != "" && phase == current})
		}
		g := &out[i]
		g.Count++
		g.Last = en.Time
		g.Advanced = time.Time{} // escalated again: open again
		codes, _ := en.Fields["codes"].([]any)
		for _, c := range codes {
			if s, ok := c.(string); ok && !slices.Contains(g.Codes, s) {
				g.Codes = append(g.Codes, s)
			}
		}
	}
	kept := out[:0]
	for _, g := range out {
		slices.Sort(g.Codes)
		g.Open = g.Open && g.Advanced.IsZero()
		if all || g.Open {
			kept = append(kept, g)
		}
	}
	slices.SortStableFunc(kept, func(a, b Escalation) int { return a.Last.Compare(b.Last) })
	return kept, nil
}

// currentPhase is the workflow's current phase as the state holds it:
// active_workflow.current_phase, else the top-level current_phase.
func currentPhase(facts map[string]any) string {
	state, _ := facts["state"].(map[string]any)
	aw, _ := state["active_workflow"].(map[string]any)
	if c, ok := aw["current_phase"].(string); ok && c != "" {
		return c
	}
	c, _ := state["current_phase"].(string)
	return c
}

// normalisePhase maps a legacy phase key through the policy's phase alias
// table (data.des.phases), as the guards do before they record a phase.
func (e *Engine) normalisePhase(ctx context.Context, phase string) string {
	pe, err := e.Policy(ctx)
	if err != nil || phase == "" {
		return phase
	}
	for _, key := range []string{"des.phases.phase_aliases"} {
		raw, ok := pe.Data(key)
		if !ok {
			continue
		}
		if m, ok := raw.(map[string]any); ok {
			if to, ok := m[strings.TrimSpace(phase)].(string); ok {
				return to
			}
		}
	}
	return phase
}
