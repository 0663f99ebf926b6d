package des.commit_test

import data.des.commit

log := "/tdd_cycle/phase_execution_log"

canonical := data.des.steps.canonical_phases

done_phase(i, name) := {"name": name, "pos": i, "at": sprintf("%s/%d", [log, i]), "status": "EXECUTED", "outcome": "PASS", "blocked_by": ""}

# phase is a phase entry at position i.
phase(i, name, status) := object.union(done_phase(i, name), {"status": status, "outcome": ""})

all_done := [done_phase(i, name) | some i, name in canonical]

# with_phase replaces the phase at position i with the given fields.
with_phase(phases, i, fields) := array.concat(
	array.concat(array.slice(phases, 0, i), [object.union(phases[i], fields)]),
	array.slice(phases, i + 1, count(phases)),
)

step(phases) := {"step": {
	"path": "docs/feature/shop/steps/01-01.json",
	"document": {"task_id": "01-01"},
	"workflow_type": "tdd_cycle",
	"phase_log": log,
	"phases": phases,
}}

codes(vs) := [v.code | some v in vs]

# only returns the violations of one code.
only(vs, code) := [v | some v in vs; v.code == code]

test_complete_step_passes if {
	count(commit.deny) == 0 with input as step(all_done)
}

test_valid_skips_pass if {
	skipped := [with_phase(all_done, 7, {"status": "SKIPPED", "outcome": "", "blocked_by": sprintf("%sreason", [p])}) | some p in data.des.commit.skip_prefixes]
	every phases in skipped {
		count(commit.deny) == 0 with input as step(phases)
	}
}

test_fail_outcome_passes if {
	count(commit.deny) == 0 with input as step(with_phase(all_done, 4, {"outcome": "FAIL"}))
}

test_failed_last_phase_passes if {
	# FAILED is a final status: it blocks only as a gap before an executed phase.
	count(commit.deny) == 0 with input as step(with_phase(all_done, 13, {"status": "FAILED", "outcome": ""}))
}

test_no_phase_log if {
	inp := {"step": {"path": "s.json", "document": {}, "workflow_type": "tdd_cycle", "phase_log": "", "phases": []}}
	vs := commit.deny with input as inp
	codes(vs) == ["DES-COMMIT-INCOMPLETE"]
	some v in vs
	contains(v.msg, "s.json has no phase log")
	contains(v.msg, "tdd_phase_tracking")
	v.field == log
}

test_short_log_one_violation_naming_the_missing if {
	vs := commit.deny with input as step(array.slice(all_done, 0, 8))
	[v] := only(vs, "DES-COMMIT-INCOMPLETE")
	contains(v.msg, "holds 8 entries, fewer than the 14 canonical phases")
	contains(v.msg, "missing: REFACTOR_L2, REFACTOR_L3, REFACTOR_L4, POST_REFACTOR_REVIEW, FINAL_VALIDATE, COMMIT")
}

test_empty_log_is_incomplete if {
	vs := commit.deny with input as step([])
	codes(vs) == ["DES-COMMIT-INCOMPLETE"]
}

test_missing_canonical_phase_in_full_log if {
	phases := with_phase(all_done, 3, {"name": "GREEN"})
	vs := commit.deny with input as step(phases)
	codes(vs) == ["DES-COMMIT-INCOMPLETE"]
	some v in vs
	v.phase == "GREEN_UNIT"
	contains(v.msg, "canonical phase GREEN_UNIT is missing")
	contains(v.msg, "not canonical phases: GREEN")
}

test_duplicate_phase_hides_a_missing_one if {
	phases := with_phase(all_done, 13, {"name": "FINAL_VALIDATE"})
	[v.phase | some v in commit.deny with input as step(phases)] == ["COMMIT"]
}

test_fifteen_entries_pass if {
	extra := array.concat(all_done, [done_phase(14, "DOCS")])
	count(commit.deny) == 0 with input as step(extra)
}

