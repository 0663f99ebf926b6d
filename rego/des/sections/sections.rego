# METADATA
# title: Validation levels and prompt sections
# description: |
#   Which sections a subagent prompt must carry, by validation level. The level
#   comes from the DES-ORIGIN marker and the step's workflow_type, through the
#   tables in data.json beside this file; a team adds levels, origins or
#   sections there. Input: input.prompt.{origin, sections[], phase_words[]}
#   and input.step.document.workflow_type.
package des.sections

# Inputs are read by reference, never with object.get(input, ...): that
# would turn the whole input, step document included, into a value per call.
default _origin := ""

_origin := input.prompt.origin

_origin_text := sprintf("origin %q", [_origin]) if _origin != ""

_origin_text := "no DES-ORIGIN marker" if _origin == ""

# Tables are indexed, not read with object.get, which copies the table.
_base_level := data.des.sections.origins[_origin]

_base_level := data.des.sections.unknown_origin_level if not data.des.sections.origins[_origin]

# The step's workflow type; tdd_cycle when absent or null.
default workflow_type := "tdd_cycle"

workflow_type := input.step.document.workflow_type if input.step.document.workflow_type != null

# METADATA
# title: Validation level
# description: full, partial or none (or a team's own); a workflow type may lower it.
level := data.des.sections.workflow_levels[workflow_type][_base_level]

level := _base_level if not data.des.sections.workflow_levels[workflow_type][_base_level]

# The sections the level requires, in table order.
required := data.des.sections.levels[level]

_present := {s | some s in input.prompt.sections}

# Set differences are single built-in calls, so rule bodies below iterate
# over what is missing (usually nothing), not over every table entry.
_missing_sections := {s | some s in required} - _present

_missing_phases := {p | some p in data.des.steps.canonical_phases} - {w | some w in input.prompt.phase_words}

# METADATA
# title: Required prompt section missing
# description: A section the validation level requires is absent (one violation per section).
# custom:
#   code: DES-SECTION-MISSING
#   severity: deny
deny contains {
	"code": "DES-SECTION-MISSING",
	"msg": sprintf("the prompt has no %s section, which validation level %q requires (%s); add <!-- DES-SECTION: %s --> with its content", [name, level, _origin_text, name]),
	"field": "/tool_input/prompt",
	"recovery": [
		sprintf("Render the prompt from a DES template so that every section of level %q is present: %s.", [level, concat(", ", required)]),
	],
} if {
	some name in _missing_sections
}

# METADATA
# title: Canonical phase missing from the phases section
# description: At a level with a phase section, that section names every canonical phase as a whole word.
# custom:
#   code: DES-PHASE-MISSING
#   severity: deny
deny contains {
	"code": "DES-PHASE-MISSING",
	"msg": sprintf("the %s section does not name phase %s (phases are matched as whole words: POST_REFACTOR_REVIEW does not count as REVIEW)", [section, phase]),
	"field": "/tool_input/prompt",
	"recovery": [sprintf("List all 14 canonical phases in the %s section, in order: %s.", [section, concat(", ", data.des.steps.canonical_phases)])],
} if {
	section := data.des.sections.phase_sections[level]
	section in _present
	some phase in _missing_phases
}
