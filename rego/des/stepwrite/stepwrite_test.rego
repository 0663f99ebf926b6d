package des.stepwrite_test

import data.des.stepwrite

phase(name, status, outcome, blocked) := {"name": name, "status": status, "outcome": outcome, "blocked_by": blocked}

write(disk_task, disk_phases, task, phases) := {
	"step": {"path": "steps/01-01.json", "task_status": task, "phases": phases},
	"disk_step": {"task_status": disk_task, "phases": disk_phases},
}

codes(vs) := [v.code | some v in vs]

test_allowed_progress if {
	inp := write("TODO", [phase("PREPARE", "NOT_EXECUTED", "", "")], "IN_PROGRESS", [phase("PREPARE", "IN_PROGRESS", "", "")])
	count(stepwrite.deny) == 0 with input as inp
	inp2 := write("IN_PROGRESS", [phase("PREPARE", "IN_PROGRESS", "", "")], "IN_PROGRESS", [phase("PREPARE", "EXECUTED", "PASS", "")])
	count(stepwrite.deny) == 0 with input as inp2
	inp3 := write("IN_PROGRESS", [phase("REVIEW", "IN_PROGRESS", "", "")], "IN_PROGRESS", [phase("REVIEW", "SKIPPED", "", "NOT_APPLICABLE: no code")])
	count(stepwrite.deny) == 0 with input as inp3
}

test_task_transition if {
	vs := stepwrite.deny with input as write("TODO", [], "DONE", [])
	codes(vs) == ["DES-TASK-TRANSITION"]
	some v in vs
	contains(v.msg, "from TODO to DONE")
	contains(v.msg, "allowed moves are: IN_PROGRESS")
	codes(stepwrite.deny) == ["DES-TASK-TRANSITION"] with input as write("DONE", [], "IN_PROGRESS", [])
}

test_task_unknown_statuses_left_to_schema if {
	count(stepwrite.deny) == 0 with input as write("NOT_STARTED", [], "IN_PROGRESS", [])
	count(stepwrite.deny) == 0 with input as write("TODO", [], "COMPLETED", [])
}

test_new_step_file_starts_from_todo if {
	count(stepwrite.deny) == 0 with input as {"step": {"path": "s.json", "task_status": "TODO", "phases": [phase("PREPARE", "NOT_EXECUTED", "", "")]}}
	vs := stepwrite.deny with input as {"step": {"path": "s.json", "task_status": "DONE", "phases": [phase("PREPARE", "EXECUTED", "PASS", "")]}}
	{v.code | some v in vs} == {"DES-TASK-TRANSITION", "DES-PHASE-JUMP"}
}

test_no_opinion_without_incoming_facts if {
	count(stepwrite.deny) == 0 with input as {"step": {"path": "s.json", "problem": "invalid_json"}, "disk_step": {"task_status": "IN_PROGRESS", "phases": []}}
}

test_phase_jump if {
	vs := stepwrite.deny with input as write("IN_PROGRESS", [phase("RED_UNIT", "NOT_EXECUTED", "", "")], "IN_PROGRESS", [phase("RED_UNIT", "EXECUTED", "PASS", "")])
	codes(vs) == ["DES-PHASE-JUMP"]
	some v in vs
	contains(v.msg, "phase RED_UNIT cannot move from NOT_EXECUTED to EXECUTED")
}

test_terminal_phase_cannot_move if {
	vs := stepwrite.deny with input as write("IN_PROGRESS", [phase("PREPARE", "EXECUTED", "PASS", "")], "IN_PROGRESS", [phase("PREPARE", "IN_PROGRESS", "", "")])
	some v in vs
	contains(v.msg, "none (terminal)")
}

test_phase_new_in_incoming_counts_from_not_executed if {
	codes(stepwrite.deny) == ["DES-PHASE-JUMP"] with input as write("IN_PROGRESS", [], "IN_PROGRESS", [phase("COMMIT", "EXECUTED", "PASS", "")])
	count(stepwrite.deny) == 0 with input as write("IN_PROGRESS", [], "IN_PROGRESS", [phase("COMMIT", "IN_PROGRESS", "", "")])
}

test_phase_unknown_status_not_compared if {
	count(stepwrite.deny) == 0 with input as write("IN_PROGRESS", [phase("PREPARE", "COMPLETED", "", "")], "IN_PROGRESS", [phase("PREPARE", "EXECUTED", "PASS", "")])
}

test_no_outcome if {
	vs := stepwrite.deny with input as write("IN_PROGRESS", [phase("GREEN_UNIT", "IN_PROGRESS", "", "")], "IN_PROGRESS", [phase("GREEN_UNIT", "EXECUTED", "", "")])
	codes(vs) == ["DES-PHASE-NO-OUTCOME"]
	codes(stepwrite.deny) == ["DES-PHASE-NO-OUTCOME"] with input as write("IN_PROGRESS", [phase("GREEN_UNIT", "IN_PROGRESS", "", "")], "IN_PROGRESS", [phase("GREEN_UNIT", "EXECUTED", "SUCCESS", "")])
}