test_open_phases_each_reported if {
	phases := with_phase(with_phase(all_done, 12, {"status": "IN_PROGRESS", "outcome": ""}), 13, {"status": "NOT_EXECUTED", "outcome": ""})
	vs := only(commit.deny, "DES-COMMIT-PHASE-OPEN") with input as step(phases)
	{v.phase: v.field | some v in vs} == {"FINAL_VALIDATE": "/tdd_cycle/phase_execution_log/12/status", "COMMIT": "/tdd_cycle/phase_execution_log/13/status"}
	some v in vs
	contains(v.msg, "phase COMMIT is NOT_EXECUTED")
	codes(commit.deny) == ["DES-COMMIT-PHASE-OPEN", "DES-COMMIT-PHASE-OPEN"] with input as step(phases)
}

test_executed_without_outcome if {
	phases := with_phase(with_phase(all_done, 1, {"outcome": ""}), 2, {"outcome": "SUCCESS"})
	vs := commit.deny with input as step(phases)
	codes(vs) == ["DES-COMMIT-OUTCOME", "DES-COMMIT-OUTCOME"]
	msgs := {v.msg | some v in vs}
	msgs == {
		"docs/feature/shop/steps/01-01.json: phase RED_ACCEPTANCE is EXECUTED without an outcome; an executed phase records outcome PASS or FAIL",
		"docs/feature/shop/steps/01-01.json: phase RED_UNIT is EXECUTED with outcome \"SUCCESS\"; an executed phase records outcome PASS or FAIL",
	}
	{v.field | some v in vs} == {"/tdd_cycle/phase_execution_log/1/outcome", "/tdd_cycle/phase_execution_log/2/outcome"}
}

test_skip_without_accepted_prefix if {
	phases := with_phase(with_phase(all_done, 8, {"status": "SKIPPED", "outcome": "", "blocked_by": "No L2 issues"}), 9, {"status": "SKIPPED", "outcome": "", "blocked_by": ""})
	vs := only(commit.deny, "DES-COMMIT-SKIP-REASON") with input as step(phases)
	{v.phase | some v in vs} == {"REFACTOR_L2", "REFACTOR_L3"}
	some v in vs
	v.phase == "REFACTOR_L2"
	contains(v.msg, "blocked_by \"No L2 issues\", which has no accepted prefix")
	contains(v.msg, "BLOCKED_BY_DEPENDENCY:, NOT_APPLICABLE:, APPROVED_SKIP:, CHECKPOINT_PENDING:")
	some w in vs
	contains(w.msg, "REFACTOR_L3 is SKIPPED without blocked_by")
}

test_prefix_must_start_the_reason if {
	phases := with_phase(all_done, 13, {"status": "SKIPPED", "blocked_by": "see NOT_APPLICABLE: x"})
	codes(commit.deny) == ["DES-COMMIT-SKIP-REASON"] with input as step(phases)
}

test_long_reason_is_cut_in_the_message if {
	long := concat("", ["x" | some _ in numbers.range(1, 200)])
	phases := with_phase(all_done, 13, {"status": "SKIPPED", "blocked_by": long})
	some v in commit.deny with input as step(phases)
	contains(v.msg, sprintf("%q...", [substring(long, 0, 77)]))
	not contains(v.msg, long)
}

test_deferred_blocks if {
	phases := with_phase(all_done, 13, {"status": "SKIPPED", "outcome": "", "blocked_by": "DEFERRED: next sprint"})
	vs := commit.deny with input as step(phases) with data.des.gates.pre_commit.exception as set()
	codes(vs) == ["DES-COMMIT-DEFERRED"] # not also SKIP-REASON
	some v in vs
	v.phase == "COMMIT"
	contains(v.msg, "blocked_by \"DEFERRED: next sprint\"")
	v.field == "/tdd_cycle/phase_execution_log/13/blocked_by"
}

test_deferred_before_an_executed_phase_is_also_a_gap if {
	phases := with_phase(all_done, 10, {"status": "SKIPPED", "outcome": "", "blocked_by": "DEFERRED: next sprint"})

	# Pinned: a team that waives DES-COMMIT-DEFERRED accepts the skip.
	codes(commit.deny) == ["DES-COMMIT-DEFERRED", "DES-COMMIT-GAP"] with input as step(phases) with data.des.gates.pre_commit.exception as set()
}

test_deferred_on_any_status if {
	phases := with_phase(all_done, 13, {"status": "NOT_EXECUTED", "outcome": "", "blocked_by": "DEFERRED: later"})
	codes(commit.deny) == ["DES-COMMIT-DEFERRED", "DES-COMMIT-PHASE-OPEN"] with input as step(phases)
}

