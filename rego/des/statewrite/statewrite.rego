# METADATA
# title: Workflow state writes
# description: |
#   Rules V1 to V9 and the phase handshake on a write to a multi-phase workflow
#   state document (.des/state.json, .isdlc/state.json,
#   .isdlc/projects/<p>/state.json), decided before the write lands.
#
#   Input (built by Go; null fields are removed, so a missing key means absent):
#     input.state.path           the document's project-relative path
#     input.state.problem        "invalid_json" | "not_object", absent when the
#                                incoming content parsed as an object
#     input.state.error          the parser's reason, with problem
#     input.state.schema_errors  [{pointer, msg}] incoming vs the loose state schema
#     input.state.incoming       the known fields of the document the write would produce
#     input.state.disk           the known fields of the file on disk; absent when there
#                                is no file or it is not a parsable object
#     input.state.seen           des's memory of this document, kept outside the project
#                                and moved on only by writes des allowed and saw land:
#                                {workflow: bool (the last document had an active_workflow),
#                                phase_status: {k: status}, phases: {k: status} (the highest
#                                ordered status each phase reached since the workflow
#                                started), current_phase_index: n (the highest)}; absent
#                                when des has none (a first write, a new machine)
#   Known fields (both sides): state_version, current_phase, active_agent,
#   active_workflow {type, phases[], current_phase, current_phase_index,
#   phase_status{}, supervised_review {status, redo_count}, recovery_action {type}},
#   phases {<phase>: {status, iteration_requirements {test_iteration
#   {completed, current_iteration, last_test_result}, interactive_elicitation
#   {completed, menu_interactions}}, constitutional_validation {completed,
#   iterations_used, status}}}.
#
#   Codes: DES-STATE-INVALID, DES-STATE-V7-UNVERSIONED, DES-STATE-V7-STALE,
#   DES-STATE-V8-INDEX, DES-STATE-V8-STATUS (deny); DES-STATE-V1, -V2, -V3,
#   DES-STATE-V9 (warn); and the phase handshake warnings of this package:
#   DES-STATE-HANDSHAKE-INDEX (current_phase_index not an integer in
#   0..len(phases), the length meaning every phase is done),
#   DES-STATE-HANDSHAKE-PHASE (active_workflow.current_phase not in
#   active_workflow.phases), DES-STATE-HANDSHAKE-KEY (a phase_status key not in
#   active_workflow.phases, one per key), DES-STATE-HANDSHAKE-ACTIVE (more than
#   one phase in_progress in phase_status).
#
#   Every rule that compares fires only when the fields it reads exist (on both
#   sides for disk-vs-incoming rules); V7-UNVERSIONED and the V8 rules about a
#   completed phase are the rules about a field missing on one side.
#   V8 compares with the disk and with des's memory (input.state.seen): a
#   status below the highest one seen, or anything but completed (an unknown
#   status, or the key removed while a workflow is active) after completed,
#   is a regression. A write that starts a workflow (the disk has no
#   active_workflow, and neither had the last document des saw) starts the
#   memory afresh. Exemptions (supervised_review, recovery_action) are read
#   from the incoming document and apply only to the write that introduces
#   them: a recovery_action.type the disk did not have (or had another), a
#   supervised_review.status newly redo_pending or a redo_count above the
#   disk's. The next memory is seen_next (the gate's info "state_seen").
#   V7 is conceptually checked before V8, but nothing short-circuits: every violation is reported, and the engine
#   sorts them by code, so the order is stable. When the incoming content is
#   not a JSON object only DES-STATE-INVALID is reported. The status order and
#   the exemptions are data (data.json beside this file).
package des.statewrite

import data.des.text

# Inputs are read by reference with defaults, never with object.get(input, ...)
# or object.get on a document, which would copy it on every call. Rules below
# use built-ins and set operations rather than user functions, and bind a data
# table to a local before a loop: a data.des.statewrite.* lookup inside the
# loop costs a tree lookup per element (measured).

default _path := "the workflow state"

_path := input.state.path

default _problem := ""

_problem := input.state.problem

default _problem_text := "not a JSON object"

_problem_text := data.des.statewrite.problem_text[_problem]

