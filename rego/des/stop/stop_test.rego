package des.stop_test

import data.des.stop

path := "docs/feature/shop/steps/01-01.json"

canonical := data.des.steps.canonical_phases

codes(vs) := {v.code | some v in vs}

only(vs, code) := [v | some v in vs; v.code == code]

# Phases and events.

done_phase(i, name) := {"name": name, "index": i, "status": "EXECUTED", "outcome": "PASS", "outcome_details": "tests green", "blocked_by": "", "turn_count": 3, "duration_seconds": 60}

open_phase(i, name) := {"name": name, "index": i, "status": "NOT_EXECUTED", "outcome": "", "outcome_details": "", "blocked_by": ""}

# partial(k, status): phases before k done, phase k in status, the rest open.
partial(k, status) := [phase_at(i, n, k, status) | some i, n in canonical]

phase_at(i, n, k, _) := done_phase(i, n) if i < k

phase_at(i, n, k, status) := object.union(open_phase(i, n), {"status": status}) if i == k

phase_at(i, n, k, _) := open_phase(i, n) if i > k

# patch(phases, i, fields) changes phase i of a log.
patch(phases, i, fields) := [patched(j, p, i, fields) | some j, p in phases]

patched(j, p, i, fields) := object.union(p, fields) if j == i

patched(j, p, i, _) := p if j != i

started(name) := {"event": "PHASE_STARTED", "phase": name, "from": "NOT_EXECUTED", "to": "IN_PROGRESS", "confirmed": true, "by": "write"}

completed(name) := {"event": "PHASE_COMPLETED", "phase": name, "from": "IN_PROGRESS", "to": "EXECUTED", "confirmed": true, "by": "write"}

phase_events(names) := [e | some n in names; some e in [started(n), completed(n)]]

task_event(from, to, by) := {"event": "TASK_STATE_CHANGED", "from": from, "to": to, "by": by}

done_event := task_event("IN_PROGRESS", "DONE", "write")

# The clean run: 14 phases executed through the write guard, task DONE.

clean_step := {
	"path": path,
	"document": {"task_id": "01-01"},
	"schema_errors": [],
	"workflow_type": "tdd_cycle",
	"task_status": "DONE",
	"phases": [done_phase(i, n) | some i, n in canonical],
	"budget": {"max_turns": 40, "duration_minutes": 30},
	"validation_output": "",
	"documentation": "",
}

clean_run := {
	"source": "gate1",
	"started_at": "2026-11-22T10:00:00Z",
	"task_status_at_start": "IN_PROGRESS",
	"phases_at_start": {n: "NOT_EXECUTED" | some n in canonical},
	"events": array.concat(phase_events(canonical), [done_event]),
}

clean_scope := {"checked": true, "patterns": ["src/auth/**/*.go"], "changed": 3, "outside": [], "error": ""}

clean := {"step": clean_step, "run": clean_run, "scope": clean_scope}

with_step(fields) := object.union(clean, {"step": object.union(clean_step, fields)})

with_run(fields) := object.union(clean, {"run": object.union(clean_run, fields)})

stop_with(step_fields, run_fields) := {"step": object.union(clean_step, step_fields), "run": object.union(clean_run, run_fields), "scope": clean_scope}

# An unfinished run: phases before k done through the guard, phase k in
# status (started through the guard), task IN_PROGRESS.
unfinished(k, status) := stop_with(
	{"task_status": "IN_PROGRESS", "phases": partial(k, status)},
	{"events": array.concat(phase_events(array.slice(canonical, 0, k)), [started(canonical[k])])},
)

test_clean_run_passes if {
	count(stop.deny) == 0 with input as clean
	count(stop.warn) == 0 with input as clean
	stop.info == {"redo_phases": [], "reset_phase": "", "reset_phases": []} with input as clean
}

test_empty_input_has_no_opinion if {
	count(stop.deny) == 0 with input as {}
	count(stop.warn) == 0 with input as {}
	stop.info == {"redo_phases": [], "reset_phase": "", "reset_phases": []} with input as {}
}

# DES-STEPFILE-MISSING

test_missing_step_file_denies if {
	inp := {"step": {"path": path, "problem": "missing", "error": "open: no such file or directory"}, "run": clean_run, "scope": clean_scope}
	vs := stop.deny with input as inp
	codes(vs) == {"DES-STEPFILE-MISSING"}
	some v in vs
	contains(v.msg, path)
	contains(v.msg, "is missing")
	contains(v.msg, "no such file")
	stop.info == {"redo_phases": [], "reset_phase": "", "reset_phases": []} with input as inp
	codes(stop.deny) == {"DES-STEPFILE-MISSING"} with input as {"step": {"path": path, "problem": "unreadable", "error": "permission denied"}, "run": clean_run}
}

