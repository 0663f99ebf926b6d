# Document write guard.
# Decides whether a write to a workflow document (step file, workflow state,
# task graph) may land.
# Gathers the concern packages; a team adds rules to this package to extend the gate.
# Each concern is asked only when the input holds what it judges: a rule
# reference costs microseconds even when it finds nothing.
package des.gates.document_write

# METADATA
# title: The revision of des's built-in policies
# description: |
#   Read by des when an OPA server decides (setting opa_url): the server must
#   run the policies of the des release that gathered the facts.
builtin_revision := data.des.builtin.revision

# An exception for a code the organisation made unwaivable (des.exceptions).
# Read through data so a gate without exception rules still compiles;
# DES-EXCEPTION-REFUSED itself is waived by no exception (it is denied).
deny contains v if some v in data.des.exceptions.refused("document_write", {c | some c in data.des.gates.document_write.exception})

deny contains v if {
	input.step
	some v in data.des.stepfile.deny
}

deny contains v if {
	input.step
	some v in data.des.stepwrite.deny
}

deny contains v if some v in data.des.protected.deny

deny contains v if {
	input.state
	some v in data.des.statewrite.deny
}

warn contains v if {
	input.state
	some v in data.des.statewrite.warn
}

# des's memory of a workflow state after this write, kept by Go once the
# write is seen to land (gate.DocumentWrite, StateDir).
info := {"state_seen": data.des.statewrite.seen_next} if input.state

# The task graph of a delegating orchestrator (input.task_graph).
deny contains v if {
	input.task_graph
	some v in data.des.taskgraph.write.deny
}

warn contains v if {
	input.task_graph
	some v in data.des.taskgraph.write.warn
}

# .isdlc/monorepo.json, which chooses the workflow state in effect
# (input.state_selector).
deny contains v if {
	input.state_selector
	some v in data.des.statewrite.selector_deny
}
