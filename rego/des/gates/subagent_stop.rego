# Gate 2, subagent stop.
# Decides whether a subagent left its step complete and honest (Claude Code SubagentStop).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
package des.gates.subagent_stop

# METADATA
# title: The revision of des's built-in policies
# description: |
#   Read by des when an OPA server decides (setting opa_url): the server must
#   run the policies of the des release that gathered the facts.
builtin_revision := data.des.builtin.revision

# An exception for a code the organisation made unwaivable (des.exceptions).
# Read through data so a gate without exception rules still compiles;
# DES-EXCEPTION-REFUSED itself is waived by no exception (it is denied).
deny contains v if some v in data.des.exceptions.refused("subagent_stop", {c | some c in data.des.gates.subagent_stop.exception})

deny contains v if some v in data.des.stepfile.deny

deny contains v if some v in data.des.stop.deny

warn contains v if some v in data.des.stop.warn

# What Go needs to carry out the decision: reset_phase (the phase to resume
# from) and reset_phases (the phases to set back to NOT_EXECUTED) for the
# recovery suggestions and the resolution of a failed step.
info := data.des.stop.info
