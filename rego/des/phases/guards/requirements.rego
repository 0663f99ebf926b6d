# Requirements of the current phase, the gate on advancement attempts, the
# iteration corridors and phase-completion claims (package des.phases.guards).
#
# The requirement tables are input.workflow.requirements when Go loaded a
# team's files (setting phase_requirements_files), else the defaults in
# data.des.phases.requirements (requirements/data.json, iSDLC's own
# iteration-requirements.json and artifact-paths.json). Only four kinds count:
# test_iteration, constitutional_validation, interactive_elicitation and
# artifact_validation; other keys of an entry and workflow_overrides are
# ignored. A phase with no entry has no requirements.
package des.phases.guards

import data.des.phases.active_workflow
import data.des.phases.current
import data.des.phases.current_doc
import data.des.phases.is_key
import data.des.phases.lookup
import data.des.phases.norm_phase
import data.des.phases.phase_list
import data.des.phases.ptr

_team_tables if is_object(input.workflow.requirements)

_tables := input.workflow.requirements if _team_tables

_tables := data.des.phases.requirements if not _team_tables

# METADATA
# title: Requirement entry of the current phase
# description: The current phase's entry of phase_requirements (keys normalised); undefined when it has none.
requirement := lookup(_tables.iteration_requirements.phase_requirements, current)

# METADATA
# title: Requirement enabled
# description: Whether a requirement kind is enabled for the current phase.
enabled(kind) if requirement[kind].enabled == true

# The state of the current phase's requirements.
_state_ti := current_doc.iteration_requirements.test_iteration

# The setting phase_evidence: "des" (the default) reads a phase's test
# iterations from the test runs des saw (input.workflow.evidence, derived by
# Go as iSDLC's test-watcher derives them); "state" from the workflow state,
# as iSDLC's own Node hooks do. Any other value reads des's evidence.
default _phase_evidence := "des"

_phase_evidence := data.des.settings.config.phase_evidence if is_string(data.des.settings.config.phase_evidence)

# METADATA
# title: Test iterations from des's evidence
# description: Whether the gates read test iterations from the test runs des saw (setting phase_evidence des).
evidence_mode if _phase_evidence != "state"

default _evidence_ti := {}

_evidence_ti := input.workflow.evidence.test_iteration[current] if is_object(input.workflow.evidence.test_iteration[current])

_ti := _evidence_ti if evidence_mode

_ti := _state_ti if not evidence_mode

_ie := current_doc.iteration_requirements.interactive_elicitation

_cv := current_doc.constitutional_validation

_req_pointer(parts) := ptr(array.concat(["phases", current], parts))

# Numbers for messages, "absent" when a field is missing.
_num(x) := sprintf("%v", [x]) if is_number(x)

_num(x) := "0" if not is_number(x)

_state_max if is_number(_ti.max_iterations)

_max_iterations := _ti.max_iterations if _state_max

_max_iterations := requirement.test_iteration.max_iterations if {
	not _state_max
	is_number(requirement.test_iteration.max_iterations)
}

default _current_iteration := 0

_current_iteration := _ti.current_iteration if is_number(_ti.current_iteration)

_iterations_text := sprintf("%s/%s test iterations", [_num(_current_iteration), _num(_max_iterations)]) if _max_iterations

_iterations_text := sprintf("%s test iterations", [_num(_current_iteration)]) if not _max_iterations

default _last_result_text := ", no test result recorded"

_last_result_text := sprintf(", last result %s", [_ti.last_test_result]) if is_string(_ti.last_test_result)

_test_text := concat("", [_iterations_text, _last_result_text, _evidence_quote])

default _evidence_quote := ""

_evidence_quote := " (des saw no test run in this phase)" if {
	evidence_mode
	not _ti.last_test_at
}

_evidence_quote := sprintf(" (last test run %s UTC, `%s`, %s)", [substring(_ti.last_test_at, 11, 5), _ti.last_test_command, _last_run_outcome]) if {
	evidence_mode
	is_string(_ti.last_test_at)
	count(_ti.last_test_at) >= 16
}

default _last_run_outcome := "no outcome"

_last_run_outcome := _ti.last_test_result if _ti.last_test_result != data.des.phases.failed_test_result

_last_run_outcome := sprintf("%v failed", [_ti.last_test_failures]) if {
	_ti.last_test_result == data.des.phases.failed_test_result
	is_number(_ti.last_test_failures)
	_ti.last_test_failures > 0
}

