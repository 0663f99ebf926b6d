package des.statewrite_test

import data.des.statewrite

# A consistent three-phase workflow state: no violation, no warning.
base := {
	"state_version": 4,
	"current_phase": "02-architecture",
	"active_agent": "solution-architect",
	"active_workflow": {
		"type": "feature",
		"phases": ["01-requirements", "02-architecture", "03-design"],
		"current_phase": "02-architecture",
		"current_phase_index": 1,
		"phase_status": {"01-requirements": "completed", "02-architecture": "in_progress", "03-design": "pending"},
	},
	"phases": {
		"01-requirements": {
			"status": "completed",
			"iteration_requirements": {
				"test_iteration": {"completed": true, "current_iteration": 2, "last_test_result": "passed"},
				"interactive_elicitation": {"completed": true, "menu_interactions": 3},
			},
			"constitutional_validation": {"completed": true, "iterations_used": 1, "status": "compliant"},
		},
		"02-architecture": {"status": "in_progress"},
		"03-design": {"status": "pending"},
	},
}

# The input Go builds: disk and incoming, no problem.
write(disk, incoming) := {"state": {"path": ".isdlc/state.json", "schema_errors": [], "disk": disk, "incoming": incoming}}

# A write with no file on disk.
fresh(incoming) := {"state": {"path": ".isdlc/state.json", "schema_errors": [], "incoming": incoming}}

patch(doc, ops) := json.patch(doc, ops)

deny_of(doc) := vs if {
	vs := statewrite.deny with input as doc
}

warn_of(doc) := ws if {
	ws := statewrite.warn with input as doc
}

codes(vs) := sort([v.code | some v in vs])

only(vs, code) := [v | some v in vs; v.code == code]

# Incoming base with a status moved to to, in both mirrored locations.
set_status(doc, phase, to) := patch(doc, [
	{"op": "replace", "path": sprintf("/active_workflow/phase_status/%s", [phase]), "value": to},
	{"op": "replace", "path": sprintf("/phases/%s/status", [phase]), "value": to},
])

with_review(doc, review) := patch(doc, [{"op": "add", "path": "/active_workflow/supervised_review", "value": review}])

with_recovery(doc, type) := patch(doc, [{"op": "add", "path": "/active_workflow/recovery_action", "value": {"type": type}}])

# ---------------------------------------------------------------------------
# Baseline

test_consistent_write_has_no_opinion if {
	count(deny_of(write(base, base))) == 0
	count(warn_of(write(base, base))) == 0
}

test_next_version_allowed if {
	count(deny_of(write(base, patch(base, [{"op": "replace", "path": "/state_version", "value": 5}])))) == 0
}

test_no_disk_file_allowed if {
	count(deny_of(fresh(base))) == 0
}

test_no_state_no_opinion if {
	count(statewrite.deny) == 0 with input as {}
	count(statewrite.warn) == 0 with input as {}
}

# ---------------------------------------------------------------------------
# DES-STATE-INVALID

test_invalid_json if {
	vs := deny_of({"state": {"path": ".isdlc/state.json", "problem": "invalid_json", "error": "unexpected end of JSON input", "disk": base}})
	codes(vs) == ["DES-STATE-INVALID"] # not also V7-UNVERSIONED: there is no document to compare
	some v in vs
	v.field == ""
	contains(v.msg, ".isdlc/state.json")
	contains(v.msg, "not valid JSON")
	contains(v.msg, "unexpected end of JSON input")
	count(v.recovery) > 0
}

test_not_object if {
	vs := deny_of({"state": {"path": ".des/state.json", "problem": "not_object", "error": "it is an array"}})
	some v in vs
	v.code == "DES-STATE-INVALID"
	contains(v.msg, "not a JSON object")
}

test_unknown_problem_without_reason if {
	vs := deny_of({"state": {"problem": "unreadable"}})
	some v in vs
	v.code == "DES-STATE-INVALID"
	contains(v.msg, "the workflow state")
	contains(v.msg, "no reason given")
}