test_unknown_statuses if {
	phases := with_phase(with_phase(with_phase(all_done, 11, {"status": "COMPLETED"}), 12, {"status": "PASS"}), 13, {"status": ""})
	vs := commit.deny with input as step(phases)
	codes(vs) == ["DES-COMMIT-STATUS", "DES-COMMIT-STATUS", "DES-COMMIT-STATUS"]
	{v.msg | some v in vs} == {
		"docs/feature/shop/steps/01-01.json: phase POST_REFACTOR_REVIEW has status \"COMPLETED\", which is not a phase status (NOT_EXECUTED, IN_PROGRESS, EXECUTED, SKIPPED, FAILED)",
		"docs/feature/shop/steps/01-01.json: phase FINAL_VALIDATE has status \"PASS\", which is not a phase status (NOT_EXECUTED, IN_PROGRESS, EXECUTED, SKIPPED, FAILED)",
		"docs/feature/shop/steps/01-01.json: phase COMMIT has no status, which is not a phase status (NOT_EXECUTED, IN_PROGRESS, EXECUTED, SKIPPED, FAILED)",
	}
}

test_status_of_an_unnamed_entry if {
	phases := array.concat(all_done, [phase(14, "", "DONE")])
	some v in commit.deny with input as step(phases)
	contains(v.msg, "phase #14 (no phase_name) has status \"DONE\"")
}

test_gap_before_an_executed_phase if {
	phases := with_phase(all_done, 2, {"status": "NOT_EXECUTED", "outcome": ""})
	vs := commit.deny with input as step(phases)
	codes(vs) == ["DES-COMMIT-GAP", "DES-COMMIT-PHASE-OPEN"]
	some v in only(vs, "DES-COMMIT-GAP")
	v.phase == "RED_UNIT"
	contains(v.msg, "phase RED_UNIT is status \"NOT_EXECUTED\" but the later phase GREEN_UNIT is EXECUTED")
}

test_gap_names_the_nearest_executed_phase if {
	# RED_UNIT to REVIEW not done; REFACTOR_L1 onwards executed.
	phases := [p |
		some i, name in canonical
		p := done_phase(i, name)
		i >= 7
	]
	undone := [phase(14 + i, name, "FAILED") | some i, name in array.slice(canonical, 0, 7)]
	vs := only(commit.deny, "DES-COMMIT-GAP") with input as step(array.concat(phases, undone))
	count(vs) == 7
	every v in vs {
		contains(v.msg, "the later phase REFACTOR_L1 is EXECUTED")
	}
}

test_no_gap_after_the_last_executed_phase if {
	phases := [p |
		some i, name in canonical
		p := object.union(done_phase(i, name), {"status": status(i)})
	]
	codes(commit.deny) == ["DES-COMMIT-PHASE-OPEN", "DES-COMMIT-PHASE-OPEN"] with input as step(phases)
}

status(i) := "EXECUTED" if i < 12

status(i) := "NOT_EXECUTED" if i >= 12

test_gap_in_canonical_not_log_order if {
	# The log lists COMMIT first, executed; PREPARE after it, not done.
	reordered := array.concat([done_phase(0, "COMMIT")], [done_phase(i + 1, name) | some i, name in array.slice(canonical, 0, 13)])
	phases := with_phase(reordered, 1, {"status": "SKIPPED", "blocked_by": "no reason"})
	vs := commit.deny with input as step(phases)
	codes(vs) == ["DES-COMMIT-GAP", "DES-COMMIT-SKIP-REASON"]
	some v in only(vs, "DES-COMMIT-GAP")
	contains(v.msg, "phase PREPARE is SKIPPED without an accepted reason (blocked_by \"no reason\") but the later phase RED_ACCEPTANCE is EXECUTED")
	v.field == "/tdd_cycle/phase_execution_log/1/status"
}

test_valid_skip_is_no_gap if {
	phases := with_phase(all_done, 0, {"status": "SKIPPED", "blocked_by": "APPROVED_SKIP: by the lead"})
	count(commit.deny) == 0 with input as step(phases)
}

test_unknown_status_before_executed_is_a_gap if {
	phases := with_phase(all_done, 0, {"status": "COMPLETED"})
	codes(commit.deny) == ["DES-COMMIT-GAP", "DES-COMMIT-STATUS"] with input as step(phases)
}