_last_run_outcome := "failed" if {
	_ti.last_test_result == data.des.phases.failed_test_result
	not _ti.last_test_failures > 0
}

# METADATA
# title: Test evidence text
# description: The current phase's test iterations as the gates quote them ("2/5 test iterations, last result failed (last test run 14:02 UTC, `go test ./...`, 3 failed)").
phase_test_evidence := _test_text

_field_text(x) := json.marshal(x) if x != null

_field_text(x) := "absent" if x == null

default _ti_completed := null

_ti_completed := _ti.completed

default _cv_status := null

_cv_status := _cv.status

default _ie_completed := null

_ie_completed := _ie.completed

default _cv_iterations := 0

_cv_iterations := _cv.iterations_used if is_number(_cv.iterations_used)

_cv_max if is_number(_cv.max_iterations)

_cv_iterations_text := sprintf("%s/%s constitutional iterations", [_num(_cv_iterations), _num(_cv.max_iterations)]) if _cv_max

_cv_iterations_text := sprintf("%s constitutional iterations", [_num(_cv_iterations)]) if not _cv_max

default _menu := 0

_menu := _ie.menu_interactions if is_number(_ie.menu_interactions)

_own_min_menu if is_number(requirement.interactive_elicitation.min_menu_interactions)

_min_menu := requirement.interactive_elicitation.min_menu_interactions if _own_min_menu

_min_menu := data.des.phases.default_min_menu_interactions if not _own_min_menu

# METADATA
# title: Unmet requirements
# description: What keeps the current phase from passing its gate, one entry per unmet requirement ({kind, msg, field, recovery}).
unmet contains {
	"kind": "test_iteration",
	"msg": sprintf("its tests are not done: %s (phases[%q].iteration_requirements.test_iteration.completed is %s)", [_test_text, current, _field_text(_ti_completed)]),
	"field": _req_pointer(["iteration_requirements", "test_iteration", "completed"]),
	"recovery": sprintf("Run the tests of %q until they pass and set phases[%q].iteration_requirements.test_iteration.completed to true (last_test_result \"passed\").", [current, current]),
} if {
	not evidence_mode
	enabled("test_iteration")
	_ti_completed != true
}

unmet contains {
	"kind": "test_iteration",
	"msg": sprintf("des has not seen its tests pass: %s", [_test_text]),
	"field": _req_pointer(["iteration_requirements", "test_iteration", "completed"]),
	"recovery": sprintf("Run the tests of %q with Bash until they pass: des records each run of a test runner it knows (data.des.evidence.test_runners; `des-hook evidence` lists what it saw) and writes phases[%q].iteration_requirements.test_iteration itself.", [current, current]),
} if {
	evidence_mode
	enabled("test_iteration")
	_ti_completed != true
}

unmet contains {
	"kind": "test_iteration",
	"msg": sprintf("its tests were escalated (%s: %s) and nobody approved the escalation: %s", [_ti.escalation_reason, _ti.escalation_details, _test_text]),
	"field": _req_pointer(["iteration_requirements", "test_iteration", "escalation_approved"]),
	"recovery": sprintf("Ask the user to review the failing tests of %q. To go on anyway the user runs `des-hook escalations approve %s` in a terminal of their own (an agent's run of it is refused); or fix the tests and run them until they pass.", [current, current]),
} if {
	evidence_mode
	enabled("test_iteration")
	_ti_completed == true
	_ti.status == data.des.phases.escalated_status
	not _ti.escalation_approved == true
}

unmet contains {
	"kind": "constitutional_validation",
	"msg": sprintf("its constitutional validation is %s (phases[%q].constitutional_validation.status), not %q; %s used%s", [_field_text(_cv_status), current, data.des.phases.compliant_status, _cv_iterations_text, _agent_seen_text]),
	"field": _req_pointer(["constitutional_validation", "status"]),
	"recovery": sprintf("Validate the artifacts of %q against the constitution and set phases[%q].constitutional_validation.status to %q (completed true).", [current, current, data.des.phases.compliant_status]),
} if {
	enabled("constitutional_validation")
	_cv_status != data.des.phases.compliant_status
}