# A missing step file cannot be put right by the subagent in the same run:
# Gate 2 records the failure instead of sending it back.
test_missing_step_file_is_not_fixable_in_run if {
	some v in stop.deny with input as {"step": {"path": path, "problem": "missing", "error": "x"}, "run": clean_run}
	v.fixable_in_run == false
}

test_other_step_problems_are_stepfile_rules if {
	count(stop.deny) == 0 with input as {"step": {"path": path, "problem": "invalid_json", "error": "x"}, "run": clean_run}
	count(stop.deny) == 0 with input as {"step": {"path": path, "problem": "outside", "error": "x"}, "run": clean_run}
}

# DES-PHASE-ABANDONED

test_abandoned_phase if {
	inp := unfinished(5, "IN_PROGRESS")
	vs := stop.deny with input as inp
	codes(vs) == {"DES-PHASE-ABANDONED"}
	some v in vs
	v.phase == "GREEN_ACCEPTANCE"
	v.field == "/tdd_cycle/phase_execution_log/5/status"
	contains(v.msg, path)
	contains(v.msg, "GREEN_ACCEPTANCE is still IN_PROGRESS")
	contains(concat("\n", v.recovery), sprintf("hook stale --resolve %s", [path]))
	stop.info == {"redo_phases": [], "reset_phase": "GREEN_ACCEPTANCE", "reset_phases": ["GREEN_ACCEPTANCE"]} with input as inp
}

test_done_task_with_abandoned_phase_is_also_premature if {
	inp := stop_with(
		{"task_status": "DONE", "phases": partial(5, "IN_PROGRESS")},
		{"events": array.concat(phase_events(array.slice(canonical, 0, 5)), [started(canonical[5]), done_event])},
	)
	vs := stop.deny with input as inp
	codes(vs) == {"DES-PHASE-ABANDONED", "DES-PREMATURE-COMPLETION"}
	[v] := only(vs, "DES-PREMATURE-COMPLETION")
	v.phase == "GREEN_ACCEPTANCE"
	v.phases == array.slice(canonical, 5, 14)
	v.field == "/state/status"
	contains(v.msg, "9 phases are not finished: GREEN_ACCEPTANCE (IN_PROGRESS), REVIEW (NOT_EXECUTED)")
}

test_finished_phases_are_not_abandoned if {
	count(stop.deny) == 0 with input as unfinished(5, "NOT_EXECUTED")
	count(stop.deny) == 0 with input as object.union(unfinished(5, "FAILED"), {"step": {"task_status": "FAILED"}, "run": {"events": array.concat(phase_events(array.slice(canonical, 0, 5)), [started(canonical[5]), task_event("IN_PROGRESS", "FAILED", "write")])}})
}

# DES-SILENT-COMPLETION

all_open := [open_phase(i, n) | some i, n in canonical]

test_silent_completion_in_progress if {
	vs := stop.deny with input as stop_with({"task_status": "IN_PROGRESS", "phases": all_open}, {"events": []})
	codes(vs) == {"DES-SILENT-COMPLETION"}
	some v in vs
	v.field == "/state/status"
	contains(v.msg, "the task is IN_PROGRESS but all 14 phases of its log are NOT_EXECUTED")
}

test_silent_completion_done_is_not_also_premature if {
	vs := stop.deny with input as stop_with({"task_status": "DONE", "phases": all_open}, {"events": [done_event]})
	codes(vs) == {"DES-SILENT-COMPLETION"}
}

test_silent_completion_empty_or_missing_log if {
	vs := stop.deny with input as stop_with({"task_status": "IN_PROGRESS", "phases": []}, {"events": []})
	codes(vs) == {"DES-SILENT-COMPLETION"}
	some v in vs
	contains(v.msg, "its phase log is empty or missing")
	inp := {"step": object.remove(object.union(clean_step, {"task_status": "IN_PROGRESS"}), ["phases"]), "run": object.union(clean_run, {"events": []})}
	codes(stop.deny) == {"DES-SILENT-COMPLETION"} with input as inp
}

test_no_silent_completion_when_work_is_recorded_or_not_claimed if {
	count(stop.deny) == 0 with input as unfinished(1, "NOT_EXECUTED")
	count(stop.deny) == 0 with input as stop_with({"task_status": "PARTIAL", "phases": all_open}, {"events": [task_event("IN_PROGRESS", "PARTIAL", "write")]})
	count(stop.deny) == 0 with input as stop_with({"task_status": "FAILED", "phases": []}, {"events": [task_event("IN_PROGRESS", "FAILED", "write")]})
}