default _error := "no reason given"

_error := input.state.error

# JSON pointer escaping of one reference token (RFC 6901): ~ is ~0, / is ~1.
_pointer_escape := {"~": "~0", "/": "~1"}

# Exemptions, read from the incoming document, and applying only to the
# write that introduces them: a recovery_action left in the document must
# not exempt every later write.
default _recovery_type := ""

_recovery_type := input.state.incoming.active_workflow.recovery_action.type

default _disk_recovery_type := ""

_disk_recovery_type := input.state.disk.active_workflow.recovery_action.type

_recovery_introduced if {
	_recovery_type != ""
	_recovery_type != _disk_recovery_type
}

_status_recovery_exempt if {
	_recovery_introduced
	_recovery_type in data.des.statewrite.recovery_exempt
}

_index_recovery_exempt if {
	_recovery_introduced
	_recovery_type in data.des.statewrite.index_recovery_exempt
}

default _disk_review_status := ""

_disk_review_status := input.state.disk.active_workflow.supervised_review.status

default _disk_redo_count := 0

_disk_redo_count := n if {
	n := input.state.disk.active_workflow.supervised_review.redo_count
	is_number(n)
}

_supervised_redo if {
	input.state.incoming.active_workflow.supervised_review.status == data.des.statewrite.redo_pending_status
	_disk_review_status != data.des.statewrite.redo_pending_status
}

_supervised_redo if {
	n := input.state.incoming.active_workflow.supervised_review.redo_count
	is_number(n)
	n > 0
	n > _disk_redo_count
}

# An exemption found in the incoming document that does not apply, because
# the disk has it already: said in the message, so the writer knows why.
_stale_exemption_hint := sprintf(" (recovery_action.type %q is on disk already: an exemption applies only to the write that introduces it)", [_recovery_type]) if {
	_recovery_type in data.des.statewrite.recovery_exempt
	not _recovery_introduced
}

default _stale_exemption_hint := ""

# ---------------------------------------------------------------------------
# des's memory (input.state.seen) and where a workflow starts.

_incoming_workflow if is_object(input.state.incoming.active_workflow)

default _workflow_active := false

_workflow_active if _incoming_workflow

_disk_workflow if is_object(input.state.disk.active_workflow)

_seen_workflow if input.state.seen.workflow == true

# A write that starts a workflow: the memory of the previous one no longer
# applies (iSDLC resets every phase to pending for a new workflow).
_workflow_starts if {
	_incoming_workflow
	not _disk_workflow
	not _seen_workflow
}

default _seen_phase_status := {}

_seen_phase_status := input.state.seen.phase_status if not _workflow_starts

default _seen_phases := {}

_seen_phases := input.state.seen.phases if not _workflow_starts

_order := data.des.statewrite.status_order

_top := data.des.statewrite.completed_status

# The highest ordered status of a set (ties broken by name), undefined when
# none is ordered.
_highest(xs) := min({x | some x in xs; _order[x] == m}) if {
	m := max({_order[x] | some x in xs; _order[x]})
}

default _disk_phase_status := {}

_disk_phase_status := input.state.disk.active_workflow.phase_status

_disk_phases := {k: s | some k, p in input.state.disk.phases; s := p.status}

# The highest status each phase had before this write: on disk, or in
# des's memory.
_prev_phase_status := {k: h |
	some k in (object.keys(_disk_phase_status) | object.keys(_seen_phase_status))
	h := _highest({s | some s in [object.get(_disk_phase_status, k, null), object.get(_seen_phase_status, k, null)]; is_string(s)})
}

_prev_phases := {k: h |
	some k in (object.keys(_disk_phases) | object.keys(_seen_phases))
	h := _highest({s | some s in [object.get(_disk_phases, k, null), object.get(_seen_phases, k, null)]; is_string(s)})
}

default _incoming_phase_status_map := {}

_incoming_phase_status_map := input.state.incoming.active_workflow.phase_status

# The status of phase k in a map, as a message reads it.
_status_text(m, k) := sprintf("%q", [m[k]])

_status_text(m, k) := "absent" if not m[k]

