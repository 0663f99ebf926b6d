# METADATA
# title: Step files at commit
# description: |
#   Gate 3 judges a step file about to be committed: its phase log must hold
#   every canonical phase, each one finished honestly, in order; and the audit
#   trail must hold no unresolved Gate 2 failure for the step. A plan (task
#   state.status TODO or absent, every phase NOT_EXECUTED) may be committed
#   unfinished. Other fields (budgets...) are the business of Gates 1 and 2,
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
#     input.step.phases         [{name, pos, at, status, outcome, blocked_by}],
#                               one per object entry of the log in log order;
#                               pos is the entry's array index and at its JSON
#                               pointer; absent or non-string fields are ""
#     input.gate2               [{event, outcome, codes, timestamp, attested}]:
#                               the step's SUBAGENT_STOP_VALIDATION and
#                               STALE_RESOLUTION entries of the audit trail,
#                               oldest first; outcome "" when absent; attested
#                               false for a line DES did not record as its own
#
#   The phase-log rules apply to every workflow except those listed in
#   data.des.commit.workflows_without_phase_log (configuration_setup, which
#   has no TDD cycle). A FAILED phase is a known, final status: it does not
#   block by itself, but it is not done, so an executed phase after it is a
#   gap. Every violation is reported, one per phase where it applies; the
#   recovery steps are the file's, the same for each of its violations: only
#   those that apply to the violations found, in the order to do them, so a
#   file with many open phases gets a short list.
#
#   Gate 3 judges hundreds of files per commit, and in OPA every iteration,
#   data lookup, membership test or function call costs about a microsecond
#   (docs/performance.md). So the rules group the phases by status once and
#   test each status rather than each phase, bind data tables to locals
#   before they loop, compare the documented fixed statuses as literals, and
#   build messages with concat.
package des.commit

import data.des.steps

default _path := ""

_path := input.step.path

default _workflow := "tdd_cycle"

_workflow := input.step.workflow_type

# Go always hands the phases of a parsed step file (an empty list when it
# has no phase log); without them there is nothing for these rules to judge.
# A workflow that needs no phase log (configuration setup) is judged on its
# log when it has one: changing workflow_type must not escape the gate.
_judges_phases if {
	is_array(input.step.phases)
	not _workflow in data.des.commit.workflows_without_phase_log
}

_judges_phases if {
	is_array(input.step.phases)
	_log != ""
}

default _log := ""

_log := input.step.phase_log

_phases := input.step.phases

_canonical := steps.canonical_phases

_order := {name: i | some i, name in _canonical}

_names := {p.name | some p in _phases}

_canonical_set := {name | some name in _canonical}

# The usual log lists the canonical phases in order: one comparison then
# says that none is missing.
_in_canonical_order if [p.name | some p in _phases] == _canonical

_missing := [name | some name in _canonical; missing[name]] if missing := _canonical_set - _names

_not_canonical := sort(_names - _canonical_set)

# The phases grouped by status: a file has few distinct statuses.
_by_status := {status: group |
	some status in {p.status | some p in _phases}
	group := [p | some p in _phases; p.status == status]
}

# The outcomes of executed phases that are not valid outcomes.
_bad_outcomes := {p.outcome | some p in _by_status.EXECUTED} - {o | some o in steps.phase_outcomes}

# The canonical position of the last EXECUTED phase; undefined when none is.
_last_executed := max(at) if {
	order := _order
	at := {i | some p in _by_status.EXECUTED; i := order[p.name]}
	count(at) > 0
}

_valid_skip(b) if {
	some prefix in data.des.commit.skip_prefixes
	startswith(b, prefix)
	trim_space(substring(b, count(prefix), -1)) != "" # the prefix, then the reason
}

_valid_skipped(p) if {
	p.status == "SKIPPED"
	_valid_skip(p.blocked_by)
}

