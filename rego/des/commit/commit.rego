# METADATA
# title: Step files at commit
# description: |
#   Gate 3 judges a step file about to be committed: its phase log must hold
#   every canonical phase, each one finished honestly, in order; and the audit
#   trail must hold no unresolved Gate 2 failure for the step. Fields the gate
#   does not read (state.status, budgets...) are the business of Gates 1 and 2,
#   so the step schema is not applied here.
#
#   Input (built by Go):
#     input.step.path           the step file, project-relative
#     input.step.document       the parsed step file; absent when it did not
#                               parse (problem and error then say why, and
#                               des.stepfile reports DES-STEPFILE-SCHEMA, and
#                               phase_log and phases are absent too)
#     input.step.workflow_type  workflow_type, "tdd_cycle" when absent
#     input.step.phase_log      JSON pointer of the phase log that was read:
#                               "/tdd_cycle/phase_execution_log", the legacy
#                               "/tdd_cycle/tdd_phase_tracking/phase_execution_log",
#                               or "" when neither is an array
#     input.step.phases         [{name, pos, status, outcome, blocked_by}], one
#                               per object entry of the log in log order; pos is
#                               the entry's array index; absent or non-string
#                               fields are ""
#     input.gate2               [{event, outcome, codes, timestamp}]: the step's
#                               SUBAGENT_STOP_VALIDATION and STALE_RESOLUTION
#                               entries of the audit trail, oldest first;
#                               outcome "" when absent
#
#   The phase-log rules apply to every workflow except those listed in
#   data.des.commit.workflows_without_phase_log (configuration_setup, which
#   has no TDD cycle). A FAILED phase is a known, final status: it does not
#   block by itself, but it is not done, so an executed phase after it is a
#   gap. Every violation is reported, one per phase where it applies.
package des.commit

import data.des.steps

default _path := ""

_path := input.step.path

default _workflow := "tdd_cycle"

_workflow := input.step.workflow_type

# Go always hands the phases of a parsed step file (an empty list when it
# has no phase log); without them there is nothing for these rules to judge.
_judges_phases if {
	is_array(input.step.phases)
	not _workflow in data.des.commit.workflows_without_phase_log
}

default _log := ""

_log := input.step.phase_log

_phases := input.step.phases

_canonical := steps.canonical_phases

_canonical_set := {name | some name in _canonical}

_order := {name: i | some i, name in _canonical}

_names := {p.name | some p in _phases}

_missing := [name | some name in _canonical; not name in _names]

_not_canonical := sort({p.name | some p in _phases; not p.name in _canonical_set})

_executed_at := {_order[p.name] | some p in _phases; p.status == data.des.commit.executed_status}

_label(p) := p.name if p.name != ""

_label(p) := sprintf("#%d (no phase_name)", [p.pos]) if p.name == ""

_field(p, key) := sprintf("%s/%d/%s", [_log, p.pos, key])

# Long free-text values are cut in messages; the file holds them whole.
_quote(s) := sprintf("%q", [s]) if count(s) <= 80

_quote(s) := sprintf("%q...", [substring(s, 0, 77)]) if count(s) > 80

_list(xs) := concat(", ", xs) if count(xs) > 0

_list(xs) := "none" if count(xs) == 0

_valid_skip(b) if {
	some prefix in data.des.commit.skip_prefixes
	startswith(b, prefix)
}

_deferred(b) if startswith(b, data.des.commit.deferred_prefix)

# A phase is done when it is EXECUTED, or SKIPPED with an accepted reason.
_done(p) if p.status == data.des.commit.executed_status

_done(p) if {
	p.status == data.des.commit.skipped_status
	_valid_skip(p.blocked_by)
}

_phase_recovery := sprintf("Record every canonical phase in tdd_cycle.phase_execution_log, in order (%s): EXECUTED with outcome PASS or FAIL, or SKIPPED with blocked_by starting %s.", [concat(", ", _canonical), concat(" ", data.des.commit.skip_prefixes)])

# METADATA
# title: Phase log incomplete
# description: The step file has no phase log (tdd_cycle.phase_execution_log, or the legacy tdd_cycle.tdd_phase_tracking.phase_execution_log), fewer than 14 entries, or lacks a canonical phase (one per phase when the log has 14 entries or more).
# custom:
#   code: DES-COMMIT-INCOMPLETE
#   severity: deny
deny contains {
	"code": "DES-COMMIT-INCOMPLETE",
	"msg": sprintf("%s has no phase log: neither tdd_cycle.phase_execution_log nor the legacy tdd_cycle.tdd_phase_tracking.phase_execution_log is an array; a step is committed with all %d canonical phases recorded", [_path, count(_canonical)]),
	"field": "/tdd_cycle/phase_execution_log",
	"recovery": [_phase_recovery, "Regenerate the step file with the current DES tooling if its phase log was lost."],
} if {
	_judges_phases
	_log == ""
}