test_no_outcome_already_on_disk_is_not_this_write if {
	same := [phase("GREEN_UNIT", "EXECUTED", "", "")]
	count(stepwrite.deny) == 0 with input as write("IN_PROGRESS", same, "IN_PROGRESS", same)
}

test_invalid_skip if {
	vs := stepwrite.deny with input as write("IN_PROGRESS", [phase("REVIEW", "IN_PROGRESS", "", "")], "IN_PROGRESS", [phase("REVIEW", "SKIPPED", "", "  ")])
	codes(vs) == ["DES-PHASE-INVALID-SKIP"]
	same := [phase("REVIEW", "SKIPPED", "", "")]
	count(stepwrite.deny) == 0 with input as write("IN_PROGRESS", same, "IN_PROGRESS", same)
}

test_removed_phase_is_a_jump if {
	disk := [phase("PREPARE", "EXECUTED", "FAIL", ""), phase("RED_UNIT", "NOT_EXECUTED", "", "")]
	vs := stepwrite.deny with input as write("IN_PROGRESS", disk, "IN_PROGRESS", [phase("RED_UNIT", "NOT_EXECUTED", "", "")])
	codes(vs) == ["DES-PHASE-JUMP"]
	some v in vs
	contains(v.msg, "phase PREPARE (EXECUTED on disk) is missing")

	# The whole log dropped is caught too; a phase never started may go.
	codes(stepwrite.deny) == ["DES-PHASE-JUMP"] with input as write("IN_PROGRESS", disk, "IN_PROGRESS", [])
	count(stepwrite.deny) == 0 with input as write("IN_PROGRESS", disk, "IN_PROGRESS", [phase("PREPARE", "EXECUTED", "FAIL", "")])
}

# The recovery of a refused move names a walk the guard accepts.

test_task_jump_recovery_names_the_walk if {
	some v in stepwrite.deny with input as write("TODO", [], "DONE", [])
	v.recovery[0] == "Re-read steps/01-01.json and move the task one write at a time: state.status IN_PROGRESS first, then DONE."
}

test_task_without_walk_recovery_keeps_the_status if {
	some v in stepwrite.deny with input as write("DONE", [], "IN_PROGRESS", [])
	startswith(v.recovery[0], "Keep state.status DONE: no walk along the table leads from DONE to IN_PROGRESS")
}

test_phase_jump_recovery_by_origin if {
	some v1 in stepwrite.deny with input as write("IN_PROGRESS", [phase("RED_UNIT", "NOT_EXECUTED", "", "")], "IN_PROGRESS", [phase("RED_UNIT", "EXECUTED", "PASS", "")])
	startswith(v1.recovery[0], "Write phase RED_UNIT as IN_PROGRESS first")
	some v2 in stepwrite.deny with input as write("IN_PROGRESS", [phase("PREPARE", "EXECUTED", "PASS", "")], "IN_PROGRESS", [phase("PREPARE", "IN_PROGRESS", "", "")])
	v2.recovery == ["EXECUTED is final (phase PREPARE): keep the status as it is; work still to do goes in the phases after it, or in a new step file."]
	some v3 in stepwrite.deny with input as write("IN_PROGRESS", [phase("PREPARE", "FAILED", "", "")], "IN_PROGRESS", [phase("PREPARE", "IN_PROGRESS", "", "")])
	contains(v3.recovery[0], "`des-hook stale --resolve steps/01-01.json`")
	some v4 in stepwrite.deny with input as write("IN_PROGRESS", [phase("PREPARE", "IN_PROGRESS", "", "")], "IN_PROGRESS", [phase("PREPARE", "NOT_EXECUTED", "", "")])
	contains(v4.recovery[1], "write it FAILED and state.status FAILED, then run `des-hook stale --resolve steps/01-01.json`")
}

# Many phases refused from the same status share one recovery line, and a
# log naming a phase twice is judged, not an error.
test_phase_jumps_share_one_line if {
	disk := [phase("PREPARE", "NOT_EXECUTED", "", ""), phase("RED_UNIT", "NOT_EXECUTED", "", "")]
	vs := stepwrite.deny with input as write("IN_PROGRESS", disk, "IN_PROGRESS", [phase("PREPARE", "EXECUTED", "PASS", ""), phase("RED_UNIT", "EXECUTED", "PASS", "")])
	count(vs) == 2
	{r | some v in vs; some r in v.recovery} == {"Write phases PREPARE, RED_UNIT as IN_PROGRESS first (with started_at), do the work, then write the final status: EXECUTED with an outcome, SKIPPED with blocked_by, or FAILED."}
	twice := stepwrite.deny with input as write("IN_PROGRESS", disk, "IN_PROGRESS", [phase("PREPARE", "EXECUTED", "PASS", ""), phase("PREPARE", "SKIPPED", "", "NOT_APPLICABLE: x")])
	count(twice) == 2
}