# A configuration setup step without a phase log is judged by its evidence.
test_configuration_setup_without_log_is_not_silent if {
	inp := stop_with(
		object.union(config_fields, {"task_status": "IN_PROGRESS", "phases": []}),
		{"events": []},
	)
	count(stop.deny) == 0 with input as inp
	vs := stop.deny with input as stop_with(
		{"workflow_type": "configuration_setup", "task_status": "IN_PROGRESS", "phases": []},
		{"events": []},
	)
	codes(vs) == {"DES-VERIFY-EVIDENCE", "DES-VERIFY-DOCS"}
	codes(stop.deny) == {"DES-SILENT-COMPLETION"} with input as stop_with(object.union(config_fields, {"task_status": "IN_PROGRESS", "phases": all_open}), {"events": []})
}

# DES-PHASE-NO-OUTCOME and DES-PHASE-INVALID-SKIP

test_executed_without_outcome if {
	every outcome in ["", "SUCCESS"] {
		no_outcome_denied(outcome)
	}
}

no_outcome_denied(outcome) if {
	inp := with_step({"phases": patch(clean_step.phases, 3, {"outcome": outcome})})
	vs := stop.deny with input as inp
	codes(vs) == {"DES-PHASE-NO-OUTCOME"}
	some v in vs
	v.phase == "GREEN_UNIT"
	v.field == "/tdd_cycle/phase_execution_log/3/outcome"
	contains(v.msg, sprintf("GREEN_UNIT is EXECUTED with outcome %q", [outcome]))
	stop.info == {"redo_phases": [], "reset_phase": "GREEN_UNIT", "reset_phases": ["GREEN_UNIT"]} with input as inp
}

test_failed_outcome_is_an_outcome if {
	count(stop.deny) == 0 with input as with_step({"phases": patch(clean_step.phases, 3, {"outcome": "FAIL"})})
}

test_skip_without_reason if {
	every reason in ["", "   "] {
		skip_denied(reason)
	}
}

skip_denied(reason) if {
	inp := with_step({"phases": patch(clean_step.phases, 6, {"status": "SKIPPED", "outcome": "", "blocked_by": reason})})
	vs := stop.deny with input as inp
	codes(vs) == {"DES-PHASE-INVALID-SKIP"}
	some v in vs
	v.phase == "REVIEW"
	v.field == "/tdd_cycle/phase_execution_log/6/blocked_by"
}

test_skip_with_reason if {
	inp := with_step({"phases": patch(clean_step.phases, 6, {"status": "SKIPPED", "outcome": "", "blocked_by": "NOT_APPLICABLE: no review for a rename"})})
	count(stop.deny) == 0 with input as inp
	stop.info.reset_phase == "" with input as inp
}

# DES-PHASE-JUMP

test_jump_without_phase_started if {
	events := [e | some e in clean_run.events; not e.phase == "RED_UNIT"]
	inp := with_run({"events": events})
	vs := stop.deny with input as inp
	codes(vs) == {"DES-PHASE-JUMP"}
	some v in vs
	v.phase == "RED_UNIT"
	v.field == "/tdd_cycle/phase_execution_log/2/status"
	contains(v.msg, "RED_UNIT is EXECUTED, but the audit trail has no confirmed PHASE_STARTED for it (it was NOT_EXECUTED when the run started)")
	stop.info == {"redo_phases": ["RED_UNIT"], "reset_phase": "RED_UNIT", "reset_phases": ["RED_UNIT"]} with input as inp
	contains(concat("\n", v.recovery), "Redo phase RED_UNIT through the write guard, from NOT_EXECUTED: with Write or Edit, IN_PROGRESS first")
}

# Several phases jumped: one deny each, all with the same recovery line
# naming them all, so the rendered Recovery: has it once.
test_jumps_share_one_recovery_line if {
	events := [e | some e in clean_run.events; not e.phase in {"RED_UNIT", "GREEN_UNIT"}]
	inp := with_run({"events": events})
	vs := stop.deny with input as inp
	count(vs) == 2
	lines := {r | some v in vs; some r in v.recovery; startswith(r, "Redo ")}
	lines == {"Redo phases RED_UNIT, GREEN_UNIT through the write guard, from NOT_EXECUTED: with Write or Edit, IN_PROGRESS first, then the final status (EXECUTED with an outcome, SKIPPED with blocked_by, or FAILED); never change a step file with Bash or a script."}
	stop.info.redo_phases == ["RED_UNIT", "GREEN_UNIT"] with input as inp
}

test_jump_with_unconfirmed_phase_started if {
	events := [fix(e) | some e in clean_run.events]
	vs := stop.deny with input as with_run({"events": events})
	codes(vs) == {"DES-PHASE-JUMP"}
	[v.phase | some v in vs] == ["COMMIT"]
}

