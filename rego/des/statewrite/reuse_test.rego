package des.statewrite_test

import data.des.statewrite

# A workflow started under an identity des already saw (reuse.rego).

r_old := {
	"type": "feature", "started_at": "2026-11-20T09:00:00Z",
	"phases": ["05-test-strategy", "06-implementation", "07-testing"],
	"current_phase": "05-test-strategy", "current_phase_index": 0,
}

r_input(disk, doc, seen) := {
	"state": {
		"path": ".isdlc/state.json",
		"incoming": {"active_workflow": {}},
		"document": doc,
		"workflow_before": p_id(disk),
	},
	"workflow": {
		"state_file": ".isdlc/state.json", "state": disk,
		"evidence": object.union({"workflow": p_id(doc), "test_iteration": {}, "records_seen": seen}, r_first(seen)),
	},
}

r_first(seen) := {"first_seen": "2026-11-20T09:05:00Z"} if seen > 0

r_first(0) := {}

r_deny(inp) := {v | some v in statewrite.deny with input as inp with time.now_ns as 1795950000000000000; v.code == "DES-WORKFLOW-REUSED"}

test_old_started_at_in_a_new_workflow_denied if {
	# The file holds no workflow (the last one ended); the write starts one
	# with an old workflow's started_at.
	inp := r_input({}, {"active_workflow": r_old}, 12)
	some v in r_deny(inp)
	v.msg == ".isdlc/state.json: this write starts workflow feature@2026-11-20T09:00:00Z, but des already holds records of a workflow of that type and started_at (12, the first from 2026-11-20T09:05:00Z): a new workflow would inherit its test runs"
	v.field == "/active_workflow/started_at"
	contains(v.recovery[0], "active_workflow.started_at set to the time it starts (now: 2026-11-29T")
}

test_replacing_the_workflow_on_disk_with_an_old_one_denied if {
	inp := r_input(p_disk, {"active_workflow": r_old}, 3)
	count(r_deny(inp)) == 1
}

test_a_new_started_at_allowed if {
	inp := r_input({}, {"active_workflow": object.union(r_old, {"started_at": "2026-11-29T10:00:00Z"})}, 0)
	count(r_deny(inp)) == 0
}

test_the_same_workflow_goes_on if {
	# Resuming: the write keeps the workflow the file holds.
	doc := json.patch(p_disk, [{"op": "add", "path": "/phases/06-implementation/notes", "value": "resumed"}])
	inp := r_input(p_disk, doc, 40)
	count(r_deny(inp)) == 0
}

test_state_evidence_mode_has_no_opinion if {
	inp := r_input({}, {"active_workflow": r_old}, 12)
	count({v | some v in statewrite.deny with input as inp with data.des.phases.guards.evidence_mode as false; v.code == "DES-WORKFLOW-REUSED"}) == 0
}

test_a_workflow_brought_back_as_des_saw_it_resumes if {
	# Ended by mistake and written back, or a branch switched back to: the
	# active_workflow is one des saw.
	inp := json.patch(r_input({}, {"active_workflow": r_old}, 12), [{"op": "add", "path": "/workflow/evidence/content_seen", "value": true}])
	count(r_deny(inp)) == 0

	# The same identity with another content: reused.
	other := json.patch(inp, [{"op": "replace", "path": "/workflow/evidence/content_seen", "value": false}])
	count(r_deny(other)) == 1
}
