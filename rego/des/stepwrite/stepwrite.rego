# METADATA
# title: Step file writes
# description: |
#   Judges a write to a step file before it lands, by comparing what the file
#   holds now with what the write would produce. Every task or phase status
#   change must be in the transition table; a phase that becomes EXECUTED
#   needs an outcome, one that becomes SKIPPED a reason.
#   Input: input.step.{path, task_status, phases[] {name, status, outcome,
#   blocked_by}} for the incoming document (absent when it did not parse), and
#   input.disk_step.{task_status, phases[]} for the file on disk (absent when
#   there is none: a new step starts from TODO with every phase NOT_EXECUTED).
#   Go reads the phases from tdd_cycle.phase_execution_log or the legacy
#   location; an absent field is "".
package des.stepwrite

import data.des.transitions

# A step without a status has not started.
default _incoming_task := "TODO"

_incoming_task := input.step.task_status if input.step.task_status != ""

default _disk_task := "TODO"

_disk_task := input.disk_step.task_status if input.disk_step.task_status != ""

_known_task := object.keys(data.des.transitions.task)

_known_phase := object.keys(data.des.transitions.phase)

# Go hands the disk's phases with one entry per name (the last one), so
# this object cannot conflict.
_disk_phases := {p.name: p | some p in input.disk_step.phases}

_incoming_names := {p.name | some p in input.step.phases}

_outcomes := {o | some o in data.des.steps.phase_outcomes}

_moves_text(moves) := "none (terminal)" if count(moves) == 0

_moves_text(moves) := concat(", ", moves) if count(moves) > 0

# METADATA
# title: Task status change not in the table
# description: A write changes the task's status in a way the task transition table does not allow.
# custom:
#   code: DES-TASK-TRANSITION
#   severity: deny
deny contains {
	"code": "DES-TASK-TRANSITION",
	"msg": sprintf("%s: the task cannot move from %s to %s; from %s the allowed moves are: %s", [input.step.path, _disk_task, _incoming_task, _disk_task, _moves_text(transitions.task_moves(_disk_task))]),
	"field": "/state/status",
	"recovery": _task_recovery,
} if {
	input.step.phases
	_incoming_task != _disk_task
	_disk_task in _known_task
	_incoming_task in _known_task # unknown statuses are the schema's business
	not transitions.task_move_allowed(_disk_task, _incoming_task)
}

_table_text := "TODO→IN_PROGRESS; IN_PROGRESS→DONE|FAILED|PARTIAL; FAILED→IN_PROGRESS; PARTIAL→IN_PROGRESS"

# The moves that lead from the disk's task status to the written one, one
# write each, when there is such a walk of two moves.
_task_walks := [[m, _incoming_task] | some m in transitions.task_moves(_disk_task); transitions.task_move_allowed(m, _incoming_task)]

_task_walk := _task_walks[0] if count(_task_walks) > 0

_task_recovery := [
	sprintf("Re-read %s and move the task one write at a time: state.status %s first, then %s.", [input.step.path, _task_walk[0], _task_walk[1]]),
	sprintf("state.status moves only along the table: %s.", [_table_text]),
] if _task_walk

_task_recovery := [
	sprintf("Keep state.status %s: no walk along the table leads from %s to %s (%s).", [_disk_task, _disk_task, _incoming_task, _table_text]),
	"To give the task up, write state.status FAILED (from IN_PROGRESS) with state.failure_reason.",
] if not _task_walk

# The recovery for the phase moves the table refuses, by where the phases
# are: one line for all the phases refused from the same status.
_jump_recovery("NOT_EXECUTED") := [sprintf("Write %s as IN_PROGRESS first (with started_at), do the work, then write the final status: EXECUTED with an outcome, SKIPPED with blocked_by, or FAILED.", [_names_text(_refused_from.NOT_EXECUTED)])]

_jump_recovery("IN_PROGRESS") := [
	sprintf("Finish %s from IN_PROGRESS: EXECUTED with an outcome, SKIPPED with blocked_by, or FAILED.", [_names_text(_refused_from.IN_PROGRESS)]),
	sprintf("To give a phase up and start it over, write it FAILED and state.status FAILED, then run `des-hook stale --resolve %s`, which resets FAILED and IN_PROGRESS phases to NOT_EXECUTED and the task to PARTIAL.", [input.step.path]),
]

_jump_recovery("FAILED") := [sprintf("FAILED is final (%s): to run a FAILED phase again, write state.status FAILED, then run `des-hook stale --resolve %s`, which resets it to NOT_EXECUTED and the task to PARTIAL.", [_names_text(_refused_from.FAILED), input.step.path])]

_jump_recovery(from) := [sprintf("%s is final (%s): keep the status as it is; work still to do goes in the phases after it, or in a new step file.", [from, _names_text(_refused_from[from])])] if from in {"EXECUTED", "SKIPPED"}

