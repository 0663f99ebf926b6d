package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des"
)

func TestMergePreToolUse(t *testing.T) {
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

func TestFormatStatusLine(t *testing.T) {
	graph := func(cur int, parallel ...bool) *des.GraphState {
		g := &des.GraphState{CurrentWave: cur}
		for i, p := range parallel {
			g.Waves = append(g.Waves, des.WaveState{ID: i, Parallel: p})
		}
		return g
	}
	last := &des.AgentState{ID: "a9", Type: "codebase-context-analyzer", StoppedAt: time.Now(), Seconds: 86.6}
	two := []des.AgentState{{ID: "a1"}, {ID: "a2"}}
	cases := []struct {
		st   des.OrchestrationStatus
		want string
	}{
		{des.OrchestrationStatus{Running: two, Graph: graph(1, false, true), Last: last}, "[PAR] Active: 2 Wave 1 | Last: codebase-context-analyzer completed (87s)"},
		{des.OrchestrationStatus{Graph: graph(0, false, true)}, "[SEQ] Active: 0 Wave 0"},
		{des.OrchestrationStatus{Graph: graph(2, false, true)}, "[SEQ] Active: 0 Waves done"},
		{des.OrchestrationStatus{Graph: &des.GraphState{Problem: "x"}}, "[DES] Active: 0 Graph unreadable"},
		{des.OrchestrationStatus{Running: two[:1], Last: &des.AgentState{ID: "a3", Seconds: 3}}, "[DES] Active: 1 | Last: a3 completed (3s)"},
		{des.OrchestrationStatus{}, "[DES] Active: 0"},
	}
	for _, c := range cases {
		if got := formatStatusLine(c.st); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
