# METADATA
# title: Subagent stop
# description: |
#   Gate 2 rules: when a subagent stops, is its step complete and honest? The
#   step file as it is after the run is judged together with the audit trail
#   of the run (phase and task moves, and whether the write guard saw them
#   land), the phase and time budgets, the verification evidence of
#   configuration setup steps, and the files changed outside the step's scope.
#   Input: input.step.{path, problem, error, workflow_type, task_status,
#   phases[] {name, index, status, outcome, outcome_details, blocked_by,
#   turn_count, max_turns, duration_seconds}, budget, validation_output,
#   documentation, safety, phase_log}, input.run.{source, task_status_at_start,
#   phases_at_start, events[] {event, phase, from, to, confirmed, attested, by}},
#   input.scope.{checked, patterns, changed, outside, error},
#   input.transcript.{checked, state, path, step_file, error}. Tables are
#   data.des.stop (data.json beside this file), data.des.steps,
#   data.des.transitions and data.des.settings.config.turn_budget_default.
package des.stop

import data.des.text

import data.des.transitions

# Inputs are read by reference with defaults, never with object.get(input, ...),
# which would turn the whole input into a value on every call.
default _problem := ""

_problem := input.step.problem

# The step file could be read: its facts are judged. Without them only
# DES-STEPFILE-MISSING (here) or the des.stepfile rules speak.
_usable if {
	input.step.path
	_problem == ""
}

default _path := ""

_path := input.step.path

# String fields absent from a phase read as "": a negated call on an
# undefined reference would be undefined, not true (OPA rewrites
# `not f(x.y)` as `t = x.y; not f(t)`).
_phase_defaults := {"name": "", "status": "", "outcome": "", "outcome_details": "", "blocked_by": ""}

default _phases := []

_phases := [object.union(_phase_defaults, p) | some p in input.step.phases] if _usable

default _task_raw := ""

_task_raw := input.step.task_status

# A step without a status has not started.
_norm_task(s) := "TODO" if s == ""

_norm_task(s) := s if s != ""

_task := _norm_task(_task_raw) if _usable

default _workflow := "tdd_cycle"

_workflow := input.step.workflow_type if input.step.workflow_type != ""

default _log := "/tdd_cycle/phase_execution_log"

_log := input.step.phase_log if input.step.phase_log != ""

# _ptr is the JSON pointer to a key of a phase log entry; index is the
# entry's position in the log array.
_ptr(p, key) := sprintf("%s/%d/%s", [_log, p.index, key]) if is_number(object.get(p, "index", null))

_ptr(p, _) := _log if not is_number(object.get(p, "index", null))

_outcomes := {o | some o in data.des.steps.phase_outcomes}

_known_task := object.keys(data.des.transitions.task)

_known_phase := object.keys(data.des.transitions.phase)

_moves_text(moves) := "none (terminal)" if count(moves) == 0

_moves_text(moves) := concat(", ", moves) if count(moves) > 0

_claimed := {s | some s in data.des.stop.claimed_statuses}

_done := {s | some s in data.des.stop.done_statuses}

# The resolution after a recorded failure. Gate 2 replaces it with its own
# reset instructions in record mode and drops it in block mode, where DES
# reopens the step itself; it stays for team code reading the decision.
_resolve_line := sprintf("After DES marks the step FAILED, `des-hook stale --resolve %s` resets the phases to redo (unfinished, or finished around the guard) to NOT_EXECUTED and the task to PARTIAL; then start the step again.", [_path])

# _names_text names one phase as "phase X" and several as "phases X, Y".
_names_text(names) := sprintf("phase %s", [names[0]]) if count(names) == 1

_names_text(names) := sprintf("phases %s", [concat(", ", names)]) if count(names) > 1

