package des.safety_test

import data.des.safety

cfg(safety_obj) := {"step": {"document": {"task_id": "1", "workflow_type": "configuration_setup", "safety": safety_obj}}}

codes(violations) := {v.code | some v in violations}

test_safe_configuration_passes if {
	inp := cfg({"is_destructive": true, "rollback_plan": "restore the snapshot", "affects_production": false})
	count(safety.deny) == 0 with input as inp
	count(safety.warn) == 0 with input as inp
	safety.applies with input as inp
}

test_destructive_without_rollback if {
	codes(safety.deny) == {"DES-SAFETY-ROLLBACK"} with input as cfg({"is_destructive": true})
	codes(safety.deny) == {"DES-SAFETY-ROLLBACK"} with input as cfg({"is_destructive": true, "rollback_plan": "  "})
	count(safety.deny) == 0 with input as cfg({"is_destructive": false})
}

test_production if {
	codes(safety.deny) == {"DES-SAFETY-PRODUCTION"} with input as cfg({"affects_production": true})
	count(safety.deny) == 0 with input as cfg({"affects_production": false})
}

test_missing_safety_warns if {
	codes(safety.warn) == {"DES-SAFETY-METADATA"} with input as {"step": {"document": {"task_id": "1", "workflow_type": "configuration_setup"}}}
	codes(safety.warn) == {"DES-SAFETY-METADATA"} with input as {"step": {"document": {"task_id": "1", "workflow_type": "configuration_setup", "safety": null}}}
}

test_tdd_steps_are_not_judged if {
	inp := {"step": {"document": {"task_id": "1", "safety": {"is_destructive": true, "affects_production": true}}}}
	count(safety.deny) == 0 with input as inp
	count(safety.warn) == 0 with input as inp
	not safety.applies with input as inp
}
