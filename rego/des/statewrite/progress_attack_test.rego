package des.statewrite_test

import data.des.statewrite

# Attacks on the progress rules (progress.rego): writes that leave a phase
# des has not seen pass by reshaping the workflow rather than moving its
# index along the list. Each is judged like a move past the phase.

a_codes(inp) := {v.code | some v in statewrite.deny with input as inp}

a_dropped := json.patch(p_disk, [
	{"op": "replace", "path": "/active_workflow/phases", "value": ["05-test-strategy", "07-testing"]},
	{"op": "replace", "path": "/active_workflow/current_phase", "value": "07-testing"},
])

test_attack_phase_dropped_from_list_denied if {
	inp := p_input(p_disk, a_dropped, {})
	a_codes(inp) == {"DES-GATE-BLOCKED"}
	some v in p_deny(inp)
	contains(v.msg, `moves the workflow past phase "06-implementation"`)

	# after des saw the tests pass, the same write is the orchestrator's
	p_codes(p_input(p_disk, a_dropped, p_passed_tests)) == set()
}

test_attack_phases_reordered_denied if {
	doc := json.patch(p_disk, [
		{"op": "replace", "path": "/active_workflow/phases", "value": ["05-test-strategy", "07-testing", "06-implementation"]},
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "07-testing"},
	])
	a_codes(p_input(p_disk, doc, {})) == {"DES-GATE-BLOCKED"}
}

test_attack_phase_list_removed_denied if {
	doc := json.patch(p_disk, [
		{"op": "remove", "path": "/active_workflow/phases"},
		{"op": "remove", "path": "/active_workflow/current_phase_index"},
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "07-testing"},
	])
	a_codes(p_input(p_disk, doc, {})) == {"DES-GATE-BLOCKED"}
}

# Two steps: first to a phase no list holds, then on from there.
test_attack_detour_through_unlisted_phase_denied if {
	detour := json.patch(p_disk, [
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "99-elsewhere"},
		{"op": "remove", "path": "/active_workflow/current_phase_index"},
	])
	a_codes(p_input(p_disk, detour, {})) == {"DES-GATE-BLOCKED"}
}

test_attack_current_phase_removed_denied if {
	doc := json.patch(p_disk, [
		{"op": "remove", "path": "/active_workflow/current_phase"},
		{"op": "remove", "path": "/active_workflow/current_phase_index"},
	])
	a_codes(p_input(p_disk, doc, {})) == {"DES-GATE-BLOCKED"}
}

# Regression: the top-level current_phase, read when active_workflow has
# none, moves the workflow too.
test_attack_top_level_current_phase_denied if {
	doc := json.patch(p_disk, [
		{"op": "remove", "path": "/active_workflow/current_phase"},
		{"op": "remove", "path": "/active_workflow/current_phase_index"},
		{"op": "add", "path": "/current_phase", "value": "07-testing"},
	])
	a_codes(p_input(p_disk, doc, {})) == {"DES-GATE-BLOCKED"}
}

# Regression: a legacy key of a later phase is that phase.
test_attack_legacy_key_move_denied if {
	disk := json.patch(p_disk, [{"op": "replace", "path": "/active_workflow/phases", "value": ["06-implementation", "12-test-deploy"]}, {"op": "replace", "path": "/active_workflow/current_phase_index", "value": 0}])
	doc := json.patch(disk, [
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "13-test-deploy"},
		{"op": "replace", "path": "/active_workflow/current_phase_index", "value": 1},
	])
	a_codes(p_input(disk, doc, {})) == {"DES-GATE-BLOCKED"}
}

# An index too large for round() to give back exactly is still past the
# list's end: every phase left behind.
test_attack_huge_index_denied if {
	every i in [1e308, 1e400, 100000000000000000000] {
		doc := json.patch(p_disk, [{"op": "replace", "path": "/active_workflow/current_phase_index", "value": i}])
		a_codes(p_input(p_disk, doc, {})) == {"DES-GATE-BLOCKED"}
	}
}

# Honest: going back to an earlier phase (a rollback) leaves nothing behind.
test_honest_back_to_earlier_phase_allowed if {
	doc := json.patch(p_at(p_disk, "05-test-strategy", 0), [{"op": "add", "path": "/active_workflow/recovery_action", "value": {"type": "rollback"}}])
	p_codes(p_input(p_disk, doc, {})) == set()
}

# Honest: a write that keeps the phase and adds a later one to the list.
test_honest_phase_added_to_list_allowed if {
	doc := json.patch(p_disk, [{"op": "replace", "path": "/active_workflow/phases", "value": ["05-test-strategy", "06-implementation", "06b-hardening", "07-testing"]}])
	p_codes(p_input(p_disk, doc, {})) == set()
}