# METADATA
# title: Step file missing at the stop
# description: |
#   The step file the subagent worked on is missing or unreadable when it
#   stops, so its work cannot be judged (Gate 1 uses the same code).
# custom:
#   code: DES-STEPFILE-MISSING
#   severity: deny
deny contains {
	"code": "DES-STEPFILE-MISSING",
	"msg": sprintf("step file %s is %s when the subagent stops (%s); DES cannot judge the work without it, so the stop fails", [_path, _problem, object.get(input.step, "error", "")]),
	"field": "",
	"fixable_in_run": false,
	"recovery": [
		sprintf("Restore %s where the DES-STEP-FILE marker points (a committed file: `git checkout -- %s`); a subagent must not move, rename or delete its step file.", [_path, _path]),
		"If the file exists but cannot be read, fix its permissions, then run the step again.",
	],
} if {
	_problem in {"missing", "unreadable"}
}

# METADATA
# title: Transcript disagrees with DES's record of the run
# description: |
#   Gate 1 recorded the run (the Agent/Task call and its step file), and the
#   subagent's transcript no longer says the same: it is missing or cannot
#   be read, its prompt lost its DES markers, or it names another step
#   file. A subagent can edit or delete its own transcript, so DES judges
#   the step from its record and fails the stop. The states that fail, and
#   how each is worded, are data.des.stop.transcript_tampered.
# custom:
#   code: DES-TRANSCRIPT-TAMPERED
#   severity: deny
deny contains {
	"code": "DES-TRANSCRIPT-TAMPERED",
	"msg": sprintf("%s: the subagent's transcript %s %s%s; DES started this run on %s (Gate 1's record), judged that step from its record, and fails the stop", [_path, _transcript_path, _tampered_text, _transcript_names, _path]),
	"field": "",
	"transcript_state": input.transcript.state,
	"fixable_in_run": false,
	"recovery": [
		sprintf("Find out what changed or removed the transcript %s during the run (the subagent's own commands: `sed -i`, `rm`, a write to it); a subagent must not touch its transcript.", [_transcript_path]),
		_resolve_line,
	],
} if {
	input.transcript.checked == true
	_tampered_text := data.des.stop.transcript_tampered[input.transcript.state]
}

default _transcript_names := ""

_transcript_names := sprintf(" (its prompt names %s)", [input.transcript.step_file]) if input.transcript.step_file != ""

default _transcript_path := "\"\""

_transcript_path := input.transcript.path if input.transcript.path != ""

# METADATA
# title: Phase abandoned
# description: A phase is left IN_PROGRESS when the subagent stops.
# custom:
#   code: DES-PHASE-ABANDONED
#   severity: deny
deny contains {
	"code": "DES-PHASE-ABANDONED",
	"msg": sprintf("%s: phase %s is still IN_PROGRESS when the subagent stops; a phase ends EXECUTED (with an outcome), SKIPPED (with blocked_by) or FAILED", [_path, p.name]),
	"field": _ptr(p, "status"),
	"phase": p.name,
	"recovery": [
		sprintf("Finish %s with Write or Edit: status EXECUTED with outcome PASS or FAIL and outcome_details, SKIPPED with blocked_by, or FAILED.", [_names_text(_abandoned)]),
		_resolve_line,
	],
} if {
	some p in _phases
	p.status == "IN_PROGRESS"
}

_abandoned := [p.name | some p in _phases; p.status == "IN_PROGRESS"]

# The stop claims work (the task is IN_PROGRESS or DONE) while no phase
# left NOT_EXECUTED. Configuration setup steps without a phase log are
# exempt: their evidence rules (DES-VERIFY-*) judge the same claim.
_silent if {
	_task in _claimed
	every p in _phases {
		p.status == "NOT_EXECUTED"
	}
	not _silent_exempt
}

_silent_exempt if {
	_workflow in data.des.stop.silent_exempt_without_log
	count(_phases) == 0
}

_silent_text := "its phase log is empty or missing" if count(_phases) == 0

_silent_text := "the one phase of its log is NOT_EXECUTED" if count(_phases) == 1

_silent_text := sprintf("all %d phases of its log are NOT_EXECUTED", [count(_phases)]) if count(_phases) > 1

