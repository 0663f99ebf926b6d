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

_recovery := [
	"Migrate the step file to the current layout: task_id, state, tdd_cycle.phase_execution_log[] (the Step file section of des's docs/reference.md lists the fields).",
	"Regenerate the step file with the current DES tooling rather than editing it by hand.",
]

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
	"recovery": _recovery,
} if {
	some key, replacement in obsolete_keys
	key in object.keys(input.step.document)
}

deny contains {
	"code": "DES-STEPFILE-OBSOLETE",
	"msg": sprintf("step file %s has tdd_phase without tdd_cycle (obsolete layout); move the phase log to tdd_cycle.phase_execution_log", [input.step.path]),
	"field": "/tdd_phase",
	"recovery": _recovery,
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

_schema_recovery := ["Fix the step file so that it matches the step schema (statemachine/schema/step.schema.json in des; the Step file section of des's docs/reference.md lists the fields and values)."]
