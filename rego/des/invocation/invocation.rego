# METADATA
# title: Subagent invocation
# description: |
#   Gate 1 rules on the DES markers of a prompt, the step file it names, the
#   task's state and stale work in the same steps directory.
#   Input: input.prompt.{validation, conflicts[], step_file}, input.step.{path,
#   problem, error, document}, input.in_progress[] {file, phase, started_at,
#   age_minutes}.
package des.invocation

import data.des.sections

# Inputs are read by reference with defaults, never with object.get(input, ...),
# which would turn the whole input into a value on every call.
default _validation := ""

_validation := input.prompt.validation

# METADATA
# title: Invalid DES marker
# description: DES-VALIDATION is not "required", or a metadata marker is given twice with different values.
# custom:
#   code: DES-MARKER-INVALID
#   severity: deny
deny contains {
	"code": "DES-MARKER-INVALID",
	"msg": sprintf("DES-VALIDATION is %q; the only value is \"required\" (a prompt that needs no validation carries no DES markers)", [value]),
	"field": "/tool_input/prompt",
	"recovery": ["Write <!-- DES-VALIDATION: required --> or remove every DES marker from the prompt."],
} if {
	value := _validation
	not value in {"required", ""}
}

deny contains {
	"code": "DES-MARKER-INVALID",
	"msg": "the prompt has DES markers but no DES-VALIDATION marker, so DES cannot tell whether it must be validated; it fails closed",
	"field": "/tool_input/prompt",
	"recovery": ["Write <!-- DES-VALIDATION: required --> or remove every DES marker from the prompt."],
} if {
	_validation == ""
}

deny contains {
	"code": "DES-MARKER-INVALID",
	"msg": sprintf("marker %s is given %d times with different values (%s); DES cannot tell which one holds", [c.marker, count(c.values), concat(", ", [sprintf("%q", [v]) | some v in c.values])]),
	"field": "/tool_input/prompt",
	"recovery": [sprintf("Keep exactly one %s marker in the prompt.", [c.marker])],
} if {
	some c in input.prompt.conflicts
}

default _step_problem := ""

_step_problem := input.step.problem

_has_step_marker if input.prompt.step_file != ""

# METADATA
# title: Step file missing
# description: Validation level is not none, and there is no DES-STEP-FILE marker or the file is missing or unreadable.
# custom:
#   code: DES-STEPFILE-MISSING
#   severity: deny
deny contains {
	"code": "DES-STEPFILE-MISSING",
	"msg": sprintf("validation level %q needs a step file, but the prompt has no <!-- DES-STEP-FILE: path --> marker", [sections.level]),
	"field": "/tool_input/prompt",
	"recovery": ["Add <!-- DES-STEP-FILE: docs/feature/<project>/steps/NN-NN.json --> naming the step this subagent executes."],
} if {
	sections.level != "none"
	not _has_step_marker
}

deny contains {
	"code": "DES-STEPFILE-MISSING",
	"msg": sprintf("step file %s is %s: %s", [input.step.path, _step_problem, object.get(input.step, "error", "")]),
	"field": "/tool_input/prompt",
	"recovery": [sprintf("Create %s (or fix the DES-STEP-FILE path) before starting the subagent.", [input.step.path])],
} if {
	sections.level != "none"
	_step_problem in {"missing", "unreadable"}
}

# A step without a status has not started: TODO.
default _task_status := "TODO"

_task_status := input.step.document.state.status

# METADATA
# title: Task already done
# description: |
#   A step file the prompt names has its task DONE, a terminal status. This
#   holds at every validation level, none included: a level says which
#   sections a prompt needs, never that a finished task may run again.
# custom:
#   code: DES-TASK-TERMINAL
#   severity: deny
deny contains {
	"code": "DES-TASK-TERMINAL",
	"msg": sprintf("the task of %s is already complete (state.status DONE); DONE is terminal, so no subagent may start on it", [input.step.path]),
	"field": "/state/status",
	"recovery": [
		"Do not re-run a completed step; pick the next step whose status is TODO, FAILED or PARTIAL.",
		"If the step really must be redone, create a new step file for the new work.",
	],
} if {
	_has_step_marker
	_task_status == "DONE"
}

# METADATA
# title: Task cannot start
# description: Starting the subagent moves the task to IN_PROGRESS, and the table does not allow that move from its status.
# custom:
#   code: DES-TASK-TRANSITION
#   severity: deny
deny contains {
	"code": "DES-TASK-TRANSITION",
	"msg": sprintf("the task of %s cannot move from %s to IN_PROGRESS; from %s the allowed moves are: %s", [input.step.path, _task_status, _task_status, _moves_text]),
	"field": "/state/status",
	"recovery": ["Bring the step to a status from which it may start (TODO, FAILED, PARTIAL) or resume it (IN_PROGRESS)."],
} if {
	sections.level != "none"
	_task_status in object.keys(data.des.transitions.task) # unknown statuses are the schema's business
	_task_status != "IN_PROGRESS" # a resume
	_task_status != "DONE" # DES-TASK-TERMINAL says it better
	not data.des.transitions.task_move_allowed(_task_status, "IN_PROGRESS")
}

_moves_text := "none (terminal)" if count(data.des.transitions.task_moves(_task_status)) == 0

_moves_text := concat(", ", data.des.transitions.task_moves(_task_status)) if count(data.des.transitions.task_moves(_task_status)) > 0

# A phase entry without phase_name is still named, so that the message does
# not read "phase  has been".
_stale_phase(w) := concat(" ", ["phase", w.phase]) if w.phase != ""

_stale_phase(w) := "a phase with no phase_name" if w.phase == ""

# METADATA
# title: Stale work in the steps directory
# description: A phase has been IN_PROGRESS longer than the stale threshold in a step file of the same directory.
# custom:
#   code: DES-STALE-WORK
#   severity: deny
deny contains {
	"code": "DES-STALE-WORK",
	"msg": sprintf("%s: %s has been IN_PROGRESS for %d minutes (since %s), over the %d-minute stale threshold; an earlier subagent abandoned it", [w.file, _stale_phase(w), round(w.age_minutes), w.started_at, data.des.settings.config.stale_threshold_minutes]),
	"field": "/tdd_cycle/phase_execution_log",
	"recovery": [
		sprintf("Run `des-hook stale --resolve %s` to reset the abandoned phase to NOT_EXECUTED (recorded in the audit trail), then start the subagent again.", [w.file]),
		"Run `des-hook stale` to list all stale work.",
	],
} if {
	sections.level != "none"
	some w in input.in_progress
	w.age_minutes > data.des.settings.config.stale_threshold_minutes
}

# METADATA
# title: Task may start
# description: |
#   True when starting the subagent may move the task to IN_PROGRESS by the
#   table, or it is IN_PROGRESS already (a resume). Go moves the task only
#   then, so a waived DES-TASK-TERMINAL never makes DES move a DONE task.
default can_start := false

can_start if _task_status == "IN_PROGRESS"

can_start if data.des.transitions.task_move_allowed(_task_status, "IN_PROGRESS")