deny contains {
	"code": "DES-COMMIT-INCOMPLETE",
	"msg": sprintf("%s: the phase log holds %d entries, fewer than the %d canonical phases; missing: %s", [_path, count(_phases), count(_canonical), _list(_missing)]),
	"field": _log,
	"recovery": [_phase_recovery],
} if {
	_judges_phases
	_log != ""
	count(_phases) < count(_canonical)
}

deny contains {
	"code": "DES-COMMIT-INCOMPLETE",
	"msg": sprintf("%s: canonical phase %s is missing from the phase log (%d entries; names that are not canonical phases: %s)", [_path, name, count(_phases), _list(_not_canonical)]),
	"field": _log,
	"phase": name,
	"recovery": [_phase_recovery],
} if {
	_judges_phases
	_log != ""
	count(_phases) >= count(_canonical)
	some name in _missing
}

# METADATA
# title: Unknown phase status
# description: A phase's status is not one of NOT_EXECUTED, IN_PROGRESS, EXECUTED, SKIPPED, FAILED (e.g. COMPLETED, PASS, DEFERRED, or none).
# custom:
#   code: DES-COMMIT-STATUS
#   severity: deny
deny contains {
	"code": "DES-COMMIT-STATUS",
	"msg": sprintf("%s: phase %s has %s, which is not a phase status (%s)", [_path, _label(p), _status_text(p.status), concat(", ", steps.phase_statuses)]),
	"field": _field(p, "status"),
	"phase": p.name,
	"recovery": [
		sprintf("Set phase %s's status to EXECUTED (with outcome PASS or FAIL) or SKIPPED (with blocked_by); COMPLETED, PASS and DEFERRED are not phase statuses.", [_label(p)]),
		_phase_recovery,
	],
} if {
	_judges_phases
	some p in _phases
	not p.status in steps.phase_statuses
}

_status_text("") := "no status"

_status_text(s) := sprintf("status %s", [_quote(s)]) if s != ""

# METADATA
# title: Phase still open
# description: A phase is NOT_EXECUTED or IN_PROGRESS when the step is committed.
# custom:
#   code: DES-COMMIT-PHASE-OPEN
#   severity: deny
deny contains {
	"code": "DES-COMMIT-PHASE-OPEN",
	"msg": sprintf("%s: phase %s is %s; every phase is finished (EXECUTED with an outcome, or SKIPPED with a reason) before the step is committed", [_path, _label(p), p.status]),
	"field": _field(p, "status"),
	"phase": p.name,
	"recovery": [
		sprintf("Finish phase %s and record it as EXECUTED with outcome PASS or FAIL, or as SKIPPED with blocked_by starting %s.", [_label(p), concat(" ", data.des.commit.skip_prefixes)]),
		sprintf("If the phase was abandoned, reset it with `hook stale --resolve %s` and run the step again.", [_path]),
	],
} if {
	_judges_phases
	some p in _phases
	p.status in data.des.commit.open_statuses
}

# METADATA
# title: Executed phase without outcome
# description: A phase is EXECUTED with an outcome that is missing or not PASS/FAIL.
# custom:
#   code: DES-COMMIT-OUTCOME
#   severity: deny
deny contains {
	"code": "DES-COMMIT-OUTCOME",
	"msg": sprintf("%s: phase %s is EXECUTED %s; an executed phase records outcome PASS or FAIL", [_path, _label(p), _outcome_text(p.outcome)]),
	"field": _field(p, "outcome"),
	"phase": p.name,
	"recovery": [sprintf("Set phase %s's outcome to PASS or FAIL, with outcome_details giving the evidence.", [_label(p)])],
} if {
	_judges_phases
	some p in _phases
	p.status == data.des.commit.executed_status
	not p.outcome in steps.phase_outcomes
}

_outcome_text("") := "without an outcome"

_outcome_text(o) := sprintf("with outcome %s", [_quote(o)]) if o != ""

