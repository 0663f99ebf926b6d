package des

import (
	"context"

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
	return e.ToolUse().CheckEffects(ctx, ev, eff)
}
