# METADATA
# title: Delegation mode and the concurrency limit
# description: |
#   For orchestrators that must delegate their work to subagents.
#   DES-DELEGATION-REQUIRED (tool_use gate): a work tool (the work_tools
#   table: Bash, Write, Edit, MultiEdit, NotebookEdit; and an MCP tool whose
#   name matches a pattern of the mcp_work_tool_patterns table, the MCP
#   tools that write files or commit, mcp__filesystem__write_file,
#   mcp__git__git_commit, ...) called in the main
#   thread while the setting delegation_mode is "enforce" (deny) or "nudge"
#   (warn, which Claude Code shows the model as additionalContext). Never for
#   a call inside a subagent, a tool outside the table, or a write only to
#   the system's temporary directory. (The task graph is work too: under
#   enforce a subagent writes the plan, and its write guard judges it.)
#   Agent and Task are never work tools, even
#   when a team's table lists them: delegating is always possible.
#   DES-CONCURRENCY-LIMIT (pre_invocation gate): a main-thread Agent/Task call
#   while as many subagents run as the setting max_concurrent_agents (> 0).
#   Input (built by Go):
#     input.tool        the tool name
#     input.delegation  {main_thread, direct_calls (main-thread work calls since
#                       the last user prompt, this one included), temp_only}
#                       (tool_use, PreToolUse, only when delegation_mode is not "off")
#     input.main_thread true when the event has no agent_id (pre_invocation)
#     input.registry    {running, agents: [{agent_id, agent_type, started_at}]}
#                       (pre_invocation, when max_concurrent_agents > 0)
#   Kept small: the tool_use gate compiles this package for every tool call.
package des.delegation

default _mode := "off"

_mode := lower(data.des.settings.config.delegation_mode) if is_string(data.des.settings.config.delegation_mode)

_work_tool if {
	data.des.delegation.work_tools[input.tool] == true
	not data.des.delegation.delegation_tools[input.tool] == true
}

# An MCP tool that writes files or commits is the main agent's work like
# Write and Bash (the mcp_work_tool_patterns table, globs over the whole
# tool name mcp__<server>__<tool>; "*" does not cross a "/", which no tool
# name holds).
_work_tool if {
	startswith(input.tool, "mcp__")
	some pattern in data.des.delegation.mcp_work_tool_patterns
	glob.match(pattern, ["/"], input.tool)
}

_direct if {
	not input.event == "PostToolUse"
	input.delegation.main_thread == true
	not input.delegation.temp_only == true
	_work_tool
}

default _calls := 1

_calls := input.delegation.direct_calls if is_number(input.delegation.direct_calls)

_how := "Delegate the work instead: call the Agent tool with a subagent (subagent_type) and a prompt saying what to do; writes to the temporary directory ($TMPDIR, else /tmp) stay free"

# METADATA
# title: Work in the main thread (enforce)
# description: A work tool called in the main thread while delegation_mode is "enforce".
# custom:
#   code: DES-DELEGATION-REQUIRED
#   severity: deny
work_deny contains {
	"code": "DES-DELEGATION-REQUIRED",
	"msg": sprintf("%s in the main thread: delegation_mode is %q, so the main agent delegates its work to subagents", [input.tool, _mode]),
	"recovery": [_how],
} if {
	data.des.delegation.modes[_mode] == "deny"
	_direct
}

# METADATA
# title: Work in the main thread (nudge)
# description: |
#   DES-DELEGATION-REQUIRED as a warning: a work tool called in the main
#   thread while delegation_mode is "nudge", with the count of direct work
#   calls since the last user prompt. (No code annotation: the catalogue
#   lists the code once, with its deny severity, from work_deny.)
work_warn contains {
	"code": "DES-DELEGATION-REQUIRED",
	"msg": sprintf("%s in the main thread: this is direct work call %v since the last user prompt, and delegation_mode is %q, so work is meant for subagents. %s.", [input.tool, _calls, _mode, _how]),
} if {
	data.des.delegation.modes[_mode] == "warn"
	_direct
}

_agent_text(a) := sprintf("%s (%s, since %s)", [object.get(a, "agent_type", "?"), object.get(a, "agent_id", "?"), object.get(a, "started_at", "?")])

_running_text := concat(", ", [_agent_text(a) | some a in input.registry.agents; is_object(a)]) if count(input.registry.agents) > 0

else := "not listed"

# METADATA
# title: Too many subagents at once
# description: A main-thread Agent/Task call while as many subagents run as max_concurrent_agents (> 0).
# custom:
#   code: DES-CONCURRENCY-LIMIT
#   severity: deny
_running_count_text := "1 subagent is" if input.registry.running == 1

_running_count_text := sprintf("%v subagents are", [input.registry.running]) if input.registry.running != 1

concurrency_deny contains {
	"code": "DES-CONCURRENCY-LIMIT",
	"msg": sprintf("%s: %s running (%s) and the setting max_concurrent_agents (DES_MAX_CONCURRENT_AGENTS) is %v; wait until one of them finishes, then delegate again", [input.tool, _running_count_text, _running_text, limit]),
	"recovery": ["Wait for a running subagent to finish, then delegate again; raise max_concurrent_agents in .des/config.json to allow more at once."],
} if {
	input.main_thread == true
	data.des.delegation.delegation_tools[input.tool] == true
	limit := data.des.settings.config.max_concurrent_agents
	is_number(limit)
	limit > 0
	is_number(input.registry.running)
	input.registry.running >= limit
}