# A team that accepts deferred work waives DES-COMMIT-DEFERRED in its gate
# package (`exception contains "DES-COMMIT-DEFERRED"`); a phase SKIPPED as
# "DEFERRED: reason" is then validly skipped, so no gap either. Only the
# exception rules are read, not the gate's deny, so there is no recursion
# (a team exception that reads deny would be recursive on its own).
_deferred_accepted if "DES-COMMIT-DEFERRED" in data.des.gates.pre_commit.exception

# The data route: a team that lists "DEFERRED:" in skip_prefixes accepts
# deferred work as a skip like any other.
_deferred_accepted if data.des.commit.deferred_prefix in data.des.commit.skip_prefixes

_valid_skipped(p) if {
	p.status == "SKIPPED"
	_deferred_accepted
	deferred := data.des.commit.deferred_prefix
	startswith(p.blocked_by, deferred)
	trim_space(substring(p.blocked_by, count(deferred), -1)) != ""
}

# A plan: a step not started yet (task TODO or without a status, every
# phase NOT_EXECUTED) may be committed as planned work. The task statuses
# that mark a plan are data (plan_task_statuses) so that a team whose older
# step files say NOT_STARTED can add it.
default _task_status := ""

_task_status := s if {
	s := input.step.document.state.status
	s != null
}

_plan if {
	_state_readable
	_task_status in ({s | some s in data.des.commit.plan_task_statuses} | {""})
	object.keys(_by_status) == {"NOT_EXECUTED"}
}

# A state that is there must be an object for its status to be read; an
# absent or null one means no status.
_state_readable if not "state" in object.keys(input.step.document)

_state_readable if input.step.document.state == null

_state_readable if is_object(input.step.document.state)

# Message parts.

_label(p) := p.name if p.name != ""

_label(p) := concat("", ["#", format_int(p.pos, 10), " (no phase_name)"]) if p.name == ""

# Long free-text values are cut in messages; the file holds them whole.
_quote(s) := sprintf("%q", [s]) if count(s) <= 80

_quote(s) := sprintf("%q...", [substring(s, 0, 77)]) if count(s) > 80

_list(xs) := concat(", ", xs) if count(xs) > 0

_list(xs) := "none" if count(xs) == 0

_status_text("") := "no status"

_status_text(s) := concat(" ", ["status", _quote(s)]) if s != ""

_prefixes := concat(", ", data.des.commit.skip_prefixes)

# Recovery steps. Every violation of a file carries the same list: the
# steps that apply to the violations found in it, in the order to do them
# (_recovery, below); the lists here are its parts.

_phase_recovery := concat("", [
	"List every canonical phase in tdd_cycle.phase_execution_log, in order (", concat(", ", _canonical),
	"), a missing one as {\"phase_name\": NAME, \"phase_index\": N, \"status\": \"NOT_EXECUTED\"}; then take each through the write guard with Write or Edit: IN_PROGRESS, then EXECUTED with outcome PASS or FAIL, or SKIPPED with blocked_by starting with one of ",
	_prefixes, ".",
])

# Abandoning the work goes through FAILED, which the write guard allows only
# from IN_PROGRESS; a FAILED task is reset as it is, and from any other task
# status (DONE is terminal) there is no write to FAILED to suggest.
default _resolve_recovery := []

_resolve_recovery := [concat("", ["If the work was abandoned, write state.status FAILED, reset it with `des-hook stale --resolve ", _path, "` and run the step again."])] if {
	_task_status == "IN_PROGRESS"
}

_resolve_recovery := [concat("", ["If the work was abandoned, reset it with `des-hook stale --resolve ", _path, "` (the task is already FAILED) and run the step again."])] if {
	_task_status == "FAILED"
}

_status_recovery := concat("", [
	"Give every phase a status through the write guard: EXECUTED (with outcome PASS or FAIL) or SKIPPED (with blocked_by starting with one of ",
	_prefixes, ") once it is done; COMPLETED, PASS and DEFERRED are not phase statuses.",
])

_open_recovery := concat("", ["Finish every open phase through the write guard (a NOT_EXECUTED one goes IN_PROGRESS first): EXECUTED with outcome PASS or FAIL, or SKIPPED with blocked_by starting with one of ", _prefixes, "."])

