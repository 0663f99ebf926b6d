package des.config_test

# The defaults a policy sees when no setting overrides them (contract §6).
test_defaults if {
	data.des.config.stale_threshold_minutes == 30
	data.des.config.turn_budget_default == 50
	data.des.config.validation_timeout_ms == 500
	data.des.config.audit_log_retention_days == 90
	data.des.config.audit_dir == ".des/audit"
	data.des.config.policy_dirs == [".des/policies"]
	data.des.config.gate2_on_failure == "record"
	data.des.config.guarded_step_files == ["**/steps/*.json"]
	data.des.config.guarded_state_files == [".des/state.json", ".isdlc/state.json", ".isdlc/projects/*/state.json"]
}

# Orchestration governance (delegation, the subagent registry, the task graph):
# off until a project sets them.
test_orchestration_defaults if {
	data.des.config.delegation_mode == "off"
	data.des.config.max_concurrent_agents == 0
	data.des.config.session_ttl_minutes == 60
	data.des.config.task_graph_file == ".claude/state/active_task_graph.json"
}
