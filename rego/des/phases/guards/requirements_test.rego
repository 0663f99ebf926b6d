package des.phases.guards_test

import data.des.phases.guards

advance(st) := agent_in(st, "sdlc-orchestrator", "Advance to the next phase")

gate_msgs(inp) := {v.msg | some v in guards.deny with input as inp; v.code == "DES-GATE-BLOCKED"}

# The same under phase_evidence "state": test iterations read from the state.
state_gate_msgs(inp) := {v.msg | some v in guards.deny with input as inp with data.des.config.phase_evidence as "state"; v.code == "DES-GATE-BLOCKED"}

state_deny_codes(inp) := c if {
	c := codes(guards.deny) with input as inp with data.des.config.phase_evidence as "state"
}

state_texts(inp) := t if {
	vs := guards.deny with input as inp with data.des.config.phase_evidence as "state"
	t := concat("\n", [concat("\n", array.concat([v.msg], v.recovery)) | some v in vs])
}

# Requirement tables.

test_requirement_defaults_are_isdlc_files if {
	data.des.phases.requirements.iteration_requirements.version == "2.1.0"
	data.des.phases.requirements.artifact_paths.phases["01-requirements"].paths == ["docs/requirements/{artifact_folder}/requirements-spec.md"]
	guards.requirement.test_iteration.max_iterations == 10 with input as advance(state)
}

test_gate_passes_when_requirements_met if {
	deny_codes(advance(state)) == set()
	guards.advancement with input as advance(state)
}

test_phase_without_entry_passes if {
	st := {"active_workflow": {"phases": ["99-custom"], "current_phase": "99-custom", "current_phase_index": 0}}
	deny_codes(advance(st)) == set()
	not guards.requirement with input as advance(st)
}

# test_iteration

test_gate_blocked_tests if {
	st := set("/phases/06-implementation/iteration_requirements/test_iteration", {"completed": false, "current_iteration": 2, "max_iterations": 5, "last_test_result": "failed", "status": "escalated"})
	state_deny_codes(advance(st)) == {"DES-GATE-BLOCKED"}
	ms := state_gate_msgs(advance(st))
	count(ms) == 1
	some m in ms
	contains(m, "2/5 test iterations, last result failed")
	contains(m, `advance from phase "06-implementation" to "07-testing"`)
	contains(m, `phases["06-implementation"].iteration_requirements.test_iteration.completed is false`)
}

test_gate_blocked_tests_numbers_from_the_table if {
	st := set("/phases/06-implementation/iteration_requirements", {})
	some m in state_gate_msgs(advance(st))
	contains(m, "0/10 test iterations, no test result recorded")
	contains(m, "completed is absent")
}

test_gate_blocked_tests_without_any_max if {
	reqs := {"iteration_requirements": {"phase_requirements": {"06-implementation": {"test_iteration": {"enabled": true}}}}}
	st := set("/phases/06-implementation/iteration_requirements/test_iteration", {"current_iteration": 4})
	inp := object.union(advance(st), {"workflow": {"requirements": reqs}})
	some m in state_gate_msgs(inp)
	contains(m, "tests are not done: 4 test iterations")
}

# constitutional_validation

test_gate_blocked_constitution if {
	st := set("/phases/06-implementation/constitutional_validation", {"status": "iterating", "iterations_used": 2})
	ms := gate_msgs(advance(st))
	count(ms) == 1
	some m in ms
	contains(m, `constitutional validation is "iterating" (phases["06-implementation"].constitutional_validation.status), not "compliant"; 2 constitutional iterations used`)
}

test_gate_blocked_constitution_with_maximum if {
	st := set("/phases/06-implementation/constitutional_validation", {"status": "iterating", "iterations_used": 1, "max_iterations": 5})
	some m in gate_msgs(advance(st))
	contains(m, "1/5 constitutional iterations used")
	inp := agent_in(st, "general-purpose", "phase complete, hand off")
	contains(texts(inp), `constitutional corridor (1/5 constitutional iterations)`)
}

test_gate_constitution_escalated_still_blocks if {
	st := set("/phases/06-implementation/constitutional_validation", {"status": "escalated", "escalation_approved": true})
	deny_codes(advance(st)) == {"DES-GATE-BLOCKED"}
}