# ---------------------------------------------------------------------------
# The memory after this write (used by Go only when the write is allowed and
# lands): per phase, the highest ordered status of before and after, except
# where an exemption lowered it; cleared for phase_status (and the index)
# when the workflow ends, and started afresh when one starts.

_exempt_move(_, _) if _status_recovery_exempt

_exempt_move(prev, incoming) if [prev, incoming] in _redo_moves

_next_one(prev, incoming) := incoming if {
	_exempt_move(prev, incoming)
	_order[incoming]
} else := h if {
	not _exempt_move(prev, incoming)
	h := _highest({s | some s in [prev, incoming]; is_string(s)})
}

_next_of(prev_map, in_map) := {k: h |
	some k in (object.keys(prev_map) | object.keys(in_map))
	h := _next_one(object.get(prev_map, k, null), object.get(in_map, k, null))
}

default _next_phase_status := {}

_next_phase_status := _next_of(_prev_phase_status, _incoming_phase_status_map) if _incoming_workflow

_prev_indexes contains i if {
	i := input.state.disk.active_workflow.current_phase_index
	is_number(i)
}

_prev_indexes contains i if {
	not _workflow_starts
	i := input.state.seen.current_phase_index
	is_number(i)
}

_next_index := i if {
	_index_recovery_exempt
	i := input.state.incoming.active_workflow.current_phase_index
	is_number(i)
} else := max(_prev_indexes | {i | i := input.state.incoming.active_workflow.current_phase_index; is_number(i)}) if {
	_incoming_workflow
	not _index_recovery_exempt
	count(_prev_indexes | {i | i := input.state.incoming.active_workflow.current_phase_index; is_number(i)}) > 0
}

# METADATA
# title: des's memory after the write
# description: What des remembers of the document once this write lands (input.state.seen of the next write).
seen_next := object.union(
	{
		"workflow": _workflow_active,
		"phase_status": _next_phase_status,
		"phases": _next_of(_prev_phases, _incoming_phase_status),
	},
	{"current_phase_index": i | i := _next_index},
)

# The status moves a supervised redo allows, as [from, to] pairs.
default _redo_moves := set()

_redo_moves := {m | some m in data.des.statewrite.redo_exempt_moves} if _supervised_redo

# phases[k].status of the incoming document, where present.
_incoming_phase_status := {k: s | some k, p in input.state.incoming.phases; s := p.status}

# ---------------------------------------------------------------------------
# DES-STATE-INVALID

_invalid_recovery := [
	"Write the whole workflow state as one JSON object (the Workflow state section of des's docs/reference.md lists its fields and their types; null counts as absent, unknown fields are fine).",
	"Prefer editing the current file with Edit over rewriting it, so that the fields you do not change stay valid.",
]

# METADATA
# title: Workflow state write invalid
# description: The content the write would produce is not valid JSON or not a JSON object.
# custom:
#   code: DES-STATE-INVALID
#   severity: deny
deny contains {
	"code": "DES-STATE-INVALID",
	"msg": sprintf("%s: the write would leave the file %s (%s); a workflow state must be one JSON object, so fix the content before writing", [_path, _problem_text, _error]),
	"field": "",
	"recovery": _invalid_recovery,
} if {
	_problem != ""
}

# METADATA
# title: Workflow state write fails the state schema
# description: One violation per schema error of the incoming document, with its JSON pointer.
# custom:
#   code: DES-STATE-INVALID
#   severity: deny
deny contains {
	"code": "DES-STATE-INVALID",
	"msg": sprintf("%s: %s fails the workflow state schema: %s; give the field the listed type or leave it out", [_path, where, e.msg]),
	"field": e.pointer,
	"recovery": _invalid_recovery,
} if {
	some e in input.state.schema_errors
	where := object.get({"": "the top level"}, e.pointer, e.pointer)
}

# ---------------------------------------------------------------------------
# V7: optimistic locking on state_version.

_incoming_versioned if {
	_ = input.state.incoming.state_version
}

default _next_version := "the disk version + 1"

_next_version := sprintf("%v", [input.state.disk.state_version + 1]) if is_number(input.state.disk.state_version)

