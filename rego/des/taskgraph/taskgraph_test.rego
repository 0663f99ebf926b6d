package des.taskgraph_test

import data.des.taskgraph

# A realistic plan that passes every rule: password reset by email, tier 2.
# Wave 0 implements two atomic pieces in parallel, wave 1 verifies each of
# them in parallel, wave 2 runs the end-to-end tests. The other tests reuse it.
plan := {
	"task_id": "password-reset",
	"description": "Add password reset by email",
	"tier": 2,
	"complexity_score": 12,
	"current_wave": 0,
	"max_retries": 3,
	"waves": [
		{
			"wave_id": 0,
			"parallel_execution": true,
			"phases": [
				{
					"phase_id": "reset-token",
					"type": "implementation",
					"objective": "Create the password reset token model",
					"agent": "backend-developer",
					"depends_on": [],
					"deliverable_manifest": {
						"files": [
							{"path": "src/auth/reset_token.py", "must_exist": false},
							{"path": "tests/test_reset_token.py", "must_exist": false},
						],
						"tests": ["tests/test_reset_token.py"],
						"acceptance_criteria": ["A token expires after 30 minutes"],
					},
					"is_atomic": true,
					"depth": 2,
					"estimated_minutes": 20,
					"status": "pending",
					"retries": 0,
				},
				{
					"phase_id": "reset-email",
					"type": "implementation",
					"objective": "Send the password reset email",
					"agent": "backend-developer",
					"deliverable_manifest": {
						"files": [
							{"path": "src/mail/reset_email.py", "must_exist": false},
							{"path": "templates/reset_email.html", "must_exist": false},
						],
						"tests": ["tests/test_reset_email.py"],
						"acceptance_criteria": ["The email links to the reset page"],
					},
					"is_atomic": true,
					"depth": 3,
					"estimated_minutes": 25,
					"status": "pending",
					"retries": null,
				},
			],
		},
		{
			"wave_id": 1,
			"parallel_execution": true,
			"phases": [
				{
					"phase_id": "verify-reset-token",
					"type": "verification",
					"objective": "Verify the reset token model",
					"agent": "task-completion-verifier",
					"verifies_phase_id": "reset-token",
					"deliverable_manifest": {"files": [{"path": "src/auth/reset_token.py", "must_exist": true}]},
					"status": "pending",
				},
				{
					"phase_id": "verify-reset-email",
					"type": "verification",
					"agent": "task-completion-verifier",
					"verifies_phase_id": "reset-email",
					"deliverable_manifest": {"files": [{"path": "src/auth/reset_token.py", "must_exist": true}]},
				},
			],
		},
		{
			"wave_id": 2,
			"parallel_execution": false,
			"phases": [{
				"phase_id": "reset-e2e",
				"type": "integration",
				"objective": "Run the end-to-end password reset tests",
				"agent": "integration-tester",
				"depends_on": ["verify-reset-token", "verify-reset-email"],
				"deliverable_manifest": {"files": [{"path": "tests/e2e/test_password_reset.py", "must_exist": false}]},
				"status": "pending",
			}],
		},
	],
}

# plan with JSON patch operations applied.
patched(ops) := json.patch(plan, ops)

# plan with the statuses of the phases by id (waves[w].phases[p] positions).
positions := {
	"reset-token": [0, 0],
	"reset-email": [0, 1],
	"verify-reset-token": [1, 0],
	"verify-reset-email": [1, 1],
	"reset-e2e": [2, 0],
}

status_op(id, s) := {"op": "add", "path": sprintf("/waves/%d/phases/%d/status", positions[id]), "value": s}

with_statuses(doc, statuses) := json.patch(doc, [status_op(id, s) | some id, s in statuses])

test_defaults_applied if {
	e := taskgraph.phase["reset-email"] with input as {"task_graph": {"document": plan}}
	e.retries == 0
	e.depends_on == []
	e.verifies == null
	e.atomic
	e.wave == 0
	e.index == 1
	e.files == ["src/mail/reset_email.py", "templates/reset_email.html"]
	v := taskgraph.phase["verify-reset-email"] with input as {"task_graph": {"document": plan}}
	v.status == "pending"
	v.atomic == false
	v.verifies == "reset-email"
	taskgraph.current_wave == 0 with input as {"task_graph": {"document": {"waves": []}}}
	taskgraph.max_retries == 3 with input as {"task_graph": {"document": {"waves": [], "max_retries": null}}}
	taskgraph.max_retries == 5 with input as {"task_graph": {"document": {"waves": [], "max_retries": 5}}}
}

test_entries_skip_unusable_phases if {
	doc := {"waves": [{"phases": [{"type": "implementation"}, "x", {"phase_id": "", "type": "x"}, {"phase_id": "a", "type": "x"}]}, "y", {"phases": {}}]}
	[e.id | some e in taskgraph.entries] == ["a"] with input as {"task_graph": {"document": doc}}
	count(taskgraph.entries) == 0 with input as {"task_graph": {"document": {"waves": {}}}}
	not taskgraph.graph with input as {"task_graph": {"problem": "invalid_json"}}
}

test_first_occurrence_wins if {
	doc := {"waves": [{"phases": [{"phase_id": "a", "type": "x"}]}, {"phases": [{"phase_id": "a", "type": "y"}]}]}
	taskgraph.phase.a.type == "x" with input as {"task_graph": {"document": doc}}
}

test_path if {
	taskgraph.path == "plans/graph.json" with input as {"task_graph": {"path": "plans/graph.json"}}
	taskgraph.path == ".claude/state/active_task_graph.json" with input as {}
	taskgraph.path == "p.json" with input as {} with data.des.config.task_graph_file as "p.json"
}
