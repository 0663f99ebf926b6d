# The delegation guards: a phase delegation checked against the workflow
# state and the task plan, and the fail-closed rule for an unusable state file
# (package des.phases.guards).
package des.phases.guards

import data.des.phases.current
import data.des.phases.current_field
import data.des.phases.current_status
import data.des.phases.norm_phase
import data.des.phases.phase_list
import data.des.phases.ptr
import data.des.phases.status_text

_current_pointer := ptr(split(current_field, "."))

_outside := "" if target in phase_list

_outside := sprintf("; %q is not one of active_workflow.phases (%s)", [target, concat(", ", phase_list)]) if not target in phase_list

_first_index(p) := [i | some i, q in phase_list; q == p][0]

# Going back to an earlier phase is a rollback (the write guard lets the
# index and statuses move down only with recovery_action.type "rollback").
_move_recovery := sprintf("To go back: set active_workflow.recovery_action.type to \"rollback\" and active_workflow.current_phase to %q (with active_workflow.current_phase_index %d, phases[%q].status and active_workflow.phase_status[%q] set to \"in_progress\"), then delegate again.", [target, _first_index(target), target, target]) if _target_earlier

# Going forward is one phase at a time: the recovery names the next phase,
# not the target (setting the target directly would skip the phases between).
_move_recovery := sprintf("To move on: pass %q's gate, then advance one phase at a time: the next phase is %q (set active_workflow.current_phase to %q, active_workflow.current_phase_index to %d, phases[%q].status and active_workflow.phase_status[%q] to \"in_progress\"); delegate to %q's agents when it is the current phase.", [current, _next, _next, _first_index(current) + 1, _next, _next, target]) if {
	_target_later
	_next := phase_list[_first_index(current) + 1]
}

_move_recovery := sprintf("%q is not a phase of this workflow: delegate to the agents of the phases in active_workflow.phases.", [target]) if {
	not target in phase_list
}

_move_recovery := sprintf("The current phase %q is not in active_workflow.phases: set active_workflow.current_phase to the workflow's phase in progress, then delegate again.", [current]) if {
	target in phase_list
	not current in phase_list
}

_target_later if _first_index(target) > _first_index(current)

_target_earlier if _first_index(target) < _first_index(current)

# METADATA
# title: Phase delegated out of order
# description: A phase delegation whose target phase T is not the current phase C.
# custom:
#   code: DES-PHASE-OUT-OF-ORDER
#   severity: deny
deny contains {
	"code": "DES-PHASE-OUT-OF-ORDER",
	"msg": sprintf("%s delegates phase %q (%s), but the current phase is %q (%s)%s; a phase's agents run only while it is the current phase", [who, target, _by_words[by], current, current_field, _outside]),
	"field": _current_pointer,
	"recovery": [
		sprintf("Delegate the work of the current phase %q instead, or finish it first.", [current]),
		_move_recovery,
	],
} if {
	current
	delegation
	target != current
}

# METADATA
# title: Phase delegated before it was started
# description: A phase delegation to the current phase while phases[C].status (else active_workflow.phase_status[C]) is not in_progress.
# custom:
#   code: DES-PHASE-UNTRACKED
#   severity: deny
deny contains {
	"code": "DES-PHASE-UNTRACKED",
	"msg": sprintf("%s delegates phase %q (%s), the current phase, but its status is %s (phases[%q].status, else active_workflow.phase_status[%q]), not %q: the orchestrator has not marked the phase started", [who, target, _by_words[by], status_text, current, current, data.des.phases.active_status]),
	"field": ptr(["phases", current, "status"]),
	"recovery": _untracked_recovery,
} if {
	current
	delegation
	target == current
	current_status != data.des.phases.active_status
}

# A phase not yet started is marked started. A completed phase cannot simply
# be set back to in_progress: the workflow-state write guard refuses a status
# going back (DES-STATE-V8-STATUS) unless the same write sets
# recovery_action.type to retry; the usual way on is the next phase.
default _untracked_recovery := []

_untracked_recovery := [sprintf("Set phases[%q].status to %q (and active_workflow.phase_status[%q]) before delegating.", [current, data.des.phases.active_status, current])] if {
	current_status != data.des.phases.completed_status
}

_untracked_recovery := [
	sprintf("Phase %q is completed: move on to the next phase%s instead of delegating it again.", [current, _next_text]),
	sprintf("To redo it, set phases[%q].status and active_workflow.phase_status[%q] to %q and active_workflow.recovery_action.type to \"retry\" in the same write (a status going back from %q is refused otherwise), then delegate again.", [current, current, data.des.phases.active_status, data.des.phases.completed_status]),
] if {
	current_status == data.des.phases.completed_status
}

_next_phase := phase_list[_first_index(current) + 1]

default _next_text := ""

_next_text := sprintf(" %q (set active_workflow.current_phase to it, with active_workflow.current_phase_index, phases[%q].status and active_workflow.phase_status[%q] set to %q)", [_next_phase, _next_phase, _next_phase, data.des.phases.active_status])

_early := {norm_phase(p) | some p, on in data.des.phases.early_phases; on == true}

default _plan_candidates := []

_plan_candidates := [c | some c in input.workflow.plan.candidates; is_string(c)] if is_array(input.workflow.plan.candidates)

