package des.sections_test

import data.des.sections

full := ["DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "TDD_14_PHASES", "QUALITY_GATES", "OUTCOME_RECORDING", "BOUNDARY_RULES", "TIMEOUT_INSTRUCTION"]

prompt(origin, names, words) := {"prompt": {"origin": origin, "sections": names, "phase_words": words}}

with_workflow(base, wt) := object.union(base, {"step": {"document": {"workflow_type": wt}}})

missing(violations) := {v.msg | some v in violations; v.code == "DES-SECTION-MISSING"}

test_levels_by_origin if {
	sections.level == "full" with input as prompt("command:/nw:execute", [], [])
	sections.level == "full" with input as prompt("command:/nw:develop", [], [])
	sections.level == "partial" with input as prompt("command:/nw:baseline", [], [])
	sections.level == "none" with input as prompt("command:/nw:research", [], [])
	sections.level == "none" with input as prompt("command:/nw:review", [], [])
	sections.level == "none" with input as prompt("ad-hoc", [], [])
	sections.level == "full" with input as prompt("command:/nw:unheard-of", [], [])
	sections.level == "full" with input as {}
}

test_configuration_setup_lowers_full_to_partial if {
	sections.level == "partial" with input as with_workflow(prompt("command:/nw:execute", [], []), "configuration_setup")
	sections.level == "partial" with input as with_workflow(prompt("command:/nw:develop", [], []), "configuration_setup")
	sections.level == "partial" with input as with_workflow(prompt("command:/nw:baseline", [], []), "configuration_setup")
	sections.level == "none" with input as with_workflow(prompt("command:/nw:research", [], []), "configuration_setup")
	sections.level == "full" with input as with_workflow(prompt("command:/nw:execute", [], []), "tdd_cycle")
}

test_complete_full_prompt_passes if {
	count(sections.deny) == 0 with input as prompt("command:/nw:execute", full, data.des.steps.canonical_phases)
}

test_one_violation_per_missing_section if {
	inp := prompt("command:/nw:execute", ["DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "TDD_14_PHASES", "QUALITY_GATES"], data.des.steps.canonical_phases)
	violations := sections.deny with input as inp
	count(violations) == 3
	some v in violations
	contains(v.msg, "TIMEOUT_INSTRUCTION")
	contains(v.msg, `level "full"`)
}

test_partial_needs_five if {
	count(sections.deny) == 5 with input as prompt("command:/nw:baseline", [], [])
	count(sections.deny) == 0 with input as prompt("command:/nw:baseline", ["DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "OUTCOME_RECORDING", "BOUNDARY_RULES"], [])
}

test_none_needs_nothing if {
	count(sections.deny) == 0 with input as prompt("command:/nw:research", [], [])
}

test_missing_phase_each_reported if {
	words := [p | some p in data.des.steps.canonical_phases; not p in {"REVIEW", "COMMIT"}]
	violations := sections.deny with input as prompt("command:/nw:execute", full, array.concat(words, ["POST_REFACTOR_REVIEW"]))
	{v.code | some v in violations} == {"DES-PHASE-MISSING"}
	count(violations) == 2
	some v in violations
	contains(v.msg, "phase REVIEW")
}

test_phases_not_checked_when_section_absent if {
	names := [s | some s in full; s != "TDD_14_PHASES"]
	violations := sections.deny with input as prompt("command:/nw:execute", names, [])
	{v.code | some v in violations} == {"DES-SECTION-MISSING"}
}

test_phases_not_checked_at_partial if {
	count(sections.deny) == 0 with input as with_workflow(prompt("command:/nw:execute", ["DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "OUTCOME_RECORDING", "BOUNDARY_RULES", "TDD_14_PHASES"], []), "configuration_setup")
}

test_team_levels_are_data if {
	sections.level == "strict" with input as prompt("command:/team:ship", [], []) with data.des.sections.origins as {"command:/team:ship": "strict"} with data.des.sections.levels.strict as ["SHIP_LIST"]
	count(sections.deny) == 1 with input as prompt("command:/team:ship", [], []) with data.des.sections.origins as {"command:/team:ship": "strict"} with data.des.sections.levels.strict as ["SHIP_LIST"]
}