_outcome_recovery := "Set the outcome of every EXECUTED phase to PASS or FAIL, with outcome_details giving the evidence; work that was skipped is SKIPPED, not EXECUTED."

_skip_recovery := concat("", [
	"Write blocked_by of every SKIPPED phase as PREFIX: reason, with PREFIX one of ", _prefixes,
	" (e.g. \"NOT_APPLICABLE: no acceptance test for a pure refactoring\").",
])

_deferred_recovery := [
	"Do the deferred work now if its phase is not finished: with Write or Edit, IN_PROGRESS, then EXECUTED with an outcome.",
	concat("", [
		"A SKIPPED phase is final: if the skip stands, rewrite its blocked_by with one of ", _prefixes,
		" and the reason (APPROVED_SKIP: when the user approved it); work still to do goes in a new step file.",
	]),
]

_gap_first := "Run the phases in canonical order: take every phase before one that is EXECUTED through the write guard (IN_PROGRESS, then EXECUTED with an outcome or SKIPPED with blocked_by)."

# A FAILED phase is final in the table: only a reset lets it run again.
_failed_phase_recovery := concat("", ["A FAILED phase runs again only after a reset: write state.status FAILED, run `des-hook stale --resolve ", _path, "`, then start the step again."]) if {
	_task_status == "IN_PROGRESS"
}

_failed_phase_recovery := concat("", ["A FAILED phase runs again only after a reset: run `des-hook stale --resolve ", _path, "` (the task is already FAILED), then start the step again."]) if {
	_task_status == "FAILED"
}

_failed_phase_recovery := "A FAILED phase is final, and so is the task's DONE: nothing resets them, so the work still to do goes in a new step file." if {
	_task_status == "DONE"
}

_failed_phase_recovery := concat("", ["A FAILED phase runs again only after a reset: start the step again (Gate 1 moves the task to IN_PROGRESS), then write state.status FAILED, run `des-hook stale --resolve ", _path, "` and start it once more."]) if {
	not _task_status in {"IN_PROGRESS", "FAILED", "DONE"}
}

# Which violations the file has, from the same facts as the rules below
# (a test checks that each holds exactly when its code is denied): the
# recovery steps are chosen from them, never from deny, which would be
# recursive.
_found_gate2 if {
	[effect, _] := _last_verdict
	effect == "fail"
}

_found_task_status if _task_status in {s | some s in data.des.commit.uncommittable_task_statuses}

_found_incomplete if {
	_judges_phases
	_log == ""
}

_found_incomplete if {
	_judges_phases
	_log != ""
	count(_phases) < count(_canonical)
}

_found_incomplete if {
	_judges_phases
	_log != ""
	not _in_canonical_order
	count(_missing) > 0
}

_found_status if {
	_judges_phases
	statuses := steps.phase_statuses
	some status, _ in _by_status
	not status in statuses
}

_found_open if {
	_judges_phases
	not _plan
	some status in ["NOT_EXECUTED", "IN_PROGRESS"]
	_by_status[status]
}

_found_outcome if {
	_judges_phases
	count(_bad_outcomes) > 0
}

_found_skip if {
	_judges_phases
	deferred := data.des.commit.deferred_prefix
	some p in _by_status.SKIPPED
	not _valid_skip(p.blocked_by)
	not startswith(p.blocked_by, deferred)
}

_found_deferred if {
	_judges_phases
	deferred := data.des.commit.deferred_prefix
	not deferred in data.des.commit.skip_prefixes
	some p in _phases
	startswith(p.blocked_by, deferred)
}

_found_gap if {
	_judges_phases
	some status, group in _by_status
	status != "EXECUTED"
	some p in group
	not _valid_skipped(p)
	_order[p.name] < _last_executed
}

# The parts of _recovery, each [] unless its violation was found.
default _r_gate2 := []