test_schema_errors_one_each_with_pointer if {
	errs := [
		{"pointer": "/active_workflow/current_phase_index", "msg": "got string, want number"},
		{"pointer": "", "msg": "got array, want object"},
	]
	vs := deny_of({"state": {"path": ".isdlc/state.json", "schema_errors": errs, "incoming": {}}})
	codes(vs) == ["DES-STATE-INVALID", "DES-STATE-INVALID"]
	{v.field | some v in vs} == {"/active_workflow/current_phase_index", ""}
	some v in vs
	v.field == ""
	contains(v.msg, "the top level")
	some w in vs
	w.field == "/active_workflow/current_phase_index"
	contains(w.msg, "got string, want number")
}

test_valid_document_not_invalid if {
	count(only(deny_of(write(base, base)), "DES-STATE-INVALID")) == 0
}

# Not comparable: a document with no problem and no schema errors key at all.
test_no_schema_errors_key_not_invalid if {
	count(deny_of({"state": {"incoming": base}})) == 0
}

# ---------------------------------------------------------------------------
# DES-STATE-V7-UNVERSIONED

unversioned := json.remove(base, ["state_version"])

test_unversioned_over_versioned if {
	vs := deny_of(write(base, unversioned))
	codes(vs) == ["DES-STATE-V7-UNVERSIONED"]
	some v in vs
	v.field == "/state_version"
	contains(v.msg, "4 on disk")
	contains(v.msg, "state_version = 5")
	"Write state_version = 5 (disk + 1)." in v.recovery
}

test_versioned_write_not_unversioned if {
	count(only(deny_of(write(base, base)), "DES-STATE-V7-UNVERSIONED")) == 0
}

test_version_zero_is_a_version if {
	vs := deny_of(write(base, patch(base, [{"op": "replace", "path": "/state_version", "value": 0}])))
	codes(vs) == ["DES-STATE-V7-STALE"]
}

# Missing on disk: an unversioned or absent file accepts any write.
test_unversioned_disk_accepts_unversioned_write if {
	count(deny_of(write(unversioned, unversioned))) == 0
	count(deny_of(fresh(unversioned))) == 0
}

test_unversioned_with_non_number_disk_version if {
	vs := deny_of(write(patch(base, [{"op": "replace", "path": "/state_version", "value": "four"}]), unversioned))
	some v in vs
	v.code == "DES-STATE-V7-UNVERSIONED"
	contains(v.msg, "the disk version + 1")
}

# ---------------------------------------------------------------------------
# DES-STATE-V7-STALE

v(n) := patch(base, [{"op": "replace", "path": "/state_version", "value": n}])

test_stale_disk_5_incoming_3 if {
	vs := deny_of(write(v(5), v(3)))
	codes(vs) == ["DES-STATE-V7-STALE"]
	some x in vs
	x.field == "/state_version"
	contains(x.msg, "3 in this write")
	contains(x.msg, "5 on disk")
	x.recovery == [
		"Re-read .isdlc/state.json.",
		"Apply your change to the current version (state_version 5).",
		"Write state_version = 6 (disk + 1).",
	]
}

test_equal_or_greater_version_allowed if {
	count(deny_of(write(v(5), v(5)))) == 0
	count(deny_of(write(v(5), v(9)))) == 0
}

test_stale_not_comparable if {
	count(deny_of(fresh(v(3)))) == 0
	count(deny_of(write(unversioned, v(3)))) == 0

	# a non-number on one side is the schema's business, not an order
	count(deny_of(write(v(5), v("3")))) == 0
}