# A confirmed PHASE_STARTED on a line DES did not attest (chained into the
# trail by another writer) confirms nothing.
test_jump_with_unattested_phase_started if {
	events := [unattest(e) | some e in clean_run.events]
	vs := stop.deny with input as with_run({"events": events})
	codes(vs) == {"DES-PHASE-JUMP"}
	[v.phase | some v in vs] == ["COMMIT"]
	count(stop.deny) == 0 with input as with_run({"events": [object.union(e, {"attested": true}) | some e in clean_run.events]})
}

unattest(e) := object.union(e, {"attested": false}) if {
	e.event == "PHASE_STARTED"
	e.phase == "COMMIT"
}

unattest(e) := e if not e.phase == "COMMIT"

unattest(e) := e if e.event != "PHASE_STARTED"

fix(e) := object.union(e, {"confirmed": false}) if {
	e.event == "PHASE_STARTED"
	e.phase == "COMMIT"
}

fix(e) := e if not e.phase == "COMMIT"

fix(e) := e if e.event != "PHASE_STARTED"

test_jump_of_a_phase_new_to_the_log if {
	inp := with_run({"phases_at_start": {"PREPARE": "EXECUTED"}, "events": array.concat(phase_events(array.slice(canonical, 1, 14)), [done_event])})
	count(stop.deny) == 0 with input as inp
	vs := stop.deny with input as with_run({"phases_at_start": {"PREPARE": "IN_PROGRESS"}, "events": array.concat(phase_events(array.slice(canonical, 1, 14)), [done_event])})
	some v in vs
	contains(v.msg, "it was IN_PROGRESS when the run started")
	run := object.union(object.remove(clean_run, ["phases_at_start"]), {"phases_at_start": {"X": "NOT_EXECUTED"}, "events": array.concat(phase_events(array.slice(canonical, 1, 14)), [done_event])})
	vs2 := stop.deny with input as {"step": clean_step, "run": run}
	some v2 in vs2
	contains(v2.msg, "it was not started when the run started")
}

test_skip_jump if {
	phases := patch(clean_step.phases, 6, {"status": "SKIPPED", "outcome": "", "blocked_by": "APPROVED_SKIP: lead"})
	events := [e | some e in clean_run.events; e.phase != "REVIEW"]
	vs := stop.deny with input as stop_with({"phases": phases}, {"events": array.concat(events, [done_event])})
	[v.phase | some v in vs] == ["REVIEW"]
}

# A step resumed after an earlier run: phases done before the start need
# no PHASE_STARTED in this run.
test_resumed_step_does_not_jump if {
	at_start := {n: status_at_start(i) | some i, n in canonical}
	inp := with_run({
		"task_status_at_start": "IN_PROGRESS",
		"phases_at_start": at_start,
		"events": array.concat(phase_events(array.slice(canonical, 7, 14)), [done_event]),
	})
	count(stop.deny) == 0 with input as inp
}

# A phase IN_PROGRESS at the start was started in an earlier run; its
# confirmed completion in this run is the record.
test_resumed_phase_in_progress_at_start if {
	finish := {"event": "PHASE_COMPLETED", "phase": "PREPARE", "from": "IN_PROGRESS", "to": "EXECUTED", "confirmed": true, "by": "write"}
	events := array.concat([finish], array.concat(phase_events(array.slice(canonical, 1, 14)), [done_event]))
	count(stop.deny) == 0 with input as with_run({"phases_at_start": {"PREPARE": "IN_PROGRESS"}, "events": events})
	unconfirmed := array.concat([object.union(finish, {"confirmed": false})], array.slice(events, 1, count(events)))
	[v.phase | some v in stop.deny] == ["PREPARE"] with input as with_run({"phases_at_start": {"PREPARE": "IN_PROGRESS"}, "events": unconfirmed})
	other := array.concat([object.union(finish, {"to": "SKIPPED"})], array.slice(events, 1, count(events)))
	[v.phase | some v in stop.deny] == ["PREPARE"] with input as with_run({"phases_at_start": {"PREPARE": "IN_PROGRESS"}, "events": other})
}

status_at_start(i) := "EXECUTED" if i < 7

status_at_start(i) := "NOT_EXECUTED" if i >= 7

# Without Gate 1's record, every recorded event of the step file is given.
test_transcript_source_without_start_facts if {
	transcript_run := {"source": "transcript", "events": clean_run.events}
	count(stop.deny) == 0 with input as {"step": clean_step, "run": transcript_run, "scope": clean_scope}
	missing := {"source": "transcript", "events": [e | some e in clean_run.events; e.phase != "PREPARE"]}
	vs := stop.deny with input as {"step": clean_step, "run": missing, "scope": clean_scope}
	codes(vs) == {"DES-PHASE-JUMP"}
	some v in vs
	contains(v.msg, "(the audit trail of this step file has none)")
}

test_no_run_no_jump if {
	count(stop.deny) == 0 with input as {"step": clean_step}
}

