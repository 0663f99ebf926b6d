package des.statewrite_test

import data.des.statewrite

# Progress claims judged on des's evidence (progress.rego).

p_disk := {
	"active_workflow": {
		"type": "feature", "started_at": "2026-11-29T10:00:00Z",
		"phases": ["05-test-strategy", "06-implementation", "07-testing"],
		"current_phase": "06-implementation", "current_phase_index": 1,
	},
	"phases": {"06-implementation": {"status": "in_progress"}},
}

p_at(doc, phase, i) := json.patch(doc, [
	{"op": "replace", "path": "/active_workflow/current_phase", "value": phase},
	{"op": "replace", "path": "/active_workflow/current_phase_index", "value": i},
])

p_input(disk, doc, ti) := {
	"state": {
		"path": ".isdlc/state.json",
		"incoming": {"active_workflow": {}},
		"document": doc,
		"workflow_before": p_id(disk),
	},
	"workflow": {
		"state_file": ".isdlc/state.json", "state": disk,
		"evidence": {"workflow": p_id(doc), "test_iteration": ti},
	},
}

p_id(doc) := sprintf("%s@%s", [doc.active_workflow.type, doc.active_workflow.started_at]) if doc.active_workflow

p_id(doc) := "" if not doc.active_workflow

p_deny(inp) := {v | some v in statewrite.deny with input as inp; v.code in {"DES-GATE-BLOCKED", "DES-EVIDENCE-MISMATCH"}}

p_codes(inp) := {v.code | some v in p_deny(inp)}

p_passed_tests := {"06-implementation": {"completed": true, "status": "success", "current_iteration": 2, "max_iterations": 10, "last_test_result": "passed"}}

p_failing_tests := {"06-implementation": {
	"completed": false, "current_iteration": 2, "max_iterations": 10, "last_test_result": "failed",
	"last_test_at": "2026-11-29T14:02:05.000Z", "last_test_command": "go test ./...", "last_test_failures": 3,
}}

test_advance_without_evidence_denied if {
	inp := p_input(p_disk, p_at(p_disk, "07-testing", 2), {})
	p_codes(inp) == {"DES-GATE-BLOCKED"}
	some v in p_deny(inp)
	contains(v.msg, `.isdlc/state.json: this write moves the workflow past phase "06-implementation", but des has not seen its tests pass: 0/10 test iterations, no test result recorded (des saw no test run in this phase)`)
	contains(concat("\n", v.recovery), `Until then keep phase "06-implementation" the current phase`)
}

test_advance_with_failing_evidence_quotes_it if {
	inp := p_input(p_disk, p_at(p_disk, "07-testing", 2), p_failing_tests)
	some v in p_deny(inp)
	contains(v.msg, "2/10 test iterations, last result failed (last test run 14:02 UTC, `go test ./...`, 3 failed)")
}

test_advance_by_index_alone_denied if {
	doc := json.patch(p_disk, [{"op": "replace", "path": "/active_workflow/current_phase_index", "value": 2}])
	p_codes(p_input(p_disk, doc, {})) == {"DES-GATE-BLOCKED"}
}

test_advance_after_pass_allowed if {
	p_codes(p_input(p_disk, p_at(p_disk, "07-testing", 2), p_passed_tests)) == set()
}

test_completed_without_evidence_denied if {
	doc := json.patch(p_disk, [{"op": "replace", "path": "/phases/06-implementation/status", "value": "completed"}])
	p_codes(p_input(p_disk, doc, {})) == {"DES-GATE-BLOCKED"}
	p_codes(p_input(p_disk, doc, p_passed_tests)) == set()
}

test_phase_without_tests_passes if {
	disk := p_at(p_disk, "05-test-strategy", 0)
	p_codes(p_input(disk, p_at(p_disk, "06-implementation", 1), {})) == set()
}

test_restart_at_later_phase_denied if {
	ended := {"phases": p_disk.phases}
	restarted := json.patch(p_at(p_disk, "07-testing", 2), [{"op": "replace", "path": "/active_workflow/started_at", "value": "2026-11-29T11:00:00Z"}])
	p_codes(p_input(ended, restarted, {})) == {"DES-GATE-BLOCKED"}

	# a workflow started at its first phase passes nothing
	p_codes(p_input(ended, p_at(restarted, "05-test-strategy", 0), {})) == set()
}

test_mismatch_named if {
	doc := json.patch(p_disk, [{"op": "add", "path": "/phases/06-implementation/iteration_requirements", "value": {"test_iteration": {"completed": true, "current_iteration": 1}}}])
	inp := p_input(p_disk, doc, {})
	p_codes(inp) == {"DES-EVIDENCE-MISMATCH"}
	msgs := {v.msg | some v in p_deny(inp)}
	`.isdlc/state.json: phases["06-implementation"].iteration_requirements.test_iteration.completed is true in this write, but des's evidence says false (0/10 test iterations, no test result recorded (des saw no test run in this phase))` in msgs
	some m in msgs
	contains(m, "current_iteration is 1 in this write, but des's evidence says 0")
}

test_values_as_des_wrote_them_pass if {
	ti := {"completed": false, "current_iteration": 2, "last_test_result": "failed", "failures_count": 2, "identical_failure_count": 1}
	doc := json.patch(p_disk, [{"op": "add", "path": "/phases/06-implementation/iteration_requirements", "value": {"test_iteration": ti}}])
	p_codes(p_input(p_disk, doc, {"06-implementation": ti})) == set()

	# an initial, empty record agrees with no run
	fresh := json.patch(p_disk, [{"op": "add", "path": "/phases/06-implementation/iteration_requirements", "value": {"test_iteration": {"completed": false, "current_iteration": 0, "required": true}}}])
	p_codes(p_input(p_disk, fresh, {})) == set()
}

test_values_left_as_on_disk_pass if {
	stale := json.patch(p_disk, [{"op": "add", "path": "/phases/06-implementation/iteration_requirements", "value": {"test_iteration": {"completed": true}}}])
	doc := json.patch(stale, [{"op": "add", "path": "/phases/06-implementation/notes", "value": "x"}])
	p_codes(p_input(stale, doc, {})) == set()
}

test_state_mode_judges_nothing if {
	inp := p_input(p_disk, p_at(p_disk, "07-testing", 2), {})
	codes := {v.code | some v in statewrite.deny with input as inp with data.des.config.phase_evidence as "state"; v.code in {"DES-GATE-BLOCKED", "DES-EVIDENCE-MISMATCH"}}
	codes == set()
}

test_other_state_file_not_judged if {
	inp := json.patch(p_input(p_disk, p_at(p_disk, "07-testing", 2), {}), [{"op": "replace", "path": "/state/path", "value": ".des/state.json"}])
	p_codes(inp) == set()
}

test_phase_renamed_or_removed_still_passed if {
	renamed := json.patch(p_at(p_disk, "07-testing", 2), [{"op": "replace", "path": "/active_workflow/phases/1", "value": "06-implementation-done"}])
	p_codes(p_input(p_disk, renamed, {})) == {"DES-GATE-BLOCKED"}
	removed := json.patch(p_at(p_disk, "07-testing", 1), [{"op": "remove", "path": "/active_workflow/phases/1"}])
	p_codes(p_input(p_disk, removed, {})) == {"DES-GATE-BLOCKED"}
}

test_rollback_passes_nothing if {
	disk := p_at(p_disk, "07-testing", 2)
	p_codes(p_input(disk, p_at(p_disk, "06-implementation", 1), {})) == set()
}