test_legacy_location_in_pointers if {
	legacy := "/tdd_cycle/tdd_phase_tracking/phase_execution_log"
	phases := with_phase(all_done, 5, {"outcome": "", "at": concat("/", [legacy, "5"])})
	inp := {"step": object.union(step([]).step, {"phase_log": legacy, "phases": phases})}
	some v in commit.deny with input as inp
	v.field == "/tdd_cycle/tdd_phase_tracking/phase_execution_log/5/outcome"
}

test_configuration_setup_has_no_phase_log_rules if {
	inp := {"step": {"path": "s.json", "document": {}, "workflow_type": "configuration_setup", "phase_log": "", "phases": []}}
	count(commit.deny) == 0 with input as inp
}

test_bare_skip_prefix_is_no_reason if {
	inp := step(with_phase(all_done, 7, {"status": "SKIPPED", "outcome": "", "blocked_by": "NOT_APPLICABLE: "}))
	"DES-COMMIT-SKIP-REASON" in codes(commit.deny) with input as inp
}

test_configuration_setup_with_a_phase_log_is_judged if {
	inp := json.patch(step(with_phase(planned, 0, {"status": "IN_PROGRESS"})), [{"op": "replace", "path": "/step/workflow_type", "value": "configuration_setup"}])
	"DES-COMMIT-PHASE-OPEN" in codes(commit.deny) with input as inp
}

test_unknown_workflow_is_judged if {
	inp := {"step": {"path": "s.json", "document": {}, "workflow_type": "other", "phase_log": "", "phases": []}}
	codes(commit.deny) == ["DES-COMMIT-INCOMPLETE"] with input as inp
}

test_without_phase_facts_no_phase_rules if {
	# A hand-written input with only the document: nothing to judge.
	count(commit.deny) == 0 with input as {"step": {"path": "s.json", "document": {}}}
}

test_unparsed_step_gets_no_phase_rules if {
	inp := {"step": {"path": "s.json", "problem": "invalid_json", "error": "unexpected end of JSON input"}}
	count(commit.deny) == 0 with input as inp
	count(commit.deny) == 0 with input as {}
}

# Gate 2 verdicts.

stop(outcome, codes, ts) := {"event": "SUBAGENT_STOP_VALIDATION", "outcome": outcome, "codes": codes, "timestamp": ts}

stale(ts) := {"event": "STALE_RESOLUTION", "outcome": "", "codes": [], "timestamp": ts}

with_gate2(entries) := object.union(step(all_done), {"gate2": entries})

test_gate2_failure_blocks if {
	vs := commit.deny with input as with_gate2([stop("PASS", [], "2026-11-22T10:00:00Z"), stop("FAIL", ["DES-PHASE-ABANDONED", "DES-TURN-LIMIT"], "2026-11-22T11:00:00Z")])
	codes(vs) == ["DES-COMMIT-GATE2"]
	some v in vs
	v.msg == "docs/feature/shop/steps/01-01.json: Gate 2 failed this step at 2026-11-22T11:00:00Z (DES-PHASE-ABANDONED, DES-TURN-LIMIT), and no later passing subagent stop or stale resolution resolves it"
	v.failed_at == "2026-11-22T11:00:00Z"
}

test_gate2_failure_without_codes if {
	some v in commit.deny with input as with_gate2([stop("FAIL", [], "t1")])
	contains(v.msg, "(no codes recorded)")
}

test_gate2_failure_resolved_by_a_later_pass if {
	count(commit.deny) == 0 with input as with_gate2([stop("FAIL", ["X"], "t1"), stop("PASS", [], "t2")])
}

test_gate2_failure_resolved_by_stale_resolution if {
	count(commit.deny) == 0 with input as with_gate2([stop("FAIL", ["X"], "t1"), stale("t2")])
}

test_gate2_no_opinion_is_ignored if {
	codes(commit.deny) == ["DES-COMMIT-GATE2"] with input as with_gate2([stop("FAIL", ["X"], "t1"), stop("NO_OPINION", [], "t2")])
	count(commit.deny) == 0 with input as with_gate2([stop("NO_OPINION", [], "t1")])
}

