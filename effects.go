package des

import (
	"context"
	"errors"

	"github.com/deterministic-exec/des/gate"
)

// CheckEffects reports what a tool call did to DES's files, once they have
// been restored (see internal/integrity): it records INTEGRITY_VIOLATION
// and words DES-INTEGRITY with the policies (des.integrity, gathered by
// des.gates.tool_use), or without them when they do not load. The result
// always denies when there are changes.
func (e *Engine) CheckEffects(ctx context.Context, eff gate.Effects) (gate.Result, error) {
	var ev gate.Evaluator = e
	if _, err := e.Policy(ctx); err != nil {
		e.logger.Error("des: the policies do not load; DES-INTEGRITY is worded without them", "err", err)
		ev = nil
	}
	return e.ToolUseGate().CheckEffects(ctx, ev, eff)
}

// RecordGitSync records what git changed honestly during a tool call
// (GIT_SYNC) and drops des's memories of those documents (V8's high-water
// marks of a workflow state), which spoke for the content git replaced:
// the next write is judged against the document git left. Each failure is
// returned, joined; the documents stay taken.
func (e *Engine) RecordGitSync(ctx context.Context, s gate.GitSync) error {
	var errs []error
	for _, f := range s.Files {
		if e.stateDir != "" {
			errs = append(errs, gate.ForgetStateMemory(ctx, e.stateDir, f.Path))
		}
	}
	errs = append(errs, e.ToolUseGate().RecordGitSync(ctx, s))
	return errors.Join(errs...)
}
