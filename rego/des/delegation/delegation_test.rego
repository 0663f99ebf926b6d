package des.delegation_test

import data.des.delegation

# A PreToolUse of tool in the main thread, the n-th direct work call this turn.
work(tool, n) := {"tool": tool, "delegation": {"main_thread": true, "direct_calls": n, "temp_only": false}}

deny_of(inp, mode) := vs if {
	vs := delegation.work_deny with input as inp with data.des.config.delegation_mode as mode
}

warn_of(inp, mode) := ws if {
	ws := delegation.work_warn with input as inp with data.des.config.delegation_mode as mode
}

codes(vs) := {v.code | some v in vs}

test_off_by_default if {
	count(delegation.work_deny) == 0 with input as work("Bash", 1)
	count(delegation.work_warn) == 0 with input as work("Bash", 1)
	count(deny_of(work("Bash", 1), "off")) == 0
	count(warn_of(work("Bash", 1), "off")) == 0
}

test_enforce_denies_every_work_tool if {
	every tool in ["Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"] {
		codes(deny_of(work(tool, 1), "enforce")) == {"DES-DELEGATION-REQUIRED"}
		count(warn_of(work(tool, 1), "enforce")) == 0
	}
	[v] := [v | some v in deny_of(work("Edit", 2), "enforce")]
	startswith(v.msg, "Edit in the main thread: delegation_mode is \"enforce\"")
	not contains(v.msg, "call the Agent tool") # said once, as the recovery
	contains(v.recovery[0], "call the Agent tool with a subagent")
	contains(v.recovery[0], "writes to the temporary directory ($TMPDIR, else /tmp) stay free")
	codes(deny_of(work("Bash", 1), "Enforce")) == {"DES-DELEGATION-REQUIRED"}
}

test_nudge_warns_with_the_count if {
	count(deny_of(work("Write", 4), "nudge")) == 0
	[w] := [w | some w in warn_of(work("Write", 4), "nudge")]
	w.code == "DES-DELEGATION-REQUIRED"
	contains(w.msg, "this is direct work call 4 since the last user prompt")
	contains(w.msg, "call the Agent tool with a subagent")
}

test_never_in_a_subagent_or_the_temp_directory if {
	sub := {"tool": "Bash", "delegation": {"main_thread": false, "direct_calls": 0, "temp_only": false}}
	count(deny_of(sub, "enforce")) == 0
	count(warn_of(sub, "nudge")) == 0
	tmp := {"tool": "Write", "delegation": {"main_thread": true, "direct_calls": 1, "temp_only": true}}
	count(deny_of(tmp, "enforce")) == 0
	count(warn_of(tmp, "nudge")) == 0

	# No facts, no opinion.
	count(deny_of({"tool": "Bash"}, "enforce")) == 0

	# After the call: nothing.
	post := object.union(work("Bash", 1), {"event": "PostToolUse"})
	count(deny_of(post, "enforce")) == 0
}

test_read_only_tools_are_free if {
	every tool in ["Read", "Grep", "Glob", "TodoWrite", "WebFetch", "Agent", "Task"] {
		count(deny_of(work(tool, 1), "enforce")) == 0
	}
}

test_team_adds_a_work_tool if {
	tools := object.union(data.des.delegation.work_tools, {"WebFetch": true, "Bash": false})
	codes(deny_of(work("WebFetch", 1), "enforce")) == {"DES-DELEGATION-REQUIRED"} with data.des.delegation.work_tools as tools
	count(deny_of(work("Bash", 1), "enforce")) == 0 with data.des.delegation.work_tools as tools
}

test_delegating_is_always_possible if {
	# Even when a team lists Agent or Task as work tools.
	tools := object.union(data.des.delegation.work_tools, {"Agent": true, "Task": true})
	count(deny_of(work("Agent", 1), "enforce")) == 0 with data.des.delegation.work_tools as tools
	count(deny_of(work("Task", 1), "enforce")) == 0 with data.des.delegation.work_tools as tools
}

# The plan is work like any other file under enforce.
test_the_plan_is_work if {
	codes(deny_of(work("Write", 1), "enforce")) == {"DES-DELEGATION-REQUIRED"}
}