unattested(e) := object.union(e, {"attested": false})

test_gate2_unattested_resolution_resolves_nothing if {
	codes(commit.deny) == ["DES-COMMIT-GATE2"] with input as with_gate2([stop("FAIL", ["X"], "t1"), unattested(stale("t2"))])
	codes(commit.deny) == ["DES-COMMIT-GATE2"] with input as with_gate2([stop("FAIL", ["X"], "t1"), unattested(stop("PASS", [], "t2"))])
	count(commit.deny) == 0 with input as with_gate2([stop("FAIL", ["X"], "t1"), object.union(stale("t2"), {"attested": true})])
}

test_gate2_unattested_failure_still_blocks if {
	codes(commit.deny) == ["DES-COMMIT-GATE2"] with input as with_gate2([stop("PASS", [], "t1"), unattested(stop("FAIL", ["X"], "t2"))])
}

test_gate2_failure_after_resolution_blocks if {
	codes(commit.deny) == ["DES-COMMIT-GATE2"] with input as with_gate2([stop("FAIL", ["X"], "t1"), stale("t2"), stop("FAIL", ["Y"], "t3")])
}

test_gate2_applies_to_an_unparsed_step if {
	inp := {"step": {"path": "s.json", "problem": "invalid_json", "error": "x"}, "gate2": [stop("FAIL", ["X"], "t1")]}
	codes(commit.deny) == ["DES-COMMIT-GATE2"] with input as inp
}

test_every_violation_of_a_file_is_listed if {
	phases := with_phase(with_phase(with_phase(array.slice(all_done, 0, 13), 0, {"status": "COMPLETED"}), 5, {"outcome": ""}), 12, {"status": "IN_PROGRESS"})
	inp := object.union(step(phases), {"gate2": [stop("FAIL", [], "t")]})
	{c | some c in codes(commit.deny)} == {"DES-COMMIT-INCOMPLETE", "DES-COMMIT-STATUS", "DES-COMMIT-GAP", "DES-COMMIT-OUTCOME", "DES-COMMIT-PHASE-OPEN", "DES-COMMIT-GATE2"} with input as inp
}

test_absent_workflow_type_is_tdd_cycle if {
	inp := {"step": {"path": "s.json", "document": {}, "phase_log": "", "phases": []}}
	codes(commit.deny) == ["DES-COMMIT-INCOMPLETE"] with input as inp
}

# Plans: a step not started yet may be committed.

planned := [phase(i, name, "NOT_EXECUTED") | some i, name in canonical]

with_state(inp, state) := json.patch(inp, [{"op": "add", "path": "/step/document/state", "value": state}])

test_plan_without_a_state_passes if {
	count(commit.deny) == 0 with input as step(planned)
}

test_plan_with_task_todo_passes if {
	count(commit.deny) == 0 with input as with_state(step(planned), {"status": "TODO"})
}

test_plan_without_a_task_status_passes if {
	every state in [{}, {"status": null}, null, {"failure_reason": ""}] {
		count(commit.deny) == 0 with input as with_state(step(planned), state)
	}
}

test_plan_with_an_executed_phase_is_no_plan if {
	phases := with_phase(planned, 0, {"status": "EXECUTED", "outcome": "PASS"})
	vs := commit.deny with input as with_state(step(phases), {"status": "TODO"})
	count(vs) == 13
	{v.code | some v in vs} == {"DES-COMMIT-PHASE-OPEN"}
	not "PREPARE" in {v.phase | some v in vs}
}

test_plan_with_a_phase_in_progress_is_no_plan if {
	phases := with_phase(planned, 0, {"status": "IN_PROGRESS"})
	vs := commit.deny with input as step(phases)
	count(vs) == 14
	{v.code | some v in vs} == {"DES-COMMIT-PHASE-OPEN"}
}

test_task_in_progress_is_no_plan if {
	every status in ["IN_PROGRESS", "PARTIAL", "DONE", "NOT_STARTED", 7] {
		vs := commit.deny with input as with_state(step(planned), {"status": status})
		count(vs) == 14
		{v.code | some v in vs} == {"DES-COMMIT-PHASE-OPEN"}
	}
	vs := commit.deny with input as with_state(step(planned), {"status": "FAILED"})
	count(only(vs, "DES-COMMIT-PHASE-OPEN")) == 14
	{v.code | some v in vs} == {"DES-COMMIT-PHASE-OPEN", "DES-COMMIT-TASK-STATUS"}
}

