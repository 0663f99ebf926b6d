package des.gates_test

import data.des.gates

obsolete := {"step": {"path": "steps/01-01.json", "document": {"step_id": "01-01"}}}

protected_write := {"writes": [{"path": ".des/policies/x.rego", "tool": "Edit"}]}

codes(violations) := {v.code | some v in violations}

test_step_gates_gather_stepfile_rules if {
	codes(gates.pre_invocation.deny) == {"DES-STEPFILE-OBSOLETE"} with input as obsolete
	codes(gates.subagent_stop.deny) == {"DES-STEPFILE-OBSOLETE"} with input as obsolete
	codes(gates.pre_commit.deny) == {"DES-STEPFILE-OBSOLETE"} with input as obsolete
	codes(gates.document_write.deny) == {"DES-STEPFILE-OBSOLETE"} with input as obsolete
}

test_write_gates_gather_protected_paths if {
	codes(gates.tool_use.deny) == {"DES-PROTECTED-PATH"} with input as protected_write
	codes(gates.document_write.deny) == {"DES-PROTECTED-PATH"} with input as protected_write
}

test_empty_input_allows_everywhere if {
	count(gates.pre_invocation.deny) == 0 with input as {}
	count(gates.subagent_stop.deny) == 0 with input as {}
	count(gates.pre_commit.deny) == 0 with input as {}
	count(gates.document_write.deny) == 0 with input as {}
	count(gates.tool_use.deny) == 0 with input as {}
}