# V7 and V8 together: all violations are reported.
test_stale_and_regression_both_reported if {
	incoming := set_status(v(3), "01-requirements", "pending")
	codes(deny_of(write(v(5), incoming))) == ["DES-STATE-V7-STALE", "DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
}

# ---------------------------------------------------------------------------
# DES-STATE-V8-INDEX

idx(doc, i) := patch(doc, [{"op": "replace", "path": "/active_workflow/current_phase_index", "value": i}])

no_index := json.remove(base, ["active_workflow/current_phase_index"])

test_index_decrease_denied if {
	vs := deny_of(write(idx(base, 2), idx(base, 1)))
	codes(vs) == ["DES-STATE-V8-INDEX"]
	some x in vs
	x.field == "/active_workflow/current_phase_index"
	contains(x.msg, "from 2 (on disk) to 1 (in this write)")
}

test_index_same_or_forward_allowed if {
	count(deny_of(write(base, base))) == 0
	count(only(deny_of(write(base, idx(base, 2))), "DES-STATE-V8-INDEX")) == 0
}

test_index_not_comparable if {
	count(deny_of(write(no_index, idx(base, 0)))) == 0
	count(deny_of(write(idx(base, 2), no_index))) == 0
	count(deny_of(write(idx(base, "2"), idx(base, 1)))) == 0
}

test_rollback_exempts_index if {
	count(deny_of(write(idx(base, 2), with_recovery(idx(base, 1), "rollback")))) == 0
}

test_retry_does_not_exempt_index if {
	codes(deny_of(write(idx(base, 2), with_recovery(idx(base, 1), "retry")))) == ["DES-STATE-V8-INDEX"]
}

test_index_exemption_read_from_incoming if {
	codes(deny_of(write(with_recovery(idx(base, 2), "rollback"), idx(base, 1)))) == ["DES-STATE-V8-INDEX"]
}

# ---------------------------------------------------------------------------
# DES-STATE-V8-STATUS

test_completed_to_pending_denied_in_both_locations if {
	vs := deny_of(write(base, set_status(base, "01-requirements", "pending")))
	codes(vs) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
	{x.field | some x in vs} == {"/active_workflow/phase_status/01-requirements", "/phases/01-requirements/status"}
	some x in vs
	contains(x.msg, "\"completed\" (on disk) to \"pending\" (in this write)")
	count(x.recovery) == 3
}

test_phase_status_location_alone if {
	incoming := patch(base, [{"op": "replace", "path": "/active_workflow/phase_status/02-architecture", "value": "pending"}])
	vs := deny_of(write(base, incoming))
	[x.field | some x in vs] == ["/active_workflow/phase_status/02-architecture"]
}

test_phases_location_alone if {
	incoming := patch(base, [{"op": "replace", "path": "/phases/02-architecture/status", "value": "pending"}])
	vs := deny_of(write(base, incoming))
	[x.field | some x in vs] == ["/phases/02-architecture/status"]
	some x in vs
	contains(x.msg, "phases[\"02-architecture\"].status")
}

test_forward_moves_allowed if {
	incoming := set_status(set_status(base, "02-architecture", "completed"), "03-design", "in_progress")
	count(deny_of(write(base, incoming))) == 0
}

test_status_not_comparable_when_missing_on_disk if {
	disk := json.remove(base, ["active_workflow/phase_status/01-requirements", "phases/01-requirements/status"])
	count(deny_of(write(disk, set_status(base, "01-requirements", "pending")))) == 0
}

# A status missing in the write is not compared, unless the phase was
# completed: completed is final (see the memory tests below).
test_status_not_comparable_when_missing_in_write if {
	incoming := json.remove(base, ["active_workflow/phase_status/02-architecture", "phases/02-architecture/status"])
	count(deny_of(write(base, incoming))) == 0
}

test_completed_status_removed_is_a_regression if {
	incoming := json.remove(base, ["active_workflow/phase_status", "phases/01-requirements/status"])
	vs := deny_of(write(base, incoming))
	codes(vs) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
	some v in vs
	v.field == "/phases/01-requirements/status"
	contains(v.msg, `phases["01-requirements"].status was "completed" but is absent in this write`)
}

# Ending the workflow (active_workflow removed or null) drops phase_status
# with it; that is no regression.
test_workflow_end_is_no_regression if {
	count(deny_of(write(base, json.remove(base, ["active_workflow"])))) == 0
	count(deny_of(write(base, patch(base, [{"op": "replace", "path": "/active_workflow", "value": null}])))) == 0
}

test_new_phase_in_incoming_fine if {
	incoming := patch(base, [
		{"op": "add", "path": "/active_workflow/phases/-", "value": "04-implementation"},
		{"op": "add", "path": "/active_workflow/phase_status/04-implementation", "value": "pending"},
		{"op": "add", "path": "/phases/04-implementation", "value": {"status": "pending"}},
	])
	count(deny_of(write(base, incoming))) == 0
}

test_statuses_outside_the_order_not_compared if {
	disk := set_status(base, "03-design", "skipped")
	count(deny_of(write(disk, set_status(base, "03-design", "pending")))) == 0
	count(deny_of(write(base, set_status(base, "02-architecture", "blocked")))) == 0
}

# completed is final: an unknown status after it is the first step of
# completed → reset → pending.
test_unknown_status_after_completed_is_a_regression if {
	vs := deny_of(write(base, set_status(base, "01-requirements", "reset")))
	codes(vs) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
	some v in vs
	contains(v.msg, `active_workflow.phase_status["01-requirements"] was "completed" but is "reset" in this write`)
	count(deny_of(write(base, with_recovery(set_status(base, "01-requirements", "reset"), "rollback")))) == 0
}

test_supervised_redo_count_allows_completed_to_in_progress if {
	incoming := with_review(set_status(base, "01-requirements", "in_progress"), {"status": "in_review", "redo_count": 1})
	count(deny_of(write(base, incoming))) == 0
}

test_redo_pending_allows_completed_to_in_progress if {
	incoming := with_review(set_status(base, "01-requirements", "in_progress"), {"status": "redo_pending"})
	count(deny_of(write(base, incoming))) == 0
}

test_supervised_redo_completed_to_pending_still_denied if {
	incoming := with_review(set_status(base, "01-requirements", "pending"), {"redo_count": 1})
	vs := deny_of(write(base, incoming))
	codes(vs) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
	some x in vs
	contains(x.msg, "supervised redo exemption allows completed → in_progress only")
}

test_supervised_redo_in_progress_to_pending_still_denied if {
	incoming := with_review(set_status(base, "02-architecture", "pending"), {"status": "redo_pending"})
	count(deny_of(write(base, incoming))) == 2
}

test_no_redo_without_review if {
	incoming := with_review(set_status(base, "01-requirements", "in_progress"), {"status": "approved", "redo_count": 0})
	count(deny_of(write(base, incoming))) == 2
	odd := with_review(set_status(base, "01-requirements", "in_progress"), {"redo_count": "1"})
	count(deny_of(write(base, odd))) == 2
}

test_redo_exemption_read_from_incoming if {
	disk := with_review(base, {"status": "redo_pending"})
	count(deny_of(write(disk, set_status(base, "01-requirements", "in_progress")))) == 2
}

test_retry_exempts_status if {
	count(deny_of(write(base, with_recovery(set_status(base, "01-requirements", "pending"), "retry")))) == 0
}

test_rollback_exempts_status if {
	count(deny_of(write(base, with_recovery(set_status(base, "01-requirements", "pending"), "rollback")))) == 0
}

test_other_recovery_does_not_exempt_status if {
	count(deny_of(write(base, with_recovery(set_status(base, "01-requirements", "pending"), "resume")))) == 2
}

test_status_exemption_read_from_incoming if {
	count(deny_of(write(with_recovery(base, "retry"), set_status(base, "01-requirements", "pending")))) == 2
}

test_status_order_is_data if {
	disk := set_status(base, "01-requirements", "reviewed")
	order := {"pending": 0, "in_progress": 1, "completed": 2, "reviewed": 3}
	count(statewrite.deny) == 2 with input as write(disk, base) with data.des.statewrite.status_order as order
	count(statewrite.deny) == 0 with input as write(disk, base)
}

test_status_pointer_is_escaped if {
	disk := patch(base, [{"op": "add", "path": "/active_workflow/phase_status/a~1b", "value": "completed"}])
	incoming := patch(base, [{"op": "add", "path": "/active_workflow/phase_status/a~1b", "value": "pending"}])
	[x.field | some x in deny_of(write(disk, incoming))] == ["/active_workflow/phase_status/a~1b"]
}

# ---------------------------------------------------------------------------
# DES-STATE-V1, V2, V3

zero(doc, path) := patch(doc, [{"op": "replace", "path": path, "value": 0}])

v1_path := "/phases/01-requirements/constitutional_validation/iterations_used"

v2_path := "/phases/01-requirements/iteration_requirements/interactive_elicitation/menu_interactions"

v3_path := "/phases/01-requirements/iteration_requirements/test_iteration/current_iteration"

test_v1_fires if {
	ws := warn_of(write(base, zero(base, v1_path)))
	codes(ws) == ["DES-STATE-V1"]
	[w.field | some w in ws] == [v1_path]
	some w in ws
	contains(w.msg, "iterations_used is 0")
}

test_v2_fires if {
	ws := warn_of(write(base, zero(base, v2_path)))
	codes(ws) == ["DES-STATE-V2"]
	[w.field | some w in ws] == [v2_path]
}

test_v3_fires if {
	ws := warn_of(fresh(zero(base, v3_path)))
	codes(ws) == ["DES-STATE-V3"]
	[w.field | some w in ws] == [v3_path]
}

test_v1_v2_v3_do_not_fire_on_nonzero if {
	count(warn_of(write(base, base))) == 0
}

test_v1_v2_v3_do_not_fire_before_completion if {
	doc := set_status(zero(zero(zero(base, v1_path), v2_path), v3_path), "01-requirements", "in_progress")
	count({w | some w in warn_of(write(base, doc)); w.code in {"DES-STATE-V1", "DES-STATE-V2", "DES-STATE-V3"}}) == 0
}

test_v1_v2_v3_not_comparable_when_fields_missing if {
	doc := json.remove(base, ["phases/01-requirements/constitutional_validation", "phases/01-requirements/iteration_requirements"])
	count(warn_of(write(base, doc))) == 0
	done := set_status(base, "03-design", "completed")
	count({w | some w in warn_of(write(base, done)); w.code in {"DES-STATE-V1", "DES-STATE-V2", "DES-STATE-V3"}}) == 0
}

# ---------------------------------------------------------------------------
# DES-STATE-V9

test_v9_phase_status_mirror if {
	doc := patch(base, [{"op": "replace", "path": "/phases/02-architecture/status", "value": "completed"}])
	ws := warn_of(fresh(doc))
	codes(ws) == ["DES-STATE-V9"]
	some w in ws
	w.field == "/phases/02-architecture/status"
	contains(w.msg, "is \"completed\"")
	contains(w.msg, "is \"in_progress\"")
}

test_v9_phase_status_not_comparable if {
	doc := json.remove(patch(base, [{"op": "replace", "path": "/phases/02-architecture/status", "value": "completed"}]), ["active_workflow/phase_status/02-architecture"])
	count(only(warn_of(fresh(doc)), "DES-STATE-V9")) == 0
}

test_v9_current_phase_mirror if {
	doc := patch(base, [{"op": "replace", "path": "/current_phase", "value": "01-requirements"}])
	ws := warn_of(fresh(doc))
	[w.field | some w in ws] == ["/current_phase"]
	codes(ws) == ["DES-STATE-V9"]
}

test_v9_current_phase_not_comparable if {
	doc := json.remove(patch(base, [{"op": "replace", "path": "/current_phase", "value": "01-requirements"}]), ["active_workflow/current_phase", "active_workflow/current_phase_index"])
	count(warn_of(fresh(doc))) == 0
}

test_v9_index_mirror if {
	doc := patch(base, [
		{"op": "replace", "path": "/active_workflow/current_phase_index", "value": 2},
		{"op": "replace", "path": "/active_workflow/phase_status/02-architecture", "value": "completed"},
		{"op": "replace", "path": "/phases/02-architecture/status", "value": "completed"},
	])
	ws := warn_of(fresh(doc))
	codes(ws) == ["DES-STATE-V9"]
	some w in ws
	w.field == "/active_workflow/current_phase"
	contains(w.msg, "active_workflow.phases[2] (current_phase_index 2) is \"03-design\"")
}

test_v9_index_not_comparable if {
	# all phases done: the index equals the length, nothing to compare
	done := idx(base, 3)
	count(only(warn_of(fresh(done)), "DES-STATE-V9")) == 0
	count(only(warn_of(fresh(json.remove(base, ["active_workflow/phases"]))), "DES-STATE-V9")) == 0
}

# ---------------------------------------------------------------------------
# Phase handshake

test_handshake_index_out_of_range if {
	ws := warn_of(fresh(idx(base, 4)))
	codes(ws) == ["DES-STATE-HANDSHAKE-INDEX"]
	some w in ws
	w.field == "/active_workflow/current_phase_index"
	contains(w.msg, "is 4 but active_workflow.phases has 3 phases")
	codes(warn_of(fresh(idx(base, -1)))) == ["DES-STATE-HANDSHAKE-INDEX"]
	codes(warn_of(fresh(idx(base, 1.5)))) == ["DES-STATE-HANDSHAKE-INDEX"]
}

test_handshake_index_in_range if {
	count(warn_of(fresh(idx(base, 3)))) == 0 # the length: every phase done
	count(only(warn_of(fresh(idx(base, 0))), "DES-STATE-HANDSHAKE-INDEX")) == 0
}

test_handshake_index_not_comparable if {
	count(warn_of(fresh(json.remove(idx(base, 7), ["active_workflow/phases"])))) == 0
	count(only(warn_of(fresh(idx(base, "7"))), "DES-STATE-HANDSHAKE-INDEX")) == 0
}

test_handshake_phase if {
	doc := patch(base, [
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "99-unknown"},
		{"op": "remove", "path": "/active_workflow/current_phase_index"},
		{"op": "remove", "path": "/current_phase"},
	])
	ws := warn_of(fresh(doc))
	codes(ws) == ["DES-STATE-HANDSHAKE-PHASE"]
	some w in ws
	contains(w.msg, "\"99-unknown\"")
	contains(w.msg, "01-requirements, 02-architecture, 03-design")
}

