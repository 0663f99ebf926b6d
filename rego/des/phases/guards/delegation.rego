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
	_advance_phrase
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

_corridor_phrase if _advance_phrase

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

# A phrase of a table, as whole words in the call's text (the expression
# phrase_re, case-insensitive). A prompt may be megabytes, and one scan of
# it per phrase with that expression costs about 0.1 s: a phrase whose
# words do not all occur in the text is skipped, and one that can be is
# located by its first word (below) instead of scanned for. The advance
# phrases, read for advancement and for the corridors, are read once.
_advance_phrase if _has_phrase(data.des.phases.advance_phrases)

_has_phrase(phrases) if {
	some p, on in phrases
	on == true
	_may_hold(p)
	_phrase_in_text(p)
}

# Every word of the phrase occurs in the ASCII-lowered text; unless the
# text holds a character the expression's case folding turns into an ASCII
# letter (K, the Kelvin sign, and ſ, the long s: they fold to k and s), in
# which case only the expression can tell.
_may_hold(_) if _folds_to_ascii

_may_hold(p) if {
	not _folds_to_ascii
	every w in _phrase_words(p) {
		_word_may_hold(w)
	}
}

# The number placeholder {n} is found by the expression alone.
_word_may_hold("{n}")

_word_may_hold(w) if contains(_ltext, w)

_phrase_in_text(p) if {
	not _locatable(p)
	regex.match(phrase_re(p), _text)
}

_phrase_in_text(p) if {
	_locatable(p)
	ws := _phrase_words(p)
	parts := split(_ltext, ws[0])
	_found(p, ws, parts)
}

# Past this many occurrences of the first word, one scan with the
# expression costs less than looking at each.
_max_located := 5000

_found(p, _, parts) if {
	count(parts) > _max_located
	regex.match(phrase_re(p), _text)
}

# Where the first word occurs with no word character before it, the rest of
# the phrase follows it: whitespace and the next word, ..., then no word
# character (the expression's \b at both ends; \w is [0-9A-Za-z_]).
_found(_, ws, parts) if {
	n := count(parts)
	n > 1
	n <= _max_located
	after := sprintf("^%s(?:[^0-9a-z_]|$)", [concat("", [sprintf(`\s+%s`, [w]) | some w in array.slice(ws, 1, count(ws))])])
	some i in numbers.range(1, n - 1)
	trim_right(parts[i - 1], "abcdefghijklmnopqrstuvwxyz0123456789_") == parts[i - 1]
	regex.match(after, parts[i])
}

_phrase_words(p) := [lower(w) | some w in split(trim_space(p), " ")]

# A phrase is located by its first word in the ASCII-lowered text (whose
# bytes are where the text's are) when its words are letters and digits
# (a whole-word occurrence then overlaps no other), no later word holds the
# first (the split on it keeps the rest of the phrase whole), and the text
# has no K or ſ.
_locatable(p) if {
	not _folds_to_ascii
	ws := _phrase_words(p)
	every w in ws {
		w != ""
		trim(w, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
	}
	every w in array.slice(ws, 1, count(ws)) {
		not contains(w, ws[0])
	}
}

_folds_to_ascii if contains(_text, "\u212a")

_folds_to_ascii if contains(_text, "\u017f")