_r_gate2 := [
	concat("", ["Read the SUBAGENT_STOP_VALIDATION entry of ", e.timestamp, " in the audit trail (the JSON lines under .des/audit/) to see what Gate 2 found."]),
	concat("", ["Run `des-hook stale --resolve ", _path, "`, which resets the work Gate 2 rejected and resolves the failure, start the subagent on the step again, and commit once the step is finished."]),
] if {
	[effect, e] := _last_verdict
	effect == "fail"
}

default _r_task_status := []

_r_task_status := [concat("", ["Reset the step with `des-hook stale --resolve ", _path, "` and run it again; commit it once it is finished."])] if {
	_found_task_status
	not _found_gate2 # the Gate 2 steps reset it already
}

default _r_incomplete := []

_r_incomplete := ["If the log was lost, restore the step file from git (`git checkout -- FILE` in a terminal) and commit again; otherwise add tdd_cycle.phase_execution_log as below.", _phase_recovery] if {
	_judges_phases
	_log == ""
}

_r_incomplete := [_phase_recovery] if {
	_found_incomplete
	_log != ""
}

default _r_status := []

_r_status := [_status_recovery] if _found_status

default _r_gap := []

_r_gap := [_gap_first] if {
	_found_gap
	not _by_status.FAILED
}

# The reset of a FAILED phase, unless a reset named above does it.
_r_gap := [_gap_first, _failed_phase_recovery] if {
	_found_gap
	_by_status.FAILED
	not _found_gate2
	not _found_task_status
}

_r_gap := [_gap_first] if {
	_found_gap
	_by_status.FAILED
	_found_gate2
}

_r_gap := [_gap_first] if {
	_found_gap
	_by_status.FAILED
	not _found_gate2
	_found_task_status
}

default _r_open := []

_r_open := [_open_recovery] if _found_open

default _r_outcome := []

_r_outcome := [_outcome_recovery] if _found_outcome

default _r_skip := []

_r_skip := [_skip_recovery] if _found_skip

default _r_deferred := []

_r_deferred := _deferred_recovery if _found_deferred

# Abandoning the work, the alternative to finishing the open phases, last;
# not when a reset named above applies already.
default _r_abandon := []

_r_abandon := _resolve_recovery if {
	_found_open
	not _found_gate2
	not _found_task_status
}

default _r_leave_out := []

_r_leave_out := ["If the step is abandoned for good, leave it out of the commit (`git restore --staged FILE`) and put the work still to do in a new step file."] if _found_task_status

# The recovery steps of the file, in the order to do them: first what
# resets the step (an unresolved Gate 2 failure, a task not committable),
# then the phase log's shape (missing phases, statuses), then the phases'
# order and the open ones, then the fields of finished phases, and last
# the alternatives (abandoning the work).
_recovery := [line |
	some part in [
		_r_gate2, _r_task_status, _r_incomplete, _r_status, _r_gap, _r_open,
		_r_outcome, _r_skip, _r_deferred, _r_abandon, _r_leave_out,
	]
	some line in part
]

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
	"recovery": _recovery,
} if {
	_judges_phases
	_log == ""
}

deny contains {
	"code": "DES-COMMIT-INCOMPLETE",
	"msg": sprintf("%s: the phase log holds %d entries, fewer than the %d canonical phases; missing: %s", [_path, count(_phases), count(_canonical), _list(_missing)]),
	"field": _log,
	"recovery": _recovery,
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
	"recovery": _recovery,
} if {
	_judges_phases
	_log != ""
	count(_phases) >= count(_canonical)
	not _in_canonical_order
	some name in _missing
}

# METADATA
# title: Task not committable
# description: The step's task (state.status) has a status the team marks as not committable (data.des.commit.uncommittable_task_statuses, FAILED by default), whatever its phases say.
# custom:
#   code: DES-COMMIT-TASK-STATUS
#   severity: deny
deny contains {
	"code": "DES-COMMIT-TASK-STATUS",
	"msg": concat("", [_path, ": the task's state.status is ", _quote(status), ", which is not committed (not committable: ", concat(", ", sort(uncommittable)), "), whatever its phases say"]),
	"field": "/state/status",
	"recovery": _recovery,
} if {
	uncommittable := {s | some s in data.des.commit.uncommittable_task_statuses}
	status := _task_status
	status in uncommittable
}

