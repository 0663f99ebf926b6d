# Tool use guard.
# Decides whether a tool call (Write, Edit, MultiEdit, Bash) may touch DES's own
# files or write a guarded document behind the write guard's back, whether a
# git commit fits the phase workflow's branch (des.phases.branch), and, after
# an Agent/Task call, observes iSDLC's discover flow (des.phases.observers);
# under delegation_mode, whether the main thread works itself (des.delegation).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
package des.gates.tool_use

# METADATA
# title: The revision of des's built-in policies
# description: |
#   Read by des when an OPA server decides (setting opa_url): the server must
#   run the policies of the des release that gathered the facts.
builtin_revision := data.des.builtin.revision

# An exception for a code the organisation made unwaivable (des.exceptions).
# Read through data so a gate without exception rules still compiles;
# DES-EXCEPTION-REFUSED itself is waived by no exception (it is denied).
deny contains v if some v in data.des.exceptions.refused("tool_use", {c | some c in data.des.gates.tool_use.exception})

# The PostToolUse of an Agent/Task call is for the phase observers only.
_agent_result if {
	input.event == "PostToolUse"
	input.tool in {"Agent", "Task"}
}

deny contains v if {
	not _agent_result
	some v in data.des.protected.deny
}

# After the call: what DES found changed and restored (input.integrity).
deny contains v if {
	not _agent_result
	some v in data.des.integrity.deny
}

deny contains v if {
	input.tool == "Bash" # only Bash writes bypass the write guard
	some v in data.des.bashwrite.deny
}

# git commit in a phase workflow (input.commits, input.workflow).
deny contains v if some v in data.des.phases.branch.deny

warn contains v if {
	_agent_result
	some v in data.des.phases.observers.warn
}

# Delegation mode: work in the main thread (input.delegation, PreToolUse,
# only when delegation_mode is not "off").
deny contains v if {
	input.delegation
	some v in data.des.delegation.work_deny
}

warn contains v if {
	input.delegation
	some v in data.des.delegation.work_warn
}
