# METADATA
# title: Task graph writes
# description: |
#   The rules on a write of the task graph document (document_write gate,
#   input.task_graph; see des.taskgraph for the input and the document):
#   DES-TASKGRAPH-INVALID, -WAVE-MIX, -WAVE-DEPENDENCY, -FILE-CONFLICT,
#   -UNVERIFIED, -DEPTH, -TRANSITION (deny) and -ATOMICITY (warn); and,
#   from des's record of its own wave syncs (input.task_graph.evidence),
#   DES-GRAPH-STATUS-UNSEEN, -PLAN-FINISHED, -WAVE-MOVED and
#   -RETRIES-RESET (deny): only des's wave sync finishes a phase or moves
#   current_wave, and retries belong to a phase whatever the task_id.
#   Choices where the format is silent:
#   - a depends_on or verifies_phase_id naming a phase the graph does not
#     hold is DES-TASKGRAPH-INVALID (a dangling reference), not a wave rule;
#   - a wave_id other than the wave's position, a current_wave that is not
#     a whole number from 0 to the number of waves (that number meaning every
#     wave is done), and a tier not in the tier table are
#     DES-TASKGRAPH-INVALID;
#   - an atomic phase without depth counts as depth 0; a graph with neither
#     a usable tier nor a complexity_score is of the default tier (3: an
#     uncertain tier counts as the higher one);
#   - transitions compare the incoming document with the one on disk, phase
#     by phase_id: a phase new to the graph counts as coming from pending;
#     a phase may leave the graph only while it is pending and has never
#     failed verification, and a phase that has run keeps its type and
#     verifies_phase_id (a phase that started, completed, failed or was sent
#     back is the plan's history); a phase's retries never go down and
#     max_retries never goes up; a phase that failed verification
#     max_retries times (and the verification phases verifying it) keeps
#     its status until the user decides; a write whose task_id differs from
#     the disk's (both set) starts a new plan and is not compared, unless
#     the plan on disk has such an escalated phase. current_wave may stay, or move to the next wave once
#     every phase of the wave it leaves is completed in the incoming
#     document (one write may complete the last phase and advance).
#   With an unusable document (input.task_graph.problem) only
#   DES-TASKGRAPH-INVALID is reported. Every table is data (data.json in
#   des/taskgraph).
package des.taskgraph.write

import data.des.taskgraph.by_id
import data.des.taskgraph.current_wave
import data.des.taskgraph.current_wave_of
import data.des.taskgraph.deps
import data.des.taskgraph.entries
import data.des.taskgraph.entries_of
import data.des.taskgraph.graph
import data.des.taskgraph.implementation
import data.des.taskgraph.in_wave
import data.des.taskgraph.max_retries
import data.des.taskgraph.name
import data.des.taskgraph.path
import data.des.taskgraph.phase
import data.des.taskgraph.statuses_text
import data.des.taskgraph.verification
import data.des.taskgraph.wave_count
import data.des.text

_shape := "one JSON object with waves[] (each wave with phases[], each phase with phase_id and type)"

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-INVALID

default _problem_text := "not a JSON object"

_problem_text := data.des.taskgraph.problem_text[input.task_graph.problem]

default _error := "no reason given"

_error := input.task_graph.error if is_string(input.task_graph.error)

# METADATA
# title: Task graph invalid
# description: The task graph write is not a JSON object, fails the task graph schema (one violation per schema error, with its pointer), repeats a phase_id, names an unknown phase in depends_on or verifies_phase_id, or has a wave_id, current_wave or tier out of range.
# custom:
#   code: DES-TASKGRAPH-INVALID
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-INVALID",
	"msg": sprintf("%s: the write would leave it %s (%s); write %s", [path, _problem_text, _error, _shape]),
	"field": "",
} if input.task_graph.problem

deny contains {
	"code": "DES-TASKGRAPH-INVALID",
	"msg": sprintf("%s: %s: %s", [path, where, e.msg]),
	"field": e.pointer,
} if {
	some e in input.task_graph.schema_errors
	where := object.get({"": "the top level"}, e.pointer, e.pointer)
}