test_state_that_is_not_an_object_is_no_plan if {
	count(commit.deny) == 14 with input as with_state(step(planned), "TODO")
}

test_plan_lacking_phases_is_incomplete if {
	vs := commit.deny with input as step(array.slice(planned, 0, 12))
	codes(vs) == ["DES-COMMIT-INCOMPLETE"]
}

test_plan_with_an_unknown_phase_status_is_no_plan if {
	phases := with_phase(planned, 13, {"status": "PENDING"})
	vs := commit.deny with input as step(phases)
	{v.code | some v in vs} == {"DES-COMMIT-PHASE-OPEN", "DES-COMMIT-STATUS"}
}

test_plan_still_answers_for_gate2 if {
	inp := object.union(step(planned), {"gate2": [{"event": "SUBAGENT_STOP_VALIDATION", "outcome": "FAIL", "codes": [], "timestamp": "2026-01-01T00:00:00Z"}]})
	codes(commit.deny) == ["DES-COMMIT-GATE2"] with input as inp
}

test_team_plan_statuses_extend_the_plan if {
	inp := with_state(step(planned), {"status": "NOT_STARTED"})
	count(commit.deny) == 0 with input as inp with data.des.commit.plan_task_statuses as ["TODO", "NOT_STARTED"]
}

# Deferred work a team accepts.

deferred_gap := with_phase(all_done, 10, {"status": "SKIPPED", "outcome": "", "blocked_by": "DEFERRED: next sprint"})

test_waived_deferred_is_no_gap if {
	vs := commit.deny with input as step(deferred_gap) with data.des.gates.pre_commit.exception as {"DES-COMMIT-DEFERRED"}
	codes(vs) == ["DES-COMMIT-DEFERRED"] # waived by the gate, and nothing else
}

test_waived_deferred_needs_a_reason if {
	phases := with_phase(all_done, 10, {"status": "SKIPPED", "outcome": "", "blocked_by": "DEFERRED: "})
	vs := commit.deny with input as step(phases) with data.des.gates.pre_commit.exception as {"DES-COMMIT-DEFERRED"}
	codes(vs) == ["DES-COMMIT-DEFERRED", "DES-COMMIT-GAP"]
}

test_waived_deferred_phase_not_skipped_is_still_a_gap if {
	phases := with_phase(all_done, 10, {"status": "NOT_EXECUTED", "outcome": "", "blocked_by": "DEFERRED: later"})
	vs := commit.deny with input as step(phases) with data.des.gates.pre_commit.exception as {"DES-COMMIT-DEFERRED"}
	codes(vs) == ["DES-COMMIT-DEFERRED", "DES-COMMIT-GAP", "DES-COMMIT-PHASE-OPEN"]
}

test_other_waivers_leave_deferred_a_gap if {
	vs := commit.deny with input as step(deferred_gap) with data.des.gates.pre_commit.exception as {"DES-COMMIT-GATE2"}
	codes(vs) == ["DES-COMMIT-DEFERRED", "DES-COMMIT-GAP"]
}

test_deferred_listed_as_a_skip_prefix_is_accepted if {
	prefixes := array.concat(data.des.commit.skip_prefixes, ["DEFERRED:"])
	count(commit.deny) == 0 with input as step(deferred_gap) with data.des.commit.skip_prefixes as prefixes
}

# with_task gives the step document a task status.
with_task(inp, status) := object.union(inp, {"step": {"document": {"task_id": "01-01", "state": {"status": status}}}})

# recovery_of lists the recovery lines of one code's violations.
recovery_of(vs, code) := {r | some v in only(vs, code); some r in v.recovery}

