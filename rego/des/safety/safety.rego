# METADATA
# title: Pre-execution safety
# description: |
#   Configuration setup steps change systems rather than code, so they must say
#   whether they are destructive, how to roll back, and whether they touch
#   production. Input: input.step.document.{workflow_type, safety}.
package des.safety

_applies if input.step.document.workflow_type == "configuration_setup"

default _safety := null

_safety := input.step.document.safety

# METADATA
# title: Destructive configuration without rollback plan
# description: A destructive configuration setup step has no rollback_plan.
# custom:
#   code: DES-SAFETY-ROLLBACK
#   severity: deny
deny contains {
	"code": "DES-SAFETY-ROLLBACK",
	"msg": "configuration setup step is destructive (safety.is_destructive true) but has no safety.rollback_plan",
	"field": "/safety/rollback_plan",
	"recovery": ["Write safety.rollback_plan: the exact steps that undo this change, tested before it runs."],
} if {
	_applies
	_safety.is_destructive == true
	trim_space(object.get(_safety, "rollback_plan", "")) == ""
}

# METADATA
# title: Configuration affecting production
# description: A configuration setup step declares affects_production true; DES does not let a subagent run it.
# custom:
#   code: DES-SAFETY-PRODUCTION
#   severity: deny
deny contains {
	"code": "DES-SAFETY-PRODUCTION",
	"msg": "configuration setup step affects production (safety.affects_production true); a subagent may not run it",
	"field": "/safety/affects_production",
	"recovery": ["Have a person run production changes, or split out a step that only prepares the change for review."],
} if {
	_applies
	_safety.affects_production == true
}

# METADATA
# title: Configuration setup without safety metadata
# description: A configuration setup step has no safety object.
# custom:
#   code: DES-SAFETY-METADATA
#   severity: warn
warn contains {
	"code": "DES-SAFETY-METADATA",
	"msg": "configuration setup step has no safety object; DES cannot tell whether it is destructive or touches production",
	"field": "/safety",
	"recovery": ["Add safety: {is_destructive, rollback_plan, affects_production} to the step file."],
} if {
	_applies
	not is_object(_safety)
}

# METADATA
# title: Safety codes
# description: The codes of this package, for the PRE_EXECUTE_SAFETY audit events.
codes := {"DES-SAFETY-ROLLBACK", "DES-SAFETY-PRODUCTION", "DES-SAFETY-METADATA"}

# METADATA
# title: Safety check applies
# description: True for configuration setup steps, the only ones this package judges.
default applies := false

applies if _applies