deny contains {
	"code": "DES-TASKGRAPH-INVALID",
	"msg": sprintf("%s: phase_id %q is used by %d phases (%s); every phase_id must be unique: rename all but one", [path, id, count(where), concat(", ", where)]),
	"field": sprintf("%s/phase_id", [same[1].ptr]),
} if {
	count(entries) != count(phase)
	some id, _ in phase
	same := [e | some e in entries; e.id == id]
	count(same) > 1
	where := [e.where | some e in same]
}

deny contains {
	"code": "DES-TASKGRAPH-INVALID",
	"msg": sprintf("%s: %s names %q in %s, but the graph has no phase %q; name an existing phase_id, or add the phase", [path, name(e), d.id, d.field, d.id]),
	"field": sprintf("%s/%s", [e.ptr, d.field]),
} if {
	some e in entries
	some d in deps(e)
	not phase[d.id]
}

deny contains {
	"code": "DES-TASKGRAPH-INVALID",
	"msg": sprintf("%s: waves[%d].wave_id is %v, but the wave is at position %d of waves: wave ids count 0, 1, 2, ... in the order of waves (current_wave names a wave by that number); set wave_id to %d or leave it out", [path, i, w.wave_id, i, i]),
	"field": sprintf("/waves/%d/wave_id", [i]),
} if {
	is_array(graph.waves)
	some i, w in graph.waves
	w.wave_id != null
	w.wave_id != i
}

deny contains {
	"code": "DES-TASKGRAPH-INVALID",
	"msg": sprintf("%s: current_wave is %v, but the graph has %s: current_wave is a whole number from 0 to %d (%d meaning every wave is done)", [path, graph.current_wave, text.count_noun(wave_count, "wave", "waves"), wave_count, wave_count]),
	"field": "/current_wave",
} if {
	is_number(graph.current_wave)
	not _wave_in_range(graph.current_wave)
}

_wave_in_range(n) if {
	n == floor(n)
	n >= 0
	n <= wave_count
}

deny contains {
	"code": "DES-TASKGRAPH-INVALID",
	"msg": sprintf("%s: tier is %v; a tier is one of %s, or leave it out so that complexity_score decides", [path, graph.tier, concat(", ", sort(object.keys(data.des.taskgraph.tier_min_depth)))]),
	"field": "/tier",
} if {
	graph.tier != null
	not _tier_given
}

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-WAVE-MIX

_ids_text(es) := concat(", ", [sprintf("%q", [e.id]) | some e in es])

# METADATA
# title: Implementation and verification in one wave
# description: A wave holds an implementation phase and a verification phase; a verification runs in a later wave than the phase it verifies.
# custom:
#   code: DES-TASKGRAPH-WAVE-MIX
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-WAVE-MIX",
	"msg": sprintf("%s: wave %d (waves[%d].phases) mixes implementation phases (%s) with verification phases (%s); a wave holds either kind, not both: move the verification phases to a later wave", [path, w, w, _ids_text(impl), _ids_text(ver)]),
	"field": sprintf("/waves/%d/phases", [w]),
} if {
	some w in (_impl_waves & _verification_waves)
	impl := [e | some e in in_wave(entries, w); implementation(e)]
	ver := [e | some e in in_wave(entries, w); verification(e)]
}

_impl_waves := {e.wave | some e in entries; implementation(e)}

_verification_waves := {e.wave | some e in entries; verification(e)}

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-WAVE-DEPENDENCY

_dep_fix := {
	"depends_on": "a phase depends only on phases of earlier waves",
	"verifies_phase_id": "a verification runs in a later wave than the phase it verifies",
}

