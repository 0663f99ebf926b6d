package des.stop_test

import data.des.stop

run(phase, result) := {"time": "2026-11-22T10:01:00Z", "result": result, "phase": phase, "command": "go test ./..."}

# The runs an honest TDD cycle leaves: the acceptance and unit tests fail
# in their RED phases, pass in GREEN, and everything passes at the end.
honest_runs := [
	run("RED_ACCEPTANCE", "failed"),
	run("RED_UNIT", "failed"),
	run("GREEN_UNIT", "failed"),
	run("GREEN_UNIT", "passed"),
	run("GREEN_ACCEPTANCE", "passed"),
	run("FINAL_VALIDATE", "passed"),
]

with_tests(runs) := object.union(clean, {"tests": {"checked": true, "runs": runs}})

tdd_codes(vs) := {v.code | some v in vs; startswith(v.code, "DES-TDD-")}

test_honest_cycle_has_its_evidence if {
	count(tdd_codes(stop.warn)) == 0 with input as with_tests(honest_runs)
}

test_no_test_run_at_all_warns_by_default if {
	ws := stop.warn with input as with_tests([])
	tdd_codes(ws) == {"DES-TDD-NO-RED", "DES-TDD-NO-GREEN"}
	some w in ws
	w.code == "DES-TDD-NO-RED"
	contains(w.msg, "phase RED_ACCEPTANCE claims PASS for a failing test, but des saw no test run in RED_ACCEPTANCE")
	count(tdd_codes(stop.deny)) == 0 with input as with_tests([])
}

test_red_that_passed_is_no_red if {
	runs := array.concat([run("RED_ACCEPTANCE", "passed")], array.slice(honest_runs, 1, 6))
	ws := stop.warn with input as with_tests(runs)
	{w.msg | some w in ws; w.code == "DES-TDD-NO-RED"} == {"docs/feature/shop/steps/01-01.json: phase RED_ACCEPTANCE claims PASS for a failing test, but des saw 1 test run(s) in RED_ACCEPTANCE (last: passed, go test ./...); a RED phase needs a test run that fails while it is in progress"}
}

test_green_needs_a_pass_after_the_last_failure if {
	runs := array.concat(honest_runs, [run("GREEN_UNIT", "failed")])
	ws := stop.warn with input as with_tests(runs)
	{w.code | some w in ws; contains(w.msg, "GREEN_UNIT")} == {"DES-TDD-NO-GREEN"}
}

test_deny_mode_denies if {
	ds := stop.deny with input as with_tests([]) with data.des.config.tdd_evidence as "deny"
	tdd_codes(ds) == {"DES-TDD-NO-RED", "DES-TDD-NO-GREEN"}
	count(tdd_codes(stop.warn)) == 0 with input as with_tests([]) with data.des.config.tdd_evidence as "deny"
}

test_off_says_nothing if {
	count(tdd_codes(stop.warn)) == 0 with input as with_tests([]) with data.des.config.tdd_evidence as "off"
	count(tdd_codes(stop.deny)) == 0 with input as with_tests([]) with data.des.config.tdd_evidence as "off"
}

test_unchecked_evidence_says_nothing if {
	count(tdd_codes(stop.warn)) == 0 with input as object.union(clean, {"tests": {"checked": false, "runs": []}})
	count(tdd_codes(stop.warn)) == 0 with input as clean
}

test_a_skipped_phase_needs_no_evidence if {
	skipped := patch(clean_step.phases, 2, {"status": "SKIPPED", "outcome": "", "outcome_details": "no acceptance change"})
	doc := object.union(with_tests(honest_runs), {"step": object.union(clean_step, {"phases": skipped})})
	count(tdd_codes(stop.warn)) == 0 with input as doc
}

test_the_table_is_data if {
	count(tdd_codes(stop.warn)) == 0 with input as with_tests([]) with data.des.stop.tdd_evidence as {}
}