# METADATA
# title: Unversioned write over a versioned workflow state
# description: The file on disk has state_version, the write has none (a null counts as none).
# custom:
#   code: DES-STATE-V7-UNVERSIONED
#   severity: deny
deny contains {
	"code": "DES-STATE-V7-UNVERSIONED",
	"msg": sprintf("%s: state_version is %v on disk but absent in this write (null counts as absent), so DES cannot tell whether the write is based on the current file; write state_version = %s", [_path, disk, _next_version]),
	"field": "/state_version",
	"recovery": [
		sprintf("Re-read %s.", [_path]),
		"Apply your change to the current version, keeping every field you do not mean to change.",
		sprintf("Write state_version = %s (disk + 1).", [_next_version]),
	],
} if {
	_problem == ""
	disk := input.state.disk.state_version
	not _incoming_versioned
}

# METADATA
# title: Stale workflow state write
# description: The write's state_version is below the version on disk (optimistic locking); equal or greater is allowed.
# custom:
#   code: DES-STATE-V7-STALE
#   severity: deny
deny contains {
	"code": "DES-STATE-V7-STALE",
	"msg": sprintf("%s: state_version is %v in this write but %v on disk; the write was built from an older version and would undo another writer's changes; re-read the file and write state_version = %s", [_path, incoming, disk, _next_version]),
	"field": "/state_version",
	"recovery": [
		sprintf("Re-read %s.", [_path]),
		sprintf("Apply your change to the current version (state_version %v).", [disk]),
		sprintf("Write state_version = %s (disk + 1).", [_next_version]),
	],
} if {
	incoming := input.state.incoming.state_version
	disk := input.state.disk.state_version
	is_number(incoming)
	is_number(disk)
	incoming < disk
}

# ---------------------------------------------------------------------------
# V8: regression protection.

# METADATA
# title: Phase index goes back
# description: active_workflow.current_phase_index decreases; exempt when the write's recovery_action.type is rollback.
# custom:
#   code: DES-STATE-V8-INDEX
#   severity: deny
deny contains {
	"code": "DES-STATE-V8-INDEX",
	"msg": sprintf("%s: active_workflow.current_phase_index goes back from %v (on disk) to %v (in this write); the index only moves forward, so keep it at %v or above", [_path, disk, incoming, disk]),
	"field": "/active_workflow/current_phase_index",
	"recovery": [
		sprintf("Re-read %s and keep active_workflow.current_phase_index at %v or above.", [_path, disk]),
		"To return to an earlier phase on purpose, set active_workflow.recovery_action.type to \"rollback\" in the same write.",
	],
} if {
	incoming := input.state.incoming.active_workflow.current_phase_index
	disk := input.state.disk.active_workflow.current_phase_index
	is_number(incoming)
	is_number(disk)
	incoming < disk
	not _index_recovery_exempt
}

_status_recovery(k, old) := [
	sprintf("Re-read %s and keep phase %s at %s (or move it forward: pending → in_progress → completed).", [_path, k, old]),
	"To redo a completed phase under supervision, set active_workflow.supervised_review.status to \"redo_pending\" (or redo_count above 0) in the same write; that allows completed → in_progress only.",
	"For a deliberate recovery, set active_workflow.recovery_action.type to \"retry\" or \"rollback\" in the same write.",
]

# METADATA
# title: Phase status goes back (phase_status)
# description: |
#   active_workflow.phase_status[k] moves down pending < in_progress < completed.
#   Exempt: completed → in_progress under a supervised redo (supervised_review.status
#   redo_pending or redo_count > 0); any move when recovery_action.type is retry or rollback.
# custom:
#   code: DES-STATE-V8-STATUS
#   severity: deny
deny contains {
	"code": "DES-STATE-V8-STATUS",
	"msg": sprintf("%s: active_workflow.phase_status[%q] moves down from %q (on disk) to %q (in this write); a phase status only moves forward, pending → in_progress → completed%s%s", [_path, k, old, incoming, hint, _stale_exemption_hint]),
	"field": concat("/", ["", "active_workflow", "phase_status", strings.replace_n(_pointer_escape, sprintf("%v", [k]))]),
	"recovery": _status_recovery(k, old),
} if {
	not _status_recovery_exempt
	order := data.des.statewrite.status_order
	some k, incoming in input.state.incoming.active_workflow.phase_status
	old := input.state.disk.active_workflow.phase_status[k]
	incoming != old
	order[incoming] < order[old]
	not [old, incoming] in _redo_moves
	hint := concat("", [" (the supervised redo exemption allows completed → in_progress only)" | _supervised_redo])
}

