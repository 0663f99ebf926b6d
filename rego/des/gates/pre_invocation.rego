# Gate 1, pre-invocation.
# Decides whether a subagent may start (Claude Code PreToolUse for Agent or Task).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
# Built-in gate packages carry no package METADATA: a team extending the gate
# adds files to this package, and OPA allows one package annotation per package.
package des.gates.pre_invocation

import data.des.sections

deny contains v if some v in data.des.invocation.deny

deny contains v if some v in sections.deny

# At level none nothing about the step file is checked: none is needed.
deny contains v if {
	sections.level != "none"
	some v in data.des.stepfile.deny
}

deny contains v if some v in data.des.safety.deny

warn contains v if some v in data.des.safety.warn

# What Go needs to carry out the decision: the level and can_start say
# whether the step's task moves to IN_PROGRESS, safety_applies whether the
# safety check is audited.
info := {
	"level": sections.level,
	"workflow_type": sections.workflow_type,
	"safety_applies": data.des.safety.applies,
	"can_start": data.des.invocation.can_start,
}