# METADATA
# title: Task plan missing
# description: A phase delegation while the current phase is past the early phases and no task plan exists.
# custom:
#   code: DES-PLAN-MISSING
#   severity: deny
deny contains {
	"code": "DES-PLAN-MISSING",
	"msg": sprintf("%s delegates phase %q while the current phase %q is past the early phases (%s) and no task plan exists (looked for %s)", [who, target, current, concat(", ", sort(_early)), concat(", ", _plan_candidates)]),
	"recovery": [
		sprintf("Write the task plan (%s) before delegating phase %q: the phases after %s work from it.", [concat(" or ", _plan_candidates), current, concat(", ", sort(_early))]),
		"If the plan exists elsewhere, move it to one of those paths.",
	],
} if {
	current
	delegation
	not current in _early
	input.workflow.plan.exists == false
}

# The v2.0 plan checks, on a phase delegation while the current phase is the
# implementation phase.
_plan_checked if {
	current
	delegation
	current == norm_phase(data.des.phases.plan_format.phase)
	input.workflow.plan.exists == true
	is_string(input.workflow.plan.format)
	data.des.phases.plan_format.versions[input.workflow.plan.format] == true
}

default _plan_path := "the task plan"

_plan_path := input.workflow.plan.path if is_string(input.workflow.plan.path)

_sections := [s | some s in input.workflow.plan.sections; is_object(s)]

_impl_sections := [s | some s in _sections; is_string(s.title); regex.match(data.des.phases.plan_format.implementation_section, s.title)]

_impl_tasks := [t | some s in _impl_sections; some t in s.tasks; is_object(t)]

_plan_problems contains sprintf("has no implementation section (a `## ` heading naming phase 06 or implementation; headings found: %s)", [concat(", ", [sprintf("%q", [s.title]) | some s in _sections; is_string(s.title)])]) if {
	count(_impl_sections) == 0
}

_plan_problems contains "its implementation section has no `files:` lines under its tasks" if {
	count(_impl_sections) > 0
	not _some_files
}

_some_files if {
	some t in _impl_tasks
	is_array(t.files)
	count(t.files) > 0
}

_plan_problems contains "its implementation section has no `| traces:` annotation on a task" if {
	count(_impl_sections) > 0
	not _some_traces
}

_some_traces if {
	some t in _impl_tasks
	t.traces == true
}

# blocked_by edges between tasks of the whole plan; a task that reaches
# itself is on a cycle.
_tasks := [t | some s in _sections; some t in s.tasks; is_object(t); is_string(t.id)]

# A task id listed twice has the blocked_by of both. The comprehension is
# assigned in a rule body, so that OPA indexes it by id: building the graph
# stays linear in the tasks (a comprehension per task inside an object
# comprehension was quadratic, past Gate 1's budget at 1,000 tasks).
_graph[id] := deps if {
	some t in _tasks
	id := t.id
	deps := {b | some u in _tasks; u.id == id; some b in u.blocked_by; is_string(b)}
}

# Which tasks are on a cycle, without a reachability walk per task (quadratic:
# past Gate 1's budget on a 1,000-task chain). In any total order of the ids,
# every cycle has an edge a → b with b not below a ("forward"): were every
# edge to point down, no path could return. A forward edge a → b is on a
# cycle when b reaches a, and the tasks of those cycles are the ones b
# reaches that also reach a. The order is that of the id strings, so that
# iSDLC's blocked_by, which names earlier tasks (T0002 blocked by T0001),
# has no forward edge and costs no walk at all.
_edges := {[a, b] | some a, deps in _graph; some b in deps}

_reverse[b] := froms if {
	some [_, b] in _edges
	froms := {a | some [a, x] in _edges; x == b}
}

_forward := {[a, b] | some [a, b] in _edges; b >= a}

_cyclic := {id |
	some [a, b] in _forward
	ahead := graph.reachable(_graph, {b})
	a in ahead
	some id in (ahead & graph.reachable(_reverse, {a}))
}

_plan_problems contains sprintf("its blocked_by graph has a cycle through %s", [concat(", ", sort(_cyclic))]) if count(_cyclic) > 0

# METADATA
# title: Task plan format
# description: |
#   On a phase delegation while the current phase is 06-implementation, a
#   Format v2.0 plan lacks an implementation section, files: lines or
#   | traces: annotations in it, or its blocked_by graph has a cycle (one
#   warning per problem).
# custom:
#   code: DES-PLAN-FORMAT
#   severity: warn
warn contains {
	"code": "DES-PLAN-FORMAT",
	"msg": sprintf("%s (format %s, current phase %q) %s", [_plan_path, input.workflow.plan.format, current, problem]),
	"recovery": [sprintf("Fix %s: a v2.0 plan has a phase 06 implementation section whose tasks carry `files:` lines and `| traces:` annotations, and no blocked_by cycle.", [_plan_path])],
} if {
	_plan_checked
	some problem in _plan_problems
}

default _problem := ""

_problem := input.workflow.problem if is_string(input.workflow.problem)

default _state_file := "the workflow state file"

_state_file := input.workflow.state_file if is_string(input.workflow.state_file)

default _problem_error := "no reason given"

_problem_error := input.workflow.error if is_string(input.workflow.error)

# METADATA
# title: Workflow state unusable
# description: The workflow state file exists but is not a JSON object (or cannot be read), and the call is a phase delegation by subagent_type, which the guards would judge; DES fails closed.
# custom:
#   code: DES-INTERNAL
#   severity: deny
deny contains {
	"code": "DES-INTERNAL",
	"msg": sprintf("%s delegates phase %q (by subagent_type), but the workflow state %s is %s (%s), so the current phase cannot be read and the delegation cannot be judged; DES fails closed", [who, _by_type, _state_file, _problem, _problem_error]),
	"recovery": [
		sprintf("Repair %s so that it is a JSON object with active_workflow.current_phase, or restore it from version control.", [_state_file]),
		sprintf("Then delegate phase %q again.", [_by_type]),
	],
} if {
	_problem != ""
	_by_type
}