# METADATA
# title: Phase status goes back (phases)
# description: |
#   phases[k].status moves down pending < in_progress < completed, with the same
#   exemptions as active_workflow.phase_status.
# custom:
#   code: DES-STATE-V8-STATUS
#   severity: deny
deny contains {
	"code": "DES-STATE-V8-STATUS",
	"msg": sprintf("%s: phases[%q].status moves down from %q (on disk) to %q (in this write); a phase status only moves forward, pending → in_progress → completed%s%s", [_path, k, old, incoming, hint, _stale_exemption_hint]),
	"field": concat("/", ["", "phases", strings.replace_n(_pointer_escape, sprintf("%v", [k])), "status"]),
	"recovery": _status_recovery(k, old),
} if {
	not _status_recovery_exempt
	order := data.des.statewrite.status_order
	some k, p in input.state.incoming.phases
	incoming := p.status
	old := input.state.disk.phases[k].status
	incoming != old
	order[incoming] < order[old]
	not [old, incoming] in _redo_moves
	hint := concat("", [" (the supervised redo exemption allows completed → in_progress only)" | _supervised_redo])
}

# V8 against des's memory, and after completed.

# m[k] is an ordered status.
_has_ordered(m, k) if _order[m[k]] >= 0

# The disk rule above already reports k going down from the disk's status.
_disk_lower(m, k, incoming) if _order[incoming] < _order[m[k]]

_redo_hint := concat("", [" (the supervised redo exemption allows completed → in_progress only)" | _supervised_redo])

# Where a regression is reported: [field text, JSON pointer] per location.
_where(loc, k) := [sprintf("active_workflow.phase_status[%q]", [k]), concat("/", ["", "active_workflow", "phase_status", strings.replace_n(_pointer_escape, sprintf("%v", [k]))])] if loc == "phase_status"

_where(loc, k) := [sprintf("phases[%q].status", [k]), concat("/", ["", "phases", strings.replace_n(_pointer_escape, sprintf("%v", [k])), "status"])] if loc == "phases"

# The maps each rule compares, by location.
_seen_of := {"phase_status": _seen_phase_status, "phases": _seen_phases}

_prev_of := {"phase_status": _prev_phase_status, "phases": _prev_phases}

_disk_of := {"phase_status": _disk_phase_status, "phases": _disk_phases}

_incoming_of := {"phase_status": _incoming_phase_status_map, "phases": _incoming_phase_status}

# METADATA
# title: Phase status goes back below what des saw
# description: |
#   A phase status (active_workflow.phase_status[k] or phases[k].status) moves
#   below the highest status des saw it reach since the workflow started,
#   though the disk may say less (a status lowered in an earlier write, or
#   the file replaced). Same exemptions as the disk rule.
# custom:
#   code: DES-STATE-V8-STATUS
#   severity: deny
deny contains {
	"code": "DES-STATE-V8-STATUS",
	"msg": sprintf("%s: %s is %q in this write, but des saw it reach %q since the workflow started (the file on disk says %s); a phase status only moves forward, pending → in_progress → completed, also across writes%s%s", [_path, where[0], incoming, prev, _status_text(_disk_of[loc], k), _redo_hint, _stale_exemption_hint]),
	"field": where[1],
	"recovery": _status_recovery(k, prev),
} if {
	not _status_recovery_exempt
	some loc, seen in _seen_of
	some k, prev in seen
	incoming := _incoming_of[loc][k]
	_order[incoming] < _order[prev]
	not _disk_lower(_disk_of[loc], k, incoming)
	not [prev, incoming] in _redo_moves
	where := _where(loc, k)
}

