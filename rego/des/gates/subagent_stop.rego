# Gate 2, subagent stop.
# Decides whether a subagent left its step complete and honest (Claude Code SubagentStop).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
package des.gates.subagent_stop

deny contains v if some v in data.des.stepfile.deny

deny contains v if some v in data.des.stop.deny

warn contains v if some v in data.des.stop.warn

# What Go needs to carry out the decision: reset_phase (the phase to resume
# from) and reset_phases (the phases to set back to NOT_EXECUTED) for the
# recovery suggestions and the resolution of a failed step.
info := data.des.stop.info
