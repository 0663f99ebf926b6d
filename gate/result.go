package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deterministic-exec/des/policy"
)

// Evaluator evaluates a gate's Rego entrypoint on an input document.
type Evaluator interface {
	Evaluate(ctx context.Context, g policy.Gate, input any) (policy.Decision, error)
}

// ErrNotRecorded is wrapped when a gate decided but could not write the
// audit trail; the Result returned with it holds the decision.
var ErrNotRecorded = errors.New("decision not recorded in the audit trail")

// CodeInternal is the code of the fail-closed deny DES gives when it cannot
// decide where validation is required.
const CodeInternal = "DES-INTERNAL"

// Result is what a gate decided. A zero Decision with Evaluated false means
// nothing concerned DES: no policy was asked and DES has no opinion.
type Result struct {
	Gate      policy.Gate
	Decision  policy.Decision
	Evaluated bool
}

// Denied reports whether the gate blocks.
func (r Result) Denied() bool { return !r.Decision.Allowed() }

// Reason renders every violation for a message to Claude or the user
// (contract §5): each deny, then each warning, on its own line as
// "[CODE] message", then the recovery steps of them all, deduplicated in
// order, under "Recovery:". Continuation lines of a message are indented, so
// every line that starts with "[" is a violation and every "- " a step.
func (r Result) Reason() string {
	return Text(append(slices.Clone(r.Decision.Deny), r.Decision.Warn...)...)
}

// Warnings renders only the warnings, the same way as Reason.
func (r Result) Warnings() string { return Text(r.Decision.Warn...) }

// Text renders violations as Reason does.
func Text(vs ...policy.Violation) string {
	var b strings.Builder
	var steps []string
	for _, v := range vs {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("[" + v.Code + "] " + indentContinuation(v.Message))
		for _, s := range v.Recovery {
			if s = strings.TrimSpace(s); s != "" && !slices.Contains(steps, s) {
				steps = append(steps, s)
			}
		}
	}
	if len(steps) > 0 {
		b.WriteString("\nRecovery:")
		for _, s := range steps {
			b.WriteString("\n- " + indentContinuation(s))
		}
	}
	return b.String()
}

func indentContinuation(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// Internal is the fail-closed result for an error met where DES validation
// was required: a single DES-INTERNAL deny naming the cause, with the
// recovery steps given, or general ones when none are.
func Internal(g policy.Gate, err error, recovery ...string) Result {
	if len(recovery) == 0 {
		recovery = []string{
			"Fix the cause named above (a DES setting in .des/config.json or DES_* variables, a team policy, or an unreadable file), then retry.",
			"Run `des-hook policies` to check that the settings and policies load.",
		}
	}
	return Result{Gate: g, Evaluated: true, Decision: policy.Decision{Gate: g, Deny: []policy.Violation{{
		Code:     CodeInternal,
		Severity: policy.Deny,
		Message:  fmt.Sprintf("DES could not validate this call and fails closed: %v", err),
		Recovery: recovery,
	}}}}
}