# A status a team's table adds: the table's own moves.
_jump_recovery(from) := [sprintf("Move %s only along the phase table: from %s the allowed moves are %s.", [_names_text(_refused_from[from]), from, _moves_text(transitions.phase_moves(from))])] if not from in {"NOT_EXECUTED", "IN_PROGRESS", "FAILED", "EXECUTED", "SKIPPED"}

_names_text(names) := sprintf("phase %s", [names[0]]) if count(names) == 1

_names_text(names) := sprintf("phases %s", [concat(", ", names)]) if count(names) > 1

# Each refused phase move as [name, from]; a set, not an object, as an
# incoming log may name a phase twice.
_refused := {[p.name, from] |
	some p in input.step.phases
	from := _disk_status(p)
	p.status != from
	from in _known_phase
	p.status in _known_phase
	not transitions.phase_move_allowed(from, p.status)
}

_disk_status(p) := object.get(_disk_phases, [p.name, "status"], "NOT_EXECUTED")

# The refused phases grouped by the status they start from, in log order.
_refused_from := {from: [p.name | some p in input.step.phases; [p.name, from] in _refused] | some [_, from] in _refused}

# METADATA
# title: Phase status jump
# description: A write changes a phase's status in a way the phase transition table does not allow (e.g. NOT_EXECUTED→EXECUTED in one write).
# custom:
#   code: DES-PHASE-JUMP
#   severity: deny
deny contains {
	"code": "DES-PHASE-JUMP",
	"msg": sprintf("%s: phase %s cannot move from %s to %s in one write; from %s the allowed moves are: %s", [input.step.path, p.name, from, p.status, from, _moves_text(transitions.phase_moves(from))]),
	"field": "/tdd_cycle/phase_execution_log",
	"recovery": _jump_recovery(from),
} if {
	some p in input.step.phases
	from := _disk_status(p)
	[p.name, from] in _refused
}

# METADATA
# title: Phase removed from the log
# description: |
#   A phase the file records as started or finished is missing from the
#   incoming log: removing it and adding it back would undo a terminal status.
# custom:
#   code: DES-PHASE-JUMP
#   severity: deny
deny contains {
	"code": "DES-PHASE-JUMP",
	"msg": sprintf("%s: phase %s (%s on disk) is missing from the written phase log; a phase that has started stays in the log", [input.step.path, name, d.status]),
	"field": "/tdd_cycle/phase_execution_log",
	"recovery": [sprintf("Keep phase %s in tdd_cycle.phase_execution_log with its recorded status; change statuses only along the table.", [name])],
} if {
	input.step.phases # the incoming document parsed
	some name, d in _disk_phases
	d.status != "NOT_EXECUTED"
	not name in _incoming_names
}

# METADATA
# title: Executed phase without outcome
# description: A phase becomes EXECUTED without outcome PASS or FAIL.
# custom:
#   code: DES-PHASE-NO-OUTCOME
#   severity: deny
deny contains {
	"code": "DES-PHASE-NO-OUTCOME",
	"msg": sprintf("%s: phase %s is EXECUTED with outcome %q; an executed phase records PASS or FAIL", [input.step.path, p.name, p.outcome]),
	"field": "/tdd_cycle/phase_execution_log",
	"recovery": [sprintf("Set outcome to PASS or FAIL (and outcome_details with the evidence) when %s becomes EXECUTED.", [_names_text(_no_outcome)])],
} if {
	some p in input.step.phases
	_lacks_outcome(p)
}

_lacks_outcome(p) if {
	p.status == "EXECUTED"
	not p.outcome in _outcomes
	not _already(p.name, "EXECUTED") # a problem already on disk is not this write's
}

_no_outcome := [p.name | some p in input.step.phases; _lacks_outcome(p)]

# METADATA
# title: Skipped phase without reason
# description: A phase becomes SKIPPED without blocked_by.
# custom:
#   code: DES-PHASE-INVALID-SKIP
#   severity: deny
deny contains {
	"code": "DES-PHASE-INVALID-SKIP",
	"msg": sprintf("%s: phase %s is SKIPPED without blocked_by; a skip must say why", [input.step.path, p.name]),
	"field": "/tdd_cycle/phase_execution_log",
	"recovery": [sprintf("Set blocked_by on %s with a prefix: BLOCKED_BY_DEPENDENCY:, NOT_APPLICABLE:, APPROVED_SKIP: or CHECKPOINT_PENDING:, then the reason.", [_names_text(_no_reason)])],
} if {
	some p in input.step.phases
	_lacks_reason(p)
}

_lacks_reason(p) if {
	p.status == "SKIPPED"
	trim_space(p.blocked_by) == ""
	not _already(p.name, "SKIPPED")
}

_no_reason := [p.name | some p in input.step.phases; _lacks_reason(p)]

# _already holds when the disk had the phase in this status with the same
# problem (no outcome, or no reason): a write that leaves it as it was is
# not the one that made it.
_already(name, "EXECUTED") if {
	d := _disk_phases[name]
	d.status == "EXECUTED"
	not d.outcome in _outcomes
}

_already(name, "SKIPPED") if {
	d := _disk_phases[name]
	d.status == "SKIPPED"
	trim_space(d.blocked_by) == ""
}