# METADATA
# title: Dependency on the same or a later wave
# description: A phase names in depends_on or verifies_phase_id a phase of its own wave or of a later one.
# custom:
#   code: DES-TASKGRAPH-WAVE-DEPENDENCY
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-WAVE-DEPENDENCY",
	"msg": sprintf("%s: %s names %q in %s, but %q is in wave %d, %s; %s: %s", [path, name(e), d.id, d.field, d.id, other.wave, _when(e, other), _dep_fix[d.field], _move(e, other)]),
	"field": sprintf("%s/%s", [e.ptr, d.field]),
} if {
	some e in entries
	some d in deps(e)
	other := phase[d.id]
	other.wave >= e.wave
}

_move(e, other) := sprintf("move %q to a wave after %d, or %q to a wave before %d", [e.id, other.wave, other.id, e.wave]) if e.wave > 0

_move(e, other) := sprintf("move %q to a wave after %d", [e.id, other.wave]) if e.wave == 0

_when(e, other) := "the same wave" if e.wave == other.wave

_when(e, other) := "a later wave" if e.wave < other.wave

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-FILE-CONFLICT

# A deliverable path compared without a leading "./" and with "/" separators.
_norm_path(p) := trim_prefix(replace(trim_space(p), "\\", "/"), "./")

# [wave, path, phase id] of every file a phase of a parallel wave writes
# (any type but the read-only ones), sorted: claims of one file in one wave
# are neighbours, so a conflict is found without comparing every pair.
_claims := sort({[e.wave, _norm_path(p), e.id] |
	some e in entries
	graph.waves[e.wave].parallel_execution == true
	not data.des.taskgraph.read_only_types[e.type] == true
	some p in e.files
})

_conflicts contains [c[0], c[1]] if {
	some i, c in _claims
	i > 0
	prev := _claims[i - 1]
	prev[0] == c[0]
	prev[1] == c[1]
}

# METADATA
# title: Parallel phases write the same file
# description: Two phases of one parallel wave (parallel_execution true) that write files (any type but verification) list the same deliverable_manifest file.
# custom:
#   code: DES-TASKGRAPH-FILE-CONFLICT
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-FILE-CONFLICT",
	"msg": sprintf("%s: in wave %d (parallel_execution true), phases %s all list %q in deliverable_manifest.files; phases of a parallel wave run at once and must not write the same file: move all but one to other waves, or set waves[%d].parallel_execution to false", [path, w, concat(", ", [sprintf("%q", [id]) | some id in owners]), f, w]),
	"field": sprintf("/waves/%d/parallel_execution", [w]),
} if {
	some [w, f] in _conflicts
	owners := [c[2] | some c in _claims; c[0] == w; c[1] == f]
}

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-UNVERIFIED

_verifier_list := [v | some v in entries; v.verifies != null; verification(v)]

# The latest wave of a verification of each verified phase id.
_latest_verification := {id: max([v.wave | some v in _verifier_list; v.verifies == id]) |
	some id in {v.verifies | some v in _verifier_list}
}

_verifiers(e) := [v | some v in _verifier_list; v.verifies == e.id]

_not_later(e) := "" if count(_verifiers(e)) == 0

_not_later(e) := sprintf(" (%s verifies it, but not from a later wave)", [_ids_text(_verifiers(e))]) if count(_verifiers(e)) > 0

# METADATA
# title: Implementation phase never verified
# description: An implementation phase that no verification phase of a later wave verifies (verifies_phase_id).
# custom:
#   code: DES-TASKGRAPH-UNVERIFIED
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-UNVERIFIED",
	"msg": sprintf("%s: %s is an implementation phase that no verification phase of a later wave verifies%s; add a phase with type \"verification\" and verifies_phase_id %q to a wave after %d", [path, name(e), _not_later(e), e.id, e.wave]),
	"field": e.ptr,
} if {
	some e in entries
	implementation(e)
	not _verified_later(e)
}

_verified_later(e) if _latest_verification[e.id] > e.wave

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-DEPTH

_tier_key(t) := sprintf("%v", [t])

_tier_given if data.des.taskgraph.tier_min_depth[_tier_key(graph.tier)]

_complexity_tier := 1 if {
	is_number(graph.complexity_score)
	graph.complexity_score < data.des.taskgraph.complexity_tiers.tier_1_below
}

