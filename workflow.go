package des

import "github.com/deterministic-exec/des/gate"

// defaultWorkflow is DES's own state discovery (internal/isdlc).
// TODO(wiring): internal/isdlc is merged from branch facts; until then no
// state is found and the phase guards give no opinion.
func (e *Engine) defaultWorkflow(lookupEnv func(string) (string, bool)) gate.Workflow {
	_ = lookupEnv
	return gate.Workflow{}
}

// HasWorkflowState reports whether a multi-phase workflow state file
// (contract §8) applies to a call made in cwd under root: the cheap check a
// caller makes before building an Engine for a call that only the phase
// guards could judge. It reads no policy and no setting.
func HasWorkflowState(root, cwd string, lookupEnv func(string) (string, bool)) bool {
	_, _, _ = root, cwd, lookupEnv
	return false
}
