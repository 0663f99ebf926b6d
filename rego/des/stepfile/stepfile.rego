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
	"Migrate the step file to the current layout: task_id, state, tdd_cycle.phase_execution_log[] (see the contract §2).",
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
