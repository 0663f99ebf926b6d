# Gate 1, pre-invocation.
# Decides whether a subagent may start (Claude Code PreToolUse for Agent or
# Task) and, for multi-phase workflows, whether an Agent, Task or Skill call
# fits the workflow's phase (des.phases); for delegating orchestrators,
# whether the call fits the task graph (des.taskgraph.delegation) and the
# concurrency limit (des.delegation).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
# Built-in gate packages carry no package METADATA: a team extending the gate
# adds files to this package, and OPA allows one package annotation per package.
package des.gates.pre_invocation

# METADATA
# title: The revision of des's built-in policies
# description: |
#   Read by des when an OPA server decides (setting opa_url): the server must
#   run the policies of the des release that gathered the facts.
builtin_revision := data.des.builtin.revision

# An exception for a code the organisation made unwaivable (des.exceptions).
# Read through data so a gate without exception rules still compiles;
# DES-EXCEPTION-REFUSED itself is waived by no exception (it is denied).
deny contains v if some v in data.des.exceptions.refused("pre_invocation", {c | some c in data.des.gates.pre_invocation.exception})

import data.des.phases.guards
import data.des.sections

# The nWave rules judge a prompt with (non-routing) DES markers: Go sets
# input.prompt only then. A call without it (an iSDLC delegation, a Skill)
# is left to the phase guards.
_nwave if input.prompt

deny contains v if {
	_nwave
	some v in data.des.invocation.deny
}

deny contains v if {
	_nwave
	some v in sections.deny
}

# At level none nothing about the step file is checked: none is needed.
deny contains v if {
	_nwave
	sections.level != "none"
	some v in data.des.stepfile.deny
}

deny contains v if {
	_nwave
	some v in data.des.safety.deny
}

warn contains v if {
	_nwave
	some v in data.des.safety.warn
}

# The phase workflow guards (input.tool, input.call, input.workflow).
deny contains v if some v in guards.deny

warn contains v if some v in guards.warn

# A delegation of a task graph phase (input.task_phase, input.task_graph):
# no phase named, or no graph, no opinion.
deny contains v if {
	input.task_phase
	input.task_graph
	some v in data.des.taskgraph.delegation.deny
}

# The concurrency limit (input.registry, only when max_concurrent_agents > 0).
deny contains v if {
	input.registry
	some v in data.des.delegation.concurrency_deny
}

default _phase_current := null

_phase_current := data.des.phases.current

# The phase guards' view of the call needs a workflow: without one (Go
# found no workflow state, so input.workflow is absent) the search of the
# prompt for phase names is not run, and the call is no phase delegation.
default _phase_target := null

_phase_target := guards.target if input.workflow

default _phase_by := null

_phase_by := guards.by if input.workflow

default _phase_delegation := false

_phase_delegation := guards.delegation if input.workflow

# An advancement attempt inside an active workflow: Go audits it even when
# it is allowed, so the trail shows every gate the orchestrator passed.
default _phase_advancement := false

_phase_advancement if {
	data.des.phases.current
	guards.advancement
}

# One escalation per type among this gate's denies (a team's codes included
# when it adds them to data.des.phases.escalation_types), codes sorted.
_escalations := [{"type": t, "phase": _phase_current, "codes": sort(codes)} |
	some t in sort({data.des.phases.escalation_types[v.code] | some v in deny})
	codes := {v.code | some v in deny; data.des.phases.escalation_types[v.code] == t}
]

# What Go needs to carry out the decision: the level and can_start say
# whether the step's task moves to IN_PROGRESS, safety_applies whether the
# safety check is audited; phases is the phase guards' view of the call
# (current phase, target phase, whether it is a phase delegation and how it
# was found, whether it is an advancement attempt, and the escalations Go audits as PHASE_ESCALATION).
info := {
	"level": sections.level,
	"workflow_type": sections.workflow_type,
	"safety_applies": data.des.safety.applies,
	"can_start": data.des.invocation.can_start,
	"phases": {
		"current": _phase_current,
		"target": _phase_target,
		"delegation": _phase_delegation,
		"by": _phase_by,
		"advancement": _phase_advancement,
		"escalations": _escalations,
	},
}