# METADATA
# title: Silent completion
# description: |
#   The task is IN_PROGRESS or DONE while every phase is NOT_EXECUTED (an
#   empty or missing log counts); configuration setup steps without a phase
#   log are judged by DES-VERIFY-EVIDENCE instead.
# custom:
#   code: DES-SILENT-COMPLETION
#   severity: deny
deny contains {
	"code": "DES-SILENT-COMPLETION",
	"msg": sprintf("%s: the task is %s but %s; the subagent stopped without recording any phase of its work", [_path, _task, _silent_text]),
	"field": "/state/status",
	"recovery": [
		"Record each phase as it is done: write it IN_PROGRESS first, then EXECUTED with outcome PASS or FAIL and outcome_details (or SKIPPED with blocked_by).",
		"If the work was not done, write state.status FAILED with state.failure_reason instead of leaving the task claimed.",
		_resolve_line,
	],
} if {
	_silent
}

# METADATA
# title: Executed phase without outcome
# description: A phase is EXECUTED without outcome PASS or FAIL.
# custom:
#   code: DES-PHASE-NO-OUTCOME
#   severity: deny
deny contains {
	"code": "DES-PHASE-NO-OUTCOME",
	"msg": sprintf("%s: phase %s is EXECUTED with outcome %q; an executed phase records PASS or FAIL", [_path, p.name, p.outcome]),
	"field": _ptr(p, "outcome"),
	"phase": p.name,
	"recovery": [sprintf("Set the outcome of %s to PASS or FAIL, with outcome_details saying what was checked and what it showed, with Write or Edit; the status stays EXECUTED.", [_names_text(_no_outcome)])],
} if {
	some p in _phases
	p.status == "EXECUTED"
	not p.outcome in _outcomes
}

_no_outcome := [p.name | some p in _phases; p.status == "EXECUTED"; not p.outcome in _outcomes]

# METADATA
# title: Skipped phase without reason
# description: A phase is SKIPPED with an empty blocked_by.
# custom:
#   code: DES-PHASE-INVALID-SKIP
#   severity: deny
deny contains {
	"code": "DES-PHASE-INVALID-SKIP",
	"msg": sprintf("%s: phase %s is SKIPPED without blocked_by; a skip must say why", [_path, p.name]),
	"field": _ptr(p, "blocked_by"),
	"phase": p.name,
	"recovery": [sprintf("Set blocked_by on %s with a prefix: BLOCKED_BY_DEPENDENCY:, NOT_APPLICABLE:, APPROVED_SKIP: or CHECKPOINT_PENDING:, then the reason, with Write or Edit; the status stays SKIPPED.", [_names_text(_bad_skips)])],
} if {
	some p in _phases
	p.status == "SKIPPED"
	trim_space(p.blocked_by) == ""
}

_bad_skips := [p.name | some p in _phases; p.status == "SKIPPED"; trim_space(p.blocked_by) == ""]

default _at_start := {}

_at_start := input.run.phases_at_start

_confirmed_start(name) if {
	some e in input.run.events
	e.event == "PHASE_STARTED"
	e.phase == name
	_confirmed(e)
}

# A move the write guard saw land, on a line DES attests it wrote: a line
# chained into the trail by another writer (sandboxed Bash may append to
# it) confirms nothing. An event without the fact (a team's own input) is
# taken as attested.
_confirmed(e) if {
	e.confirmed == true
	object.get(e, "attested", true) == true
}

_start_text(name) := sprintf("it was %s when the run started", [_at_start[name]]) if input.run.phases_at_start[name]

_start_text(name) := "it was not started when the run started" if {
	input.run.phases_at_start
	not input.run.phases_at_start[name]
}

_start_text(_) := "the audit trail of this step file has none" if not input.run.phases_at_start

