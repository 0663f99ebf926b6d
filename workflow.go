package des

import "github.com/deterministic-exec/des/gate"

// defaultWorkflow is DES's own state discovery (internal/isdlc).
// TODO(wiring): internal/isdlc is merged from branch facts; until then no
// state is found and the phase guards give no opinion.
func (e *Engine) defaultWorkflow(lookupEnv func(string) (string, bool)) gate.Workflow {
	_ = lookupEnv
	return gate.Workflow{}
}
