# METADATA
# title: Phase workflow guards
# description: |
#   The iSDLC phase workflow guards of a multi-phase workflow (Claude Code
#   orchestrators delegating SDLC phases): phase delegations checked against
#   the workflow state, advancement attempts against the phase's
#   requirements, the iteration corridors and phase-completion claims.
#   This package reads the workflow state and the call (the current phase,
#   the key normalisation, the normalised subagent_type); the rules are in
#   des.phases.guards (gathered by the pre_invocation gate), des.phases.branch
#   (git commit) and des.phases.observers (PostToolUse of Agent/Task), both
#   gathered by the tool_use gate. Kept small on purpose: the tool_use gate
#   loads it, and the policy loader compiles only the packages a gate refers to.
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

# METADATA
# title: Workflow state
# description: The parsed workflow state document (input.workflow.state), when it could be used.
state := input.workflow.state if is_object(input.workflow.state)

# METADATA
# title: Active workflow
# description: The state's active_workflow object; undefined when there is none (the guards give no opinion).
active_workflow := state.active_workflow if is_object(state.active_workflow)

# METADATA
# title: Phase key
# description: A non-empty string (a null or empty field counts as absent).
is_key(k) if {
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
_own_current if is_key(active_workflow.current_phase)

_raw_current := active_workflow.current_phase if _own_current

_raw_current := state.current_phase if {
	is_object(active_workflow)
	not _own_current
	is_key(state.current_phase)
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

phase_list := [norm_phase(p) | some p in active_workflow.phases; is_key(p)] if is_array(active_workflow.phases)

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

# METADATA
# title: State of the current phase
# description: phases[C] of the workflow state (keys normalised).
current_doc := lookup(state.phases, current)

_current_doc_status := current_doc.status if current_doc.status != null

# METADATA
# title: Status of the current phase
# description: phases[C].status, else active_workflow.phase_status[C], else null.
default current_status := null

current_status := _current_doc_status

current_status := lookup(active_workflow.phase_status, current) if not _current_doc_status

# METADATA
# title: Current phase status as text
# description: The status of the current phase as JSON, or absent.
status_text := "absent" if current_status == null

status_text := json.marshal(current_status) if current_status != null

# Set-like tables are objects {entry: true}, so that a team's data file can
# add an entry (data documents merge key by key) or switch one off (false).

# Text helpers. A phrase matches as whole words, case-insensitively; phrases
# in the tables are literal words (letters, digits, spaces, hyphens), and the
# word {n} stands for a number ("phase {n} complete").
# METADATA
# title: Phrase pattern
# description: The regular expression of a phrase of the tables, as whole words, case-insensitively; the word {n} matches a number.
phrase_re(p) := sprintf("(?i)\\b%s\\b", [concat("\\s+", [_phrase_word_re(w) | some w in split(trim_space(p), " ")])])

_phrase_word_re(w) := "[0-9]+" if w == "{n}"

_phrase_word_re(w) := w if w != "{n}"

# METADATA
# title: Has a phrase
# description: Whether text holds one of the phrases (a table of phrase to true) as whole words, case-insensitively.
has_phrase(text, phrases) if {
	some p, on in phrases
	on == true
	regex.match(phrase_re(p), text)
}

# METADATA
# title: First command word
# description: The first word of a text, lower case, skipping a command prefix such as /isdlc; trailing punctuation is dropped.
first_word(text) := _bare(m[1]) if {
	m := _lead(text)
	not data.des.phases.command_prefixes[lower(m[1])] == true
}

first_word(text) := _bare(m[2]) if {
	m := _lead(text)
	data.des.phases.command_prefixes[lower(m[1])] == true
	m[2] != ""
}

first_word(text) := "" if trim_space(text) == ""

# The first two words only (words are split on whitespace): a prompt may be
# megabytes, and splitting all of it cost a scan and a string per word.
_lead(text) := regex.find_all_string_submatch_n(`^(\S+)(?:\s+(\S+))?`, trim_space(text), 1)[0]

_bare(w) := lower(trim_right(w, ".,:;!?"))

# METADATA
# title: JSON pointer
# description: A JSON pointer into the state document, for messages.
ptr(parts) := concat("/", array.concat([""], parts))

# The call (Agent/Task: subagent_type, prompt, description).

# METADATA
# title: Agent or Task call
# description: Whether the call is an Agent or Task call.
call_tool if input.tool in {"Agent", "Task"}

# METADATA
# title: subagent_type as given
# description: input.call.subagent_type, or "" when absent.
default subagent_type := ""

subagent_type := input.call.subagent_type if is_string(input.call.subagent_type)

# METADATA
# title: Prompt of the call
# description: input.call.prompt, or "" when absent.
default prompt := ""

prompt := input.call.prompt if is_string(input.call.prompt)

# METADATA
# title: Description of the call
# description: input.call.description, or "" when absent.
default description := ""

description := input.call.description if is_string(input.call.description)

_agent0 := replace(lower(trim_space(subagent_type)), "_", "-")

# METADATA
# title: Normalised subagent_type
# description: The call's subagent_type in lower case, "_" replaced by "-", then through the agent alias table.
agent := data.des.phases.agent_aliases[_agent0]

agent := _agent0 if not data.des.phases.agent_aliases[_agent0]

# METADATA
# title: Whole token
# description: |
#   Whether name occurs in text as a whole token, a maximal run of
#   [a-z0-9_-] (text already lowered in ASCII). A name with another
#   character is never a token. Where the name occurs, the text is split
#   on it: an occurrence is a whole token when the part before it does not
#   end, and the part after it does not start, with a token character. (A
#   whole-token occurrence overlaps no other occurrence, so the split finds it.)
whole_token(text, name) if {
	name != ""
	trim(name, _token_chars) == ""
	contains(text, name)
	parts := split(text, name)
	some i in numbers.range(1, count(parts) - 1)
	trim_right(parts[i - 1], _token_chars) == parts[i - 1]
	trim_left(parts[i], _token_chars) == parts[i]
}

_token_chars := "abcdefghijklmnopqrstuvwxyz0123456789_-"
