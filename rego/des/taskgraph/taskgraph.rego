# METADATA
# title: Task graph
# description: |
#   The task graph of a delegating orchestrator (a plan run in waves, by
#   default .claude/state/active_task_graph.json, the setting
#   task_graph_file), read with the defaults of its format applied. This
#   package only reads the document; the rules are in des.taskgraph.write
#   (a write of the document, gathered by the document_write gate) and
#   des.taskgraph.delegation (an Agent/Task call naming a phase of it,
#   gathered by the pre_invocation gate). Kept small on purpose: the policy
#   loader compiles only the packages a gate refers to.
#
#   Input (built by Go):
#     input.task_graph.path           the document's slash path relative to the root
#     input.task_graph.problem        "invalid_json" | "not_object" | "too_large" (a write), "unreadable" (disk), only when the content is unusable
#     input.task_graph.error          the parser's reason, with problem
#     input.task_graph.document       the parsed document: the incoming one at
#                                     document_write, the one on disk at pre_invocation
#     input.task_graph.schema_errors  [{pointer, msg}] (document_write)
#     input.task_graph.disk           the document on disk (document_write), absent
#                                     when there is none or it does not parse
#     input.task_graph.evidence       des's record of its wave syncs (document_write):
#                                     {known, max_retries, phases: {incoming phase_id:
#                                     {status, retries, matched_by, recorded_id, agent, at}}}
#
#   The document: {task_id, description, tier, complexity_score, current_wave,
#   max_retries, waves: [{wave_id, parallel_execution, phases: [{phase_id,
#   type, objective, agent, depends_on[], verifies_phase_id,
#   deliverable_manifest: {files: [{path, must_exist}], tests[],
#   acceptance_criteria[]}, is_atomic, depth, estimated_minutes, status,
#   retries}]}]}. Defaults (data.json beside this file): depends_on [],
#   is_atomic false, status "pending", retries 0, max_retries 3,
#   parallel_execution false, current_wave 0. A null field counts as absent.
#
#   A wave is numbered by its position in waves (0, 1, 2, ...): current_wave
#   and "a later wave" mean that number. A wave_id, when given, must equal
#   the position (DES-TASKGRAPH-INVALID otherwise), so that a wave_id and
#   current_wave can never disagree. A phase is known by its first
#   occurrence; a repeated phase_id is DES-TASKGRAPH-INVALID.
package des.taskgraph

# METADATA
# title: The task graph
# description: input.task_graph.document when it is an object (undefined otherwise, and the rules give no opinion).
graph := input.task_graph.document if is_object(input.task_graph.document)

# METADATA
# title: Path of the task graph
# description: input.task_graph.path, else the setting task_graph_file; for messages.
default path := ".claude/state/active_task_graph.json"

_path_given if is_string(input.task_graph.path)

path := input.task_graph.path if _path_given

path := data.des.settings.config.task_graph_file if {
	not _path_given
	is_string(data.des.settings.config.task_graph_file)
}

# METADATA
# title: One phase, defaults applied
# description: |
#   The phase p at waves[wi].phases[pi] with its null fields dropped and the
#   defaults applied: {id, wave, index, where, ptr, type, status, depends_on
#   (its string ids), verifies (verifies_phase_id or null), atomic, retries,
#   files (the deliverable_manifest file paths), objective ("" when absent),
#   depth and minutes (estimated_minutes; null when absent)}. Built-ins only:
#   a user function call per field costs more than the rest (measured).
entry(wi, pi, p) := {
	"id": p.phase_id,
	"wave": wi,
	"index": pi,
	"where": sprintf("waves[%d].phases[%d]", [wi, pi]),
	"ptr": sprintf("/waves/%d/phases/%d", [wi, pi]),
	"type": object.get(q, "type", ""),
	"status": q.status,
	"depends_on": [d | some d in q.depends_on; is_string(d)],
	"verifies": object.get(q, "verifies_phase_id", null),
	"atomic": q.is_atomic == true,
	"retries": q.retries,
	"files": [f.path | some f in q.deliverable_manifest.files; is_string(f.path)],
	"objective": object.get(q, "objective", ""),
	"depth": object.get(q, "depth", null),
	"minutes": object.get(q, "estimated_minutes", null),
} if {
	q := object.union(data.des.taskgraph.defaults, {k: v | some k, v in p; v != null})
}