# A phase already IN_PROGRESS when the run started (a resumed step) was
# started in an earlier run: its confirmed move to the final status in
# this run is the record.
_confirmed_finish(p) if {
	_at_start[p.name] == "IN_PROGRESS"
	some e in input.run.events
	e.event in data.des.stop.phase_events
	e.phase == p.name
	e.to == p.status
	_confirmed(e)
}

# Phases that claim their work done in this run without a confirmed start:
# the status was written around the write guard (Bash, a script, an editor).
_jumps contains p if {
	input.run
	some p in _phases
	p.status in _done
	not object.get(_at_start, p.name, "") in _done
	not _confirmed_start(p.name)
	not _confirmed_finish(p)
}

_jumped := {p.name | some p in _jumps}

# The jumped phases in log order: the ones to redo.
_redo := [p.name | some p in _phases; p.name in _jumped]

# METADATA
# title: Phase status jump
# description: |
#   A phase reached EXECUTED or SKIPPED in this run with no confirmed
#   PHASE_STARTED for it in the audit trail (for a phase IN_PROGRESS at the
#   start: no confirmed move to its status), so the change was made around
#   the write guard; or a recorded phase move is not in the phase table.
# custom:
#   code: DES-PHASE-JUMP
#   severity: deny
deny contains {
	"code": "DES-PHASE-JUMP",
	"msg": sprintf("%s: phase %s is %s, but the audit trail has no confirmed PHASE_STARTED for it (%s); its status was written around the write guard", [_path, p.name, p.status, _start_text(p.name)]),
	"field": _ptr(p, "status"),
	"phase": p.name,
	"recovery": [
		sprintf("Redo %s through the write guard, from NOT_EXECUTED: with Write or Edit, IN_PROGRESS first, then the final status (EXECUTED with an outcome, SKIPPED with blocked_by, or FAILED); never change a step file with Bash or a script.", [_names_text(_redo)]),
		_resolve_line,
	],
} if {
	some p in _jumps
}

deny contains {
	"code": "DES-PHASE-JUMP",
	"msg": sprintf("%s: the audit trail records a write that moved phase %s from %s to %s (%s); from %s the allowed moves are: %s", [_path, e.phase, e.from, e.to, e.event, e.from, _moves_text(transitions.phase_moves(e.from))]),
	"field": _log,
	"phase": e.phase,
	"fixable_in_run": false,
	"recovery": [
		sprintf("The recorded move stays in this run's trail: after the reset, move phase %s only along the table, NOT_EXECUTED→IN_PROGRESS, then IN_PROGRESS→EXECUTED|SKIPPED|FAILED.", [e.phase]),
		_resolve_line,
	],
} if {
	some e in input.run.events
	e.event in data.des.stop.phase_events
	e.by == "write"
	e.from != e.to
	e.from in _known_phase
	e.to in _known_phase # unknown statuses are the schema's business
	not transitions.phase_move_allowed(e.from, e.to)
}

_open := [p.name | some p in _phases; not transitions.phase_terminal(p.status)]

_open_count_text := "1 phase is" if count(_open) == 1

_open_count_text := sprintf("%d phases are", [count(_open)]) if count(_open) != 1

_open_text := concat(", ", [sprintf("%s (%s)", [p.name, p.status]) | some p in _phases; not transitions.phase_terminal(p.status)])

# METADATA
# title: Premature completion
# description: |
#   The task is DONE while a phase is not terminal (NOT_EXECUTED,
#   IN_PROGRESS or an unknown status). When every phase is NOT_EXECUTED,
#   DES-SILENT-COMPLETION says it better and this rule is quiet.
# custom:
#   code: DES-PREMATURE-COMPLETION
#   severity: deny
deny contains {
	"code": "DES-PREMATURE-COMPLETION",
	"msg": sprintf("%s: the task is DONE while %s not finished: %s; DONE needs every phase EXECUTED, SKIPPED or FAILED", [_path, _open_count_text, _open_text]),
	"field": "/state/status",
	"phase": _open[0],
	"phases": _open,
	"recovery": [
		sprintf("Finish the open phases (%s) through the write guard (a NOT_EXECUTED one goes IN_PROGRESS first) before writing state.status DONE, or write state.status FAILED or PARTIAL if the work stops here.", [concat(", ", _open)]),
		_resolve_line,
	],
} if {
	_task == "DONE"
	count(_open) > 0
	not _silent
}