unmet contains {
	"kind": "interactive_elicitation",
	"msg": sprintf("its interactive elicitation is not done: %s/%s menu interactions, completed %s (phases[%q].iteration_requirements.interactive_elicitation)%s", [_num(_menu), _num(_min_menu), _field_text(_ie_completed), current, _replies_seen_text]),
	"field": _req_pointer(["iteration_requirements", "interactive_elicitation"]),
	"recovery": sprintf("Hold at least %s menu interactions with the user, then set phases[%q].iteration_requirements.interactive_elicitation.menu_interactions to their number and completed to true.", [_num(_min_menu), current]),
} if {
	enabled("interactive_elicitation")
	_elicitation_unmet
}

_elicitation_unmet if _menu < _min_menu

# What des saw of the claims it cannot check (the state decides them):
# the user's replies during the phase, the last subagent that stopped in it.
default _replies_seen_text := ""

_replies_seen_text := sprintf("; des saw %v user replies in this phase", [object.get(input.workflow.evidence.user_replies, current, 0)]) if {
	evidence_mode
	is_object(input.workflow.evidence)
}

default _agent_seen_text := ""

_agent_seen_text := sprintf("; the last subagent des saw stop in this phase, %s at %s UTC, %s", [a.agent_type, substring(a.time, 11, 5), _verdict_text(a.constitutional)]) if {
	evidence_mode
	a := input.workflow.evidence.phase_agent[current]
	is_string(a.time)
	count(a.time) >= 16
}

_verdict_text(v) := "stated no constitutional verdict" if v == ""

_verdict_text(v) := sprintf("stated %q", [v]) if v != ""

_elicitation_unmet if _ie_completed != true

# Artifact paths: artifact_paths.phases[C].paths when present, else the
# entry's own artifact_validation.paths.
_artifact_entry := lookup(_tables.artifact_paths.phases, current)

_listed_paths if is_array(_artifact_entry.paths)

_artifact_paths := _artifact_entry.paths if _listed_paths

_artifact_paths := requirement.artifact_validation.paths if {
	not _listed_paths
	is_array(requirement.artifact_validation.paths)
}

_folder := active_workflow.artifact_folder if is_key(active_workflow.artifact_folder)

_expected := [replace(p, data.des.phases.artifact_folder_placeholder, _folder) | some p in _artifact_paths; is_string(p)]

_dir(p) := regex.replace(p, `/[^/]*$`, "") if contains(p, "/")

_dir(p) := "." if not contains(p, "/")

# One existing file per listed directory suffices.
_missing_dirs := {_dir(p) | some p in _expected} - {_dir(p) | some p in _expected; input.workflow.artifacts[p] == true}

_missing_files := sort([p | some p in _expected; _dir(p) in _missing_dirs])

unmet contains {
	"kind": "artifact_validation",
	"msg": sprintf("active_workflow.artifact_folder is not set, so its artifacts (%s) cannot be found", [concat(", ", [p | some p in _artifact_paths; is_string(p)])]),
	"field": "/active_workflow/artifact_folder",
	"recovery": sprintf("Set active_workflow.artifact_folder to the folder of this work item (the {artifact_folder} of %s) so the artifacts of %q can be checked.", [concat(", ", [p | some p in _artifact_paths; is_string(p)]), current]),
} if {
	enabled("artifact_validation")
	count(_artifact_paths) > 0
	not _folder
}

unmet contains {
	"kind": "artifact_validation",
	"msg": sprintf("its artifacts are missing: %s (no file of these exists in its directory)", [concat(", ", _missing_files)]),
	"field": "/active_workflow/artifact_folder",
	"recovery": sprintf("Write the artifacts of %q (%s) before advancing; check that active_workflow.artifact_folder (%q) names the right folder.", [current, concat(", ", _missing_files), _folder]),
} if {
	enabled("artifact_validation")
	count(_missing_files) > 0
}

unmet contains {
	"kind": "supervised_review",
	"msg": sprintf("its supervised review is %q (active_workflow.supervised_review.status)", [active_workflow.supervised_review.status]),
	"field": "/active_workflow/supervised_review/status",
	"recovery": sprintf("Wait for the user's review of %q; a rejected phase is redone, and the review status is set to a value other than %s before advancing.", [current, concat(" or ", sort([s | some s, on in data.des.phases.review_blocking_statuses; on == true]))]),
} if {
	is_string(active_workflow.supervised_review.status)
	data.des.phases.review_blocking_statuses[active_workflow.supervised_review.status] == true
}

