# METADATA
# title: Step file layout
# description: |
#   Rules on the layout of a DES step file that hold at every gate that reads one.
#   Input: input.step.path (project-relative) and input.step.document (the parsed file).
package des.stepfile

# Top-level keys of layouts that DES no longer reads, with the field that replaced each.
obsolete_keys := {
	"step_id": "task_id (or task_specification.task_id)",
	"phase_id": "tdd_cycle.phase_execution_log[].phase_name",
}

# What to change, field by field, to move from the obsolete layout; each is
# a Write or Edit the write guard accepts, as no phase status changes.
_key_recovery := {
	"step_id": "Rename the top-level field step_id to task_id, keeping its value, with Write or Edit.",
	"phase_id": "Delete the top-level field phase_id with Write or Edit: each phase is named by phase_name in its entry of tdd_cycle.phase_execution_log.",
}

_layout_line := "The current layout is {\"task_id\": ..., \"state\": {\"status\": ...}, \"tdd_cycle\": {\"phase_execution_log\": [{\"phase_name\": ..., \"phase_index\": N, \"status\": ...}]}}; other fields are kept as they are."

# METADATA
# title: Obsolete step file layout
# description: A top-level step_id or phase_id, or tdd_phase without tdd_cycle.
# custom:
#   code: DES-STEPFILE-OBSOLETE
#   severity: deny
deny contains {
	"code": "DES-STEPFILE-OBSOLETE",
	"msg": sprintf("step file %s uses the obsolete top-level field %q; use %s instead", [input.step.path, key, replacement]),
	"field": concat("", ["/", key]),
	"recovery": [_key_recovery[key], _layout_line],
} if {
	some key, replacement in obsolete_keys
	key in object.keys(input.step.document)
}

deny contains {
	"code": "DES-STEPFILE-OBSOLETE",
	"msg": sprintf("step file %s has tdd_phase without tdd_cycle (obsolete layout); move the phase log to tdd_cycle.phase_execution_log", [input.step.path]),
	"field": "/tdd_phase",
	"recovery": [
		"Replace tdd_phase with tdd_cycle.phase_execution_log, with Write or Edit: one entry per phase, {\"phase_name\": NAME, \"phase_index\": N, \"status\": \"NOT_EXECUTED\"}, then record the phases already done through the write guard (IN_PROGRESS, then EXECUTED with an outcome).",
		_layout_line,
	],
} if {
	"tdd_phase" in object.keys(input.step.document)
	not "tdd_cycle" in object.keys(input.step.document)
}

default _problem := ""

_problem := input.step.problem

# METADATA
# title: Step file outside the project
# description: The step file path resolves outside the project root (.., an absolute path elsewhere, a symbolic link).
# custom:
#   code: DES-STEPFILE-OUTSIDE
#   severity: deny
deny contains {
	"code": "DES-STEPFILE-OUTSIDE",
	"msg": sprintf("step file %s resolves outside the project root (%s); DES reads and writes step files only inside the project", [input.step.path, object.get(input.step, "error", "")]),
	"field": "/tool_input/prompt",
	"recovery": ["Point DES-STEP-FILE at a step file inside the project, by a path relative to the project root without .. or links leading out."],
} if {
	_problem == "outside"
}

# METADATA
# title: Step file invalid
# description: The step file is not valid JSON, not a JSON object, or fails the step schema (one violation per schema error, with its JSON pointer).
# custom:
#   code: DES-STEPFILE-SCHEMA
#   severity: deny
deny contains {
	"code": "DES-STEPFILE-SCHEMA",
	"msg": sprintf("step file %s is not a valid step document: %s", [input.step.path, object.get(input.step, "error", _problem)]),
	"field": "",
	"recovery": _schema_recovery,
} if {
	_problem in {"invalid_json", "not_object"}
}

deny contains {
	"code": "DES-STEPFILE-SCHEMA",
	"msg": sprintf("step file %s fails the step schema at %s: %s", [input.step.path, _pointer_text(e.pointer), e.msg]),
	"field": e.pointer,
	"recovery": _schema_recovery,
} if {
	some e in input.step.schema_errors
}

_pointer_text(p) := "the top level" if p == ""

_pointer_text(p) := p if p != ""

_schema_recovery := ["Fix the step file at the place named above, with Write or Edit, so that it matches the step schema (the Step file section of des's docs/reference.md lists the fields and values)."]