# interactive_elicitation (01-requirements needs 3 menu interactions)

requirements_state := {
	"active_workflow": {
		"phases": feature_phases, "current_phase": "01-requirements", "current_phase_index": 0,
		"artifact_folder": "REQ-0001-login",
	},
	"phases": {"01-requirements": {
		"status": "in_progress",
		"iteration_requirements": {"interactive_elicitation": {"completed": true, "menu_interactions": 3}},
		"constitutional_validation": {"status": "compliant"},
	}},
}

with_artifacts(inp, arts) := json.patch(inp, [{"op": "add", "path": "/workflow/artifacts", "value": arts}])

spec_artifact := {"docs/requirements/REQ-0001-login/requirements-spec.md": true}

test_requirements_phase_passes if {
	deny_codes(with_artifacts(advance(requirements_state), spec_artifact)) == set()
}

test_gate_blocked_elicitation if {
	st := json.patch(requirements_state, [{"op": "replace", "path": "/phases/01-requirements/iteration_requirements/interactive_elicitation", "value": {"completed": false, "menu_interactions": 1}}])
	ms := gate_msgs(with_artifacts(advance(st), spec_artifact))
	count(ms) == 1
	some m in ms
	contains(m, "1/3 menu interactions, completed false")

	# Enough interactions but not completed; completed with too few.
	st2 := json.patch(requirements_state, [{"op": "replace", "path": "/phases/01-requirements/iteration_requirements/interactive_elicitation/completed", "value": false}])
	count(gate_msgs(with_artifacts(advance(st2), spec_artifact))) == 1
	st3 := json.patch(requirements_state, [{"op": "replace", "path": "/phases/01-requirements/iteration_requirements/interactive_elicitation/menu_interactions", "value": 2}])
	count(gate_msgs(with_artifacts(advance(st3), spec_artifact))) == 1
}

test_elicitation_min_defaults_to_one if {
	reqs := {"iteration_requirements": {"phase_requirements": {"01-requirements": {"interactive_elicitation": {"enabled": true}}}}, "artifact_paths": {}}
	st := json.patch(requirements_state, [{"op": "replace", "path": "/phases/01-requirements/iteration_requirements/interactive_elicitation/menu_interactions", "value": 1}])
	inp := object.union(advance(st), {"workflow": {"requirements": reqs}})
	deny_codes(inp) == set()
	st0 := json.patch(st, [{"op": "remove", "path": "/phases/01-requirements/iteration_requirements/interactive_elicitation/menu_interactions"}])
	some m in gate_msgs(object.union(advance(st0), {"workflow": {"requirements": reqs}}))
	contains(m, "0/1 menu interactions, completed true")
}

# artifact_validation

test_gate_blocked_artifact_missing if {
	ms := gate_msgs(advance(requirements_state))
	count(ms) == 1
	some m in ms
	contains(m, "its artifacts are missing: docs/requirements/REQ-0001-login/requirements-spec.md")
}

test_gate_blocked_artifact_folder_unset if {
	st := json.patch(requirements_state, [{"op": "remove", "path": "/active_workflow/artifact_folder"}])
	inp := with_artifacts(advance(st), spec_artifact)
	ms := gate_msgs(inp)
	count(ms) == 1
	some m in ms
	contains(m, "active_workflow.artifact_folder is not set")
	contains(texts(inp), "Set active_workflow.artifact_folder")
	st2 := json.patch(requirements_state, [{"op": "replace", "path": "/active_workflow/artifact_folder", "value": null}])
	count(gate_msgs(with_artifacts(advance(st2), spec_artifact))) == 1
}

