package des.statewrite_test

import data.des.statewrite

shadowing(active) := {"state": {
	"path": ".des/state.json", "schema_errors": [], "incoming": {},
	"shadows": {"state_file": ".isdlc/state.json", "active_workflow": active},
}}

test_shadow_denied_over_an_active_workflow if {
	vs := statewrite.deny with input as shadowing(true)
	{v.code | some v in vs} == {"DES-STATE-SHADOW"}
	some v in vs
	contains(v.msg, "creating .des/state.json would replace .isdlc/state.json")
	contains(concat("\n", v.recovery), "Write the workflow's changes to .isdlc/state.json")
}

test_shadow_of_an_idle_state_passes if {
	count(statewrite.deny) == 0 with input as shadowing(false)
}

test_no_shadow_fact_no_opinion if {
	count(statewrite.deny) == 0 with input as fresh(base)
}
