package des.protected_test

import data.des.protected

write(path) := {"writes": [{"path": path, "tool": "Write"}]}

test_policy_dir_is_protected if {
	some v in protected.deny with input as write(".des/policies/team.rego")
	v.code == "DES-PROTECTED-PATH"
	contains(v.msg, ".des/policies/team.rego")
}

test_config_audit_and_runs_are_protected if {
	count(protected.deny) == 1 with input as write(".des/config.json")
	count(protected.deny) == 1 with input as write(".des/audit/audit-2026-01-01.log")
	count(protected.deny) == 1 with input as write(".des/runs/toolu_1.json")
	count(protected.deny) == 1 with input as write(".des/sessions/agent-a1.json")
	count(protected.deny) == 1 with input as write(".des/sessions")
	count(protected.deny) == 1 with input as write(".des/audit")
}

test_kept_bundles_and_decision_logs_are_protected if {
	count(protected.deny) == 1 with input as write(".des/bundles/acme/bundle.tar.gz")
	count(protected.deny) == 1 with input as write(".des/bundles/jwks.json")
	count(protected.deny) == 1 with input as write(".des/decisions/2026-11-25.jsonl")
	count(protected.deny) == 1 with input as write(".des/decisions/push-state.json")
	count(protected.deny) == 1 with input as write(".des/decisions")
	count(protected.deny) == 0 with input as write(".des/decisions.md")
}

test_configured_dirs_follow_settings if {
	count(protected.deny) == 1 with input as write("policies/x.rego") with data.des.config.policy_dirs as ["policies"]
	count(protected.deny) == 0 with input as write(".des/policies/x.rego") with data.des.config.policy_dirs as ["policies"]
	count(protected.deny) == 1 with input as write("/var/log/des/a.log") with data.des.config.audit_dir as "/var/log/des"
}

test_phase_requirement_files_are_protected if {
	files := ["team/iteration-requirements.json"]
	count(protected.deny) == 1 with input as write("team/iteration-requirements.json") with data.des.config.phase_requirements_files as files
	count(protected.deny) == 1 with input as write("team") with data.des.config.phase_requirements_files as files
	count(protected.deny) == 0 with input as write("team/iteration-requirements.json.bak") with data.des.config.phase_requirements_files as files
	count(protected.deny) == 0 with input as write("team/iteration-requirements.json") with data.des.config.phase_requirements_files as []
}

test_neighbours_are_not_protected if {
	count(protected.deny) == 0 with input as write(".des/state.json")
	count(protected.deny) == 0 with input as write(".des/policies-old/x.rego")
	count(protected.deny) == 0 with input as write("src/main.go")
	count(protected.deny) == 0 with input as {}
}

test_parent_directory_writes_cover_protected_roots if {
	count(protected.deny) == 1 with input as write(".des")
	count(protected.deny) == 1 with input as write(".")
	count(protected.deny) == 0 with input as write("src")
	count(protected.deny) == 0 with input as write(".de")
}

test_git_hooks_and_state_dir_are_protected if {
	count(protected.deny) == 1 with input as write(".git/hooks/pre-commit")
	count(protected.deny) == 1 with input as write("/home/u/.local/state/des/projects/ab/integrity/manifest.json") with data.des.config.state_dir as "/home/u/.local/state/des/projects/ab"
	count(protected.deny) == 0 with input as write("/home/u/.local/state/des/projects/ab/x") with data.des.config.state_dir as ""
}

test_audit_witness_dir_is_protected if {
	w := "/home/u/.local/state/des/audit-witness"
	count(protected.deny) == 1 with input as write(concat("/", [w, "audit-ab.json"])) with data.des.config.witness_dir as w
	count(protected.deny) == 1 with input as write("/home/u/.local/state/des") with data.des.config.witness_dir as w
	count(protected.deny) == 0 with input as write("/home/u/.local/state/des/audit-witness-old") with data.des.config.witness_dir as w
}