# The index check: when active_workflow has the key current_phase_index
# (null included), the index must be a whole number i and
# active_workflow.phases a list whose entry i is the current phase. Anything
# else (null, a string, a fraction, a negative or out-of-range number, phases
# missing or not a list) blocks an advance: a workflow that has lost its
# position is no evidence of the phase it advances from. Without the key
# nothing is checked.
_has_index if "current_phase_index" in object.keys(active_workflow)

_raw_index := active_workflow.current_phase_index

_int_index if {
	is_number(_raw_index)
	round(_raw_index) == _raw_index
}

_index := _raw_index if _int_index

_phases_list if is_array(active_workflow.phases)

_indexed := norm_phase(active_workflow.phases[_index]) if {
	_phases_list
	is_key(active_workflow.phases[_index])
}

default _indexed_text := "nothing (out of range)"

_indexed_text := json.marshal(_indexed)

_position := [i | some i, p in active_workflow.phases; is_key(p); norm_phase(p) == current][0] if _phases_list

# The index is ahead of the current phase's position.
_index_ahead if _position < _index

_position_text := sprintf("to %d, the position of %q in active_workflow.phases", [_position, current]) if {
	_position
	not _index_ahead
}

# Lowering the index is refused by the workflow-state write guard
# (DES-STATE-V8-INDEX) unless the same write is a rollback.
_position_text := sprintf("to %d, the position of %q in active_workflow.phases, and active_workflow.recovery_action.type to \"rollback\" in the same write (the index going back from %v is refused otherwise)", [_position, current, _index]) if {
	_position
	_index_ahead
}

_position_text := sprintf("and active_workflow.phases (a list of phase keys) so that %q is at that index", [current]) if not _position

_index_problem := sprintf("active_workflow.current_phase_index is %s, not a position in active_workflow.phases", [_field_text(_raw_index)]) if {
	_has_index
	not _int_index
}

_index_problem := sprintf("active_workflow.phases is %s, not a list of phases, so active_workflow.current_phase_index %v points at nothing", [_field_text(object.get(active_workflow, "phases", null)), _index]) if {
	_has_index
	_int_index
	not _phases_list
}

_index_problem := sprintf("active_workflow.phases[%v] (active_workflow.current_phase_index) is %s, not the current phase %q", [_index, _indexed_text, current]) if {
	_has_index
	_int_index
	_phases_list
	not _indexed == current
}

unmet contains {
	"kind": "current_phase_index",
	"msg": _index_problem,
	"field": "/active_workflow/current_phase_index",
	"recovery": sprintf("Set active_workflow.current_phase_index %s.", [_position_text]),
}

_next := phase_list[[i | some i, p in phase_list; p == current][0] + 1]

_advance_text := sprintf("advance from phase %q to %q", [current, _next]) if _next

_advance_text := sprintf("advance past phase %q", [current]) if not _next

# METADATA
# title: Gate blocked
# description: An advancement attempt while a requirement of the current phase is unmet (one violation per requirement), its supervised review is reviewing or rejected, or active_workflow.phases[current_phase_index] is not the current phase.
# custom:
#   code: DES-GATE-BLOCKED
#   severity: deny
deny contains {
	"code": "DES-GATE-BLOCKED",
	"msg": sprintf("%s tries to %s, but %s", [who, _advance_text, u.msg]),
	"field": u.field,
	"recovery": [u.recovery, sprintf("Then advance again; until then keep working in phase %q.", [current])],
} if {
	current
	count(unmet) > 0
	advancement
	some u in unmet
}

# METADATA
# title: Test corridor open
# description: Tests of the current phase are enabled, not completed, not escalated, and the last result failed.
in_test_corridor if {
	enabled("test_iteration")
	_ti_completed != true
	not _ti.status == data.des.phases.escalated_status
	_ti.last_test_result == data.des.phases.failed_test_result
}

_tests_satisfied if not enabled("test_iteration")

_tests_satisfied if _ti_completed == true

# METADATA
# title: Constitutional corridor open
# description: |
#   Tests are satisfied, constitutional validation is enabled, not compliant
#   and not escalated, and it is under way: the phase has a
#   constitutional_validation record, or its tests are done (validation is
#   the next step). A phase without test iterations that has not started
#   validating is still doing its work: no corridor (its gate and
#   DES-CONSTITUTION-PENDING still hold).
in_constitutional_corridor if {
	_tests_satisfied
	enabled("constitutional_validation")
	not _cv_status in {data.des.phases.compliant_status, data.des.phases.escalated_status}
	_constitution_under_way
}

