# Phase delegation, advancement attempts, corridor calls and phase-completion
# claims: what kind of call an Agent/Task/Skill call is (package des.phases.guards).
package des.phases.guards

import data.des.phases.agent
import data.des.phases.call_tool
import data.des.phases.current
import data.des.phases.description
import data.des.phases.first_word
import data.des.phases.norm_phase
import data.des.phases.phase_list
import data.des.phases.phrase_re
import data.des.phases.prompt
import data.des.phases.subagent_type
import data.des.phases.whole_token

# The text a call is read from: its prompt and its description.
_text := concat("\n", [prompt, description])

# A phase of the agent table that matches by prefix (15-upgrade: any current
# phase starting 15-upgrade) stands for the current phase when it matches.
_prefix_match(t) if {
	data.des.phases.prefix_phases[t] == true
	startswith(current, t)
}

# METADATA
# title: Resolve a target phase
# description: A normalised target phase, or the current phase when the target is a prefix phase (15-upgrade) that the current phase starts with.
resolve(t) := current if _prefix_match(t)

resolve(t) := t if not _prefix_match(t)

# Rule 1: the subagent_type is in the agent table. An `all` or `setup` agent
# is never a phase delegation, and rules 2 and 3 are not tried for it (its
# prompt may well name phases: the orchestrator's own calls do).
_agent_phase := data.des.phases.agent_phases[agent] if call_tool

_by_type := resolve(norm_phase(_agent_phase)) if {
	is_string(_agent_phase)
	not data.des.phases.non_delegation_phases[_agent_phase] == true
}

# Rule 2: a <!-- DES-PHASE: key --> routing marker. Several markers naming
# distinct phases leave the call undecided: no phase delegation (and rule 3
# is not tried: the prompt did choose rule 2).
_marker_phases := {resolve(norm_phase(m[1])) |
	some m in regex.find_all_string_submatch_n(`<!--\s*DES-PHASE\s*:\s*(\S+?)\s*-->`, prompt, -1)
}

_marker_decides if {
	call_tool
	not _agent_phase
	count(_marker_phases) > 0
}

_by_marker := t if {
	_marker_decides
	count(_marker_phases) == 1
	some t in _marker_phases
}

# Rule 3: the prompt and description name exactly one agent of the table
# (other than all/setup agents) or one phase key of active_workflow.phases as
# a whole token (a maximal run of [A-Za-z0-9_-], compared in lower case,
# agents with "_" read as "-", phase keys through the alias table). The
# candidates are the distinct TARGET PHASES named: several names that map to
# the same phase (software-developer and 06-implementation) count as one;
# two distinct phases make the call no delegation. A setup command as the
# first word (optionally after /isdlc) vetoes rule 3 only.
# A prompt may be megabytes: the text is never cut into all its tokens (that
# cost seconds on 5 MB). Each name of the (small) tables is looked up with
# string built-ins instead: where the name occurs, is it a whole token? The
# text is lowered in ASCII only, as tokens are ASCII; agents are compared
# with "_" read as "-" (phase keys as written).
_ltext := strings.replace_n(data.des.phases.ascii_lower, _text)

_atext := replace(_ltext, "_", "-")

_candidates contains resolve(norm_phase(p)) if {
	some a, p in data.des.phases.agent_phases
	is_string(p)
	not data.des.phases.non_delegation_phases[p] == true
	whole_token(_atext, lower(a))
}

# A phase of the workflow is named by its key or by a legacy key of it.
_candidates contains p if {
	some p in phase_list
	some k in _phase_names(p)
	whole_token(_ltext, k)
}

_phase_names(p) := {lower(k) | some k in array.concat([p], [a | some a, q in data.des.phases.phase_aliases; q == p])}

_text_decides if {
	call_tool
	not _agent_phase
	not _marker_decides
	not data.des.phases.setup_commands[first_word(_text)] == true
}

_by_text := t if {
	_text_decides
	count(_candidates) == 1
	some t in _candidates
}

# METADATA
# title: Target phase
# description: The phase T an Agent/Task call delegates (rules 1 to 3 in order); undefined when the call is no phase delegation.
target := _by_type

target := _by_marker

target := _by_text

# METADATA
# title: How the target was found
# description: subagent_type, marker or text.
by := "subagent_type" if _by_type

by := "marker" if _by_marker

by := "text" if _by_text

_by_words := {
	"subagent_type": sprintf("by subagent_type %q", [subagent_type]),
	"marker": "by its <!-- DES-PHASE --> marker",
	"text": "by naming it in the prompt",
}

# METADATA
# title: Phase delegation
# description: Whether the call is a phase delegation (rules 1 to 3).
default delegation := false

delegation if target

# The subject of a message: "Agent software-developer", "Skill isdlc".
default who := "the call"

who := sprintf("%s %s", [input.tool, subagent_type]) if {
	call_tool
	subagent_type != ""
}

who := sprintf("%s %s", [input.tool, _skill]) if input.tool == "Skill"

# Advancement attempts.
_skill := lower(trim_prefix(trim_space(input.call.skill), "/")) if is_string(input.call.skill)

default _args := ""

_args := input.call.args if is_string(input.call.args)

_skill_advance if {
	input.tool == "Skill"
	data.des.phases.advance_skills[_skill] == true
	data.des.phases.skill_advance_words[first_word(_args)] == true
}

# METADATA
# title: Advancement attempt
# description: |
#   An Agent/Task call that is no phase delegation, whose normalised
#   subagent_type is the orchestrator and whose text has an advance phrase as
#   whole words; or a Skill isdlc call whose arguments start with advance or
#   gate. A phase delegation is never one (GATE-06 in its text counts for nothing).
advancement if {
	call_tool
	not delegation
	data.des.phases.advance_agents[agent] == true
	_has_phrase(data.des.phases.advance_phrases)
}

advancement if _skill_advance

# METADATA
# title: Corridor call
# description: An Agent/Task call that is no phase delegation and whose text has a corridor phrase (the advance phrases and the corridor table), or a Skill advance.
corridor_call if {
	call_tool
	not delegation
	_corridor_phrase
}

_corridor_phrase if _has_phrase(data.des.phases.advance_phrases)

_corridor_phrase if _has_phrase(data.des.phases.corridor_phrases)

corridor_call if _skill_advance

# METADATA
# title: Phase-completion claim
# description: An Agent/Task call that is no phase delegation and whose text has a completion-claim phrase.
completion_claim if {
	call_tool
	not delegation
	_has_phrase(data.des.phases.completion_claim_phrases)
}

# A phrase of a table, as whole words in the call's text. The regular
# expression runs only when every word of the phrase occurs in the text
# case-folded (lower(upper(...)) maps every case-insensitive spelling of an
# ASCII letter, K and ſ included, to the letter), so a huge prompt that holds
# none costs a substring search, not a scan per phrase.
_folded := lower(upper(_text))

_has_phrase(phrases) if {
	some p, on in phrases
	on == true
	every w in split(trim_space(p), " ") {
		contains(_folded, lower(w))
	}
	regex.match(phrase_re(p), _text)
}
