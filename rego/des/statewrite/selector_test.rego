package des.statewrite_test

import data.des.statewrite

switching(active) := {"state_selector": {
	"path": ".isdlc/monorepo.json",
	"switches": [{
		"cwd": ".", "isdlc_project": "",
		"from": ".isdlc/state.json", "to": ".isdlc/projects/x/state.json",
		"from_project": "", "to_project": "x",
		"from_active_workflow": active,
	}],
}}

test_switch_away_from_an_active_workflow_denied if {
	vs := statewrite.selector_deny with input as switching(true)
	{v.code | some v in vs} == {"DES-STATE-SWITCH"}
	some v in vs
	v.msg == "this write to .isdlc/monorepo.json would make des read .isdlc/projects/x/state.json (project x) instead of .isdlc/state.json for calls made in the project root, while .isdlc/state.json holds an active workflow"
	contains(concat("\n", v.recovery), "finish or end the active workflow in .isdlc/state.json first")
}

test_switch_names_the_directory_and_the_environment if {
	doc := {"state_selector": {"path": ".isdlc/monorepo.json", "switches": [{
		"cwd": "apps/api", "isdlc_project": "api",
		"from": ".isdlc/projects/api/state.json", "to": "",
		"from_project": "api", "to_project": "",
		"from_active_workflow": true,
	}]}}
	some v in statewrite.selector_deny with input as doc
	contains(v.msg, "make des read no workflow state instead of .isdlc/projects/api/state.json (project api) for calls made in apps/api with ISDLC_PROJECT=api")
}

test_switch_away_from_an_idle_state_passes if {
	count(statewrite.selector_deny) == 0 with input as switching(false)
}

test_no_switch_no_opinion if {
	count(statewrite.selector_deny) == 0 with input as {"state_selector": {"path": ".isdlc/monorepo.json", "switches": []}}
}