test_artifact_one_file_per_directory_suffices if {
	reqs := {
		"iteration_requirements": {"phase_requirements": {"04-design": {"artifact_validation": {"enabled": true, "paths": [
			"docs/design/{artifact_folder}/a.md",
			"docs/design/{artifact_folder}/b.md",
			"docs/api/{artifact_folder}/openapi.yaml",
			"README.md",
		]}}}},
		"artifact_paths": {"phases": {}},
	}
	st := json.patch(requirements_state, [{"op": "replace", "path": "/active_workflow/current_phase", "value": "04-design"}, {"op": "replace", "path": "/active_workflow/current_phase_index", "value": 3}])
	inp := object.union(advance(st), {"workflow": {"requirements": reqs}})
	ms := gate_msgs(with_artifacts(inp, {"docs/design/REQ-0001-login/b.md": true, "README.md": true}))
	ms == {`Agent sdlc-orchestrator tries to advance from phase "04-design" to "05-test-strategy", but its artifacts are missing: docs/api/REQ-0001-login/openapi.yaml (no file of these exists in its directory)`}
	deny_codes(with_artifacts(inp, {"docs/design/REQ-0001-login/a.md": true, "docs/api/REQ-0001-login/openapi.yaml": true, "README.md": true})) == set()
	count(gate_msgs(with_artifacts(inp, {"docs/design/REQ-0001-login/a.md": true, "docs/api/REQ-0001-login/openapi.yaml": true, "README.md": false}))) == 1
}

test_artifact_paths_table_wins_over_the_entry if {
	reqs := {
		"iteration_requirements": {"phase_requirements": {"01-requirements": {"artifact_validation": {"enabled": true, "paths": ["entry/{artifact_folder}/x.md"]}}}},
		"artifact_paths": {"phases": {"01-requirements": {"paths": ["table/{artifact_folder}/y.md"]}}},
	}
	inp := object.union(advance(requirements_state), {"workflow": {"requirements": reqs}})
	some m in gate_msgs(inp)
	contains(m, "table/REQ-0001-login/y.md")
	deny_codes(with_artifacts(inp, {"table/REQ-0001-login/y.md": true})) == set()
}

# Team tables override the defaults.

test_input_requirements_override_defaults if {
	# 06-implementation: the defaults require tests; the team's table does not.
	st := set("/phases/06-implementation/iteration_requirements/test_iteration/completed", false)
	deny_codes(advance(st)) == {"DES-GATE-BLOCKED"}
	reqs := {"iteration_requirements": {"phase_requirements": {"06-implementation": {"test_iteration": {"enabled": false}}}}, "artifact_paths": {"phases": {}}}
	deny_codes(object.union(advance(st), {"workflow": {"requirements": reqs}})) == set()

	# And the team's table can require what the defaults do not (00-quick-scan).
	st2 := {"active_workflow": {"phases": ["00-quick-scan"], "current_phase": "00-quick-scan"}}
	deny_codes(advance(st2)) == set()
	reqs2 := {"iteration_requirements": {"phase_requirements": {"00-quick-scan": {"constitutional_validation": {"enabled": true}}}}}
	deny_codes(object.union(advance(st2), {"workflow": {"requirements": reqs2}})) == {"DES-GATE-BLOCKED"}
}

test_other_requirement_kinds_are_ignored if {
	reqs := {"iteration_requirements": {"phase_requirements": {"06-implementation": {
		"atdd_validation": {"enabled": true}, "agent_delegation_validation": {"enabled": true}, "timeout_minutes": 1,
	}}}}
	st := set("/phases/06-implementation", {"status": "in_progress"})
	deny_codes(object.union(advance(st), {"workflow": {"requirements": reqs}})) == set()
}

test_requirement_legacy_key_in_table if {
	reqs := {"iteration_requirements": {"phase_requirements": {"13-test-deploy": {"test_iteration": {"enabled": true}}}}}
	inp := object.union(agent_in(legacy, "sdlc-orchestrator", "proceed"), {"workflow": {"requirements": reqs}})
	state_deny_codes(inp) == {"DES-GATE-BLOCKED"}
	some m in state_gate_msgs(inp)
	contains(m, `phases["12-test-deploy"].iteration_requirements.test_iteration.completed is absent`)
}

# Supervised review and the phase index.

test_gate_blocked_supervised_review if {
	every s in ["reviewing", "rejected"] {
		st := set("/active_workflow/supervised_review", {"status": s, "redo_count": 0})
		some m in gate_msgs(advance(st))
		contains(m, sprintf("its supervised review is %q (active_workflow.supervised_review.status)", [s]))
	}
	deny_codes(advance(set("/active_workflow/supervised_review", {"status": "approved"}))) == set()
}