test_recorded_phase_move_outside_the_table if {
	bad := {"event": "PHASE_COMPLETED", "phase": "REVIEW", "from": "NOT_EXECUTED", "to": "EXECUTED", "confirmed": true, "by": "write"}
	vs := stop.deny with input as with_run({"events": array.concat(clean_run.events, [bad])})
	codes(vs) == {"DES-PHASE-JUMP"}
	some v in vs
	v.phase == "REVIEW"
	v.field == "/tdd_cycle/phase_execution_log"
	contains(v.msg, "moved phase REVIEW from NOT_EXECUTED to EXECUTED (PHASE_COMPLETED); from NOT_EXECUTED the allowed moves are: IN_PROGRESS")
}

test_recorded_moves_by_des_or_unknown_are_not_judged if {
	every e in [
		{"event": "PHASE_STARTED", "phase": "REVIEW", "from": "EXECUTED", "to": "NOT_EXECUTED", "by": "stale-resolution"},
		{"event": "PHASE_COMPLETED", "phase": "REVIEW", "from": "COMPLETED", "to": "EXECUTED", "confirmed": true, "by": "write"},
		{"event": "PHASE_COMPLETED", "phase": "REVIEW", "from": "EXECUTED", "to": "EXECUTED", "confirmed": true, "by": "write"},
		{"event": "TASK_INVOCATION_STARTED", "phase": "REVIEW", "from": "NOT_EXECUTED", "to": "EXECUTED", "by": "write"},
	] {
		count(stop.deny) == 0 with input as with_run({"events": array.concat(clean_run.events, [e])})
	}
}

# DES-PREMATURE-COMPLETION

test_premature_completion if {
	phases := patch(clean_step.phases, 13, {"status": "NOT_EXECUTED", "outcome": ""})
	events := array.concat(phase_events(array.slice(canonical, 0, 13)), [done_event])
	inp := stop_with({"phases": phases}, {"events": events})
	vs := stop.deny with input as inp
	codes(vs) == {"DES-PREMATURE-COMPLETION"}
	some v in vs
	v.phase == "COMMIT"
	v.phases == ["COMMIT"]
	stop.info == {"redo_phases": [], "reset_phase": "COMMIT", "reset_phases": []} with input as inp
}

test_premature_completion_unknown_status if {
	phases := patch(clean_step.phases, 13, {"status": "COMPLETED"})
	vs := stop.deny with input as with_step({"phases": phases})
	codes(vs) == {"DES-PREMATURE-COMPLETION"}
	stop.info.reset_phases == ["COMMIT"] with input as with_step({"phases": phases})
}

test_done_with_failed_phase_is_not_premature if {
	phases := patch(clean_step.phases, 13, {"status": "FAILED", "outcome": "FAIL"})
	count(stop.deny) == 0 with input as with_step({"phases": phases})
	stop.info == {"redo_phases": [], "reset_phase": "COMMIT", "reset_phases": ["COMMIT"]} with input as with_step({"phases": phases})
}

# DES-TASK-TRANSITION

test_task_moved_back_without_record if {
	vs := stop.deny with input as stop_with({"task_status": "TODO", "phases": all_open}, {"events": []})
	codes(vs) == {"DES-TASK-TRANSITION"}
	some v in vs
	v.field == "/state/status"
	contains(v.msg, "the task is TODO at the stop but was last recorded IN_PROGRESS, and the task cannot move from IN_PROGRESS to TODO; from IN_PROGRESS the allowed moves are: DONE, FAILED, PARTIAL")
	codes(stop.deny) == {"DES-TASK-TRANSITION"} with input as stop_with({"task_status": "", "phases": all_open}, {"events": []})
}

test_task_move_in_the_table_without_record_is_allowed if {
	count(stop.deny) == 0 with input as with_run({"events": phase_events(canonical)})
}

test_task_baseline_follows_des_moves if {
	# Gate 1 recorded the status before its own move.
	events := array.concat([task_event("TODO", "IN_PROGRESS", "gate1")], clean_run.events)
	count(stop.deny) == 0 with input as with_run({"task_status_at_start": "TODO", "events": events})
	vs := stop.deny with input as with_run({"task_status_at_start": "TODO", "events": phase_events(canonical)})
	some v in vs
	contains(v.msg, "cannot move from TODO to DONE")
}

# A task move on a line DES did not attest (chained into the trail by
# another writer) is not the status the trail last recorded: the task went
# from TODO to DONE around the write guard.
test_task_baseline_ignores_unattested_moves if {
	forged := object.union(task_event("TODO", "IN_PROGRESS", "gate1"), {"attested": false})
	vs := stop.deny with input as with_run({"task_status_at_start": "TODO", "events": array.concat([forged], phase_events(canonical))})
	codes(vs) == {"DES-TASK-TRANSITION"}
	some v in vs
	contains(v.msg, "cannot move from TODO to DONE")
	attested := object.union(forged, {"attested": true})
	count(stop.deny) == 0 with input as with_run({"task_status_at_start": "TODO", "events": array.concat([attested], phase_events(canonical))})
}

