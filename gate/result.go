package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/deterministic-exec/des/policy"
)

// Evaluator evaluates a gate's Rego entrypoint on an input document.
type Evaluator interface {
	Evaluate(ctx context.Context, g policy.Gate, input any) (policy.Decision, error)
}

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

// Reason renders the denies: each on its own line as "[CODE] message", then
// the recovery suggestions of all of them, deduplicated, under "Recovery:".
func (r Result) Reason() string { return render(r.Decision.Deny) }

// Warnings renders the warnings the same way as Reason.
func (r Result) Warnings() string { return render(r.Decision.Warn) }

func render(vs []policy.Violation) string {
	if len(vs) == 0 {
		return ""
	}
	var b strings.Builder
	var recovery []string
	for _, v := range vs {
		fmt.Fprintf(&b, "[%s] %s\n", v.Code, v.Message)
		for _, s := range v.Recovery {
			if !slices.Contains(recovery, s) {
				recovery = append(recovery, s)
			}
		}
	}
	if len(recovery) > 0 {
		b.WriteString("Recovery:\n")
		for _, s := range recovery {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Internal is the fail-closed result for an error met where DES validation
// was required: a single DES-INTERNAL deny naming the cause.
func Internal(g policy.Gate, err error) Result {
	return Result{Gate: g, Evaluated: true, Decision: policy.Decision{Gate: g, Deny: []policy.Violation{{
		Code:     CodeInternal,
		Severity: policy.Deny,
		Message:  fmt.Sprintf("DES could not decide at gate %s and fails closed: %v", g, err),
		Recovery: []string{
			"Fix the cause named above (a DES setting in .des/config.json or DES_* variables, a team policy, or an unreadable file), then retry.",
			"Run `hook policies` to check that the settings and policies load.",
		},
	}}}}
}
