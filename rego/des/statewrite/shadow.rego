package des.statewrite

# des reads the first workflow state that exists of .des/state.json, the
# monorepo project's and .isdlc/state.json. A write that creates an earlier
# one replaces the state in effect for every phase guard at once: one Write
# of "{}" would switch them all off. Go reports such a creation as
# input.state.shadows {state_file, active_workflow} (only when the file does
# not exist yet and would take the place of the state in effect).

# METADATA
# title: New workflow state hides the one in effect
# description: A write creates a workflow state file that des would read instead of the state in effect, which holds an active workflow.
# custom:
#   code: DES-STATE-SHADOW
#   severity: deny
deny contains {
	"code": "DES-STATE-SHADOW",
	"msg": sprintf("creating %s would replace %s as the workflow state des reads (the first that exists of .des/state.json, the monorepo project's state, .isdlc/state.json), while %s holds an active workflow", [_path, input.state.shadows.state_file, input.state.shadows.state_file]),
	"field": "",
	"recovery": [
		sprintf("Write the workflow's changes to %s, the state in effect.", [input.state.shadows.state_file]),
		sprintf("To move the workflow to %s, do it by hand outside the agent session, then end the active workflow in %s.", [_path, input.state.shadows.state_file]),
	],
} if {
	input.state.shadows.active_workflow == true
}