test_gate_blocked_index_mismatch if {
	st := set("/active_workflow/current_phase_index", 4)
	ms := gate_msgs(advance(st))
	ms == {`Agent sdlc-orchestrator tries to advance from phase "06-implementation" to "07-testing", but active_workflow.phases[4] (active_workflow.current_phase_index) is "05-test-strategy", not the current phase "06-implementation"`}
	contains(texts(advance(st)), "Set active_workflow.current_phase_index to 5")
}

# An index ahead of the current phase goes back only in a rollback write
# (DES-STATE-V8-INDEX otherwise): the recovery says so.
test_gate_blocked_index_ahead_recovery_is_a_rollback if {
	st := set("/active_workflow/current_phase_index", 6)
	t := texts(advance(st))
	contains(t, `Set active_workflow.current_phase_index to 5, the position of "06-implementation" in active_workflow.phases, and active_workflow.recovery_action.type to "rollback" in the same write`)
	not contains(texts(advance(set("/active_workflow/current_phase_index", 4))), "rollback")
}

test_gate_blocked_index_out_of_range if {
	st := set("/active_workflow/current_phase_index", 42)
	some m in gate_msgs(advance(st))
	contains(m, "active_workflow.phases[42] (active_workflow.current_phase_index) is nothing (out of range)")
}

test_gate_index_compares_normalised_keys if {
	deny_codes(agent_in(legacy, "sdlc-orchestrator", "proceed")) == set()
}

test_gate_index_with_current_outside_the_list if {
	st := patched([
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "99-custom"},
		{"op": "replace", "path": "/current_phase", "value": "99-custom"},
	])
	some m in gate_msgs(advance(st))
	contains(m, `advance past phase "99-custom"`)
	contains(texts(advance(st)), `and active_workflow.phases (a list of phase keys) so that "99-custom" is at that index`)
}

# A malformed index or phase list blocks an advance whatever its kind (issue
# 28 (e)): null, a string, a fraction, negative, out of range, phases not a
# list or empty. Only an absent key is not checked.
test_gate_index_malformed_blocks_alike if {
	every p in [
		[{"op": "replace", "path": "/active_workflow/current_phase_index", "value": null}],
		[{"op": "replace", "path": "/active_workflow/current_phase_index", "value": "two"}],
		[{"op": "replace", "path": "/active_workflow/current_phase_index", "value": 1.5}],
		[{"op": "replace", "path": "/active_workflow/current_phase_index", "value": -1}],
		[{"op": "replace", "path": "/active_workflow/current_phase_index", "value": 999}],
		[{"op": "replace", "path": "/active_workflow/phases", "value": "not-a-list"}],
		[{"op": "replace", "path": "/active_workflow/phases", "value": []}],
		[{"op": "remove", "path": "/active_workflow/phases"}],
	] {
		ms := gate_msgs(advance(patched(p)))
		count(ms) == 1
		some m in ms
		contains(m, "active_workflow.")
	}
}

test_gate_index_malformed_messages if {
	some m1 in gate_msgs(advance(set("/active_workflow/current_phase_index", null)))
	contains(m1, "active_workflow.current_phase_index is absent, not a position in active_workflow.phases")
	some m2 in gate_msgs(advance(set("/active_workflow/current_phase_index", "two")))
	contains(m2, `active_workflow.current_phase_index is "two", not a position`)
	some m3 in gate_msgs(advance(set("/active_workflow/phases", "not-a-list")))
	contains(m3, `active_workflow.phases is "not-a-list", not a list of phases, so active_workflow.current_phase_index 5 points at nothing`)
	some m4 in gate_msgs(advance(set("/active_workflow/current_phase_index", -1)))
	contains(m4, "active_workflow.phases[-1] (active_workflow.current_phase_index) is nothing (out of range)")
}

test_gate_index_absent_is_not_checked if {
	st := patched([{"op": "remove", "path": "/active_workflow/current_phase_index"}])
	deny_codes(advance(st)) == set()
}

test_gate_one_violation_per_requirement if {
	st := patched([
		{"op": "replace", "path": "/phases/06-implementation", "value": {"status": "in_progress"}},
		{"op": "add", "path": "/active_workflow/supervised_review", "value": {"status": "reviewing"}},
		{"op": "replace", "path": "/active_workflow/current_phase_index", "value": 0},
	])
	count(gate_msgs(advance(st))) == 4
}