_complexity_tier := 2 if {
	is_number(graph.complexity_score)
	graph.complexity_score >= data.des.taskgraph.complexity_tiers.tier_1_below
	graph.complexity_score <= data.des.taskgraph.complexity_tiers.tier_2_up_to
}

_complexity_tier := 3 if {
	is_number(graph.complexity_score)
	graph.complexity_score > data.des.taskgraph.complexity_tiers.tier_2_up_to
}

_score_used if {
	not _tier_given
	is_number(graph.complexity_score)
}

# METADATA
# title: Tier of the graph
# description: tier when it is in the tier table, else from complexity_score (below 5 → 1, up to 15 → 2, else 3), else the default tier (3).
tier := graph.tier if _tier_given

tier := _complexity_tier if _score_used

tier := data.des.taskgraph.default_tier if {
	graph
	not _tier_given
	not _score_used
}

_tier_from := "set by tier" if _tier_given

_tier_from := sprintf("from complexity_score %v", [graph.complexity_score]) if _score_used

_tier_from := "the default: the graph sets neither tier nor complexity_score" if {
	not _tier_given
	not _score_used
}

_depth(e) := e.depth if e.depth != null

else := 0

_depth_text(e) := sprintf("depth %v", [e.depth]) if e.depth != null

else := "no depth (counted as 0)"

# METADATA
# title: Atomic phase not decomposed deep enough
# description: An atomic phase (is_atomic true) whose depth (0 when absent) is below its tier's minimum (tier 1 → 1, 2 → 2, 3 → 3).
# custom:
#   code: DES-TASKGRAPH-DEPTH
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-DEPTH",
	"msg": sprintf("%s: %s is atomic (is_atomic true) with %s, below %d, the minimum depth of tier %v (%s); decompose it further and set depth to at least %d, or set is_atomic to false", [path, name(e), _depth_text(e), least, tier, _tier_from, least]),
	"field": sprintf("%s/depth", [e.ptr]),
} if {
	least := data.des.taskgraph.tier_min_depth[_tier_key(tier)]
	some e in entries
	e.atomic
	_depth(e) < least
}

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-ATOMICITY (warn)

_words(s) := [w | some w in regex.split(`\s+`, trim_space(s)); w != ""]

# METADATA
# title: Atomic phase looks too big
# description: An atomic phase whose objective has more than 10 words, whose deliverable_manifest lists more than 3 files, or whose estimated_minutes exceeds 30 (one warning per criterion).
# custom:
#   code: DES-TASKGRAPH-ATOMICITY
#   severity: warn
warn contains {
	"code": "DES-TASKGRAPH-ATOMICITY",
	"msg": sprintf("%s: %s is atomic, but its objective has %d words (more than %d); an atomic phase does one thing: shorten the objective or split the phase", [path, name(e), n, limit]),
	"field": sprintf("%s/objective", [e.ptr]),
} if {
	limit := data.des.taskgraph.atomicity.max_objective_words
	some e in entries
	e.atomic
	n := count(_words(e.objective))
	n > limit
}

warn contains {
	"code": "DES-TASKGRAPH-ATOMICITY",
	"msg": sprintf("%s: %s is atomic, but deliverable_manifest.files lists %d files (more than %d); split the phase so that each writes at most %d files", [path, name(e), n, limit, limit]),
	"field": sprintf("%s/deliverable_manifest/files", [e.ptr]),
} if {
	limit := data.des.taskgraph.atomicity.max_files
	some e in entries
	e.atomic
	n := count(e.files)
	n > limit
}

warn contains {
	"code": "DES-TASKGRAPH-ATOMICITY",
	"msg": sprintf("%s: %s is atomic, but estimated_minutes is %v (more than %d); split it into phases of at most %d minutes", [path, name(e), e.minutes, limit, limit]),
	"field": sprintf("%s/estimated_minutes", [e.ptr]),
} if {
	limit := data.des.taskgraph.atomicity.max_estimated_minutes
	some e in entries
	e.atomic
	e.minutes != null
	e.minutes > limit
}