# METADATA
# title: Unknown phase status
# description: A phase's status is not one of NOT_EXECUTED, IN_PROGRESS, EXECUTED, SKIPPED, FAILED (e.g. COMPLETED, PASS, DEFERRED, or none).
# custom:
#   code: DES-COMMIT-STATUS
#   severity: deny
deny contains {
	"code": "DES-COMMIT-STATUS",
	"msg": concat("", [path, ": phase ", _label(p), " has ", _status_text(status), ", which is not a phase status (", concat(", ", statuses), ")"]),
	"field": concat("", [p.at, "/status"]),
	"phase": p.name,
	"recovery": recovery,
} if {
	_judges_phases
	statuses := steps.phase_statuses
	some status, group in _by_status
	not status in statuses
	path := _path # bound once, not per violation
	recovery := _recovery
	some p in group
}

# METADATA
# title: Phase still open
# description: A phase is NOT_EXECUTED or IN_PROGRESS when the step is committed, except in a plan (task TODO or without a status, every phase NOT_EXECUTED), which may be committed.
# custom:
#   code: DES-COMMIT-PHASE-OPEN
#   severity: deny
deny contains {
	"code": "DES-COMMIT-PHASE-OPEN",
	"msg": concat("", [path, ": phase ", _label(p), " is ", status, "; every phase is finished (EXECUTED with an outcome, or SKIPPED with a reason) before the step is committed"]),
	"field": concat("", [p.at, "/status"]),
	"phase": p.name,
	"recovery": recovery,
} if {
	_judges_phases
	not _plan
	some status in ["NOT_EXECUTED", "IN_PROGRESS"]
	group := _by_status[status]
	path := _path
	recovery := _recovery
	some p in group
}

# METADATA
# title: Executed phase without outcome
# description: A phase is EXECUTED with an outcome that is missing or not PASS/FAIL.
# custom:
#   code: DES-COMMIT-OUTCOME
#   severity: deny
deny contains {
	"code": "DES-COMMIT-OUTCOME",
	"msg": concat("", [path, ": phase ", _label(p), " is EXECUTED ", _outcome_text(p.outcome), "; an executed phase records outcome PASS or FAIL"]),
	"field": concat("", [p.at, "/outcome"]),
	"phase": p.name,
	"recovery": recovery,
} if {
	_judges_phases
	bad := _bad_outcomes
	count(bad) > 0
	path := _path
	recovery := _recovery
	some p in _by_status.EXECUTED
	bad[p.outcome]
}

_outcome_text("") := "without an outcome"

_outcome_text(o) := concat(" ", ["with outcome", _quote(o)]) if o != ""

# METADATA
# title: Skipped phase without an accepted reason
# description: A phase is SKIPPED and its blocked_by does not start with an accepted prefix (BLOCKED_BY_DEPENDENCY:, NOT_APPLICABLE:, APPROVED_SKIP:, CHECKPOINT_PENDING:).
# custom:
#   code: DES-COMMIT-SKIP-REASON
#   severity: deny
deny contains {
	"code": "DES-COMMIT-SKIP-REASON",
	"msg": concat("", [path, ": phase ", _label(p), " is SKIPPED ", _blocked_text(p.blocked_by), "; blocked_by starts with one of ", _prefixes, ", then the reason"]),
	"field": concat("", [p.at, "/blocked_by"]),
	"phase": p.name,
	"recovery": recovery,
} if {
	_judges_phases
	skipped := _by_status.SKIPPED
	deferred := data.des.commit.deferred_prefix
	path := _path
	recovery := _recovery
	some p in skipped
	not _valid_skip(p.blocked_by)
	not startswith(p.blocked_by, deferred) # reported as DES-COMMIT-DEFERRED
}

_blocked_text("") := "without blocked_by"

_blocked_text(b) := concat("", ["with blocked_by ", _quote(b), ", which has no accepted prefix"]) if b != ""

