package des.gates_test

import data.des.gates

# The phase workflow guards in the gates (des.phases).

phase_state := {
	"active_workflow": {
		"phases": ["05-test-strategy", "06-implementation", "07-testing"],
		"current_phase": "06-implementation",
		"current_phase_index": 1,
		"phase_status": {"06-implementation": "in_progress"},
		"git_branch": {"name": "feature/x", "status": "active"},
	},
	"phases": {"06-implementation": {
		"status": "in_progress",
		"iteration_requirements": {"test_iteration": {"completed": false, "current_iteration": 2, "max_iterations": 10, "last_test_result": "failed"}},
		"constitutional_validation": {"status": "compliant"},
	}},
}

phase_workflow := {
	"state_file": ".isdlc/state.json", "state": phase_state, "plan": {"exists": true, "path": "docs/isdlc/tasks.md", "format": ""},
	"evidence": {"test_iteration": {"06-implementation": phase_state.phases["06-implementation"].iteration_requirements.test_iteration}},
}

phase_call(sub, prompt) := {"tool": "Agent", "call": {"subagent_type": sub, "prompt": prompt, "description": ""}, "workflow": phase_workflow}

test_pre_invocation_gathers_phase_guards if {
	codes(gates.pre_invocation.deny) == {"DES-PHASE-OUT-OF-ORDER"} with input as phase_call("integration-tester", "x")
	codes(gates.pre_invocation.deny) == set() with input as phase_call("software-developer", "x")
}

test_pre_invocation_gathers_phase_warnings if {
	inp := json.patch(phase_call("software-developer", "x"), [{"op": "replace", "path": "/workflow/plan/format", "value": "v2.0"}])
	codes(gates.pre_invocation.warn) == {"DES-PLAN-FORMAT"} with input as inp
}

test_pre_invocation_nwave_rules_need_a_prompt if {
	# No input.prompt (no nWave markers): the step rules stay silent.
	inp := object.union(phase_call("software-developer", "x"), {"step": {"path": "s.json", "problem": "missing", "document": {"step_id": "1"}}})
	codes(gates.pre_invocation.deny) == set() with input as inp
	codes(gates.pre_invocation.deny) == set() with input as {"step": {"path": "s.json", "problem": "missing"}}
	codes(gates.pre_invocation.deny) == set() with input as {"tool": "Skill", "call": {"skill": "isdlc", "args": "status"}}
}

test_pre_invocation_info_without_prompt if {
	info := gates.pre_invocation.info with input as {"tool": "Skill", "call": {"skill": "isdlc", "args": "status"}}
	info.level == "full"
	info.workflow_type == "tdd_cycle"
	info.safety_applies == false
	info.can_start == true
	info.phases == {"current": null, "target": null, "delegation": false, "by": null, "advancement": false, "escalations": []}
}

test_pre_invocation_phase_info if {
	info := gates.pre_invocation.info with input as phase_call("integration-tester", "x")
	info.phases == {"current": "06-implementation", "target": "07-testing", "delegation": true, "by": "subagent_type", "advancement": false, "escalations": []}
}

test_pre_invocation_escalations if {
	inp := phase_call("sdlc-orchestrator", "advance to the next phase")
	codes(gates.pre_invocation.deny) == {"DES-GATE-BLOCKED", "DES-ITERATION-CORRIDOR"} with input as inp
	info := gates.pre_invocation.info with input as inp
	info.phases == {
		"current": "06-implementation", "target": null, "delegation": false, "by": null, "advancement": true,
		"escalations": [
			{"type": "corridor_blocked", "phase": "06-implementation", "codes": ["DES-ITERATION-CORRIDOR"]},
			{"type": "gate_blocked", "phase": "06-implementation", "codes": ["DES-GATE-BLOCKED"]},
		],
	}
}

test_phase_rules_silent_on_nwave_inputs if {
	inp := {"prompt": good_prompt, "step": {"path": "steps/01-01.json", "document": {"task_id": "01-01", "state": {"status": "TODO"}}}}
	count(data.des.phases.guards.deny) == 0 with input as inp
	count(data.des.phases.guards.warn) == 0 with input as inp
	count(data.des.phases.branch.deny) == 0 with input as protected_write
	count(data.des.phases.observers.warn) == 0 with input as protected_write
}

phase_commit(branch) := {
	"tool": "Bash",
	"writes": [],
	"workflow": phase_workflow,
	"commits": [{"dir": ".", "branch": {"readable": true, "current": branch, "detached": false, "workflow_branch_exists": true}}],
}

test_tool_use_gathers_branch_guard if {
	codes(gates.tool_use.deny) == {"DES-BRANCH-PROTECTED"} with input as phase_commit("main")
	codes(gates.tool_use.deny) == {"DES-BRANCH-INTERMEDIATE"} with input as phase_commit("feature/x")
	codes(gates.tool_use.warn) == set() with input as phase_commit("main")
}

agent_result := {
	"event": "PostToolUse",
	"tool": "Agent",
	"call": {"subagent_type": "discover-orchestrator", "prompt": "discover", "description": ""},
	"response": {"present": true, "text": "done"},
	"workflow": {"state": {"discovery_context": {"walkthrough_completed": false}}},
}

test_tool_use_gathers_observers if {
	codes(gates.tool_use.warn) == {"DES-WALKTHROUGH-MISSING"} with input as agent_result
	codes(gates.tool_use.deny) == set() with input as agent_result
}

test_tool_use_write_rules_silent_after_agent_calls if {
	changes := [{"path": ".des/config.json", "kind": "file", "what": "deleted", "restored": true}]
	inp := object.union(agent_result, {"writes": protected_write.writes, "integrity": {"changes": changes}})
	codes(gates.tool_use.deny) == set() with input as inp
	codes(gates.tool_use.deny) == {"DES-PROTECTED-PATH", "DES-INTEGRITY"} with input as object.union(inp, {"tool": "Bash", "event": "PostToolUse"})
}

# An advancement is flagged only inside an active workflow.
test_pre_invocation_advancement_needs_a_workflow if {
	inp := {"tool": "Skill", "call": {"skill": "isdlc", "args": "advance"}}
	not gates.pre_invocation.info.phases.advancement with input as inp
}