test_gate_skill_advance if {
	st := set("/phases/06-implementation/iteration_requirements/test_iteration/completed", false)
	some m in gate_msgs(skill_in(st, "isdlc", "advance"))
	startswith(m, "Skill isdlc tries to advance")
}

test_gate_not_on_delegation_or_other_calls if {
	st := set("/phases/06-implementation/iteration_requirements/test_iteration/completed", false)
	deny_codes(agent_in(st, "software-developer", "GATE-06: advance")) == set()
	deny_codes(agent_in(st, "sdlc-orchestrator", "summarise")) == set()
	deny_codes(skill_in(st, "isdlc", "status")) == set()
}

# Corridors.

failing := {"completed": false, "current_iteration": 2, "max_iterations": 10, "last_test_result": "failed"}

failing_state := set("/phases/06-implementation/iteration_requirements/test_iteration", failing)

test_test_corridor if {
	guards.in_test_corridor with input as agent_in(failing_state, "general-purpose", "x")
	inp := agent_in(failing_state, "general-purpose", "Delegate the fix to a helper")
	state_deny_codes(inp) == {"DES-ITERATION-CORRIDOR"}
	t := state_texts(inp)
	contains(t, `phase "06-implementation" is in its test corridor (2/10 test iterations, last result failed)`)
	contains(t, `phases["06-implementation"].iteration_requirements.test_iteration.status to "escalated"`)
}

test_test_corridor_closed if {
	not guards.in_test_corridor with input as agent_in(state, "x", "y")
	passed := set("/phases/06-implementation/iteration_requirements/test_iteration", object.union(failing, {"last_test_result": "passed"}))
	not guards.in_test_corridor with input as agent_in(passed, "x", "y")
	escalated := set("/phases/06-implementation/iteration_requirements/test_iteration", object.union(failing, {"status": "escalated"}))
	not guards.in_test_corridor with input as agent_in(escalated, "x", "y")
	deny_codes(agent_in(escalated, "general-purpose", "hand off")) == set()
}

test_corridor_not_for_delegations_or_plain_calls if {
	deny_codes(agent_in(failing_state, "software-developer", "fix the tests, then advance")) == set()
	deny_codes(agent_in(failing_state, "general-purpose", "find why the test fails")) == set()
}

test_corridor_skill_advance if {
	deny_codes(skill_in(failing_state, "isdlc", "advance")) == {"DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"}
}

test_corridor_orchestrator_advance_both if {
	deny_codes(advance(failing_state)) == {"DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"}
}

test_constitutional_corridor if {
	st := set("/phases/06-implementation/constitutional_validation", {"status": "iterating"})
	guards.in_constitutional_corridor with input as agent_in(st, "x", "y")
	inp := agent_in(st, "general-purpose", "phase complete, hand off")
	deny_codes(inp) == {"DES-ITERATION-CORRIDOR", "DES-CONSTITUTION-PENDING"}
	contains(texts(inp), `is in its constitutional corridor`)
}

test_constitutional_corridor_needs_tests_satisfied if {
	st := patched([
		{"op": "replace", "path": "/phases/06-implementation/constitutional_validation", "value": {"status": "iterating"}},
		{"op": "replace", "path": "/phases/06-implementation/iteration_requirements/test_iteration/completed", "value": false},
	])
	not guards.in_constitutional_corridor with input as agent_in(st, "x", "y")

	# A phase without tests, validation under way: satisfied.
	st2 := {"active_workflow": {"phases": ["02-tracing"], "current_phase": "02-tracing"}, "phases": {"02-tracing": {"constitutional_validation": {"status": "pending"}}}}
	guards.in_constitutional_corridor with input as agent_in(st2, "x", "y")
	st3 := json.patch(st2, [{"op": "replace", "path": "/phases/02-tracing/constitutional_validation/status", "value": "escalated"}])
	not guards.in_constitutional_corridor with input as agent_in(st3, "x", "y")
}