# The task status as the audit trail last recorded it: the `to` of the last
# attested TASK_STATE_CHANGED event of the run (a write through the guard or
# one of DES's own moves), else the status at the start of the run. A move
# on a line another writer chained into the trail records nothing.
_task_events := [e | some e in input.run.events; e.event == "TASK_STATE_CHANGED"]

_recorded_moves := [e | some e in _task_events; object.get(e, "attested", true) == true]

_recorded_task := _norm_task(_recorded_moves[count(_recorded_moves) - 1].to) if count(_recorded_moves) > 0

_recorded_task := _norm_task(input.run.task_status_at_start) if {
	count(_recorded_moves) == 0
	is_string(input.run.task_status_at_start)
}

# METADATA
# title: Task status change not in the table
# description: |
#   The task's status at the stop differs from the status last recorded in
#   the run (the status at the start, or the last recorded task move) by a
#   move the task table does not allow, or a recorded write moved the task
#   outside the table. DES's own moves (by gate1, gate2, stale-resolution)
#   are exempt.
# custom:
#   code: DES-TASK-TRANSITION
#   severity: deny
deny contains {
	"code": "DES-TASK-TRANSITION",
	"msg": sprintf("%s: the task is %s at the stop but was last recorded %s, and the task cannot move from %s to %s; from %s the allowed moves are: %s", [_path, _task, _recorded_task, _recorded_task, _task, _recorded_task, _moves_text(transitions.task_moves(_recorded_task))]),
	"field": "/state/status",
	"recovery": [
		"Change state.status only along the table: TODO→IN_PROGRESS; IN_PROGRESS→DONE|FAILED|PARTIAL; FAILED→IN_PROGRESS; PARTIAL→IN_PROGRESS; and only with Write or Edit, one move at a time.",
		_resolve_line,
	],
} if {
	_task != _recorded_task
	_recorded_task in _known_task
	_task in _known_task # unknown statuses are the schema's business
	not transitions.task_move_allowed(_recorded_task, _task)
}

deny contains {
	"code": "DES-TASK-TRANSITION",
	"msg": sprintf("%s: the audit trail records a write that moved the task from %s to %s; from %s the allowed moves are: %s", [_path, from, to, from, _moves_text(transitions.task_moves(from))]),
	"field": "/state/status",
	"fixable_in_run": false,
	"recovery": [
		"The recorded move stays in this run's trail: after the reset, change state.status only along the table with Write or Edit: TODO→IN_PROGRESS; IN_PROGRESS→DONE|FAILED|PARTIAL; FAILED→IN_PROGRESS; PARTIAL→IN_PROGRESS.",
		_resolve_line,
	],
} if {
	some e in _task_events
	e.by == "write"
	from := _norm_task(e.from)
	to := _norm_task(e.to)
	from != to
	from in _known_task
	to in _known_task
	not transitions.task_move_allowed(from, to)
}

# _turn_budget is the turn limit of a phase and where it comes from: the
# phase's max_turns, else the cycle's, else the default setting.
_turn_budget(p) := [p.max_turns, "the phase's max_turns"] if is_number(object.get(p, "max_turns", null))

_turn_budget(p) := [_cycle_turns, "tdd_cycle.max_turns"] if {
	not is_number(object.get(p, "max_turns", null))
	is_number(_cycle_turns)
}

_turn_budget(p) := [data.des.settings.config.turn_budget_default, "the default turn budget (setting turn_budget_default)"] if {
	not is_number(object.get(p, "max_turns", null))
	not is_number(_cycle_turns)
}

default _cycle_turns := null

_cycle_turns := input.step.budget.max_turns