test_des_own_task_moves_are_exempt if {
	events := array.concat(clean_run.events, [task_event("DONE", "FAILED", "gate2")])
	count(stop.deny) == 0 with input as stop_with({"task_status": "FAILED"}, {"events": events})
}

test_recorded_task_write_outside_the_table if {
	events := array.concat(clean_run.events, [task_event("DONE", "IN_PROGRESS", "write"), done_event])
	vs := stop.deny with input as with_run({"events": events})
	codes(vs) == {"DES-TASK-TRANSITION"}
	some v in vs
	contains(v.msg, "records a write that moved the task from DONE to IN_PROGRESS; from DONE the allowed moves are: none (terminal)")
}

test_task_unknown_or_same_status_not_judged if {
	count(stop.deny) == 0 with input as stop_with({"task_status": "COMPLETED"}, {"events": phase_events(canonical)})
	count(stop.deny) == 0 with input as with_run({"events": array.concat(clean_run.events, [task_event("DONE", "DONE", "write"), task_event("DONE", "CLOSED", "write")])})
}

test_transcript_without_task_facts_has_no_baseline if {
	run := {"source": "transcript", "events": phase_events(canonical)}
	count(stop.deny) == 0 with input as {"step": object.union(clean_step, {"task_status": "IN_PROGRESS"}), "run": run}
}

# DES-TURN-LIMIT

turns(fields) := with_step({"phases": patch(clean_step.phases, 2, fields)})

test_turn_limit_of_the_phase if {
	count(stop.deny) == 0 with input as turns({"turn_count": 10, "max_turns": 10})
	vs := stop.deny with input as turns({"turn_count": 11, "max_turns": 10})
	codes(vs) == {"DES-TURN-LIMIT"}
	some v in vs
	v.phase == "RED_UNIT"
	v.field == "/tdd_cycle/phase_execution_log/2/turn_count"
	contains(v.msg, "phase RED_UNIT took 11 turns, over its budget of 10 (the phase's max_turns)")
	v.fixable_in_run == false
	v.recovery[0] == "Split the work of phase RED_UNIT into smaller steps, or raise the budget (the phase's max_turns or tdd_cycle.max_turns) with a reason before running it again."
}

test_turn_limit_of_one_turn_is_singular if {
	some v in stop.deny with input as turns({"turn_count": 1, "max_turns": 0})
	contains(v.msg, "phase RED_UNIT took 1 turn, over its budget of 0")
}

test_turn_limit_of_the_cycle if {
	count(stop.deny) == 0 with input as turns({"turn_count": 40})
	vs := stop.deny with input as turns({"turn_count": 41})
	some v in vs
	contains(v.msg, "over its budget of 40 (tdd_cycle.max_turns)")
}

test_turn_limit_default if {
	no_budget := object.remove(clean_step, ["budget"])
	inp := {"step": object.union(no_budget, {"phases": patch(clean_step.phases, 2, {"turn_count": 50})}), "run": clean_run}
	count(stop.deny) == 0 with input as inp
	inp51 := {"step": object.union(no_budget, {"phases": patch(clean_step.phases, 2, {"turn_count": 51})}), "run": clean_run}
	vs := stop.deny with input as inp51
	some v in vs
	contains(v.msg, "over its budget of 50 (the default turn budget (setting turn_budget_default))")
	codes(stop.deny) == {"DES-TURN-LIMIT"} with input as inp with data.des.config.turn_budget_default as 5
}

# DES-TIMEOUT

timed(budget, seconds) := {"step": object.union(object.remove(clean_step, ["budget"]), {"budget": budget, "phases": patch(clean_step.phases, 0, {"duration_seconds": seconds})}), "run": clean_run}

test_timeout_with_extensions if {
	# 13 phases of 60 s, plus phase 0: 40 minutes allowed = 2400 s.
	count(stop.deny) == 0 with input as timed({"duration_minutes": 30, "total_extensions_minutes": 10}, 1620)
	vs := stop.deny with input as timed({"duration_minutes": 30, "total_extensions_minutes": 10}, 1620.5)
	codes(vs) == {"DES-TIMEOUT"}
	some v in vs
	v.field == "/tdd_cycle/duration_minutes"
	contains(v.msg, "took 2400.5 seconds in total, over the budget of 2400 seconds (tdd_cycle.duration_minutes 30 + total_extensions_minutes 10, times 60)")
}

test_timeout_without_extensions if {
	count(stop.deny) == 0 with input as timed({"duration_minutes": 30}, 1020)
	codes(stop.deny) == {"DES-TIMEOUT"} with input as timed({"duration_minutes": 30}, 1021)
}

