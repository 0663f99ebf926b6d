package policy

import (
	"cmp"
	"slices"
	"strings"
)

// Gate names a gate entrypoint: the Rego package des.gates.<Gate>.
type Gate string

// The built-in gates.
const (
	PreInvocation Gate = "pre_invocation" // Gate 1: before a subagent starts
	SubagentStop  Gate = "subagent_stop"  // Gate 2: when a subagent stops
	PreCommit     Gate = "pre_commit"     // Gate 3: before a commit
	DocumentWrite Gate = "document_write" // before a write to a workflow document lands
	ToolUse       Gate = "tool_use"       // before a tool call that may touch DES's files
)

// Gates returns the built-in gates in a fixed order.
func Gates() []Gate {
	return []Gate{PreInvocation, SubagentStop, PreCommit, DocumentWrite, ToolUse}
}

// Package returns the Rego package of the gate, e.g. "des.gates.pre_commit".
func (g Gate) Package() string { return "des.gates." + string(g) }

// Severity says whether a violation blocks.
type Severity string

// Severities, named after the Rego sets that yield them.
const (
	Deny Severity = "deny"
	Warn Severity = "warn"
)

// Violation is one element of a gate's deny or warn set.
type Violation struct {
	Code     string         `json:"code"`
	Message  string         `json:"msg"`
	Severity Severity       `json:"severity"`
	Field    string         `json:"field,omitempty"`    // JSON pointer into the document judged
	Recovery []string       `json:"recovery,omitempty"` // steps that resolve it
	Policy   string         `json:"policy,omitempty"`   // Rego package that yields the code, from the catalogue
	Details  map[string]any `json:"details,omitempty"`  // any other keys of the Rego object
}

// Decision is the outcome of one gate evaluation. Each list is sorted by code,
// then field (a JSON pointer, whose numeric segments compare as numbers, so
// phase 2 comes before phase 10), then message, so the same input always
// yields the same order.
type Decision struct {
	Gate   Gate        `json:"gate"`
	Deny   []Violation `json:"deny"`
	Warn   []Violation `json:"warn"`
	Waived []Violation `json:"waived,omitempty"` // violations whose code the gate's exception set waived
	// Info is the gate's optional info object: facts the policy derived that
	// the caller needs to carry out the decision (Gate 1's validation level,
	// say). Nil when the gate defines none.
	Info map[string]any `json:"info,omitempty"`
}

// Allowed reports whether the decision has no deny.
func (d Decision) Allowed() bool { return len(d.Deny) == 0 }

// Codes returns the codes of the denies and then the warnings, in order.
func (d Decision) Codes() []string {
	codes := make([]string, 0, len(d.Deny)+len(d.Warn))
	for _, v := range d.Deny {
		codes = append(codes, v.Code)
	}
	for _, v := range d.Warn {
		codes = append(codes, v.Code)
	}
	return codes
}

func sortViolations(vs []Violation) {
	slices.SortFunc(vs, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Code, b.Code), comparePointers(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
}

// comparePointers orders JSON pointers segment by segment, numeric segments
// (array indexes) by value.
func comparePointers(a, b string) int {
	for a != "" || b != "" {
		var sa, sb string
		sa, a, _ = strings.Cut(a, "/")
		sb, b, _ = strings.Cut(b, "/")
		if c := compareSegments(sa, sb); c != 0 {
			return c
		}
	}
	return 0
}

func compareSegments(a, b string) int {
	if isIndex(a) && isIndex(b) {
		return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
	}
	return cmp.Compare(a, b)
}

func isIndex(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