# METADATA
# title: Completed phase given another status or removed
# description: |
#   A phase whose status was completed (on disk, or as des saw it) gets an
#   unknown status, or loses its status while a workflow is active (not in
#   the write that starts a workflow, which lists its own phases): completed
#   is final, so anything else after it is a regression (the first step of
#   completed → reset → pending). Exempt: a recovery_action.type retry or
#   rollback introduced by the same write.
# custom:
#   code: DES-STATE-V8-STATUS
#   severity: deny
deny contains {
	"code": "DES-STATE-V8-STATUS",
	"msg": sprintf("%s: %s was %q but is %s in this write; %s is final, so an unknown status or a removed phase after it is a regression (a later write could then set it back to pending)%s", [_path, where[0], _top, what, _top, _stale_exemption_hint]),
	"field": where[1],
	"recovery": [
		sprintf("Keep %s at %q.", [where[0], _top]),
		"For a deliberate recovery, set active_workflow.recovery_action.type to \"retry\" or \"rollback\" in the same write (the disk must not have it already).",
	],
} if {
	not _status_recovery_exempt
	_incoming_workflow
	not _workflow_starts # a new workflow lists its own phases
	some loc, prev_map in _prev_of
	some k, prev in prev_map
	prev == _top
	not _has_ordered(_incoming_of[loc], k)
	what := _status_text(_incoming_of[loc], k)
	where := _where(loc, k)
}

# METADATA
# title: Phase index goes back below what des saw
# description: active_workflow.current_phase_index is below the highest index des saw since the workflow started; exempt when the write introduces recovery_action.type rollback.
# custom:
#   code: DES-STATE-V8-INDEX
#   severity: deny
deny contains {
	"code": "DES-STATE-V8-INDEX",
	"msg": sprintf("%s: active_workflow.current_phase_index is %v in this write, but des saw it reach %v since the workflow started; the index only moves forward, so keep it at %v or above", [_path, incoming, seen, seen]),
	"field": "/active_workflow/current_phase_index",
	"recovery": [
		sprintf("Keep active_workflow.current_phase_index at %v or above.", [seen]),
		"To return to an earlier phase on purpose, set active_workflow.recovery_action.type to \"rollback\" in the same write.",
	],
} if {
	not _index_recovery_exempt
	not _workflow_starts
	incoming := input.state.incoming.active_workflow.current_phase_index
	seen := input.state.seen.current_phase_index
	is_number(incoming)
	is_number(seen)
	incoming < seen
	not _disk_index_above(incoming)
}

_disk_index_above(incoming) if {
	disk := input.state.disk.active_workflow.current_phase_index
	is_number(disk)
	incoming < disk
}

# ---------------------------------------------------------------------------
# V1, V2, V3: completed phases without evidence (incoming document only).

_completed := {k | c := data.des.statewrite.completed_status; some k, s in _incoming_phase_status; s == c}

# METADATA
# title: Completed without constitutional validation
# description: phases[k].status is completed with constitutional_validation.iterations_used 0.
# custom:
#   code: DES-STATE-V1
#   severity: warn
warn contains {
	"code": "DES-STATE-V1",
	"msg": sprintf("%s: phase %q is completed but phases[%q].constitutional_validation.iterations_used is 0; run the constitutional validation and record its iterations before marking the phase completed", [_path, k, k]),
	"field": concat("/", ["", "phases", strings.replace_n(_pointer_escape, sprintf("%v", [k])), "constitutional_validation", "iterations_used"]),
	"recovery": [
		sprintf("Run the constitutional validation for phase %s and record iterations_used (1 or more).", [k]),
		sprintf("If phase %s is not really done, keep its status in_progress.", [k]),
	],
} if {
	some k in _completed
	input.state.incoming.phases[k].constitutional_validation.iterations_used == 0
}

