package des.gates_test

import data.des.gates

obsolete := {"step": {"path": "steps/01-01.json", "document": {"step_id": "01-01"}}}

protected_write := {"writes": [{"path": ".des/policies/x.rego", "tool": "Edit"}]}

# The codes of the built-in rules among violations. A team adds rules to the
# same gate packages, so these tests assert what des's rules yield (codes
# starting "DES-") and stay true whatever a team's rules add.
codes(violations) := {v.code | some v in violations; startswith(v.code, "DES-")}

full_sections := ["DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "TDD_14_PHASES", "QUALITY_GATES", "OUTCOME_RECORDING", "BOUNDARY_RULES", "TIMEOUT_INSTRUCTION"]

good_prompt := {
	"validation": "required",
	"origin": "command:/nw:execute",
	"step_file": "steps/01-01.json",
	"sections": full_sections,
	"phase_words": data.des.steps.canonical_phases,
}

test_step_gates_gather_stepfile_rules if {
	codes(gates.pre_invocation.deny) == {"DES-STEPFILE-OBSOLETE"} with input as object.union(obsolete, {"prompt": good_prompt})
	codes(gates.subagent_stop.deny) == {"DES-STEPFILE-OBSOLETE"} with input as obsolete
	codes(gates.pre_commit.deny) == {"DES-STEPFILE-OBSOLETE"} with input as obsolete
	codes(gates.document_write.deny) == {"DES-STEPFILE-OBSOLETE"} with input as obsolete
}

test_write_gates_gather_protected_paths if {
	codes(gates.tool_use.deny) == {"DES-PROTECTED-PATH"} with input as protected_write
	codes(gates.document_write.deny) == {"DES-PROTECTED-PATH"} with input as protected_write
}

test_tool_use_gathers_integrity if {
	changes := [{"path": ".des/config.json", "kind": "file", "what": "deleted", "restored": true}]
	codes(gates.tool_use.deny) == {"DES-INTEGRITY"} with input as {"tool": "Bash", "integrity": {"changes": changes}}
}

test_empty_input_allows_everywhere if {
	codes(gates.subagent_stop.deny) == set() with input as {}
	codes(gates.pre_commit.deny) == set() with input as {}
	codes(gates.document_write.deny) == set() with input as {}
	codes(gates.tool_use.deny) == set() with input as {}
}

test_pre_invocation_complete_prompt_passes if {
	inp := {"prompt": good_prompt, "step": {"path": "steps/01-01.json", "document": {"task_id": "01-01", "state": {"status": "TODO"}}}}
	codes(gates.pre_invocation.deny) == set() with input as inp
	codes(gates.pre_invocation.warn) == set() with input as inp
	gates.pre_invocation.info == {
		"level": "full", "workflow_type": "tdd_cycle", "safety_applies": false, "can_start": true,
		"phases": {"current": null, "target": null, "delegation": false, "by": null, "advancement": false, "escalations": []},
	} with input as inp
}

test_pre_invocation_level_none_ignores_the_step if {
	inp := {"prompt": {"validation": "required", "origin": "command:/nw:research", "sections": ["DES_METADATA"]}, "step": {"path": "s.json", "problem": "missing"}}
	codes(gates.pre_invocation.deny) == set() with input as inp
	gates.pre_invocation.info.level == "none" with input as inp
}

test_pre_invocation_gathers_safety if {
	inp := {"prompt": good_prompt, "step": {"path": "s.json", "document": {"task_id": "1", "workflow_type": "configuration_setup"}}}
	codes(gates.pre_invocation.warn) == {"DES-SAFETY-METADATA"} with input as inp
	gates.pre_invocation.info.safety_applies with input as inp
}

test_pre_invocation_gathers_every_concern if {
	inp := {
		"prompt": {"validation": "maybe", "origin": "command:/nw:execute", "step_file": "s.json", "sections": ["DES_METADATA"], "phase_words": []},
		"step": {"path": "s.json", "document": {"task_id": "1", "step_id": "1", "workflow_type": "configuration_setup", "safety": {"affects_production": true}}},
	}
	codes(gates.pre_invocation.deny) == {"DES-MARKER-INVALID", "DES-SECTION-MISSING", "DES-STEPFILE-OBSOLETE", "DES-SAFETY-PRODUCTION"} with input as inp
}

test_document_write_gathers_step_writes if {
	inp := {
		"step": {"path": "s.json", "document": {"task_id": "1"}, "task_status": "DONE", "phases": []},
		"disk_step": {"task_status": "TODO", "phases": []},
	}
	codes(gates.document_write.deny) == {"DES-TASK-TRANSITION"} with input as inp
}

test_document_write_gathers_state_writes if {
	inp := {"state": {"path": ".isdlc/state.json", "incoming": {"state_version": 3}, "disk": {"state_version": 5}}}
	codes(gates.document_write.deny) == {"DES-STATE-V7-STALE"} with input as inp
}

test_document_write_gathers_state_warnings if {
	inp := {"state": {"path": ".des/state.json", "incoming": {"current_phase": "a", "active_workflow": {"current_phase": "b"}}}}
	codes(gates.document_write.warn) == {"DES-STATE-V9"} with input as inp
}

test_tool_use_gathers_bash_writes if {
	inp := {"tool": "Bash", "writes": [{"path": ".des/state.json", "tool": "Bash", "how": "tee", "document": "state"}]}
	codes(gates.tool_use.deny) == {"DES-STATE-BASH-WRITE"} with input as inp
}

stop_input := {
	"step": {
		"path": "steps/01-01.json",
		"document": {"task_id": "01-01", "step_id": "01-01"},
		"schema_errors": [],
		"workflow_type": "tdd_cycle",
		"task_status": "IN_PROGRESS",
		"phases": [
			{"name": "PREPARE", "index": 0, "status": "EXECUTED", "outcome": "PASS", "outcome_details": "", "blocked_by": ""},
			{"name": "RED_ACCEPTANCE", "index": 1, "status": "IN_PROGRESS", "outcome": "", "outcome_details": "", "blocked_by": ""},
		],
	},
	"run": {
		"source": "gate1",
		"task_status_at_start": "IN_PROGRESS",
		"phases_at_start": {},
		"events": [
			{"event": "PHASE_STARTED", "phase": "PREPARE", "from": "NOT_EXECUTED", "to": "IN_PROGRESS", "confirmed": true, "by": "write"},
			{"event": "PHASE_STARTED", "phase": "RED_ACCEPTANCE", "from": "NOT_EXECUTED", "to": "IN_PROGRESS", "confirmed": true, "by": "write"},
		],
	},
	"scope": {"checked": true, "patterns": ["src/**"], "changed": 2, "outside": ["README.md"], "error": ""},
}

test_subagent_stop_gathers_stop_rules if {
	codes(gates.subagent_stop.deny) == {"DES-STEPFILE-OBSOLETE", "DES-PHASE-ABANDONED"} with input as stop_input
	codes(gates.subagent_stop.warn) == {"DES-SCOPE-VIOLATION"} with input as stop_input
	gates.subagent_stop.info == {"redo_phases": [], "reset_phase": "RED_ACCEPTANCE", "reset_phases": ["RED_ACCEPTANCE"]} with input as stop_input
}

test_subagent_stop_missing_step_file if {
	codes(gates.subagent_stop.deny) == {"DES-STEPFILE-MISSING"} with input as {"step": {"path": "steps/01-01.json", "problem": "missing", "error": "no such file"}}
}

test_pre_commit_gathers_commit_rules if {
	inp := {"step": {"path": "s.json", "document": {"task_id": "1"}, "phase_log": "", "phases": []}, "gate2": [{"event": "SUBAGENT_STOP_VALIDATION", "outcome": "FAIL", "codes": [], "timestamp": "t"}]}
	codes(gates.pre_commit.deny) == {"DES-COMMIT-INCOMPLETE", "DES-COMMIT-GATE2"} with input as inp
}

test_pre_commit_invalid_json_is_a_schema_error_only if {
	inp := {"step": {"path": "s.json", "problem": "invalid_json", "error": "unexpected end of JSON input"}, "gate2": []}
	codes(gates.pre_commit.deny) == {"DES-STEPFILE-SCHEMA"} with input as inp
}

# Every gate reports the built-in policies' revision (des checks it on an OPA server).
test_every_gate_reports_the_builtin_revision if {
	rev := data.des.builtin.revision
	count(rev) == 64
	data.des.gates.pre_invocation.builtin_revision == rev
	data.des.gates.subagent_stop.builtin_revision == rev
	data.des.gates.pre_commit.builtin_revision == rev
	data.des.gates.document_write.builtin_revision == rev
	data.des.gates.tool_use.builtin_revision == rev
}

test_document_write_judges_the_state_selector if {
	switch := {"state_selector": {"path": ".isdlc/monorepo.json", "switches": [{
		"cwd": ".", "isdlc_project": "",
		"from": ".isdlc/state.json", "to": ".isdlc/projects/x/state.json",
		"from_project": "", "to_project": "x",
		"from_active_workflow": true,
	}]}}
	some v in data.des.gates.document_write.deny with input as switch
	v.code == "DES-STATE-SWITCH"
}
