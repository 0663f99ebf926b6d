# Gate 2, subagent stop.
# Decides whether a subagent left its step complete and honest (Claude Code SubagentStop).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
package des.gates.subagent_stop

deny contains v if some v in data.des.stepfile.deny