test_handshake_phase_in_workflow if {
	count(only(warn_of(fresh(base)), "DES-STATE-HANDSHAKE-PHASE")) == 0
}

test_handshake_phase_not_comparable if {
	doc := json.remove(patch(base, [{"op": "replace", "path": "/active_workflow/current_phase", "value": "99-unknown"}]), ["active_workflow/phases"])
	count(only(warn_of(fresh(doc)), "DES-STATE-HANDSHAKE-PHASE")) == 0
}

test_handshake_key_one_per_key if {
	doc := patch(base, [
		{"op": "add", "path": "/active_workflow/phase_status/05-extra", "value": "pending"},
		{"op": "add", "path": "/active_workflow/phase_status/06-extra", "value": "pending"},
	])
	ws := warn_of(fresh(doc))
	codes(ws) == ["DES-STATE-HANDSHAKE-KEY", "DES-STATE-HANDSHAKE-KEY"]
	{w.field | some w in ws} == {"/active_workflow/phase_status/05-extra", "/active_workflow/phase_status/06-extra"}
}

test_handshake_key_known_keys if {
	count(only(warn_of(fresh(base)), "DES-STATE-HANDSHAKE-KEY")) == 0
}

test_handshake_key_not_comparable if {
	doc := json.remove(patch(base, [{"op": "add", "path": "/active_workflow/phase_status/05-extra", "value": "pending"}]), ["active_workflow/phases"])
	count(only(warn_of(fresh(doc)), "DES-STATE-HANDSHAKE-KEY")) == 0
}

