# Gate 1, pre-invocation.
# Decides whether a subagent may start (Claude Code PreToolUse for Agent or Task).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
# Built-in gate packages carry no package METADATA: a team extending the gate
# adds files to this package, and OPA allows one package annotation per package.
package des.gates.pre_invocation

deny contains v if some v in data.des.stepfile.deny
