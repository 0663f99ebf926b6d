package des.stepfile_test

import data.des.stepfile

codes(violations) := [v.code | some v in violations]

current := {"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}

test_current_layout_passes if {
	count(stepfile.deny) == 0 with input as {"step": {"path": "steps/01-01.json", "document": current}}
}

test_step_id_is_obsolete if {
	violations := stepfile.deny with input as {"step": {"path": "steps/01-01.json", "document": object.union(current, {"step_id": "01-01"})}}
	codes(violations) == ["DES-STEPFILE-OBSOLETE"]
	some v in violations
	v.field == "/step_id"
	contains(v.msg, "steps/01-01.json")
	contains(v.msg, "task_id")
}

test_phase_id_is_obsolete if {
	violations := stepfile.deny with input as {"step": {"path": "s.json", "document": {"phase_id": "p", "tdd_cycle": {}}}}
	[v.field | some v in violations] == ["/phase_id"]
}

test_both_obsolete_keys_reported if {
	violations := stepfile.deny with input as {"step": {"path": "s.json", "document": {"phase_id": "p", "step_id": "s"}}}
	count(violations) == 2
}

test_tdd_phase_without_cycle_is_obsolete if {
	violations := stepfile.deny with input as {"step": {"path": "s.json", "document": {"task_id": "x", "tdd_phase": "RED"}}}
	[v.field | some v in violations] == ["/tdd_phase"]
}

test_tdd_phase_beside_cycle_is_fine if {
	count(stepfile.deny) == 0 with input as {"step": {"path": "s.json", "document": {"tdd_phase": "RED", "tdd_cycle": {}}}}
}

test_no_step_no_opinion if {
	count(stepfile.deny) == 0 with input as {}
}

test_outside if {
	violations := stepfile.deny with input as {"step": {"path": "../other/s.json", "problem": "outside", "error": "it resolves to /other/s.json"}}
	[v.code | some v in violations] == ["DES-STEPFILE-OUTSIDE"]
}

test_invalid_json if {
	violations := stepfile.deny with input as {"step": {"path": "s.json", "problem": "invalid_json", "error": "unexpected end of JSON input"}}
	some v in violations
	v.code == "DES-STEPFILE-SCHEMA"
	contains(v.msg, "unexpected end of JSON input")
	count(stepfile.deny) == 1 with input as {"step": {"path": "s.json", "problem": "not_object"}}
}

test_schema_errors_one_each_with_pointer if {
	errs := [{"pointer": "/state/status", "msg": "value must be one of ..."}, {"pointer": "", "msg": "missing task_id"}]
	violations := stepfile.deny with input as {"step": {"path": "s.json", "document": {}, "schema_errors": errs}}
	{v.field | some v in violations} == {"/state/status", ""}
	some v in violations
	v.field == ""
	contains(v.msg, "at the top level")
}

test_readable_file_no_problem if {
	count(stepfile.deny) == 0 with input as {"step": {"path": "s.json", "document": {"task_id": "1"}, "schema_errors": []}}
}

# The recovery says what to change in the document, key by key.
test_obsolete_recovery_names_the_change if {
	some v1 in stepfile.deny with input as {"step": {"path": "s.json", "document": object.union(current, {"step_id": "01-01"})}}
	v1.recovery[0] == "Rename the top-level field step_id to task_id, keeping its value, with Write or Edit."
	some v2 in stepfile.deny with input as {"step": {"path": "s.json", "document": {"task_id": "x", "tdd_phase": "RED"}}}
	startswith(v2.recovery[0], "Replace tdd_phase with tdd_cycle.phase_execution_log")
	vs := stepfile.deny with input as {"step": {"path": "s.json", "document": {"phase_id": "p", "step_id": "s"}}}
	every v in vs {
		every r in v.recovery {
			not contains(r, "Regenerate")
			not contains(lower(r), "contract")
		}
	}
}