# --- DES-CONCURRENCY-LIMIT

agents := [
	{"agent_id": "a1", "agent_type": "backend-developer", "started_at": "2026-11-25T10:00:00Z"},
	{"agent_id": "a2", "agent_type": "task-completion-verifier", "started_at": "2026-11-25T10:01:00Z"},
]

spawn(tool, running) := {
	"tool": tool,
	"call": {"subagent_type": "backend-developer", "prompt": "x", "description": ""},
	"main_thread": true,
	"registry": {"running": running, "agents": array.slice(agents, 0, running)},
}

limit_of(inp, n) := vs if {
	vs := delegation.concurrency_deny with input as inp with data.des.config.max_concurrent_agents as n
}

test_concurrency_limit if {
	[v] := [v | some v in limit_of(spawn("Agent", 2), 2)]
	v.code == "DES-CONCURRENCY-LIMIT"
	contains(v.msg, "Agent: 2 subagents are running (backend-developer (a1, since 2026-11-25T10:00:00Z), task-completion-verifier (a2, since 2026-11-25T10:01:00Z)) and the setting max_concurrent_agents (DES_MAX_CONCURRENT_AGENTS) is 2")
	count(limit_of(spawn("Task", 2), 1)) == 1
	count(limit_of(spawn("Agent", 1), 2)) == 0
}

test_concurrency_limit_of_one_is_singular if {
	[v] := [v | some v in limit_of(spawn("Agent", 1), 1)]
	startswith(v.msg, "Agent: 1 subagent is running (backend-developer")
}

test_concurrency_limit_off_or_not_main_thread if {
	count(limit_of(spawn("Agent", 2), 0)) == 0
	count(delegation.concurrency_deny) == 0 with input as spawn("Agent", 2)
	count(limit_of(json.patch(spawn("Agent", 2), [{"op": "replace", "path": "/main_thread", "value": false}]), 1)) == 0
	count(limit_of(json.patch(spawn("Skill", 2), [{"op": "remove", "path": "/call"}]), 1)) == 0
	count(limit_of(json.remove(spawn("Agent", 2), ["registry"]), 1)) == 0
}

test_team_changes_the_modes if {
	# A team's own mode name: "strict" denies like enforce.
	modes := object.union(data.des.delegation.modes, {"strict": "deny"})
	codes(deny_of(work("Bash", 1), "strict")) == {"DES-DELEGATION-REQUIRED"} with data.des.delegation.modes as modes
	count(deny_of(work("Bash", 1), "strict")) == 0
}

test_mcp_tools_that_write_or_commit_are_work if {
	every tool in ["mcp__filesystem__write_file", "mcp__filesystem__edit_file", "mcp__filesystem__move_file", "mcp__git__git_commit", "mcp__git__git_add", "mcp__github__push_files"] {
		codes(deny_of(work(tool, 1), "enforce")) == {"DES-DELEGATION-REQUIRED"}
	}
	[w] := [w | some w in warn_of(work("mcp__git__git_commit", 2), "nudge")]
	contains(w.msg, "mcp__git__git_commit in the main thread: this is direct work call 2")

	# Reading is not work; nor is a name that only looks alike.
	every tool in ["mcp__filesystem__read_file", "mcp__git__git_status", "mcp__git__git_diff", "mcp__filesystem__list_directory", "filesystem__write_file", "mcp__fs__write_file_later"] {
		count(deny_of(work(tool, 1), "enforce")) == 0
	}

	# In a subagent: never.
	sub := {"tool": "mcp__filesystem__write_file", "delegation": {"main_thread": false, "direct_calls": 0, "temp_only": false}}
	count(deny_of(sub, "enforce")) == 0
}

test_team_extends_the_mcp_table if {
	count(deny_of(work("mcp__db__run_migration", 1), "enforce")) == 0
	codes(deny_of(work("mcp__db__run_migration", 1), "enforce")) == {"DES-DELEGATION-REQUIRED"} with data.des.delegation.mcp_work_tool_patterns as ["mcp__db__run_*"]
}
