# METADATA
# title: Phase workflow guards
# description: |
#   The iSDLC phase workflow guards of a multi-phase workflow (Claude Code
#   orchestrators delegating SDLC phases): phase delegations checked against
#   the workflow state, advancement attempts against the phase's
#   requirements, the iteration corridors and phase-completion claims. The
#   pre_invocation gate gathers deny and warn of this package; the tool_use
#   gate gathers des.phases.branch (git commit) and des.phases.observers
#   (PostToolUse of Agent/Task).
#   Every table is data: data.json beside this file (agents, aliases, phrases,
#   ...) and requirements/data.json (the requirement defaults, iSDLC's own
#   iteration-requirements.json and artifact-paths.json, verbatim).
#   Input (built by Go):
#     input.tool           "Agent" | "Task" | "Skill"
#     input.call           Agent/Task {subagent_type, prompt, description};
#                          Skill {skill, args}
#     input.workflow       {state_file, project, problem, error, state, plan,
#                          requirements, artifacts}, present only when a state
#                          file was found; state is the parsed document, absent
#                          with problem.
#   A null field counts as absent everywhere.
package des.phases

# Inputs are read by reference with defaults, never with object.get(input,
# ...), which would copy the whole input on every call.

# The workflow state document, when it could be used.
_state := input.workflow.state if is_object(input.workflow.state)

# METADATA
# title: Active workflow
# description: The state's active_workflow object; undefined when there is none (the guards give no opinion).
active_workflow := _state.active_workflow if is_object(_state.active_workflow)

_key(k) if {
	is_string(k)
	trim_space(k) != ""
}

# METADATA
# title: Phase key normalised
# description: A phase key through the phase alias table (legacy keys such as 13-test-deploy become 12-test-deploy); every key the guards compare goes through it, on both sides.
norm_phase(k) := data.des.phases.phase_aliases[trim_space(k)]

norm_phase(k) := trim_space(k) if not data.des.phases.phase_aliases[trim_space(k)]

# The current phase as written: active_workflow.current_phase, else the
# top-level current_phase (a stale top-level value never overrides the
# active workflow's own, BUG-0005).
# (A call with an undefined argument makes the whole body undefined, so
# "not f(x)" is written as "not _rule" throughout.)
_own_current if _key(active_workflow.current_phase)

_raw_current := active_workflow.current_phase if _own_current

_raw_current := _state.current_phase if {
	is_object(active_workflow)
	not _own_current
	_key(_state.current_phase)
}

# Which field C was read from, for messages.
default current_field := "active_workflow.current_phase"

current_field := "current_phase" if {
	is_object(active_workflow)
	not _own_current
}

# METADATA
# title: Current phase
# description: The current phase C, normalised; undefined when there is no active workflow or no current phase (no opinion).
current := norm_phase(_raw_current)

# The workflow's phases, normalised, in order.
default phase_list := []

phase_list := [norm_phase(p) | some p in active_workflow.phases; _key(p)] if is_array(active_workflow.phases)

# METADATA
# title: Look up a phase-keyed object
# description: obj[k] when present and not null, else the value of the first key (sorted) that normalises to k; undefined when none.
lookup(obj, k) := obj[k] if {
	is_object(obj)
	obj[k] != null
}

lookup(obj, k) := v if {
	is_object(obj)
	not _has(obj, k)
	vs := [obj[r] | some r in sort(object.keys(obj)); obj[r] != null; norm_phase(r) == k]
	v := vs[0]
}

_has(obj, k) if obj[k] != null

# phases[C] of the state, and its status (phases[C].status, else
# active_workflow.phase_status[C]).
_cdoc := lookup(_state.phases, current)

_cdoc_status := _cdoc.status if _cdoc.status != null

default current_status := null

current_status := _cdoc_status

current_status := lookup(active_workflow.phase_status, current) if not _cdoc_status

# METADATA
# title: Current phase status as text
# description: The status of the current phase as JSON, or absent.
status_text := "absent" if current_status == null

status_text := json.marshal(current_status) if current_status != null

# Text helpers. A phrase matches as whole words, case-insensitively; phrases
# in the tables are literal words (letters, digits, spaces, hyphens).
_phrase_re(p) := sprintf("(?i)\\b%s\\b", [concat("\\s+", split(trim_space(p), " "))])

# METADATA
# title: Has a phrase
# description: Whether text holds one of the phrases as whole words, case-insensitively.
has_phrase(text, phrases) if {
	some p in phrases
	regex.match(_phrase_re(p), text)
}

# METADATA
# title: First command word
# description: The first word of a text, lower case, skipping a command prefix such as /isdlc; trailing punctuation is dropped.
first_word(text) := w if {
	words := _words(text)
	not lower(words[0]) in data.des.phases.command_prefixes
	w := _bare(words[0])
}

first_word(text) := w if {
	words := _words(text)
	lower(words[0]) in data.des.phases.command_prefixes
	w := _bare(words[1])
}

_words(text) := regex.split(`\s+`, trim_space(text))

_bare(w) := lower(trim_right(w, ".,:;!?"))

# A JSON pointer into the state document for messages.
ptr(parts) := concat("/", array.concat([""], parts))