# METADATA
# title: Turn limit exceeded
# description: A phase's turn_count is above its max_turns, else the cycle's max_turns, else the default turn budget.
# custom:
#   code: DES-TURN-LIMIT
#   severity: deny
deny contains {
	"code": "DES-TURN-LIMIT",
	"msg": sprintf("%s: phase %s took %s, over its budget of %v (%s)", [_path, p.name, text.count_noun(p.turn_count, "turn", "turns"), budget[0], budget[1]]),
	"field": _ptr(p, "turn_count"),
	"phase": p.name,
	# A budget is the user's to raise: a subagent sent back could only
	# raise its own.
	"fixable_in_run": false,
	"recovery": [
		sprintf("Split the work of %s into smaller steps, or raise the budget (the phase's max_turns or tdd_cycle.max_turns) with a reason before running it again.", [_names_text(_over_turns)]),
		_resolve_line,
	],
} if {
	some p in _phases
	_over_budget(p)
	budget := _turn_budget(p)
}

_over_budget(p) if {
	is_number(p.turn_count)
	budget := _turn_budget(p)
	p.turn_count > budget[0]
}

_over_turns := [p.name | some p in _phases; _over_budget(p)]

default _extensions := 0

_extensions := input.step.budget.total_extensions_minutes if is_number(input.step.budget.total_extensions_minutes)

_seconds_used := sum([p.duration_seconds | some p in _phases; is_number(p.duration_seconds)])

_seconds_allowed := (input.step.budget.duration_minutes + _extensions) * 60 if is_number(input.step.budget.duration_minutes)

# METADATA
# title: Time budget exceeded
# description: The summed duration_seconds of the phases is above (duration_minutes + total_extensions_minutes) × 60; no budget, no rule.
# custom:
#   code: DES-TIMEOUT
#   severity: deny
deny contains {
	"code": "DES-TIMEOUT",
	"msg": sprintf("%s: the phases took %v seconds in total, over the budget of %v seconds (tdd_cycle.duration_minutes %v + total_extensions_minutes %v, times 60)", [_path, _seconds_used, _seconds_allowed, input.step.budget.duration_minutes, _extensions]),
	"field": "/tdd_cycle/duration_minutes",
	"fixable_in_run": false, # the user's to extend, as DES-TURN-LIMIT
	"recovery": [
		"If the work needs more time, add the minutes to tdd_cycle.total_extensions_minutes with the reason before running the step again.",
		"Otherwise simplify the step: split it into smaller steps, each within its budget.",
		_resolve_line,
	],
} if {
	_usable
	_seconds_used > _seconds_allowed
}

_verification := data.des.stop.verification

# Verification is due for configuration setup steps whose task claims work.
_verifies if {
	_workflow in _verification.workflow_types
	_task in _claimed
}

default _validation_output := ""

_validation_output := input.step.validation_output

_evidence_phases := [p | some p in _phases; p.name == _verification.evidence_phase]

# The validation evidence: validation_output when not blank, else the
# outcome_details of the last FINAL_VALIDATE entry of the log.
_evidence := {"text": _validation_output, "from": "validation_output", "field": "/validation_output"} if {
	trim_space(_validation_output) != ""
}

_evidence := {"text": p.outcome_details, "from": sprintf("the outcome_details of %s", [p.name]), "field": _ptr(p, "outcome_details")} if {
	trim_space(_validation_output) == ""
	count(_evidence_phases) > 0
	p := _evidence_phases[count(_evidence_phases) - 1]
}

_evidence := {"text": "", "from": sprintf("validation_output (there is no %s phase)", [_verification.evidence_phase]), "field": "/validation_output"} if {
	trim_space(_validation_output) == ""
	count(_evidence_phases) == 0
}

_evidence_chars := count(trim_space(_evidence.text))