test_handshake_active if {
	doc := patch(base, [{"op": "replace", "path": "/active_workflow/phase_status/03-design", "value": "in_progress"}])
	ws := only(warn_of(fresh(doc)), "DES-STATE-HANDSHAKE-ACTIVE")
	count(ws) == 1
	some w in ws
	w.field == "/active_workflow/phase_status"
	contains(w.msg, "2 phases are in_progress")
	contains(w.msg, "02-architecture, 03-design")
}

test_handshake_active_one_is_fine if {
	count(only(warn_of(fresh(base)), "DES-STATE-HANDSHAKE-ACTIVE")) == 0
}

test_handshake_active_not_comparable if {
	doc := json.remove(base, ["active_workflow/phase_status"])
	count(warn_of(fresh(doc))) == 0
}

# ---------------------------------------------------------------------------
# Every violation carries the shape the gates expect.

test_violation_shape if {
	incoming := zero(set_status(idx(v(3), 0), "01-requirements", "pending"), v1_path)
	w := write(idx(v(5), 1), incoming)
	every x in deny_of(w) | warn_of(w) {
		is_string(x.code)
		is_string(x.msg)
		startswith(x.field, "/")
		count(x.recovery) > 0
	}
}

# ---------------------------------------------------------------------------
# des's memory (input.state.seen) and exemptions that apply once.

