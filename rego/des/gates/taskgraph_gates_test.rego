package des.gates_test

import data.des.gates
import data.des.taskgraph_test.patched
import data.des.taskgraph_test.plan

# Orchestration governance in the gates (des.taskgraph, des.delegation).

graph_path := ".claude/state/active_task_graph.json"

graph_write(doc) := {"tool": "Write", "writes": [{"path": graph_path, "tool": "Write"}], "task_graph": {"path": graph_path, "document": doc, "schema_errors": []}}

test_document_write_gathers_task_graph_rules if {
	codes(gates.document_write.deny) == set() with input as graph_write(plan)
	codes(gates.document_write.warn) == set() with input as graph_write(plan)
	mixed := patched([{"op": "add", "path": "/waves/0/phases/-", "value": {"phase_id": "v", "type": "verification", "verifies_phase_id": "reset-token"}}])
	codes(gates.document_write.deny) == {"DES-TASKGRAPH-WAVE-MIX", "DES-TASKGRAPH-WAVE-DEPENDENCY"} with input as graph_write(mixed)
	long := patched([{"op": "replace", "path": "/waves/0/phases/0/estimated_minutes", "value": 45}])
	codes(gates.document_write.warn) == {"DES-TASKGRAPH-ATOMICITY"} with input as graph_write(long)
	invalid := {"tool": "Write", "task_graph": {"path": graph_path, "problem": "not_object", "error": "an array"}}
	codes(gates.document_write.deny) == {"DES-TASKGRAPH-INVALID"} with input as invalid
}

task_delegation(id) := {
	"tool": "Agent",
	"call": {"subagent_type": "task-completion-verifier", "prompt": sprintf("<!-- DES-TASK-PHASE: %s -->", [id]), "description": ""},
	"main_thread": true,
	"task_phase": id,
	"task_graph": {"path": graph_path, "document": plan},
}

test_pre_invocation_gathers_task_graph_rules if {
	codes(gates.pre_invocation.deny) == set() with input as task_delegation("reset-token")
	codes(gates.pre_invocation.deny) == {"DES-TASKGRAPH-WAVE", "DES-TASKGRAPH-DEPENDENCY"} with input as task_delegation("verify-reset-token")
	codes(gates.pre_invocation.deny) == {"DES-TASKGRAPH-UNKNOWN-PHASE"} with input as task_delegation("nope")

	# The phase guards' info is untouched.
	info := gates.pre_invocation.info with input as task_delegation("verify-reset-token")
	info.phases == {"current": null, "target": null, "delegation": false, "by": null, "advancement": false, "escalations": []}
}

test_pre_invocation_gathers_the_concurrency_limit if {
	inp := object.union(task_delegation("reset-token"), {"registry": {"running": 3, "agents": []}})
	codes(gates.pre_invocation.deny) == {"DES-CONCURRENCY-LIMIT"} with input as inp with data.des.config.max_concurrent_agents as 3
	codes(gates.pre_invocation.deny) == set() with input as inp
}

test_tool_use_gathers_delegation_mode if {
	inp := {"tool": "Bash", "writes": [], "delegation": {"main_thread": true, "direct_calls": 2, "temp_only": false}}
	codes(gates.tool_use.deny) == {"DES-DELEGATION-REQUIRED"} with input as inp with data.des.config.delegation_mode as "enforce"
	codes(gates.tool_use.warn) == set() with input as inp with data.des.config.delegation_mode as "enforce"
	codes(gates.tool_use.warn) == {"DES-DELEGATION-REQUIRED"} with input as inp with data.des.config.delegation_mode as "nudge"
	codes(gates.tool_use.deny) == set() with input as inp with data.des.config.delegation_mode as "nudge"
	codes(gates.tool_use.deny) == set() with input as inp
}

# Inputs without the new keys meet no new rule, whatever the settings.
test_orchestration_rules_silent_on_other_inputs if {
	every inp in [
		protected_write, obsolete, stop_input, agent_result, phase_call("integration-tester", "Phase ID: reset-token"),
		{"tool": "Bash", "writes": [{"path": ".des/state.json", "tool": "Bash", "how": "tee", "document": "state"}]},
		{"prompt": good_prompt, "step": {"path": "steps/01-01.json", "document": {"task_id": "01-01", "state": {"status": "TODO"}}}},
	] {
		count(data.des.taskgraph.write.deny) == 0 with input as inp
		count(data.des.taskgraph.write.warn) == 0 with input as inp
		count(data.des.taskgraph.delegation.deny) == 0 with input as inp
		count(data.des.delegation.work_deny) == 0 with input as inp with data.des.config.delegation_mode as "enforce"
		count(data.des.delegation.concurrency_deny) == 0 with input as inp with data.des.config.max_concurrent_agents as 1
	}
}
