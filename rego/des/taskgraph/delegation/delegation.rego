# METADATA
# title: Delegations of task graph phases
# description: |
#   An Agent/Task call whose prompt names a phase of the task graph (a line
#   "Phase ID: <id>" or a marker <!-- DES-TASK-PHASE: <id> -->), checked
#   against the graph on disk (pre_invocation gate): DES-TASKGRAPH-UNKNOWN-PHASE,
#   DES-TASKGRAPH-WAVE, DES-TASKGRAPH-DEPENDENCY, DES-VERIFY-ESCALATE, and
#   DES-INTERNAL when the graph on disk cannot be used.
#   Input (built by Go):
#     input.task_phase   the phase id the prompt names, present only when it names one
#     input.task_graph   {path, document} of the graph on disk, or {path, problem, error};
#                        present only when the graph file exists
#   With no graph, or no phase id in the prompt, these rules give no opinion.
#   A phase of an earlier wave that a failed verification sent back (retries
#   above 0, not completed) may be delegated while current_wave stays on the
#   verification's wave: that is the re-implementation.
#   Re-delegating a phase that is in_progress, completed or failed is left
#   alone (a subagent may have died without stopping; a failed phase is run
#   again): only the wave, the dependencies and the retries are judged.
package des.taskgraph.delegation

import data.des.taskgraph.current_wave
import data.des.taskgraph.deps
import data.des.taskgraph.entries
import data.des.taskgraph.graph
import data.des.taskgraph.in_wave
import data.des.taskgraph.max_retries
import data.des.taskgraph.name
import data.des.taskgraph.path
import data.des.taskgraph.phase
import data.des.taskgraph.statuses_text
import data.des.taskgraph.wave_count
import data.des.text

_id := input.task_phase if {
	is_string(input.task_phase)
	trim_space(input.task_phase) != ""
}

_current := in_wave(entries, current_wave)

_wave_text := sprintf("the phases of wave %v are %s", [current_wave, statuses_text(_current)]) if count(_current) > 0

_wave_text := sprintf("every wave is done (current_wave %v, %s)", [current_wave, text.count_noun(wave_count, "wave", "waves")]) if {
	count(_current) == 0
	current_wave >= wave_count
}

_wave_text := sprintf("wave %v has no phases", [current_wave]) if {
	count(_current) == 0
	current_wave < wave_count
}

default _problem_text := "not a JSON object"

_problem_text := data.des.taskgraph.problem_text[input.task_graph.problem]

default _error := "no reason given"

_error := input.task_graph.error if is_string(input.task_graph.error)

# METADATA
# title: Task graph unusable
# description: The delegation names a task phase, but the task graph on disk is not valid JSON or not an object, so des cannot check it (fail closed).
# custom:
#   code: DES-INTERNAL
#   severity: deny
deny contains {
	"code": "DES-INTERNAL",
	"msg": sprintf("The prompt names task phase %q, but the task graph %s is %s (%s), so des cannot check the delegation; rewrite %s as one JSON object with waves[] (or remove it, and the prompt's phase id, when no plan runs)", [_id, path, _problem_text, _error, path]),
	"field": "",
} if {
	_id
	input.task_graph.problem
}

# METADATA
# title: Delegation of an unknown phase
# description: A delegation names a phase id the task graph does not hold.
# custom:
#   code: DES-TASKGRAPH-UNKNOWN-PHASE
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-UNKNOWN-PHASE",
	"msg": sprintf("The prompt names task phase %q, but the task graph %s has no phase_id %q; %s: name one of them in the prompt (Phase ID: <id>), or add the phase to the graph", [_id, path, _id, _wave_text]),
	"field": "/waves",
} if {
	_id
	graph
	not phase[_id]
}

# METADATA
# title: Delegation outside the current wave
# description: A delegation of a phase that is not in the task graph's current_wave.
# custom:
#   code: DES-TASKGRAPH-WAVE
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-WAVE",
	"msg": sprintf("The prompt delegates %s, but current_wave is %v in %s, and %s; delegate the phases of wave %v (des moves current_wave on when every phase of the wave is completed)", [name(e), current_wave, path, _wave_text, current_wave]),
	"field": "/current_wave",
} if {
	e := phase[_id]
	e.wave != current_wave
	not _reimplementation(e)
}

# METADATA
# title: Re-implementation after a failed verification
# description: |
#   A phase of an earlier wave that a failed verification sent back (retries
#   above 0, not completed): it runs again while current_wave stays on the
#   verification's wave, so the wave rule lets it through.
_reimplementation(e) if {
	e.wave < current_wave
	e.retries > 0
	e.status != data.des.taskgraph.completed_status
}

_dep_text(d) := sprintf("%s %q (%s)", [d.field, d.id, phase[d.id].status])

_dep_text(d) := sprintf("%s %q (not in the graph)", [d.field, d.id]) if not phase[d.id]

_open(e) := [d |
	some d in deps(e)
	not phase[d.id].status == data.des.taskgraph.completed_status
]

# METADATA
# title: Delegation before its dependencies completed
# description: A delegation of a phase whose dependencies (depends_on and verifies_phase_id) are not all completed.
# custom:
#   code: DES-TASKGRAPH-DEPENDENCY
#   severity: deny
deny contains {
	"code": "DES-TASKGRAPH-DEPENDENCY",
	"msg": sprintf("The prompt delegates %s, but its dependencies are not all %q: %s; delegate those first and wait until they complete", [name(e), data.des.taskgraph.completed_status, concat(", ", [_dep_text(d) | some d in open])]),
	"field": sprintf("%s/%s", [e.ptr, open[0].field]),
} if {
	e := phase[_id]
	open := _open(e)
	count(open) > 0
}

# METADATA
# title: Verification failed too often, the user must decide
# description: A delegation of a phase that has failed verification max_retries times (its retries at or above the graph's max_retries, default 3).
# custom:
#   code: DES-VERIFY-ESCALATE
#   severity: deny
deny contains {
	"code": "DES-VERIFY-ESCALATE",
	"msg": sprintf("Stop and ask the user: %s has failed verification %s (retries %v, max_retries %v in %s), so the user must decide what happens next. Do not delegate it again: tell the user what the verifications found and ask whether to change the plan, re-implement it differently, or stop", [name(e), text.count_noun(e.retries, "time", "times"), e.retries, max_retries, path]),
	"field": sprintf("%s/retries", [e.ptr]),
} if {
	e := phase[_id]
	e.retries >= max_retries
}