# METADATA
# title: Deferred phase
# description: A phase's blocked_by starts with DEFERRED:; deferred work blocks the commit. A team that waives this code (or adds the deferred prefix to skip_prefixes) accepts a SKIPPED phase whose blocked_by is DEFERRED:, then a reason, as a valid skip, so it is no gap either.
# custom:
#   code: DES-COMMIT-DEFERRED
#   severity: deny
deny contains {
	"code": "DES-COMMIT-DEFERRED",
	"msg": concat("", [path, ": phase ", _label(p), " (", _status_text(p.status), ") is deferred, blocked_by ", _quote(p.blocked_by), "; deferred work blocks the commit"]),
	"field": concat("", [p.at, "/blocked_by"]),
	"phase": p.name,
	"recovery": recovery,
} if {
	_judges_phases
	deferred := data.des.commit.deferred_prefix
	not deferred in data.des.commit.skip_prefixes # the data route accepts it
	some p in _phases
	startswith(p.blocked_by, deferred)
	path := _path
	recovery := _recovery
}

# METADATA
# title: Gap in the phase order
# description: In canonical order, a phase that is neither EXECUTED nor validly SKIPPED comes before an EXECUTED one.
# custom:
#   code: DES-COMMIT-GAP
#   severity: deny
deny contains {
	"code": "DES-COMMIT-GAP",
	"msg": concat("", [path, ": phase ", p.name, " is ", _gap_status(p), " but the later phase ", _next_executed(i), " is EXECUTED; in canonical order no phase is left undone (neither EXECUTED nor validly SKIPPED) before an executed one"]),
	"field": concat("", [p.at, "/status"]),
	"phase": p.name,
	"recovery": recovery,
} if {
	_judges_phases
	some status, group in _by_status
	status != "EXECUTED"
	some p in group
	not _valid_skipped(p)
	i := _order[p.name]
	i < _last_executed
	path := _path
	recovery := _recovery
}

# The first EXECUTED phase after canonical position i.
_next_executed(i) := _canonical[min({j | some p in _by_status.EXECUTED; j := _order[p.name]; j > i})]

_gap_status(p) := concat("", ["SKIPPED without an accepted reason (blocked_by ", _quote(p.blocked_by), ")"]) if p.status == "SKIPPED"

_gap_status(p) := _status_text(p.status) if p.status != "SKIPPED"

# Gate 2 verdicts: each audit entry has an effect by event and outcome
# ("*" for any outcome); entries without one (NO_OPINION) are ignored.
_verdicts := [[effect, e] |
	effects := data.des.commit.gate2_effects
	some e in input.gate2
	by_outcome := effects[e.event]
	effect := object.get(by_outcome, e.outcome, object.get(by_outcome, "*", ""))
	_counts(effect, e)
]

# A failure counts however it reached the trail. A verdict that resolves
# one counts only on a line DES attests it wrote: sandboxed Bash may append
# to the trail, chained as well as DES's own lines, and a resolution it
# wrote would let the step be committed. An entry without the fact (a
# team's own input) is taken as attested.
_counts(effect, _) if effect == "fail"

_counts(effect, e) if {
	not effect in {"", "fail"}
	object.get(e, "attested", true) == true
}

_last_verdict := _verdicts[count(_verdicts) - 1]

# METADATA
# title: Unresolved Gate 2 failure
# description: The step's last Gate 2 verdict in the audit trail is a failure that no later passing SUBAGENT_STOP_VALIDATION or STALE_RESOLUTION resolves.
# custom:
#   code: DES-COMMIT-GATE2
#   severity: deny
deny contains {
	"code": "DES-COMMIT-GATE2",
	"msg": concat("", [_path, ": Gate 2 failed this step at ", e.timestamp, " (", _codes_text(e.codes), "), and no later passing subagent stop or stale resolution resolves it"]),
	"field": "",
	"failed_at": e.timestamp,
	"recovery": _recovery,
} if {
	[effect, e] := _last_verdict
	effect == "fail"
}

_codes_text(codes) := concat(", ", codes) if count(codes) > 0

_codes_text(codes) := "no codes recorded" if count(codes) == 0