_constitution_under_way if is_object(_cv)

_constitution_under_way if {
	enabled("test_iteration")
	_ti_completed == true
}

# METADATA
# title: Iteration corridor
# description: Inside the test or constitutional corridor, an Agent/Task call that is no phase delegation and has a corridor phrase, or a Skill advance.
# custom:
#   code: DES-ITERATION-CORRIDOR
#   severity: deny
deny contains {
	"code": "DES-ITERATION-CORRIDOR",
	"msg": sprintf("phase %q is in its test corridor (%s): %s may not advance, delegate or declare the phase complete while phases[%q].iteration_requirements.test_iteration.last_test_result is %q", [current, _test_text, who, current, data.des.phases.failed_test_result]),
	"field": _req_pointer(["iteration_requirements", "test_iteration"]),
	"recovery": _corridor_recovery,
} if {
	current
	in_test_corridor # cheap state checks before reading the text
	corridor_call
}

_corridor_recovery := [
	sprintf("Fix the failing tests of %q and run them again; the corridor closes when last_test_result is \"passed\" and phases[%q].iteration_requirements.test_iteration.completed is true.", [current, current]),
	sprintf("If the tests cannot be fixed, escalate to the user: set phases[%q].iteration_requirements.test_iteration.status to %q.", [current, data.des.phases.escalated_status]),
] if not evidence_mode

_corridor_recovery := [
	sprintf("Fix the failing tests of %q and run them again with Bash: the corridor closes when des sees them pass.", [current]),
	sprintf("If the tests cannot be fixed, stop and tell the user: des escalates the phase itself when the same failure repeats %v times or after %v test iterations, and the user decides.", [_circuit_text, _num(_max_iterations)]),
] if evidence_mode

default _circuit_text := "3"

_circuit_text := sprintf("%v", [requirement.test_iteration.circuit_breaker_threshold]) if is_number(requirement.test_iteration.circuit_breaker_threshold)

deny contains {
	"code": "DES-ITERATION-CORRIDOR",
	"msg": sprintf("phase %q is in its constitutional corridor (%s): %s may not advance, delegate or declare the phase complete while phases[%q].constitutional_validation.status is %s, not %q", [current, _cv_iterations_text, who, current, _field_text(_cv_status), data.des.phases.compliant_status]),
	"field": _req_pointer(["constitutional_validation", "status"]),
	"recovery": [
		sprintf("Validate the artifacts of %q against the constitution until phases[%q].constitutional_validation.status is %q.", [current, current, data.des.phases.compliant_status]),
		sprintf("If validation cannot pass, escalate to the user: set phases[%q].constitutional_validation.status to %q.", [current, data.des.phases.escalated_status]),
	],
} if {
	current
	in_constitutional_corridor
	corridor_call
}

_constitution_passes if _cv_status == data.des.phases.compliant_status

_constitution_passes if {
	_cv_status == data.des.phases.escalated_status
	_cv.escalation_approved == true
}

# METADATA
# title: Constitution pending
# description: A phase-completion claim while the current phase requires constitutional validation that is not compliant (escalated with escalation_approved true passes).
# custom:
#   code: DES-CONSTITUTION-PENDING
#   severity: deny
deny contains {
	"code": "DES-CONSTITUTION-PENDING",
	"msg": sprintf("%s claims phase %q complete, but its constitutional validation is %s (phases[%q].constitutional_validation.status), not %q", [who, current, _field_text(_cv_status), current, data.des.phases.compliant_status]),
	"field": _req_pointer(["constitutional_validation", "status"]),
	"recovery": [
		sprintf("Validate the artifacts of %q against the constitution and set phases[%q].constitutional_validation.status to %q before claiming the phase complete.", [current, current, data.des.phases.compliant_status]),
		sprintf("Or escalate: status %q with escalation_approved true, once the user approves.", [data.des.phases.escalated_status]),
	],
} if {
	current
	enabled("constitutional_validation")
	not _constitution_passes
	completion_claim
}

# METADATA
# title: Escalations
# description: One entry per escalation type among the denies of this package ({type, phase, codes} with codes sorted), for the audit trail.
escalations := [{"type": t, "phase": current, "codes": sort(codes)} |
	some t in sort({data.des.phases.escalation_types[v.code] | some v in deny})
	codes := {v.code | some v in deny; data.des.phases.escalation_types[v.code] == t}
]