# ---------------------------------------------------------------------------
# DES-TASKGRAPH-TRANSITION: the incoming document against the one on disk.

_disk := input.task_graph.disk if is_object(input.task_graph.disk)

# A new plan (another task_id) is not compared with the old one.
_new_plan if {
	is_string(graph.task_id)
	is_string(_disk.task_id)
	graph.task_id != _disk.task_id
}

_compared if {
	graph
	_disk
	not _new_plan
}

# Every phase on disk, by id, compared or not (a new plan replacing one
# with an escalated phase is judged on it).
_disk_all := by_id(entries_of(_disk)) if {
	graph
	_disk
}

_disk_phase := _disk_all if _compared

_allowed(from, to) if data.des.taskgraph.status_transitions[from][to] == true

_transitions_text := concat(", ", sort([sprintf("%s → %s", [f, t]) |
	some f, tos in data.des.taskgraph.status_transitions
	some t, on in tos
	on == true
]))

# The status a phase had on disk: a phase new to the graph counts as pending.
_from(e) := _disk_phase[e.id].status

_from(e) := data.des.taskgraph.defaults.status if not _disk_phase[e.id]

_on_disk(e) := "" if _disk_phase[e.id]

_on_disk(e) := " (new to the graph, so it counts as pending)" if not _disk_phase[e.id]

# METADATA
# title: Task graph status change out of order
# description: |
#   Compared with the document on disk: a phase status change outside
#   pending → in_progress → completed | failed and failed → in_progress
#   (a new phase counts as pending); a phase that has run (not pending, or
#   retries above 0) leaving the graph or changing its type or
#   verifies_phase_id; retries going down or max_retries going up; a phase
#   that failed verification max_retries times, or a verification of it,
#   changing status, or a new task_id replacing its plan; current_wave moving
#   other than to the next wave once every phase of the wave it leaves is completed.
# custom:
#   code: DES-TASKGRAPH-TRANSITION
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: %s moves status from %q to %q%s; %s (a phase moves only %s)", [path, name(e), from, e.status, _on_disk(e), _moves_text(from), _transitions_text]),
	"field": sprintf("%s/status", [e.ptr]),
} if {
	_compared
	some e in entries
	from := _from(e)
	from != e.status
	not _allowed(from, e.status)
}

_next_of(from) := {t | some t, on in data.des.taskgraph.status_transitions[from]; on == true}

_moves_text(from) := sprintf("from %q it may move only to %s", [from, concat(" or ", [sprintf("%q", [t]) | some t in sort(_next_of(from))])]) if count(_next_of(from)) > 0

_moves_text(from) := sprintf("%q is final: leave it as it is", [from]) if {
	data.des.taskgraph.statuses[from] == true
	count(_next_of(from)) == 0
}

_moves_text(from) := sprintf("%q is not a status (%s): set it to one of them", [from, concat(", ", sort(object.keys(data.des.taskgraph.statuses)))]) if {
	not data.des.taskgraph.statuses[from] == true
	count(_next_of(from)) == 0
}

deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: %s (status %q, retries %v on disk) is missing from the write; a phase may leave the plan only while it is %q and has never failed verification (one that started, completed, failed or was sent back is the plan's history): keep it, or write a new plan with another task_id", [path, name(old), old.status, old.retries, data.des.taskgraph.defaults.status]),
	"field": "/waves",
} if {
	_compared
	some id, old in _disk_phase
	not phase[id]
	_ran(old)
}

# A phase on disk that has run: its status left pending, or a failed
# verification sent it back.
_ran(old) if old.status != data.des.taskgraph.defaults.status

_ran(old) if old.retries > 0

_ran_fields := {"type": "type", "verifies": "verifies_phase_id"}

deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: %s changes %s from %v to %v, but it has run (status %q, retries %v on disk); what a phase that ran was, and what it verified, is the plan's history (a changed type could drop the verification an implementation needs): keep %s as it is, or add a new phase", [path, name(e), field, old[key], e[key], old.status, old.retries, field]),
	"field": sprintf("%s/%s", [e.ptr, field]),
} if {
	_compared
	some e in entries
	old := _disk_phase[e.id]
	_ran(old)
	some key, field in _ran_fields
	e[key] != old[key]
}

# Escalated on disk: a phase that failed verification max_retries times and
# is not completed (DES-VERIFY-ESCALATE). Until the user decides (editing
# the file themselves), a write changes neither its status nor that of the
# verification phases verifying it, nor starts a new plan over it.
_disk_max := _num_or_default(object.get(_disk, "max_retries", null))

_escalated contains id if {
	some id, old in _disk_all
	is_number(old.retries)
	old.retries >= _disk_max
	old.status != data.des.taskgraph.completed_status
}

_frozen contains id if _escalated[id]

_frozen contains id if {
	some id, old in _disk_all
	_escalated[old.verifies]
}

_user_decides := "the user decides what happens next (DES-VERIFY-ESCALATE): stop and ask the user; they can edit the file themselves"

deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: the write starts a new plan (task_id %q, %q on disk) over a plan whose phases %s failed verification max_retries (%v) times; %s", [path, graph.task_id, _disk.task_id, _ids_text([_disk_all[id] | some id in _escalated]), _disk_max, _user_decides]),
	"field": "/task_id",
} if {
	_new_plan
	count(_escalated) > 0
}

deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: %s moves status from %q to %q, but %s; %s", [path, name(e), old.status, e.status, _frozen_why(old), _user_decides]),
	"field": sprintf("%s/status", [e.ptr]),
} if {
	_compared
	some e in entries
	_frozen[e.id]
	old := _disk_phase[e.id]
	e.status != old.status
}

_frozen_why(old) := sprintf("it failed verification %s (max_retries %v)", [text.count_noun(old.retries, "time", "times"), _disk_max]) if _escalated[old.id]

_frozen_why(old) := sprintf("it verifies %q, which failed verification max_retries (%v) times", [old.verifies, _disk_max]) if not _escalated[old.id]

deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: %s has retries %v, but %v on disk; retries count failed verifications and never go down: after max_retries (%v) failures the user decides (they can edit the file themselves)", [path, name(e), e.retries, old.retries, max_retries]),
	"field": sprintf("%s/retries", [e.ptr]),
} if {
	_compared
	some e in entries
	old := _disk_phase[e.id]
	e.retries < old.retries
}

_disk_max_retries := object.get(_disk, "max_retries", null) if _compared

deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: max_retries goes from %v to %v; max_retries never goes up in a write: after max_retries failed verifications the user decides (they can edit the file themselves)", [path, old, max_retries]),
	"field": "/max_retries",
} if {
	old := _num_or_default(_disk_max_retries)
	max_retries > old
}

_num_or_default(v) := v if is_number(v)

else := data.des.taskgraph.defaults.max_retries

_disk_wave := current_wave_of(_disk) if _compared

_left := in_wave(entries, _disk_wave)

_unfinished := [e | some e in _left; e.status != data.des.taskgraph.completed_status]

# METADATA
# title: current_wave moved out of order
# description: current_wave moves other than to the next wave, or to the next wave while a phase of the current one is not completed.
# custom:
#   code: DES-TASKGRAPH-TRANSITION
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: current_wave moves from %v to %v; it moves only to the next wave (%v), once every phase of wave %v is %q: leave it at %v", [path, _disk_wave, current_wave, _disk_wave + 1, _disk_wave, data.des.taskgraph.completed_status, _disk_wave]),
	"field": "/current_wave",
} if {
	current_wave != _disk_wave
	current_wave != _disk_wave + 1
}

deny contains {
	"code": "DES-TASKGRAPH-TRANSITION",
	"msg": sprintf("%s: current_wave moves from %v to %v while wave %v is not done: %s; current_wave moves on once every phase of the wave is %q (des advances it itself when the last phase's subagent stops): leave it at %v", [path, _disk_wave, current_wave, _disk_wave, statuses_text(_unfinished), data.des.taskgraph.completed_status, _disk_wave]),
	"field": "/current_wave",
} if {
	current_wave == _disk_wave + 1
	count(_unfinished) > 0
}

