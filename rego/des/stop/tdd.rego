package des.stop

# TDD evidence: a test phase's outcome against the test runs des saw in the
# subagent's run (internal/testrun: recorded after each Bash call that ran a
# test runner, attested in des's evidence directory, never what the step file
# says). Go reports them as input.tests {checked, runs: [{time, result,
# phase, command, failed}]}, oldest first; phase is the step's phase in
# progress when the run ended. data.des.stop.tdd_evidence says what each
# phase needs ("fails": a failing run during the phase; "passes": a passing
# run during the phase after its last failing one), a table a team changes.
# The setting tdd_evidence says how a finding counts: "warn" (the default, so
# that a team whose tests run another way is told, not stopped), "deny" or
# "off".

_tdd_mode := data.des.settings.config.tdd_evidence if is_string(data.des.settings.config.tdd_evidence)

else := "warn"

_tdd_runs := input.tests.runs if input.tests.checked == true

_runs_in(name) := [r | some r in _tdd_runs; r.phase == name]

# _tdd_passed is a phase finished with a passing outcome: the claim the
# evidence is asked to back.
_tdd_passed contains p.name if {
	input.tests.checked == true
	some p in _phases
	p.status == "EXECUTED"
	p.outcome == "PASS"
	data.des.stop.tdd_evidence[p.name]
}

_saw_failing(name) if {
	some r in _runs_in(name)
	r.result == "failed"
}

_saw_green(name) if {
	runs := _runs_in(name)
	some i, r in runs
	r.result == "passed"
	not _failed_after(runs, i)
}

_failed_after(runs, i) if {
	some j, r in runs
	j > i
	r.result == "failed"
}

_tdd_seen(name) := sprintf("des saw %d test run(s) in %s (last: %s, %s)", [count(runs), name, last.result, last.command]) if {
	runs := _runs_in(name)
	count(runs) > 0
	last := runs[count(runs) - 1]
} else := sprintf("des saw no test run in %s", [name])

_tdd_findings contains {
	"code": "DES-TDD-NO-RED",
	"msg": sprintf("%s: phase %s claims PASS for a failing test, but %s; a RED phase needs a test run that fails while it is in progress", [_path, name, _tdd_seen(name)]),
	"field": "",
	"recovery": [sprintf("Reopen %s: run the new test with the project's test command (it must fail), then mark the phase EXECUTED.", [name])],
} if {
	some name in _tdd_passed
	data.des.stop.tdd_evidence[name] == "fails"
	not _saw_failing(name)
}

_tdd_findings contains {
	"code": "DES-TDD-NO-GREEN",
	"msg": sprintf("%s: phase %s claims PASS, but %s; it needs a passing test run after its last failing one", [_path, name, _tdd_seen(name)]),
	"field": "",
	"recovery": [sprintf("Reopen %s: run the tests with the project's test command until they pass, then mark the phase EXECUTED.", [name])],
} if {
	some name in _tdd_passed
	data.des.stop.tdd_evidence[name] == "passes"
	not _saw_green(name)
}

# METADATA
# title: A RED phase passed without a failing test run
# description: A RED phase is EXECUTED with outcome PASS, yet des saw no failing test run while it was in progress (setting tdd_evidence deny).
# custom:
#   code: DES-TDD-NO-RED
#   severity: deny
deny contains v if {
	_tdd_mode == "deny"
	some v in _tdd_findings
	v.code == "DES-TDD-NO-RED"
}

# METADATA
# title: A GREEN phase passed without a passing test run
# description: A GREEN phase or FINAL_VALIDATE is EXECUTED with outcome PASS, yet des saw no passing test run in it after its last failing one (setting tdd_evidence deny).
# custom:
#   code: DES-TDD-NO-GREEN
#   severity: deny
deny contains v if {
	_tdd_mode == "deny"
	some v in _tdd_findings
	v.code == "DES-TDD-NO-GREEN"
}

# METADATA
# title: TDD evidence missing (warning)
# description: |
#   DES-TDD-NO-RED and DES-TDD-NO-GREEN as warnings (setting tdd_evidence
#   "warn", the default). (No code annotation: the catalogue lists each code
#   once, with its deny severity.)
warn contains v if {
	_tdd_mode == "warn"
	some v in _tdd_findings
}
