package gate_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/gate"
)

// bigState is a realistic workflow state of about 50 KB: 12 phases with
// their iteration records, long summaries and a history the rules ignore.
func bigState(version int) string {
	phases := map[string]any{}
	var names []any
	status := map[string]any{}
	for i := range 12 {
		name := fmt.Sprintf("%02d-phase", i+1)
		names = append(names, name)
		st := "pending"
		switch {
		case i < 5:
			st = "completed"
		case i == 5:
			st = "in_progress"
		}
		status[name] = st
		phases[name] = map[string]any{
			"status": st, "started": "2026-11-20T10:00:00Z", "summary": strings.Repeat("Work on the checkout flow and its tests. ", 80),
			"iteration_requirements": map[string]any{
				"test_iteration":          map[string]any{"completed": i < 5, "current_iteration": 3, "last_test_result": "pass"},
				"interactive_elicitation": map[string]any{"completed": i < 5, "menu_interactions": 2},
			},
			"constitutional_validation": map[string]any{"completed": i < 5, "iterations_used": 1, "status": "passed"},
			"timing":                    map[string]any{"started_at": "2026-11-20T10:00:00Z", "retries": 0},
			"artifacts":                 []any{strings.Repeat("src/checkout/file.go ", 20)},
		}
	}
	doc := map[string]any{
		"state_version": version, "current_phase": "06-phase", "active_agent": "software-crafter",
		"active_workflow":  map[string]any{"type": "feature", "phases": names, "current_phase": "06-phase", "current_phase_index": 5, "phase_status": status},
		"phases":           phases,
		"workflow_history": []any{strings.Repeat("an earlier workflow, kept for the record. ", 100)},
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return string(b)
}

// BenchmarkStateWrite50KB is the write guard deciding on a Write of a 50 KB
// workflow state: disk and incoming parsed, known fields handed to Rego,
// V1 to V9 evaluated.
func BenchmarkStateWrite50KB(b *testing.B) {
	p := newProjectTB(b)
	p.writeStep(".isdlc/state.json", bigState(7))
	incoming := bigState(8)
	if len(incoming) < 50<<10 {
		b.Fatalf("state is %d bytes", len(incoming))
	}
	call := gate.WriteCall{Tool: "Write", Path: filepath.Join(p.root, ".isdlc", "state.json"), Content: &incoming}
	b.ReportAllocs()
	for b.Loop() {
		res, err := p.eng.CheckWrite(b.Context(), call)
		if err != nil || res.Denied() || !res.Evaluated {
			b.Fatalf("%v %s", err, res.Reason())
		}
	}
}

// BenchmarkUnguardedWrite is a Write to an ordinary file: no policy is asked.
func BenchmarkUnguardedWrite(b *testing.B) {
	p := newProjectTB(b)
	content := "package main\n"
	call := gate.WriteCall{Tool: "Write", Path: filepath.Join(p.root, "src", "main.go"), Content: &content}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := p.eng.CheckWrite(b.Context(), call); err != nil || res.Evaluated {
			b.Fatal(err)
		}
	}
}