test_no_time_budget_no_timeout if {
	count(stop.deny) == 0 with input as timed({"total_extensions_minutes": 10}, 100000)
}

# configuration_setup: DES-VERIFY-EVIDENCE, DES-VERIFY-DOCS, DES-VERIFY-ROLLBACK

chars(n) := concat("", [x | some _ in numbers.range(1, n); x := "a"])

evidence := "Rollback tested on staging: restored the previous nginx config and reloaded; service healthy. Checked: curl -sf https://staging/health returned 200."

config_fields := {
	"workflow_type": "configuration_setup",
	"validation_output": evidence,
	"documentation": chars(200),
	"safety": {"is_destructive": true, "rollback_plan": "restore the previous config", "affects_production": false},
}

config(fields) := with_step(object.union(config_fields, fields))

test_configuration_setup_with_evidence_passes if {
	count(stop.deny) == 0 with input as config({})
}

test_verify_evidence_boundary if {
	count(stop.deny) == 0 with input as config({"validation_output": chars(100), "safety": {"is_destructive": false}})
	vs := stop.deny with input as config({"validation_output": concat("", [chars(99), "   \n"]), "safety": {"is_destructive": false}})
	codes(vs) == {"DES-VERIFY-EVIDENCE"}
	some v in vs
	v.field == "/validation_output"
	contains(v.msg, "the validation evidence (validation_output) is 99 characters")
}

test_verify_evidence_from_final_validate if {
	phases := patch(clean_step.phases, 12, {"outcome_details": chars(100)})
	count(stop.deny) == 0 with input as config({"validation_output": "", "phases": phases, "safety": {"is_destructive": false}})
	short := patch(clean_step.phases, 12, {"outcome_details": chars(99)})
	vs := stop.deny with input as config({"validation_output": " ", "phases": short, "safety": {"is_destructive": false}})
	codes(vs) == {"DES-VERIFY-EVIDENCE"}
	some v in vs
	v.field == "/tdd_cycle/phase_execution_log/12/outcome_details"
	contains(v.msg, "(the outcome_details of FINAL_VALIDATE) is 99 characters")
}

test_verify_evidence_without_final_validate if {
	inp := stop_with(object.union(config_fields, {"validation_output": "", "task_status": "IN_PROGRESS", "phases": [], "safety": {"is_destructive": false}}), {"events": []})
	vs := stop.deny with input as inp
	codes(vs) == {"DES-VERIFY-EVIDENCE"}
	some v in vs
	contains(v.msg, "(validation_output (there is no FINAL_VALIDATE phase)) is 0 characters")
}

test_verify_docs_boundary if {
	vs := stop.deny with input as config({"documentation": chars(199)})
	codes(vs) == {"DES-VERIFY-DOCS"}
	some v in vs
	v.field == "/documentation"
	contains(v.msg, "documentation is 199 characters")
}

test_verify_rollback if {
	vs := stop.deny with input as config({"validation_output": concat("", ["Applied the change. ", chars(100)])})
	codes(vs) == {"DES-VERIFY-ROLLBACK"}
	some v in vs
	v.field == "/validation_output"
}

test_rollback_evidence_patterns if {
	every text in [
		"Rollback tested on staging",
		"rolled back to v1.2 and re-applied",
		"We rehearsed the roll-back on a copy",
		"Applied. ROLLBACK VERIFIED",
		"Config applied; rollback ran clean",
	] {
		count(stop.deny) == 0 with input as config({"validation_output": concat("", [text, ". ", chars(100)])})
	}
}

test_refuted_rollback_evidence if {
	every text in [
		"Rollback was not tested",
		"Rollback executed on staging but its effect is unverified",
		"Rollback run pending approval",
		"the rollback plan has not yet been run",
		"We did not roll back",
	] {
		codes(stop.deny) == {"DES-VERIFY-ROLLBACK"} with input as config({"validation_output": concat("", [text, ". ", chars(100)])})
	}
}

test_refutation_is_per_sentence if {
	text := concat("", ["Rollback tested on staging. The production switch is not tested yet. ", chars(100)])
	count(stop.deny) == 0 with input as config({"validation_output": text})
}

test_rollback_evidence_in_final_validate if {
	phases := patch(clean_step.phases, 12, {"outcome_details": "Rollback verified on a copy of the database"})
	count(stop.deny) == 0 with input as config({"validation_output": chars(100), "phases": phases})
}

test_verification_only_when_work_is_claimed if {
	events := array.concat(phase_events(canonical), [task_event("IN_PROGRESS", "FAILED", "write")])
	count(stop.deny) == 0 with input as stop_with(object.union(config_fields, {"task_status": "FAILED", "validation_output": "", "documentation": ""}), {"events": events})
}

