# METADATA
# title: Discover observers
# description: |
#   After an Agent/Task call completes (PostToolUse), warnings about iSDLC's
#   discover flow: the walkthrough not recorded, the discover menu offering
#   the wrong choices. Observers only warn, and need a workflow state (but no
#   active workflow). Gathered by the tool_use gate.
#   Input: input.event "PostToolUse", input.tool "Agent" | "Task",
#   input.call {subagent_type, prompt, description}, input.response {present,
#   text}, input.workflow.state.
package des.phases.observers

import data.des.phases.agent
import data.des.phases.first_word
import data.des.phases.prompt

_post if {
	input.event == "PostToolUse"
	input.tool in {"Agent", "Task"}
}

_state := input.workflow.state if is_object(input.workflow.state)

# walkthrough_completed: discovery_context's own, else the top-level one.
_walkthrough := _state.discovery_context.walkthrough_completed if _state.discovery_context.walkthrough_completed != null

_walkthrough := _state.walkthrough_completed if {
	not _has_own_walkthrough
	_state.walkthrough_completed != null
}

_has_own_walkthrough if _state.discovery_context.walkthrough_completed != null

default _walkthrough_text := "absent"

_walkthrough_text := json.marshal(_walkthrough)

# METADATA
# title: Discover walkthrough missing
# description: A discover-orchestrator call completed, the state has a discovery_context, and walkthrough_completed is not true.
# custom:
#   code: DES-WALKTHROUGH-MISSING
#   severity: warn
warn contains {
	"code": "DES-WALKTHROUGH-MISSING",
	"msg": sprintf("the discover-orchestrator finished, but the walkthrough was not recorded: discovery_context.walkthrough_completed (else walkthrough_completed) is %s, not true", [_walkthrough_text]),
	"field": "/discovery_context/walkthrough_completed",
	"recovery": ["Walk the user through the discovery results, then set discovery_context.walkthrough_completed to true."],
} if {
	_post
	data.des.phases.discover_agents[agent] == true
	input.response.present == true
	is_object(_state.discovery_context)
	not _walkthrough == true
}

_discover_call if data.des.phases.discover_agents[agent] == true

_discover_call if data.des.phases.discover_commands[first_word(prompt)] == true

default _text := ""

_text := input.response.text if is_string(input.response.text)

_lower_text := lower(_text)

_menu_problems contains sprintf("lacks %s", [concat(" or ", [sprintf("%q", [o]) | some o in group])]) if {
	some group in data.des.phases.discover_menu.required # name: alternatives
	not _offers_one(group)
}

_offers_one(group) if {
	some o in group
	contains(_lower_text, lower(o))
}

_menu_problems contains sprintf("offers %q", [o]) if {
	some o, on in data.des.phases.discover_menu.forbidden
	on == true
	contains(_lower_text, lower(o))
}

# METADATA
# title: Discover menu wrong
# description: In a project with a workflow state, a discover call's response (50+ characters, numbered options) lacks New Project, Existing Project or Chat/Explore, or offers Scoped Analysis or Auto-detect.
# custom:
#   code: DES-DISCOVER-MENU
#   severity: warn
warn contains {
	"code": "DES-DISCOVER-MENU",
	"msg": sprintf("the discover menu shown to the user %s", [concat("; ", sort(_menu_problems))]),
	"recovery": ["Show discover's own menu: New Project, Existing Project and Chat/Explore, with no Scoped Analysis or Auto-detect option."],
} if {
	_post
	_state # no workflow state: not an iSDLC project, no warning
	_discover_call
	count(_text) >= data.des.phases.discover_menu.min_length
	regex.match(data.des.phases.discover_menu.numbered_option, _text)
	count(_menu_problems) > 0
}