# The corridor opens once validation is under way (issue 28 (a)): a phase
# without test iterations that has no constitutional_validation record yet is
# still doing its work, and an Explore or research call that says "gate",
# "proceed" or "delegate" is ordinary work. Its gate still holds.
test_constitutional_corridor_waits_for_validation if {
	st := {"active_workflow": {"phases": ["01-requirements", "03-architecture"], "current_phase": "03-architecture", "current_phase_index": 1}, "phases": {"03-architecture": {"status": "in_progress"}}}
	not guards.in_constitutional_corridor with input as agent_in(st, "Explore", "Find where the payment gate is configured")
	deny_codes(agent_in(st, "Explore", "Find where the payment gate is configured")) == set()
	deny_codes(agent_in(st, "general-purpose", "Research the options, then delegate the write-up")) == set()
	deny_codes(advance(st)) == {"DES-GATE-BLOCKED"}

	# Validation started: the corridor is open.
	started := json.patch(st, [{"op": "add", "path": "/phases/03-architecture/constitutional_validation", "value": {"status": "pending", "iterations_used": 1}}])
	deny_codes(agent_in(started, "Explore", "Find where the payment gate is configured")) == {"DES-ITERATION-CORRIDOR"}

	# Tests done in a phase with test iterations: validation is next, the corridor opens without a record.
	done := {"active_workflow": {"phases": ["06-implementation"], "current_phase": "06-implementation", "current_phase_index": 0}, "phases": {"06-implementation": {"status": "in_progress", "iteration_requirements": {"test_iteration": {"completed": true, "last_test_result": "passed"}}}}}
	guards.in_constitutional_corridor with input as agent_in(done, "x", "y")
}

# DES-CONSTITUTION-PENDING

test_constitution_pending if {
	st := set("/phases/06-implementation/constitutional_validation", {"status": "iterating"})
	inp := agent_in(st, "sdlc-orchestrator", "Phase complete: ready for gate")
	codes(guards.deny) & {"DES-CONSTITUTION-PENDING"} == {"DES-CONSTITUTION-PENDING"} with input as inp
	t := texts(inp)
	contains(t, `claims phase "06-implementation" complete`)
	contains(t, `phases["06-implementation"].constitutional_validation.status`)
}

test_constitution_pending_escalation_approved_passes if {
	approved := set("/phases/06-implementation/constitutional_validation", {"status": "escalated", "escalation_approved": true})
	deny_codes(agent_in(approved, "general-purpose", "mark as complete")) == set()
	pending := set("/phases/06-implementation/constitutional_validation", {"status": "escalated", "escalation_approved": false})
	deny_codes(agent_in(pending, "general-purpose", "mark as complete")) == {"DES-CONSTITUTION-PENDING"}
}

test_constitution_pending_not_when_not_required if {
	st := {"active_workflow": {"phases": ["00-quick-scan"], "current_phase": "00-quick-scan"}}
	deny_codes(agent_in(st, "general-purpose", "phase complete")) == set()
	deny_codes(agent_in(state, "general-purpose", "phase complete")) == set()
}

# Escalations.

test_escalations if {
	st := set("/phases/06-implementation/constitutional_validation", {"status": "iterating"})
	inp := agent_in(st, "sdlc-orchestrator", "phase complete, advance")
	guards.escalations == [
		{"type": "constitution_blocked", "phase": "06-implementation", "codes": ["DES-CONSTITUTION-PENDING"]},
		{"type": "corridor_blocked", "phase": "06-implementation", "codes": ["DES-ITERATION-CORRIDOR"]},
		{"type": "gate_blocked", "phase": "06-implementation", "codes": ["DES-GATE-BLOCKED"]},
	] with input as inp
	guards.escalations == [] with input as agent("software-developer", "x")
}

test_team_maps_codes_to_escalation_types if {
	table := {"DES-GATE-BLOCKED": "blocked", "DES-ITERATION-CORRIDOR": "blocked"}
	guards.escalations == [{"type": "blocked", "phase": "06-implementation", "codes": ["DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"]}] with input as advance(failing_state)
		with data.des.phases.escalation_types as table
}

# Test iterations from des's evidence (phase_evidence "des", the default).

with_evidence(inp, ti) := json.patch(inp, [{"op": "add", "path": "/workflow/evidence", "value": {"workflow": "feature@", "test_iteration": ti}}])