# METADATA
# title: Skipped phase without an accepted reason
# description: A phase is SKIPPED and its blocked_by does not start with an accepted prefix (BLOCKED_BY_DEPENDENCY:, NOT_APPLICABLE:, APPROVED_SKIP:, CHECKPOINT_PENDING:).
# custom:
#   code: DES-COMMIT-SKIP-REASON
#   severity: deny
deny contains {
	"code": "DES-COMMIT-SKIP-REASON",
	"msg": sprintf("%s: phase %s is SKIPPED %s; blocked_by starts with one of %s, then the reason", [_path, _label(p), _blocked_text(p.blocked_by), concat(", ", data.des.commit.skip_prefixes)]),
	"field": _field(p, "blocked_by"),
	"phase": p.name,
	"recovery": [sprintf("Write phase %s's blocked_by as PREFIX: reason, with PREFIX one of %s (e.g. \"NOT_APPLICABLE: no acceptance test for a pure refactoring\").", [_label(p), concat(" ", data.des.commit.skip_prefixes)])],
} if {
	_judges_phases
	some p in _phases
	p.status == data.des.commit.skipped_status
	not _valid_skip(p.blocked_by)
	not _deferred(p.blocked_by) # reported as DES-COMMIT-DEFERRED
}

_blocked_text("") := "without blocked_by"

_blocked_text(b) := sprintf("with blocked_by %s, which has no accepted prefix", [_quote(b)]) if b != ""

# METADATA
# title: Deferred phase
# description: A phase's blocked_by starts with DEFERRED:; deferred work blocks the commit.
# custom:
#   code: DES-COMMIT-DEFERRED
#   severity: deny
deny contains {
	"code": "DES-COMMIT-DEFERRED",
	"msg": sprintf("%s: phase %s (%s) is deferred, blocked_by %s; deferred work blocks the commit", [_path, _label(p), _status_text(p.status), _quote(p.blocked_by)]),
	"field": _field(p, "blocked_by"),
	"phase": p.name,
	"recovery": [sprintf("Do the deferred work of phase %s and record it as EXECUTED, or, when it really does not apply, as SKIPPED with blocked_by starting %s.", [_label(p), concat(" ", data.des.commit.skip_prefixes)])],
} if {
	_judges_phases
	some p in _phases
	_deferred(p.blocked_by)
}

# METADATA
# title: Gap in the phase order
# description: In canonical order, a phase that is neither EXECUTED nor validly SKIPPED comes before an EXECUTED one.
# custom:
#   code: DES-COMMIT-GAP
#   severity: deny
deny contains {
	"code": "DES-COMMIT-GAP",
	"msg": sprintf("%s: phase %s is %s but the later phase %s is EXECUTED; in canonical order no phase is left undone (neither EXECUTED nor validly SKIPPED) before an executed one", [_path, p.name, _gap_status(p), _canonical[min(later)]]),
	"field": _field(p, "status"),
	"phase": p.name,
	"recovery": [
		sprintf("Run phase %s (or skip it with an accepted blocked_by prefix) before the phases after it, and record it.", [p.name]),
		_phase_recovery,
	],
} if {
	_judges_phases
	some p in _phases
	i := _order[p.name]
	not _done(p)
	later := {j | some j in _executed_at; j > i}
	count(later) > 0
}

_gap_status(p) := sprintf("SKIPPED without an accepted reason (blocked_by %s)", [_quote(p.blocked_by)]) if p.status == data.des.commit.skipped_status

_gap_status(p) := _status_text(p.status) if p.status != data.des.commit.skipped_status

# Gate 2 verdicts: each audit entry has an effect by event and outcome
# ("*" for any outcome); entries without one (NO_OPINION) are ignored.
_effect(e) := data.des.commit.gate2_effects[e.event][e.outcome]

_effect(e) := data.des.commit.gate2_effects[e.event]["*"] if not data.des.commit.gate2_effects[e.event][e.outcome]

_verdicts := [v | some e in input.gate2; v := {"effect": _effect(e), "entry": e}]

_last_verdict := _verdicts[count(_verdicts) - 1]

# METADATA
# title: Unresolved Gate 2 failure
# description: The step's last Gate 2 verdict in the audit trail is a failure that no later passing SUBAGENT_STOP_VALIDATION or STALE_RESOLUTION resolves.
# custom:
#   code: DES-COMMIT-GATE2
#   severity: deny
deny contains {
	"code": "DES-COMMIT-GATE2",
	"msg": sprintf("%s: Gate 2 failed this step at %s (%s), and no later passing subagent stop or stale resolution resolves it", [_path, e.timestamp, _codes_text(e.codes)]),
	"field": "",
	"failed_at": e.timestamp,
	"recovery": [
		sprintf("Read the SUBAGENT_STOP_VALIDATION entry of %s in the audit trail, redo the step until a subagent stop passes Gate 2, then commit.", [e.timestamp]),
		sprintf("If the work is to start over, reset it with `hook stale --resolve %s`.", [_path]),
	],
} if {
	_last_verdict.effect == "fail"
	e := _last_verdict.entry
}

_codes_text(codes) := concat(", ", codes) if count(codes) > 0

_codes_text(codes) := "no codes recorded" if count(codes) == 0
