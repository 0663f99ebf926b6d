package template_test

import (
	"encoding/json"
	"fmt"

	"github.com/deterministic-exec/des/template"
)

// Render the baseline prompt for a step file, then read it back as the
// pre-invocation gate does.
func Example() {
	var step map[string]any
	_ = json.Unmarshal([]byte(`{
		"task_id": "01-02",
		"task_specification": {"name": "Measure hook latency", "acceptance_criteria": ["p50 and p99 recorded"]},
		"workflow_type": "tdd_cycle"
	}`), &step)

	r, err := template.Defaults().Render("baseline", template.Data{
		StepFile: "docs/feature/latency/steps/01-02.json",
		Step:     step,
		Agent:    map[string]any{"name": "software-crafter"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := template.Parse(r.Text)
	for _, s := range p.Sections {
		fmt.Println(s.Name)
	}
	fmt.Println("markers:", p.HasMarkers, p.Validation, p.Origin, p.StepFile)
	// Output:
	// DES_METADATA
	// AGENT_IDENTITY
	// TASK_CONTEXT
	// OUTCOME_RECORDING
	// BOUNDARY_RULES
	// markers: true required command:/nw:baseline docs/feature/latency/steps/01-02.json
}