claimed := set("/phases/06-implementation/iteration_requirements/test_iteration", {"completed": true, "current_iteration": 1, "last_test_result": "passed"})

seen_failing := {"06-implementation": {
	"completed": false, "current_iteration": 2, "max_iterations": 10, "last_test_result": "failed",
	"last_test_at": "2026-11-29T14:02:05.000Z", "last_test_command": "go test ./...",
	"last_test_failures": 3,
}}

test_evidence_claim_without_run_blocked if {
	inp := with_evidence(advance(claimed), {})
	deny_codes(inp) == {"DES-GATE-BLOCKED"}
	some m in gate_msgs(inp)
	contains(m, "des has not seen its tests pass: 0/10 test iterations, no test result recorded (des saw no test run in this phase)")
	t := texts(inp)
	contains(t, "des records each run of a test runner it knows")

	# the same claim read from the state passes
	state_deny_codes(inp) == set()
}

test_evidence_pass_allows_whatever_the_state_says if {
	st := set("/phases/06-implementation/iteration_requirements/test_iteration", {"completed": false})
	inp := with_evidence(advance(st), {"06-implementation": {"completed": true, "status": "success", "current_iteration": 3, "last_test_result": "passed"}})
	deny_codes(inp) == set()
}

test_evidence_failing_quoted if {
	inp := with_evidence(advance(claimed), seen_failing)
	deny_codes(inp) == {"DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"}
	some m in gate_msgs(inp)
	contains(m, "2/10 test iterations, last result failed (last test run 14:02 UTC, `go test ./...`, 3 failed)")
	t := texts(inp)
	contains(t, "the corridor closes when des sees them pass")
	contains(t, "des escalates the phase itself when the same failure repeats 3 times or after 10 test iterations")
	guards.phase_test_evidence == "2/10 test iterations, last result failed (last test run 14:02 UTC, `go test ./...`, 3 failed)" with input as inp
}

test_evidence_escalated_needs_approval if {
	esc := {"06-implementation": {
		"completed": true, "status": "escalated", "escalation_reason": "circuit_breaker",
		"escalation_details": "Same error repeated 3 times", "current_iteration": 3, "max_iterations": 10,
		"last_test_result": "failed",
	}}
	inp := with_evidence(advance(state), esc)
	deny_codes(inp) == {"DES-GATE-BLOCKED"}
	some m in gate_msgs(inp)
	contains(m, "its tests were escalated (circuit_breaker: Same error repeated 3 times) and nobody approved the escalation")

	# the state's claim is not an approval; a person's, recorded by des, is
	approved := set("/phases/06-implementation/iteration_requirements/test_iteration/escalation_approved", true)
	deny_codes(with_evidence(advance(approved), esc)) == {"DES-GATE-BLOCKED"}
	contains(texts(inp), "des-hook escalations approve 06-implementation")
	esc_ok := {"06-implementation": object.union(esc["06-implementation"], {"escalation_approved": true})}
	deny_codes(with_evidence(advance(state), esc_ok)) == set()
}

test_evidence_observations_quoted if {
	st := set("/phases/06-implementation/constitutional_validation", {"status": "iterating"})
	inp := json.patch(advance(st), [{"op": "add", "path": "/workflow/evidence/phase_agent", "value": {"06-implementation": {"agent_type": "software-developer", "time": "2026-11-29T14:05:00Z", "constitutional": "compliant"}}}])
	some m in gate_msgs(inp)
	contains(m, `constitutional validation is "iterating"`)
	contains(m, `; the last subagent des saw stop in this phase, software-developer at 14:05 UTC, stated "compliant"`)
}

test_evidence_replies_quoted if {
	reqs := {"iteration_requirements": {"phase_requirements": {"06-implementation": {"interactive_elicitation": {"enabled": true, "min_menu_interactions": 3}}}}}
	inp := json.patch(object.union(advance(state), {"workflow": {"requirements": reqs}}), [{"op": "add", "path": "/workflow/evidence/user_replies", "value": {"06-implementation": 2}}])
	some m in gate_msgs(inp)
	contains(m, "0/3 menu interactions")
	contains(m, "; des saw 2 user replies in this phase")
}
