package des.settings_test

import data.des.settings

# Embedded: no input settings, so the settings are data.des.config unchanged.
test_embedded_reads_data if {
	settings.config == data.des.config
}

test_embedded_project_value if {
	c := settings.config with data.des.config.delegation_mode as "strict"
	c.delegation_mode == "strict"
}

# Remote: the project's settings from the input win over the server's data.
test_input_overlays_data if {
	c := settings.config with input.des_config as {"max_concurrent_agents": 3, "audit_dir": "var/audit"}
	c.max_concurrent_agents == 3
	c.audit_dir == "var/audit"
	c.turn_budget_default == data.des.config.turn_budget_default
}

# A key the server's data lacks (state_dir) still arrives.
test_input_adds_keys if {
	c := settings.config with input.des_config as {"state_dir": "/home/u/.local/state/des/x"}
	c.state_dir == "/home/u/.local/state/des/x"
}

test_input_not_object_ignored if {
	c := settings.config with input.des_config as "strict"
	c == data.des.config
}

# Pinned by the organisation: the project cannot change it from its side.
test_pinned_wins_over_input if {
	c := settings.config with input.des_config as {"delegation_mode": "off", "max_concurrent_agents": 9}
		with data.des.settings_pinned as {"delegation_mode": "strict"}
	c.delegation_mode == "strict"
	c.max_concurrent_agents == 9
}

test_pinned_wins_over_data if {
	c := settings.config with data.des.config.max_concurrent_agents as 10
		with data.des.settings_pinned as {"max_concurrent_agents": 2}
	c.max_concurrent_agents == 2
}

test_pinned_not_object_ignored if {
	c := settings.config with data.des.settings_pinned as ["delegation_mode"]
	c == data.des.config
}

test_overridden_names_the_refused_settings if {
	o := settings.overridden with input.des_config as {"delegation_mode": "off", "max_concurrent_agents": 2, "turn_budget_default": 5}
		with data.des.settings_pinned as {"delegation_mode": "strict", "max_concurrent_agents": 2}
	o == {"delegation_mode"}
}

# Pinning reaches the gates: the concurrency limit an organisation pins
# applies whatever the project sends.
test_pinned_limit_reaches_pre_invocation if {
	event := {
		"tool": "Agent", "main_thread": true, "registry": {"running": 2, "agents": []},
		"des_config": {"max_concurrent_agents": 0},
	}
	codes := {d.code | some d in data.des.gates.pre_invocation.deny} with input as event
		with data.des.settings_pinned as {"max_concurrent_agents": 2}
	"DES-CONCURRENCY-LIMIT" in codes
}

test_unpinned_limit_follows_project if {
	event := {
		"tool": "Agent", "main_thread": true, "registry": {"running": 2, "agents": []},
		"des_config": {"max_concurrent_agents": 0},
	}
	codes := {d.code | some d in data.des.gates.pre_invocation.deny} with input as event
		with data.des.config.max_concurrent_agents as 2
	not "DES-CONCURRENCY-LIMIT" in codes
}