# Abandoning goes through FAILED, which the write guard allows only from
# IN_PROGRESS: the line that says to write it is given for that status alone.
test_open_phase_recovery_follows_the_task_status if {
	inp := step(with_phase(all_done, 13, {"status": "IN_PROGRESS", "outcome": ""}))
	running := recovery_of(commit.deny, "DES-COMMIT-PHASE-OPEN") with input as with_task(inp, "IN_PROGRESS")
	some r in running
	contains(r, "write state.status FAILED, reset it with `des-hook stale --resolve")

	# A FAILED task is DES-COMMIT-TASK-STATUS too: its reset comes first,
	# once, and no abandoning line repeats it.
	failed := recovery_of(commit.deny, "DES-COMMIT-PHASE-OPEN") with input as with_task(inp, "FAILED")
	some f in failed
	startswith(f, "Reset the step with `des-hook stale --resolve docs/feature/shop/steps/01-01.json` and run it again")
	every l in failed {
		not contains(l, "write state.status FAILED")
		not startswith(l, "If the work was abandoned")
	}

	done := recovery_of(commit.deny, "DES-COMMIT-PHASE-OPEN") with input as with_task(inp, "DONE")
	count(done) == 1
	every l in done {
		not contains(l, "state.status FAILED")
		startswith(l, "Finish every open phase")
	}
}

test_failed_phase_gap_recovery_follows_the_task_status if {
	inp := step(with_phase(all_done, 3, {"status": "FAILED", "outcome": ""}))
	running := recovery_of(commit.deny, "DES-COMMIT-GAP") with input as with_task(inp, "IN_PROGRESS")
	some r in running
	contains(r, "write state.status FAILED, run `des-hook stale --resolve")

	done := recovery_of(commit.deny, "DES-COMMIT-GAP") with input as with_task(inp, "DONE")
	some d in done
	contains(d, "goes in a new step file")
	every l in done {
		not contains(l, "state.status FAILED")
	}

	partial := recovery_of(commit.deny, "DES-COMMIT-GAP") with input as with_task(inp, "PARTIAL")
	some p in partial
	startswith(p, "A FAILED phase runs again only after a reset: start the step again")
}

# A FAILED task is not committed, whatever its phases say: every phase
# EXECUTED with PASS does not make an abandoned step finished.
test_failed_task_with_every_phase_executed_is_refused if {
	vs := commit.deny with input as with_task(step(all_done), "FAILED")
	[v] := only(vs, "DES-COMMIT-TASK-STATUS")
	codes(vs) == ["DES-COMMIT-TASK-STATUS"]
	v.field == "/state/status"
	contains(v.msg, "docs/feature/shop/steps/01-01.json: the task's state.status is \"FAILED\"")
	some r in v.recovery
	contains(r, "`des-hook stale --resolve docs/feature/shop/steps/01-01.json` and run it again")
}

test_committable_task_statuses_pass if {
	every status in ["DONE", "IN_PROGRESS", "TODO", ""] {
		count(commit.deny) == 0 with input as with_task(step(all_done), status)
	}
	count(commit.deny) == 0 with input as step(all_done)
}

# The statuses are data: a team adds its own, or empties the list.
test_uncommittable_task_statuses_are_data if {
	vs := commit.deny with input as with_task(step(all_done), "ABANDONED")
		with data.des.commit.uncommittable_task_statuses as ["FAILED", "ABANDONED"]
	codes(vs) == ["DES-COMMIT-TASK-STATUS"]
	count(commit.deny) == 0 with input as with_task(step(all_done), "FAILED")
		with data.des.commit.uncommittable_task_statuses as []
}

# Configuration steps have no phase log, and are still judged on their task.
test_failed_configuration_step_is_refused if {
	inp := {"step": {"path": "s.json", "document": {"state": {"status": "FAILED"}}, "workflow_type": "configuration_setup", "phase_log": "", "phases": []}}
	codes(commit.deny) == ["DES-COMMIT-TASK-STATUS"] with input as inp
}

# The README's unfinished step: a deferred skip, a skip without a prefix,
# an open COMMIT phase and a status COMPLETED.
readme_step := with_task(
	step(with_phase(
		with_phase(
			with_phase(
				with_phase(all_done, 2, {"status": "SKIPPED", "outcome": "", "blocked_by": "Tests already GREEN - the acceptance test drives the change"}),
				9, {"status": "SKIPPED", "outcome": "", "blocked_by": "DEFERRED: split Cart responsibilities after the release"},
			),
			12, {"status": "COMPLETED"},
		),
		13, {"status": "IN_PROGRESS", "outcome": ""},
	)),
	"IN_PROGRESS",
)