# METADATA
# title: Verification evidence too short
# description: |
#   Configuration setup: the validation evidence (validation_output, else the
#   outcome_details of FINAL_VALIDATE), trimmed, is shorter than
#   verification.evidence_min_chars (100) characters.
# custom:
#   code: DES-VERIFY-EVIDENCE
#   severity: deny
deny contains {
	"code": "DES-VERIFY-EVIDENCE",
	"msg": sprintf("%s: the validation evidence (%s) is %s; a configuration setup step shows at least %d characters of what was checked and what it returned", [_path, _evidence.from, text.count_noun(_evidence_chars, "character", "characters"), _verification.evidence_min_chars]),
	"field": _evidence.field,
	"recovery": [
		sprintf("Write validation_output (or the outcome_details of %s): the commands run to verify the change and their output, at least %d characters.", [_verification.evidence_phase, _verification.evidence_min_chars]),
		_resolve_line,
	],
} if {
	_verifies
	_evidence_chars < _verification.evidence_min_chars
}

default _documentation := ""

_documentation := input.step.documentation

_documentation_chars := count(trim_space(_documentation))

# METADATA
# title: Documentation too short
# description: Configuration setup, the task claims work, and documentation (trimmed) is shorter than verification.documentation_min_chars (200) characters.
# custom:
#   code: DES-VERIFY-DOCS
#   severity: deny
deny contains {
	"code": "DES-VERIFY-DOCS",
	"msg": sprintf("%s: documentation is %s; a configuration setup step documents what it changed, where and why in at least %d characters", [_path, text.count_noun(_documentation_chars, "character", "characters"), _verification.documentation_min_chars]),
	"field": "/documentation",
	"recovery": [
		sprintf("Write documentation: what was changed, where, why, and how to check it, at least %d characters.", [_verification.documentation_min_chars]),
		_resolve_line,
	],
} if {
	_verifies
	_documentation_chars < _verification.documentation_min_chars
}

# Rollback evidence is looked for sentence by sentence in validation_output
# and in the outcome_details of every FINAL_VALIDATE entry: a sentence shows
# the rollback when it matches a rollback_evidence pattern and no
# rollback_refuted pattern ("rollback not tested" shows nothing).
_rollback_texts := array.concat([_validation_output], [p.outcome_details | some p in _evidence_phases])

_rollback_shown if {
	some text in _rollback_texts
	some sentence in regex.split(_verification.sentence_split, text)
	some pattern in _verification.rollback_evidence
	regex.match(pattern, sentence)
	not _refuted(sentence)
}

_refuted(sentence) if {
	some pattern in _verification.rollback_refuted
	regex.match(pattern, sentence)
}

# METADATA
# title: Rollback not shown tested
# description: |
#   Configuration setup, destructive (safety.is_destructive), and no sentence
#   of the validation evidence shows the rollback run or tested (patterns:
#   verification.rollback_evidence and rollback_refuted in data.des.stop).
# custom:
#   code: DES-VERIFY-ROLLBACK
#   severity: deny
deny contains {
	"code": "DES-VERIFY-ROLLBACK",
	"msg": sprintf("%s: the step is destructive (safety.is_destructive true) but its validation evidence (validation_output, %s outcome_details) does not show the rollback run or tested", [_path, _verification.evidence_phase]),
	"field": "/validation_output",
	"recovery": [
		"Run the rollback plan (safety.rollback_plan) against a copy or staging, then record in validation_output what was rolled back and how it was checked, e.g. \"Rollback tested on staging: restored the previous config, service healthy\".",
		_resolve_line,
	],
} if {
	_verifies
	input.step.safety.is_destructive == true
	not _rollback_shown
}

default _scope_patterns := []

_scope_patterns := input.scope.patterns

_patterns_text := "none" if count(_scope_patterns) == 0

_patterns_text := concat(", ", _scope_patterns) if count(_scope_patterns) > 0

_named := array.slice(input.scope.outside, 0, data.des.stop.scope_files_named)

_outside_text := "1 changed file is" if count(input.scope.outside) == 1

_outside_text := sprintf("%d changed files are", [count(input.scope.outside)]) if count(input.scope.outside) != 1

_more_text := "" if count(input.scope.outside) <= count(_named)