# METADATA
# title: The phases of a document
# description: Every phase of doc with a non-empty string phase_id, in document order, as entry() objects.
entries_of(doc) := [entry(wi, pi, p) |
	is_array(doc.waves)
	some wi, w in doc.waves
	is_array(w.phases)
	some pi, p in w.phases
	is_object(p)
	is_string(p.phase_id)
	trim_space(p.phase_id) != ""
]

# METADATA
# title: Phases by id
# description: The first phase of es with each id (a repeated id is reported by des.taskgraph.write).
by_id(es) := {e.id: e | some e in es} if unique(es)

by_id(es) := {id: first |
	some id in {e.id | some e in es}
	first := [e | some e in es; e.id == id][0]
} if not unique(es)

# METADATA
# title: Phase ids unique
# description: Whether no two phases of es share a phase_id (the common case, looked up without a scan per id).
unique(es) if count({e.id | some e in es}) == count(es)

# METADATA
# title: current_wave of a document
# description: doc.current_wave when it is a number, else the default (0).
current_wave_of(doc) := doc.current_wave if is_number(doc.current_wave)

else := data.des.taskgraph.defaults.current_wave

# METADATA
# title: Number of waves of a document
# description: count(doc.waves), 0 when waves is not an array.
wave_count_of(doc) := count(doc.waves) if is_array(doc.waves)

else := 0

# METADATA
# title: The phases of the graph
# description: entries_of(graph).
entries := [entry(wi, pi, p) |
	is_array(graph.waves)
	some wi, w in graph.waves
	is_array(w.phases)
	some pi, p in w.phases
	is_object(p)
	is_string(p.phase_id)
	trim_space(p.phase_id) != ""
]

# Rules rather than calls of entries_of and by_id: a function call with a
# large argument costs more than the work it does (measured).
_unique if count({e.id | some e in entries}) == count(entries)

# METADATA
# title: The phases of the graph by id
# description: by_id(entries).
phase := {e.id: e | some e in entries} if _unique

phase := {id: first |
	some id in {e.id | some e in entries}
	first := [e | some e in entries; e.id == id][0]
} if not _unique

# METADATA
# title: current_wave
# description: The graph's current_wave, default 0.
current_wave := current_wave_of(graph)

# METADATA
# title: Number of waves
# description: The number of waves of the graph.
wave_count := wave_count_of(graph)

# METADATA
# title: max_retries
# description: The graph's max_retries (default 3), how many failed verifications of a phase send the decision to the user.
max_retries := graph.max_retries if _own_max_retries

max_retries := data.des.taskgraph.defaults.max_retries if {
	graph
	not _own_max_retries
}

_own_max_retries if is_number(graph.max_retries)

# METADATA
# title: Phases of a wave
# description: The phases of es in wave w, in order.
in_wave(es, w) := [e | some e in es; e.wave == w]

# METADATA
# title: Phase ids with their statuses
# description: The ids of the phases es with their statuses, as in a (completed), b (pending).
statuses_text(es) := concat(", ", [sprintf("%s (%s)", [e.id, e.status]) | some e in es])

# METADATA
# title: A phase named in messages
# description: A phase as messages name it, as in waves[1].phases[0] (phase "verify-auth", wave 1).
name(e) := sprintf("%s (phase %q, wave %d)", [e.where, e.id, e.wave])

# METADATA
# title: Implementation phase
# description: Whether the phase's type is in the implementation types table.
implementation(e) if data.des.taskgraph.implementation_types[e.type] == true

# METADATA
# title: Verification phase
# description: Whether the phase's type is in the verification types table.
verification(e) if data.des.taskgraph.verification_types[e.type] == true

# METADATA
# title: Dependencies of a phase
# description: The phase's dependencies as [{field, id}], each depends_on id, then verifies_phase_id when set.
deps(e) := array.concat(
	[{"field": "depends_on", "id": d} | some d in e.depends_on],
	[{"field": "verifies_phase_id", "id": e.verifies} | e.verifies != null],
)
