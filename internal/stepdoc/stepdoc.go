// Package stepdoc tells a DES step file from any other JSON file that a
// step glob (guarded_step_files, "**/steps/*.json" by default) matches: a
// test fixture, an onboarding wizard's steps, a CI workflow's. The write
// guard, Gate 3 and the effect check share this one rule, so that a file
// one of them guards is never one another lets through.
package stepdoc

import "encoding/json"

// Looks reports whether content is a DES step file by its shape: a JSON
// object with a TDD cycle (tdd_cycle, or the obsolete layout's tdd_phase),
// a task_specification, or a workflow_type DES knows ("tdd_cycle",
// "configuration_setup", whose steps have no cycle). A task_id, state,
// step_id or phase_id alone is not enough: other tools' step files use
// those names too. Every one of the 300 real nWave step files in the test
// corpus has tdd_cycle or task_specification.
func Looks(content []byte) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(content, &members) != nil {
		return false
	}
	for _, k := range []string{"tdd_cycle", "task_specification", "tdd_phase"} {
		if _, ok := members[k]; ok {
			return true
		}
	}
	var workflow string
	if json.Unmarshal(members["workflow_type"], &workflow) == nil {
		return workflow == "tdd_cycle" || workflow == "configuration_setup"
	}
	return false
}
