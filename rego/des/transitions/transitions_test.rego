package des.transitions_test

import data.des.transitions

# Every move the contract allows, and only those.
contract_task_moves := {
	["TODO", "IN_PROGRESS"],
	["IN_PROGRESS", "DONE"],
	["IN_PROGRESS", "FAILED"],
	["IN_PROGRESS", "PARTIAL"],
	["FAILED", "IN_PROGRESS"],
	["PARTIAL", "IN_PROGRESS"],
}

contract_phase_moves := {
	["NOT_EXECUTED", "IN_PROGRESS"],
	["IN_PROGRESS", "EXECUTED"],
	["IN_PROGRESS", "SKIPPED"],
	["IN_PROGRESS", "FAILED"],
}

test_task_table_is_the_contract if {
	allowed := {[from, to] |
		some from in data.des.steps.task_statuses
		some to in data.des.steps.task_statuses
		transitions.task_move_allowed(from, to)
	}
	allowed == contract_task_moves
}

test_phase_table_is_the_contract if {
	allowed := {[from, to] |
		some from in data.des.steps.phase_statuses
		some to in data.des.steps.phase_statuses
		transitions.phase_move_allowed(from, to)
	}
	allowed == contract_phase_moves
}

test_every_status_has_a_row if {
	{s | some s, _ in data.des.transitions.task} == {s | some s in data.des.steps.task_statuses}
	{s | some s, _ in data.des.transitions.phase} == {s | some s in data.des.steps.phase_statuses}
}

test_jump_not_allowed if {
	not transitions.phase_move_allowed("NOT_EXECUTED", "EXECUTED")
	not transitions.task_move_allowed("TODO", "DONE")
	not transitions.task_move_allowed("UNKNOWN", "DONE")
}

test_moves_lists if {
	transitions.task_moves("IN_PROGRESS") == ["DONE", "FAILED", "PARTIAL"]
	transitions.task_moves("DONE") == []
	transitions.task_moves("BOGUS") == []
	transitions.phase_moves("IN_PROGRESS") == ["EXECUTED", "FAILED", "SKIPPED"]
}

test_terminal_statuses if {
	{s | some s in data.des.steps.task_statuses; transitions.task_terminal(s)} == {"DONE"}
	{s | some s in data.des.steps.phase_statuses; transitions.phase_terminal(s)} == {"EXECUTED", "SKIPPED", "FAILED"}
	not transitions.phase_terminal("BOGUS")
}