# Every violation of a file carries the file's recovery steps: only those
# that apply, in the order to do them (the phase log's shape, the order of
# the phases, the open ones, the fields of finished phases, abandoning
# last).
test_recovery_applies_and_is_ordered if {
	vs := commit.deny with input as readme_step
	codes(vs) == ["DES-COMMIT-DEFERRED", "DES-COMMIT-GAP", "DES-COMMIT-GAP", "DES-COMMIT-PHASE-OPEN", "DES-COMMIT-SKIP-REASON", "DES-COMMIT-STATUS"]
	rec := [v.recovery | some v in vs][0]
	every v in vs {
		v.recovery == rec
	}
	starts := [substring(r, 0, 24) | some r in rec]
	starts == [
		"Give every phase a statu",
		"Run the phases in canoni",
		"Finish every open phase ",
		"Write blocked_by of ever",
		"Do the deferred work now",
		"A SKIPPED phase is final",
		"If the work was abandone",
	]
	every r in rec {
		not startswith(r, "List every canonical phase") # no phase is missing
	}
}

# A missing phase: the line that lists them, and only the lines for what
# was found.
test_recovery_for_a_missing_phase if {
	vs := commit.deny with input as with_task(step(array.slice(all_done, 0, 13)), "DONE")
	codes(vs) == ["DES-COMMIT-INCOMPLETE"]
	[r] := [v.recovery | some v in vs][0]
	startswith(r, "List every canonical phase in tdd_cycle.phase_execution_log")
}

# An unresolved Gate 2 failure resets the step first; a FAILED phase's own
# reset line then does not repeat it.
test_recovery_gate2_first if {
	inp := object.union(with_task(step(with_phase(all_done, 3, {"status": "FAILED", "outcome": ""})), "IN_PROGRESS"), {"gate2": [stop("FAIL", ["DES-PHASE-ABANDONED"], "t1")]})
	vs := commit.deny with input as inp
	codes(vs) == ["DES-COMMIT-GAP", "DES-COMMIT-GATE2"]
	rec := [v.recovery | some v in vs][0]
	startswith(rec[0], "Read the SUBAGENT_STOP_VALIDATION entry of t1")
	startswith(rec[1], "Run `des-hook stale --resolve")
	startswith(rec[2], "Run the phases in canonical order")
	count(rec) == 3
}

# The facts that choose the recovery steps hold exactly when their code is
# denied, on every input of this file's cases.
found_set(inp) := {code |
	some code in ["DES-COMMIT-GATE2", "DES-COMMIT-TASK-STATUS", "DES-COMMIT-INCOMPLETE", "DES-COMMIT-STATUS", "DES-COMMIT-PHASE-OPEN", "DES-COMMIT-OUTCOME", "DES-COMMIT-SKIP-REASON", "DES-COMMIT-DEFERRED", "DES-COMMIT-GAP"]
	found(code) with input as inp
}

found("DES-COMMIT-GATE2") if commit._found_gate2

found("DES-COMMIT-TASK-STATUS") if commit._found_task_status

found("DES-COMMIT-INCOMPLETE") if commit._found_incomplete

found("DES-COMMIT-STATUS") if commit._found_status

found("DES-COMMIT-PHASE-OPEN") if commit._found_open

found("DES-COMMIT-OUTCOME") if commit._found_outcome

found("DES-COMMIT-SKIP-REASON") if commit._found_skip

found("DES-COMMIT-DEFERRED") if commit._found_deferred

found("DES-COMMIT-GAP") if commit._found_gap

test_found_facts_match_the_codes if {
	inputs := [
		readme_step,
		step(all_done),
		with_task(step(all_done), "FAILED"),
		step(array.slice(all_done, 0, 13)),
		object.union(step(all_done), {"step": {"phase_log": ""}}),
		step(with_phase(all_done, 4, {"outcome": "MAYBE"})),
		step(with_phase(all_done, 3, {"status": "FAILED", "outcome": ""})),
		step([phase(i, name, "NOT_EXECUTED") | some i, name in canonical]),
		with_task(step([phase(i, name, "NOT_EXECUTED") | some i, name in canonical]), "IN_PROGRESS"),
		with_gate2([stop("FAIL", [], "t1")]),
	]
	every inp in inputs {
		denied := {v.code | some v in commit.deny} with input as inp
		found_set(inp) == denied
	}
}