# ---------------------------------------------------------------------------
# Evidence: only des's wave sync finishes a phase (DES-GRAPH-STATUS-UNSEEN,
# DES-GRAPH-PLAN-FINISHED), moves current_wave (DES-GRAPH-WAVE-MOVED), and
# retries belong to the phase across task_ids (DES-GRAPH-RETRIES-RESET).
# input.task_graph.evidence is des's record of its own syncs (Go keeps it in
# des's state directory, outside the project): {known, max_retries,
# phases: {incoming phase_id: {status, retries, matched_by, recorded_id,
# agent, at}}}; a phase is matched by phase_id, else by its content (type,
# objective, files), so a renamed plan or phase keeps its history.

_evidence := input.task_graph.evidence if is_object(input.task_graph.evidence)

else := {"known": false}

_seen(e) := _evidence.phases[e.id] if is_object(_evidence.phases[e.id])

_finished(s) if data.des.taskgraph.finished_statuses[s] == true

# des's record shows the status the write leaves.
_evidenced(e) if _seen(e).status == e.status

_seen_text(e) := sprintf("des's record shows the last run of %q (%s%s) ended %q at %s, not %q", [e.id, _seen(e).recorded_id, _matched_text(_seen(e)), _seen(e).status, _seen(e).at, e.status]) if _seen(e)

else := sprintf("des saw no subagent run of %q end (des records the phase when the subagent it allowed for it stops)", [e.id])

_matched_text(s) := "" if s.matched_by == "phase_id"

else := sprintf(", the same phase by its content under another phase_id", [])

_agent_of(e) := sprintf("its subagent (%s)", [graph.waves[e.wave].phases[e.index].agent]) if is_string(graph.waves[e.wave].phases[e.index].agent)

else := "its subagent"

_finish_how(e) := sprintf("delegate %q to %s with the line \"Phase ID: %s\" in the prompt; des marks it completed, or failed, when that subagent stops", [e.id, _agent_of(e), e.id]) if e.status != "escalated"

_finish_how(e) := "des escalates a phase itself: after max_retries failed verifications a delegation of it is DES-VERIFY-ESCALATE and the user decides" if e.status == "escalated"

# METADATA
# title: Phase finished by a write
# description: |
#   A write of the task graph leaves a phase completed, failed or escalated
#   (finished_statuses) that the disk does not already hold so, and des's
#   record of its wave syncs does not show the subagent run that set it.
#   Only des's wave sync finishes a phase, when the subagent it allowed for
#   the phase stops.
# custom:
#   code: DES-GRAPH-STATUS-UNSEEN
#   severity: deny
deny contains {
	"code": "DES-GRAPH-STATUS-UNSEEN",
	"msg": sprintf("%s: %s moves status from %q to %q, but %s; only des's wave sync finishes a phase: leave it %q and %s", [path, name(e), from, e.status, _seen_text(e), from, _finish_how(e)]),
	"field": sprintf("%s/status", [e.ptr]),
} if {
	_compared
	some e in entries
	_finished(e.status)
	from := _from(e)
	from != e.status
	not _evidenced(e)
}

# METADATA
# title: New plan with finished phases
# description: |
#   A write that starts a plan (no graph on disk, or another task_id) with a
#   phase completed, failed or escalated that des's record does not show, or
#   with current_wave past a wave that is not complete.
# custom:
#   code: DES-GRAPH-PLAN-FINISHED
#   severity: deny
deny contains {
	"code": "DES-GRAPH-PLAN-FINISHED",
	"msg": sprintf("%s: the write starts a plan%s with %s %q, but %s; a new plan starts with its phases %q (des finishes each when its subagent stops): set it to %q, then %s", [path, _plan_text, name(e), e.status, _seen_text(e), data.des.taskgraph.defaults.status, data.des.taskgraph.defaults.status, _finish_how(e)]),
	"field": sprintf("%s/status", [e.ptr]),
} if {
	graph
	not _compared
	some e in entries
	_finished(e.status)
	not _evidenced(e)
}

