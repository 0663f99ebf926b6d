package des.invocation_test

import data.des.invocation

full := ["DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "TDD_14_PHASES", "QUALITY_GATES", "OUTCOME_RECORDING", "BOUNDARY_RULES", "TIMEOUT_INSTRUCTION"]

good_prompt := {"validation": "required", "origin": "command:/nw:execute", "step_file": "steps/01-01.json", "sections": full}

step(status) := {"path": "steps/01-01.json", "document": {"task_id": "01-01", "state": {"status": status}}}

inp(status) := {"prompt": good_prompt, "step": step(status)}

codes(violations) := {v.code | some v in violations}

test_clean_invocation if {
	count(invocation.deny) == 0 with input as inp("TODO")
}

test_marker_value_not_required if {
	violations := invocation.deny with input as object.union(inp("TODO"), {"prompt": object.union(good_prompt, {"validation": "optional"})})
	codes(violations) == {"DES-MARKER-INVALID"}
	some v in violations
	contains(v.msg, `"optional"`)
}

test_markers_without_validation if {
	p := object.remove(good_prompt, ["validation"])
	violations := invocation.deny with input as {"prompt": p, "step": step("TODO")}
	codes(violations) == {"DES-MARKER-INVALID"}
	some v in violations
	contains(v.msg, "no DES-VALIDATION marker")
}

test_conflicting_markers if {
	p := object.union(good_prompt, {"conflicts": [{"marker": "DES-ORIGIN", "values": ["command:/nw:execute", "ad-hoc"]}]})
	violations := invocation.deny with input as object.union(inp("TODO"), {"prompt": p})
	codes(violations) == {"DES-MARKER-INVALID"}
	some v in violations
	contains(v.msg, "DES-ORIGIN")
	contains(v.msg, `"ad-hoc"`)
}

test_step_marker_missing if {
	p := object.remove(good_prompt, ["step_file"])
	codes(invocation.deny) == {"DES-STEPFILE-MISSING"} with input as {"prompt": p}
}

test_step_file_missing_or_unreadable if {
	codes(invocation.deny) == {"DES-STEPFILE-MISSING"} with input as {"prompt": good_prompt, "step": {"path": "steps/01-01.json", "problem": "missing", "error": "no such file"}}
	codes(invocation.deny) == {"DES-STEPFILE-MISSING"} with input as {"prompt": good_prompt, "step": {"path": "steps/01-01.json", "problem": "unreadable", "error": "permission denied"}}
	count(invocation.deny) == 0 with input as {"prompt": good_prompt, "step": {"path": "steps/01-01.json", "problem": "outside"}}
}

test_level_none_needs_no_step if {
	p := object.remove(object.union(good_prompt, {"origin": "command:/nw:review"}), ["step_file"])
	count(invocation.deny) == 0 with input as {"prompt": p}
	count(invocation.deny) == 0 with input as {"prompt": p, "step": step("DONE")}
}

# A level says which sections a prompt needs, never that a DONE task may run again.
test_done_is_terminal_at_every_level if {
	every origin in ["command:/nw:review", "command:/nw:research", "ad-hoc", "command:/nw:baseline", "command:/nw:execute"] {
		violations := invocation.deny with input as {"prompt": object.union(good_prompt, {"origin": origin}), "step": step("DONE")}
		"DES-TASK-TERMINAL" in codes(violations)
	}
}

test_done_at_level_none_is_the_only_violation if {
	p := object.union(good_prompt, {"origin": "command:/nw:review", "sections": []})
	codes(invocation.deny) == {"DES-TASK-TERMINAL"} with input as {"prompt": p, "step": step("DONE")}
}

test_done_is_terminal if {
	violations := invocation.deny with input as inp("DONE")
	codes(violations) == {"DES-TASK-TERMINAL"}
	some v in violations
	contains(v.msg, "already complete")
}

test_allowed_starts if {
	count(invocation.deny) == 0 with input as inp("TODO")
	count(invocation.deny) == 0 with input as inp("FAILED")
	count(invocation.deny) == 0 with input as inp("PARTIAL")
	count(invocation.deny) == 0 with input as inp("IN_PROGRESS") # a resume
	count(invocation.deny) == 0 with input as {"prompt": good_prompt, "step": {"path": "s.json", "document": {"task_id": "1"}}} # no state: a fresh step
}

test_transition_outside_table if {
	# No built-in status is refused by the table except DONE, so prove the rule with a team table.
	violations := invocation.deny with input as inp("PARTIAL") with data.des.transitions.task.PARTIAL as ["FAILED"]
	codes(violations) == {"DES-TASK-TRANSITION"}
	some v in violations
	contains(v.msg, "allowed moves are: FAILED")
	terminal := invocation.deny with input as inp("FAILED") with data.des.transitions.task.FAILED as []
	some t in terminal
	contains(t.msg, "none (terminal)")
}

test_unknown_status_left_to_schema if {
	count(invocation.deny) == 0 with input as inp("NOT_STARTED")
}

test_stale_work if {
	stale := {"file": "steps/01-02.json", "phase": "RED_UNIT", "started_at": "2026-01-01T10:00:00Z", "age_minutes": 45.4}
	fresh := {"file": "steps/01-03.json", "phase": "PREPARE", "started_at": "2026-01-01T10:40:00Z", "age_minutes": 5}
	violations := invocation.deny with input as object.union(inp("TODO"), {"in_progress": [stale, fresh]})
	codes(violations) == {"DES-STALE-WORK"}
	count(violations) == 1
	some v in violations
	contains(v.msg, "steps/01-02.json: phase RED_UNIT has been IN_PROGRESS for 45 minutes")
	contains(concat(" ", v.recovery), "hook stale --resolve steps/01-02.json")
}

test_stale_threshold_is_a_setting if {
	w := {"file": "a.json", "phase": "PREPARE", "started_at": "t", "age_minutes": 20}
	count(invocation.deny) == 1 with input as object.union(inp("TODO"), {"in_progress": [w]}) with data.des.config.stale_threshold_minutes as 10
	count(invocation.deny) == 0 with input as object.union(inp("TODO"), {"in_progress": [w]})
}

test_can_start if {
	invocation.can_start with input as inp("TODO")
	invocation.can_start with input as inp("IN_PROGRESS")
	invocation.can_start with input as inp("PARTIAL")
	not invocation.can_start with input as inp("DONE")
	not invocation.can_start with input as inp("NOT_STARTED")
}

test_stale_work_without_a_phase_name_is_named if {
	stale := {"file": "steps/01-02.json", "phase": "", "started_at": "2026-01-01T10:00:00Z", "age_minutes": 45.4}
	violations := invocation.deny with input as object.union(inp("TODO"), {"in_progress": [stale]})
	some v in violations
	v.code == "DES-STALE-WORK"
	contains(v.msg, "steps/01-02.json: a phase with no phase_name has been IN_PROGRESS for 45 minutes")
}
