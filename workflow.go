package des

import (
	"context"
	"errors"
	"fmt"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/isdlc"
)

// defaultWorkflow is DES's own state discovery (internal/isdlc):
// the state file, the plan, the requirement tables (the setting
// phase_requirements_files, else data.des.phases.requirements of the
// policies) and the artifacts they list; and the branch reader.
func (e *Engine) defaultWorkflow(lookupEnv func(string) (string, bool)) gate.Workflow {
	return gate.Workflow{
		Facts: func(ctx context.Context, cwd string) (map[string]any, error) {
			// First a probe without tables: the built-in tables live in the
			// policies, which a project without a state must not pay to load.
			if !isdlc.HasState(e.root, cwd, lookupEnv) {
				return nil, nil
			}
			tables, err := e.requirementTables(ctx)
			if err != nil {
				return nil, err
			}
			w, err := isdlc.Discover(isdlc.Options{
				Root: e.root, Cwd: cwd, Getenv: lookupEnv,
				RequirementFiles: e.cfg.PhaseRequirementsFiles, DefaultTables: tables,
			})
			if errors.Is(err, isdlc.ErrRequirementFile) {
				return nil, &ConfigError{Setting: "phase_requirements_files", Source: "settings",
					Value: fmt.Sprintf("%q", e.cfg.PhaseRequirementsFiles), Reason: err.Error(), Err: err}
			}
			if err != nil || w == nil { // the state went away between the two looks
				return nil, err
			}
			facts := w.Facts()
			if w.Requirements != nil {
				tables = w.Requirements
			}
			if ev := e.workflowEvidence(ctx, w.StateFile, w.State, tables, false); ev != nil {
				facts["evidence"] = ev
			}
			return facts, nil
		},
		Evidence: func(ctx context.Context, stateFile string, state map[string]any) (map[string]any, error) {
			tables, err := e.effectiveTables(ctx)
			if err != nil {
				return nil, err
			}
			return e.workflowEvidence(ctx, stateFile, state, tables, false), nil
		},
		Branch: func(dir, workflowBranch string) map[string]any {
			return isdlc.Branch(dir, workflowBranch).Facts()
		},
		Switches: func(ctx context.Context, cwd string, content []byte) ([]any, error) {
			sw, err := isdlc.SelectorSwitches(isdlc.Options{Root: e.root, Cwd: cwd, Getenv: lookupEnv}, content)
			out := make([]any, 0, len(sw))
			for _, s := range sw {
				out = append(out, map[string]any{
					"cwd": s.Cwd, "isdlc_project": s.Env, "from": s.From, "to": s.To,
					"from_project": s.FromProject, "to_project": s.ToProject, "from_active_workflow": s.FromActive,
				})
			}
			return out, err
		},
	}
}

// requirementTables is data.des.phases.requirements, nil when the policies
// define none.
func (e *Engine) requirementTables(ctx context.Context) (map[string]any, error) {
	pe, err := e.Policy(ctx)
	if err != nil {
		return nil, err
	}
	raw, ok := pe.Data("des.phases.requirements")
	if !ok {
		return nil, nil
	}
	tables, _ := raw.(map[string]any)
	return tables, nil
}
