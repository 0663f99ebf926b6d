package claudecode

import (
	"strings"
	"testing"
)

func TestMergePreToolUse(t *testing.T) {
	t.Parallel()
	deny := denyPreToolUse("[DES-PROTECTED-PATH] no")
	warn := warnPreToolUse("[DES-DELEGATION-REQUIRED] delegate", "")
	other := warnPreToolUse("[DES-X] w", "[DES-X] w")
	cases := []struct {
		name     string
		a, b     response
		decision string
		has      []string
	}{
		{"none", noOpinion(), noOpinion(), "", nil},
		{"one side", noOpinion(), warn, "", []string{"DES-DELEGATION-REQUIRED"}},
		{"deny and warn", deny, warn, "deny", []string{"DES-PROTECTED-PATH", "DES-DELEGATION-REQUIRED"}},
		{"warn and deny", warn, denyPreToolUse("[DES-DELEGATION-REQUIRED] denied"), "deny", []string{"delegate", "denied"}},
		{"two warnings", other, warn, "", []string{"DES-X", "DES-DELEGATION-REQUIRED"}},
	}
	for _, c := range cases {
		r := mergePreToolUse(c.a, c.b)
		if r.permissionDecision != c.decision {
			t.Errorf("%s: decision %q, want %q", c.name, r.permissionDecision, c.decision)
		}
		text := r.decisionReason + r.additionalContext
		for _, h := range c.has {
			if !strings.Contains(text, h) {
				t.Errorf("%s: %q lacks %q", c.name, text, h)
			}
		}
		if c.name == "two warnings" && r.systemMessage != "[DES-X] w" {
			t.Errorf("systemMessage = %q", r.systemMessage)
		}
	}
}

func TestWithStopNote(t *testing.T) {
	t.Parallel()
	if r := withStopNote(noOpinion(), ""); !r.isNoOpinion() {
		t.Error("no note changed the response")
	}
	if r := withStopNote(noOpinion(), "[DES-INTERNAL] x"); r.systemMessage != "[DES-INTERNAL] x" {
		t.Errorf("%+v", r)
	}
	r := withStopNote(blockStop("fix it"), "[DES-INTERNAL] x")
	if r.decision != "block" || r.reason != "fix it" || r.systemMessage != "[DES-INTERNAL] x" {
		t.Errorf("a block keeps its reason for the subagent: %+v", r)
	}
	if r := withStopNote(stopMessage("gate 2"), "sync"); r.systemMessage != "gate 2\nsync" {
		t.Errorf("%+v", r)
	}
}