test_claude_settings_guarded_part if {
	count(protected.deny) == 0 with input as write(".claude/settings.json")
	some v in protected.deny with input as {"writes": [{"path": ".claude/settings.json", "tool": "Edit", "des_hooks_changed": true}]}
	contains(v.msg, "the hooks, the sandbox, env")
	count(protected.deny) == 0 with input as {"writes": [{"path": ".claude/settings.json", "tool": "Edit", "des_hooks_changed": false}]}
	count(protected.deny) == 1 with input as {"writes": [{"path": ".claude/settings.local.json", "tool": "Bash"}]}
	count(protected.deny) == 2 with input as {"writes": [{"path": ".claude", "tool": "Bash"}]}
	count(protected.deny) == 0 with input as {"writes": [{"path": ".claude/agents/x.md", "tool": "Bash"}]}
}

test_user_claude_settings if {
	u := "/home/u/.claude/settings.json"
	some v in protected.deny with input as {"writes": [{"path": u, "tool": "Write", "user_claude_settings": true, "des_hooks_changed": true}]}
	contains(v.msg, u)
	count(protected.deny) == 0 with input as {"writes": [{"path": u, "tool": "Write", "user_claude_settings": true, "des_hooks_changed": false}]}
	count(protected.deny) == 0 with input as {"writes": [{"path": "/home/u/notes.json", "tool": "Write", "des_hooks_changed": true}]}
}

test_git_config_only_hooks_path if {
	count(protected.deny) == 0 with input as write(".git/config")
	count(protected.deny) == 0 with input as {"writes": [{"path": ".git/config", "tool": "Bash"}]}
	count(protected.deny) == 1 with input as {"writes": [{"path": ".git/config", "tool": "Edit", "hooks_path_changed": true}]}
}

test_broad_commands_that_change_nothing_are_fine if {
	count(protected.deny) == 0 with input as {"writes": [{"path": ".", "tool": "Bash", "how": "git checkout", "changes": false}]}
	count(protected.deny) > 0 with input as {"writes": [{"path": ".", "tool": "Bash", "how": "chmod", "changes": true}]}
	count(protected.deny) == 0 with input as {"writes": [{"path": ".", "tool": "Bash", "how": "chmod", "changes": false}]}
}

test_dynamic_targets_that_could_name_des_files if {
	some v in protected.deny with input as {"writes": [{"path": ".d$(...)/config.json", "tool": "Bash", "how": "redirect", "document": "", "dynamic": true, "protected": true}]}
	v.code == "DES-PROTECTED-PATH"
	contains(v.msg, "cannot know")
	count(protected.deny) == 0 with input as {"writes": [{"path": ".des/policies/$(...)", "tool": "Bash", "how": "redirect", "document": "", "dynamic": true, "protected": false}]}
}

# Any git config file that can set core.hooksPath (Go says git_config), in
# or out of the project, is judged on what git reads from it after the write.
test_git_config_file_hooks_path_changed_denied if {
	every path in ["/home/dev/.gitconfig", "/home/dev/.config/git/config", ".git/config.worktree", "/home/dev/work.inc"] {
		vs := protected.deny with input as {"writes": [{"path": path, "tool": "Write", "git_config": true, "hooks_path_changed": true}]}
		count(vs) == 1
		some v in vs
		v.code == "DES-PROTECTED-PATH"
		contains(v.msg, concat("", ["core.hooksPath (or an include) in ", path]))
	}
}

test_git_config_file_other_change_allowed if {
	count(protected.deny) == 0 with input as {"writes": [{"path": "/home/dev/.gitconfig", "tool": "Edit", "git_config": true, "hooks_path_changed": false}]}
}

test_git_config_rule_does_not_repeat_git_config if {
	count(protected.deny) == 1 with input as {"writes": [{"path": ".git/config", "tool": "Edit", "git_config": true, "hooks_path_changed": true}]}
}