deny contains {
	"code": "DES-GRAPH-PLAN-FINISHED",
	"msg": sprintf("%s: the write starts a plan%s at current_wave %v, but wave %v is not complete: %s; a new plan starts at the first wave with a phase not completed (%v), and des moves current_wave on when the last phase of a wave is completed by its subagent's stop: set current_wave to %v", [path, _plan_text, current_wave, _first_open, statuses_text(_open_in_first), _first_open, _first_open]),
	"field": "/current_wave",
} if {
	graph
	not _compared
	is_number(_first_open)
	_wave_in_range(current_wave)
	current_wave > _first_open
}

_plan_text := sprintf(" (task_id %q; %q on disk)", [graph.task_id, _disk.task_id]) if _new_plan

else := " (no graph on disk)" if not _disk

else := ""

_open_waves := {e.wave | some e in entries; e.status != data.des.taskgraph.completed_status}

_first_open := min(_open_waves) if count(_open_waves) > 0

_open_in_first := [e | some e in entries; e.wave == _first_open; e.status != data.des.taskgraph.completed_status]

# METADATA
# title: current_wave moved by a write
# description: |
#   A write of the task graph changes current_wave from the value on disk.
#   des's wave sync moves it, when the last phase of the current wave is
#   completed by its subagent's stop.
# custom:
#   code: DES-GRAPH-WAVE-MOVED
#   severity: deny
deny contains {
	"code": "DES-GRAPH-WAVE-MOVED",
	"msg": sprintf("%s: current_wave moves from %v to %v in a write; only des's wave sync moves it, once every phase of wave %v is completed by its subagent's stop (%s): leave current_wave at %v", [path, _disk_wave, current_wave, _disk_wave, _wave_state, _disk_wave]),
	"field": "/current_wave",
} if {
	_compared
	current_wave != _disk_wave
}

_disk_left := in_wave(entries_of(_disk), _disk_wave)

_wave_state := sprintf("on disk now: %s", [statuses_text(_disk_left)]) if count(_disk_left) > 0

else := "the wave holds no phase on disk"

# METADATA
# title: Retries below des's count
# description: |
#   A write leaves a phase with fewer retries than the failed verifications
#   des counted for it (matched by phase_id or by content, whatever the
#   plan's task_id), or raises max_retries above the value des last synced
#   in a new plan: escalation (DES-VERIFY-ESCALATE) cannot be put off by
#   renaming the plan.
# custom:
#   code: DES-GRAPH-RETRIES-RESET
#   severity: deny
deny contains {
	"code": "DES-GRAPH-RETRIES-RESET",
	"msg": sprintf("%s: %s has retries %v, but des counted %v failed verifications of it (%s%s); retries belong to the phase whatever the plan's task_id, so that after max_retries (%v) the user decides: keep retries at %v or more", [path, name(e), e.retries, s.retries, s.recorded_id, _matched_text(s), max_retries, s.retries]),
	"field": sprintf("%s/retries", [e.ptr]),
} if {
	some e in entries
	s := _seen(e)
	is_number(s.retries)
	is_number(e.retries)
	e.retries < s.retries
}

deny contains {
	"code": "DES-GRAPH-RETRIES-RESET",
	"msg": sprintf("%s: the write starts a plan%s with max_retries %v, above %v, the plan's max_retries when des last recorded a run of it; max_retries does not go up in a write (after max_retries failed verifications the user decides; they can edit the file themselves): keep max_retries at %v or less", [path, _plan_text, max_retries, _evidence.max_retries, _evidence.max_retries]),
	"field": "/max_retries",
} if {
	not _compared
	count(_evidence.phases) > 0
	is_number(_evidence.max_retries)
	max_retries > _evidence.max_retries
}