remembered(disk, incoming, seen) := {"state": {"path": ".isdlc/state.json", "schema_errors": [], "disk": disk, "incoming": incoming, "seen": seen}}

seen_after(inp) := x if {
	x := statewrite.seen_next with input as inp
}

# completed → reset → pending: the first write is denied; had it landed
# anyway (by a recovery, or the file replaced), the second is denied by
# what des saw.
test_two_step_regression_denied_by_memory if {
	seen := seen_after(write(base, base))
	seen.phase_status["01-requirements"] == "completed"
	reset := set_status(base, "01-requirements", "reset")
	vs := deny_of(remembered(reset, set_status(base, "01-requirements", "pending"), seen))
	codes(vs) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
	some v in vs
	contains(v.msg, `is "pending" in this write, but des saw it reach "completed" since the workflow started (the file on disk says "reset")`)
}

test_key_removed_then_pending_denied_by_memory if {
	seen := seen_after(write(base, base))
	removed := json.remove(base, ["active_workflow/phase_status/01-requirements", "phases/01-requirements"])
	codes(deny_of(remembered(removed, set_status(base, "01-requirements", "pending"), seen))) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
}

# The file deleted (no disk at all): the memory still holds.
test_memory_without_a_disk_file if {
	seen := seen_after(write(base, base))
	vs := deny_of({"state": {"path": ".isdlc/state.json", "schema_errors": [], "incoming": set_status(base, "01-requirements", "pending"), "seen": seen}})
	codes(vs) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
}