# METADATA
# title: Completed without interactive elicitation
# description: phases[k].status is completed with iteration_requirements.interactive_elicitation.menu_interactions 0.
# custom:
#   code: DES-STATE-V2
#   severity: warn
warn contains {
	"code": "DES-STATE-V2",
	"msg": sprintf("%s: phase %q is completed but phases[%q].iteration_requirements.interactive_elicitation.menu_interactions is 0; elicit the requirements with the user and record the interactions before marking the phase completed", [_path, k, k]),
	"field": concat("/", ["", "phases", strings.replace_n(_pointer_escape, sprintf("%v", [k])), "iteration_requirements", "interactive_elicitation", "menu_interactions"]),
	"recovery": [
		sprintf("Run the interactive elicitation for phase %s and record menu_interactions (1 or more).", [k]),
		sprintf("If phase %s is not really done, keep its status in_progress.", [k]),
	],
} if {
	some k in _completed
	input.state.incoming.phases[k].iteration_requirements.interactive_elicitation.menu_interactions == 0
}

# METADATA
# title: Completed without test iterations
# description: phases[k].status is completed with iteration_requirements.test_iteration.current_iteration 0.
# custom:
#   code: DES-STATE-V3
#   severity: warn
warn contains {
	"code": "DES-STATE-V3",
	"msg": sprintf("%s: phase %q is completed but phases[%q].iteration_requirements.test_iteration.current_iteration is 0; run the tests and record the iteration before marking the phase completed", [_path, k, k]),
	"field": concat("/", ["", "phases", strings.replace_n(_pointer_escape, sprintf("%v", [k])), "iteration_requirements", "test_iteration", "current_iteration"]),
	"recovery": [
		sprintf("Run the test iteration for phase %s and record current_iteration (1 or more) and last_test_result.", [k]),
		sprintf("If phase %s is not really done, keep its status in_progress.", [k]),
	],
} if {
	some k in _completed
	input.state.incoming.phases[k].iteration_requirements.test_iteration.current_iteration == 0
}

# ---------------------------------------------------------------------------
# V9: mirrored fields disagree (incoming document only).

# METADATA
# title: Mirrored phase status disagrees
# description: phases[k].status differs from active_workflow.phase_status[k].
# custom:
#   code: DES-STATE-V9
#   severity: warn
warn contains {
	"code": "DES-STATE-V9",
	"msg": sprintf("%s: phases[%q].status is %q but active_workflow.phase_status[%q] is %q; the two mirror each other, so set both to the phase's real status", [_path, k, s, k, mirror]),
	"field": concat("/", ["", "phases", strings.replace_n(_pointer_escape, sprintf("%v", [k])), "status"]),
	"recovery": [sprintf("Set phases[%q].status and active_workflow.phase_status[%q] to the same value in the same write.", [k, k])],
} if {
	some k, s in _incoming_phase_status
	mirror := input.state.incoming.active_workflow.phase_status[k]
	s != mirror
}

# METADATA
# title: Mirrored current phase disagrees
# description: The top-level current_phase differs from active_workflow.current_phase.
# custom:
#   code: DES-STATE-V9
#   severity: warn
warn contains {
	"code": "DES-STATE-V9",
	"msg": sprintf("%s: current_phase is %q but active_workflow.current_phase is %q; the two mirror each other, so set both to the phase in progress", [_path, top, active]),
	"field": "/current_phase",
	"recovery": ["Set current_phase and active_workflow.current_phase to the same phase in the same write."],
} if {
	top := input.state.incoming.current_phase
	active := input.state.incoming.active_workflow.current_phase
	top != active
}

# METADATA
# title: Current phase disagrees with the phase index
# description: active_workflow.phases[current_phase_index] differs from active_workflow.current_phase (index in range).
# custom:
#   code: DES-STATE-V9
#   severity: warn
warn contains {
	"code": "DES-STATE-V9",
	"msg": sprintf("%s: active_workflow.current_phase is %q but active_workflow.phases[%v] (current_phase_index %v) is %q; set current_phase_index to the position of current_phase in phases, or current_phase to the phase at that index", [_path, active, i, i, at_index]),
	"field": "/active_workflow/current_phase",
	"recovery": ["Keep active_workflow.current_phase equal to active_workflow.phases[active_workflow.current_phase_index] in the same write."],
} if {
	i := input.state.incoming.active_workflow.current_phase_index
	at_index := input.state.incoming.active_workflow.phases[i]
	active := input.state.incoming.active_workflow.current_phase
	at_index != active
}