test_verification_only_for_configuration_setup if {
	count(stop.deny) == 0 with input as with_step({"validation_output": "", "documentation": "", "safety": {"is_destructive": true}})
}

# DES-SCOPE-VIOLATION and DES-SCOPE-UNCHECKED

scoped(fields) := object.union(clean, {"scope": object.union(clean_scope, fields)})

test_scope_violation if {
	vs := stop.warn with input as scoped({"outside": ["README.md", "go.mod"]})
	codes(vs) == {"DES-SCOPE-VIOLATION"}
	count(stop.deny) == 0 with input as scoped({"outside": ["README.md"]})
	some v in vs
	v.files == ["README.md", "go.mod"]
	v.count == 2
	v.field == "/allowed_file_patterns"
	contains(v.msg, "2 changed files are outside allowed_file_patterns (src/auth/**/*.go): README.md, go.mod")
}

test_scope_violation_one_file_is_singular if {
	some v in stop.warn with input as scoped({"outside": ["README.md"]})
	contains(v.msg, ": 1 changed file is outside allowed_file_patterns (src/auth/**/*.go): README.md")
}

test_scope_violation_names_ten_files if {
	outside := [sprintf("f%02d.txt", [i]) | some i in numbers.range(1, 12)]
	vs := stop.warn with input as scoped({"outside": outside})
	some v in vs
	v.files == array.slice(outside, 0, 10)
	v.count == 12
	endswith(v.msg, "f10.txt and 2 more")
}

test_scope_unchecked if {
	vs := stop.warn with input as scoped({"checked": false, "outside": ["x"], "error": "git: executable file not found in $PATH"})
	codes(vs) == {"DES-SCOPE-UNCHECKED"}
	some v in vs
	contains(v.msg, "(git: executable file not found in $PATH)")
	count(stop.warn) == 0 with input as scoped({"checked": false, "patterns": [], "error": "not a git repository"})
}

test_no_patterns_text if {
	vs := stop.warn with input as scoped({"patterns": [], "outside": ["a"]})
	some v in vs
	contains(v.msg, "allowed_file_patterns (none)")
}

# Field pointers

test_field_pointers_follow_the_log_location if {
	phases := patch(partial(5, "IN_PROGRESS"), 5, {"index": null})
	inp := unfinished(5, "IN_PROGRESS")
	vs := stop.deny with input as object.union(inp, {"step": {"phase_log": "/tdd_cycle/tdd_phase_tracking/phase_execution_log"}})
	[v.field | some v in vs] == ["/tdd_cycle/tdd_phase_tracking/phase_execution_log/5/status"]
	vs2 := stop.deny with input as object.union(inp, {"step": {"phases": phases}})
	[v.field | some v in vs2] == ["/tdd_cycle/phase_execution_log"]
}

# DES-TRANSCRIPT-TAMPERED

transcript(state, step_file) := object.union(clean, {"transcript": {"checked": true, "state": state, "path": "/home/u/.claude/projects/p/s/subagents/agent-a1.jsonl", "step_file": step_file, "error": ""}})

test_transcript_tampered_fails_the_stop if {
	every state in ["missing", "unreadable", "no_markers"] {
		vs := stop.deny with input as transcript(state, "")
		codes(vs) == {"DES-TRANSCRIPT-TAMPERED"}
	}
	vs := stop.deny with input as transcript("other_step", "docs/feature/x/steps/09-09.json")
	some v in vs
	v.code == "DES-TRANSCRIPT-TAMPERED"
	v.transcript_state == "other_step"
	contains(v.msg, "agent-a1.jsonl names another step file than the one Gate 1 started (its prompt names docs/feature/x/steps/09-09.json)")
	contains(v.msg, "judged that step from its record")
}

test_transcript_agreeing_or_unchecked_passes if {
	count(stop.deny) == 0 with input as transcript("agrees", "")
	count(stop.deny) == 0 with input as object.union(clean, {"transcript": {"checked": false, "state": "not_checked", "path": "", "step_file": "", "error": ""}})
	count(stop.deny) == 0 with input as clean
}

test_transcript_tampered_states_are_data if {
	count(stop.deny) == 0 with input as transcript("no_markers", "") with data.des.stop.transcript_tampered as {"missing": "is missing"}
}

# A tampered run's finished phases are reset with the rest: the reset alone
# must not settle the failure with the run's claims standing. Phases
# finished before the run are kept.
test_transcript_tampered_resets_the_phases_the_run_finished if {
	stop.info.reset_phases == canonical with input as transcript("missing", "")
	stop.info.reset_phases == [] with input as transcript("agrees", "")
	earlier := object.union(transcript("missing", ""), {"run": {"phases_at_start": {"PREPARE": "EXECUTED"}}})
	stop.info.reset_phases == array.slice(canonical, 1, 14) with input as earlier
}
