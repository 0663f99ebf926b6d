package main

import (
	"strings"
	"testing"
)

// Issue 28 (a), through the built binary: the constitutional corridor opens
// once validation is under way, not when a phase without test iterations
// starts. Until then ordinary calls that say "gate", "proceed" or "delegate"
// are the phase's work; the gate itself still holds.
func TestPhasesCorridorWaitsForConstitutionalValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		phase   int // index in featurePhases
		call    func(root string) map[string]any
		started bool // constitutional_validation under way
		want    string
	}{
		{"explore in 03-architecture", 2, func(root string) map[string]any {
			return agentCall(root, "Agent", "Explore", "Find config", "Find where the payment gate is configured")
		}, false, ""},
		{"research task in 01-requirements", 0, func(root string) map[string]any {
			return agentCall(root, "Task", "general-purpose", "Research", "Research how other shops proceed with refunds and delegate nothing")
		}, false, ""},
		{"explore once validation runs", 2, func(root string) map[string]any {
			return agentCall(root, "Agent", "Explore", "Find config", "Find where the payment gate is configured")
		}, true, "[DES-ITERATION-CORRIDOR]"},
		{"advance before validation", 2, func(root string) map[string]any { return advanceCall(root, "Agent") }, false, "[DES-GATE-BLOCKED]"},
		{"completion claim before validation", 2, func(root string) map[string]any {
			return agentCall(root, "Task", "general-purpose", "Report", "Architecture phase complete, ready for gate")
		}, false, "[DES-CONSTITUTION-PENDING]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := workflowState(featurePhases, c.phase)
			p := featurePhases[c.phase]
			if c.started {
				set(st, "phases."+p+".constitutional_validation", doc{"status": "pending", "iterations_used": 1, "max_iterations": 5})
			}
			root := newProject(t, st)
			reason := denyReason(t, runHookProcess(t, root, nil, c.call(root)))
			if c.want == "" && reason != "" {
				t.Fatalf("denied:\n%s", reason)
			}
			if c.want != "" && !strings.Contains(reason, c.want) {
				t.Fatalf("want %s, reason:\n%s", c.want, reason)
			}
		})
	}
}