# ---------------------------------------------------------------------------
# Phase handshake (incoming document only).

_index_in_range if {
	i := input.state.incoming.active_workflow.current_phase_index
	i >= 0
	i <= count(input.state.incoming.active_workflow.phases)
	round(i) == i
}

# METADATA
# title: Phase index out of range
# description: active_workflow.current_phase_index is not an integer from 0 to len(active_workflow.phases) inclusive (the length means every phase is done).
# custom:
#   code: DES-STATE-HANDSHAKE-INDEX
#   severity: warn
warn contains {
	"code": "DES-STATE-HANDSHAKE-INDEX",
	"msg": sprintf("%s: active_workflow.current_phase_index is %v but active_workflow.phases has %s; the index must be an integer from 0 to %d (%d meaning every phase is done)", [_path, i, text.count_noun(n, "phase", "phases"), n, n]),
	"field": "/active_workflow/current_phase_index",
	"recovery": [sprintf("Set active_workflow.current_phase_index to the position of the current phase in active_workflow.phases (0 to %d), or to %d when every phase is done.", [n - 1, n])],
} if {
	i := input.state.incoming.active_workflow.current_phase_index
	is_number(i)
	is_array(input.state.incoming.active_workflow.phases)
	n := count(input.state.incoming.active_workflow.phases)
	not _index_in_range
}

# METADATA
# title: Current phase not in the workflow
# description: active_workflow.current_phase is not one of active_workflow.phases.
# custom:
#   code: DES-STATE-HANDSHAKE-PHASE
#   severity: warn
warn contains {
	"code": "DES-STATE-HANDSHAKE-PHASE",
	"msg": sprintf("%s: active_workflow.current_phase is %q, which is not in active_workflow.phases (%s); set it to one of the workflow's phases", [_path, active, concat(", ", [sprintf("%v", [p]) | some p in input.state.incoming.active_workflow.phases])]),
	"field": "/active_workflow/current_phase",
	"recovery": ["Set active_workflow.current_phase to a phase listed in active_workflow.phases, or add the phase to active_workflow.phases."],
} if {
	active := input.state.incoming.active_workflow.current_phase
	is_array(input.state.incoming.active_workflow.phases)
	not active in input.state.incoming.active_workflow.phases
}

# METADATA
# title: Phase status for a phase outside the workflow
# description: A key of active_workflow.phase_status is not in active_workflow.phases (one violation per key).
# custom:
#   code: DES-STATE-HANDSHAKE-KEY
#   severity: warn
warn contains {
	"code": "DES-STATE-HANDSHAKE-KEY",
	"msg": sprintf("%s: active_workflow.phase_status has an entry for %q, which is not in active_workflow.phases; remove the entry or add the phase to the workflow", [_path, k]),
	"field": concat("/", ["", "active_workflow", "phase_status", strings.replace_n(_pointer_escape, sprintf("%v", [k]))]),
	"recovery": [sprintf("Remove active_workflow.phase_status[%q], or add %q to active_workflow.phases.", [k, k])],
} if {
	some k in _stray_status_keys
}

_stray_status_keys := object.keys(input.state.incoming.active_workflow.phase_status) - {p | some p in input.state.incoming.active_workflow.phases} if {
	is_array(input.state.incoming.active_workflow.phases)
}

_active_phases := {k | a := data.des.statewrite.active_status; some k, s in input.state.incoming.active_workflow.phase_status; s == a}

# METADATA
# title: More than one phase in progress
# description: More than one active_workflow.phase_status entry is in_progress.
# custom:
#   code: DES-STATE-HANDSHAKE-ACTIVE
#   severity: warn
warn contains {
	"code": "DES-STATE-HANDSHAKE-ACTIVE",
	"msg": sprintf("%s: %d phases are in_progress in active_workflow.phase_status (%s); at most one phase runs at a time, so complete or reset the others", [_path, count(_active_phases), concat(", ", sort(_active_phases))]),
	"field": "/active_workflow/phase_status",
	"recovery": ["Keep exactly one phase in_progress: the one at active_workflow.current_phase; mark the others completed or pending."],
} if {
	count(_active_phases) > 1
}