test_index_memory if {
	seen := seen_after(write(base, idx(base, 2)))
	seen.current_phase_index == 2
	codes(deny_of(remembered(idx(base, 0), idx(base, 1), seen))) == ["DES-STATE-V8-INDEX"]
	count(deny_of(remembered(idx(base, 0), with_recovery(idx(base, 1), "rollback"), seen))) == 0
}

# The memory moves up with the statuses, and down only where an exemption
# the write introduces lowers it.
test_seen_next if {
	fwd := seen_after(write(base, set_status(base, "02-architecture", "completed")))
	fwd == {"workflow": true, "current_phase_index": 1, "phase_status": {"01-requirements": "completed", "02-architecture": "completed", "03-design": "pending"}, "phases": {"01-requirements": "completed", "02-architecture": "completed", "03-design": "pending"}}
	rb := seen_after(write(base, with_recovery(set_status(base, "01-requirements", "pending"), "rollback")))
	rb.phase_status["01-requirements"] == "pending"
	redo := seen_after(write(base, with_review(set_status(base, "01-requirements", "in_progress"), {"status": "redo_pending"})))
	redo.phase_status["01-requirements"] == "in_progress"
	redo.phase_status["02-architecture"] == "in_progress"

	# an unknown status keeps what was seen
	unk := seen_after(write(base, set_status(base, "02-architecture", "blocked")))
	unk.phase_status["02-architecture"] == "in_progress"

	# the workflow ends: phase_status and the index are forgotten, phases kept
	end := seen_after(write(base, json.remove(base, ["active_workflow"])))
	end == {"workflow": false, "phase_status": {}, "phases": {"01-requirements": "completed", "02-architecture": "in_progress", "03-design": "pending"}}
}

# A new workflow (no active_workflow on disk, nor in the last document des
# saw) starts the memory afresh, as iSDLC resets every phase to pending.
test_new_workflow_starts_memory_afresh if {
	old := seen_after(write(base, base))
	ended := json.remove(base, ["active_workflow"])
	seen := seen_after(remembered(base, ended, old))
	fresh_wf := patch(json.remove(base, ["phases"]), [{"op": "replace", "path": "/active_workflow/phase_status/01-requirements", "value": "pending"}])
	count(deny_of(remembered(ended, fresh_wf, seen))) == 0

	# but not while des saw a workflow active: the disk lost it outside des
	codes(deny_of(remembered(ended, fresh_wf, old))) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
}

# An exemption applies to the write that introduces it, not to later writes
# that keep it.
test_exemption_applies_once if {
	rolled := with_recovery(set_status(base, "01-requirements", "pending"), "rollback")
	count(deny_of(write(base, rolled))) == 0
	later := set_status(rolled, "02-architecture", "pending")
	vs := deny_of(write(rolled, later))
	codes(vs) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
	some v in vs
	contains(v.msg, `recovery_action.type "rollback" is on disk already`)

	# another type is a new recovery
	count(deny_of(write(rolled, with_recovery(later, "retry")))) == 0

	# the same for a supervised redo
	redo := with_review(set_status(base, "01-requirements", "in_progress"), {"status": "redo_pending", "redo_count": 1})
	count(deny_of(write(base, redo))) == 0
	again := set_status(redo, "02-architecture", "completed")
	again2 := set_status(again, "02-architecture", "in_progress")
	codes(deny_of(write(again, again2))) == ["DES-STATE-V8-STATUS", "DES-STATE-V8-STATUS"]
	count(deny_of(write(again, with_review(again2, {"status": "redo_pending", "redo_count": 2})))) == 0
}