_more_text := sprintf(" and %d more", [count(input.scope.outside) - count(_named)]) if count(input.scope.outside) > count(_named)

# METADATA
# title: Files changed outside the step's scope
# description: Files changed in the working tree match none of the step's allowed_file_patterns.
# custom:
#   code: DES-SCOPE-VIOLATION
#   severity: warn
warn contains {
	"code": "DES-SCOPE-VIOLATION",
	"msg": sprintf("%s: %s outside allowed_file_patterns (%s): %s%s", [_path, _outside_text, _patterns_text, concat(", ", _named), _more_text]),
	"field": "/allowed_file_patterns",
	"files": _named,
	"count": count(input.scope.outside),
	"recovery": [
		"Check that the changes outside the step's scope were intended; revert those that were not (`git restore FILE`, or delete an untracked file).",
		"If the step really needs those files, add them to allowed_file_patterns of the step file.",
	],
} if {
	input.scope.checked == true
	count(input.scope.outside) > 0
}

# METADATA
# title: Scope not checked
# description: |
#   The step names allowed_file_patterns but the changed files could not be
#   listed (no git, or not a git repository), so the scope was not checked.
# custom:
#   code: DES-SCOPE-UNCHECKED
#   severity: warn
warn contains {
	"code": "DES-SCOPE-UNCHECKED",
	"msg": sprintf("%s: the files changed by the subagent could not be listed (%s), so allowed_file_patterns (%s) were not checked", [_path, object.get(input.scope, "error", ""), _patterns_text]),
	"field": "/allowed_file_patterns",
	"recovery": ["Run the project in a git repository with git on PATH so that DES can check the step's scope, or waive DES-SCOPE-UNCHECKED for the subagent_stop gate (exception) if the project has no git."],
} if {
	input.scope.checked == false
	count(_scope_patterns) > 0
}

# A phase is finished well when EXECUTED with an outcome or SKIPPED with a
# reason, and its status was not written around the write guard.
_finished(p) if {
	p.status == "EXECUTED"
	p.outcome in _outcomes
	not p.name in _jumped
}

_finished(p) if {
	p.status == "SKIPPED"
	trim_space(p.blocked_by) != ""
	not p.name in _jumped
}

_unfinished := [p | some p in _phases; not _finished(p)]

# A tampered transcript (DES-TRANSCRIPT-TAMPERED) leaves nothing the run
# claimed trustworthy: the phases it finished are reset with the rest, or
# the reset alone would settle the failure and Gate 3 commit those claims.
_tampered if {
	input.transcript.checked == true
	data.des.stop.transcript_tampered[input.transcript.state]
}

_to_reset(p) if {
	not _finished(p)
	p.status != "NOT_EXECUTED"
}

_to_reset(p) if {
	_tampered
	p.status in _done
	object.get(_at_start, p.name, "") != p.status # finished in this run
}

default _reset_phase := ""

_reset_phase := _unfinished[0].name

# METADATA
# title: Stop facts for Go
# description: |
#   reset_phase is the first phase in log order that is not finished well
#   (EXECUTED with PASS/FAIL or SKIPPED with blocked_by, and not a
#   DES-PHASE-JUMP), "" when there is none: the phase to resume from.
#   reset_phases are the phases, in log order, that must go back to
#   NOT_EXECUTED before the step can run again: the unfinished ones that
#   are not NOT_EXECUTED already (IN_PROGRESS, FAILED, EXECUTED without
#   outcome, SKIPPED without reason, unknown statuses, jumps), and, when the
#   transcript was tampered with, every phase the run finished.
#   redo_phases are the phases finished around the write guard
#   (DES-PHASE-JUMP), in log order: what DES sets NOT_EXECUTED when it sends
#   the subagent back in block mode, so that redoing them is a legal walk.
info := {
	"reset_phase": _reset_phase,
	"reset_phases": [p.name | some p in _phases; _to_reset(p)],
	"redo_phases": _redo,
}
