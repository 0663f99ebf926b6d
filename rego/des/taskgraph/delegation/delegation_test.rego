package des.taskgraph.delegation_test

import data.des.taskgraph.delegation
import data.des.taskgraph_test.plan
import data.des.taskgraph_test.with_statuses

path := ".claude/state/active_task_graph.json"

# An Agent call whose prompt names phase id, with doc on disk.
delegate(id, doc) := {
	"tool": "Agent",
	"call": {"subagent_type": "backend-developer", "prompt": sprintf("Phase ID: %s\nDo the work.", [id]), "description": ""},
	"main_thread": true,
	"task_phase": id,
	"task_graph": {"path": path, "document": doc},
}

deny_of(inp) := vs if {
	vs := delegation.deny with input as inp
}

codes(vs) := {v.code | some v in vs}

one(vs, code) := v if {
	[v] := [x | some x in vs; x.code == code]
}

at_wave(doc, n) := json.patch(doc, [{"op": "replace", "path": "/current_wave", "value": n}])

wave0_done := at_wave(with_statuses(plan, {"reset-token": "completed", "reset-email": "completed"}), 1)

test_first_wave_may_start if {
	count(deny_of(delegate("reset-token", plan))) == 0
	count(deny_of(delegate("reset-email", plan))) == 0

	# Running it again (a subagent that died) is no business of these rules.
	count(deny_of(delegate("reset-token", with_statuses(plan, {"reset-token": "in_progress"})))) == 0
}

test_no_opinion_without_phase_or_graph if {
	inp := json.remove(delegate("verify-reset-token", plan), ["task_phase"])
	count(deny_of(inp)) == 0
	count(deny_of(json.remove(delegate("verify-reset-token", plan), ["task_graph"]))) == 0
	count(deny_of(json.patch(delegate("x", plan), [{"op": "replace", "path": "/task_phase", "value": " "}]))) == 0
}

test_unusable_graph_fails_closed_only_for_a_phase if {
	bad := {"path": path, "problem": "invalid_json", "error": "unexpected end of JSON input"}
	inp := json.patch(delegate("reset-token", plan), [{"op": "replace", "path": "/task_graph", "value": bad}])
	vs := deny_of(inp)
	codes(vs) == {"DES-INTERNAL"}
	contains(one(vs, "DES-INTERNAL").msg, "The prompt names task phase \"reset-token\", but the task graph .claude/state/active_task_graph.json is not valid JSON (unexpected end of JSON input)")
	count(deny_of(json.remove(inp, ["task_phase"]))) == 0
}

test_unknown_phase if {
	vs := deny_of(delegate("reset-sms", plan))
	codes(vs) == {"DES-TASKGRAPH-UNKNOWN-PHASE"}
	v := one(vs, "DES-TASKGRAPH-UNKNOWN-PHASE")
	contains(v.msg, "has no phase_id \"reset-sms\"; the phases of wave 0 are reset-token (pending), reset-email (pending)")
}

test_phase_outside_the_current_wave if {
	vs := deny_of(delegate("verify-reset-token", plan))
	codes(vs) == {"DES-TASKGRAPH-WAVE", "DES-TASKGRAPH-DEPENDENCY"}
	w := one(vs, "DES-TASKGRAPH-WAVE")
	w.field == "/current_wave"
	contains(w.msg, "delegates waves[1].phases[0] (phase \"verify-reset-token\", wave 1), but current_wave is 0")
	contains(w.msg, "the phases of wave 0 are reset-token (pending), reset-email (pending)")

	# A completed phase of an earlier wave is not run again.
	codes(deny_of(delegate("reset-token", wave0_done))) == {"DES-TASKGRAPH-WAVE"}

	# Every wave done.
	all_done := at_wave(with_statuses(wave0_done, {"verify-reset-token": "completed", "verify-reset-email": "completed", "reset-e2e": "completed"}), 3)
	contains(one(deny_of(delegate("reset-e2e", all_done)), "DES-TASKGRAPH-WAVE").msg, "every wave is done (current_wave 3, 3 waves)")
}

test_dependencies_not_completed if {
	doc := at_wave(with_statuses(wave0_done, {"verify-reset-token": "completed", "verify-reset-email": "failed"}), 2)
	vs := deny_of(delegate("reset-e2e", doc))
	codes(vs) == {"DES-TASKGRAPH-DEPENDENCY"}
	v := one(vs, "DES-TASKGRAPH-DEPENDENCY")
	v.field == "/waves/2/phases/0/depends_on"
	contains(v.msg, "its dependencies are not all \"completed\": depends_on \"verify-reset-email\" (failed)")
	not contains(v.msg, "verify-reset-token")

	# The verification waits for the phase it verifies.
	half := at_wave(with_statuses(plan, {"reset-token": "completed", "reset-email": "in_progress"}), 1)
	v2 := one(deny_of(delegate("verify-reset-email", half)), "DES-TASKGRAPH-DEPENDENCY")
	contains(v2.msg, "verifies_phase_id \"reset-email\" (in_progress)")
	v2.field == "/waves/1/phases/1/verifies_phase_id"
	count(deny_of(delegate("verify-reset-token", half))) == 0
}

# The design's flow: wave 0 done, verification FAILs, des sets the phase
# back to pending with retries + 1; the re-implementation runs while
# current_wave stays 1; after max_retries failures the user decides.
failed_once := json.patch(with_statuses(wave0_done, {"reset-token": "pending", "verify-reset-token": "failed"}), [{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 1}])

test_reimplementation_after_a_failed_verification if {
	count(deny_of(delegate("reset-token", failed_once))) == 0

	# The verification waits for it.
	codes(deny_of(delegate("verify-reset-token", failed_once))) == {"DES-TASKGRAPH-DEPENDENCY"}

	# Then verifies again.
	again := with_statuses(failed_once, {"reset-token": "completed"})
	count(deny_of(delegate("verify-reset-token", again))) == 0
}

test_escalate_after_max_retries if {
	third := json.patch(failed_once, [{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 3}])
	vs := deny_of(delegate("reset-token", third))
	codes(vs) == {"DES-VERIFY-ESCALATE"}
	v := one(vs, "DES-VERIFY-ESCALATE")
	v.field == "/waves/0/phases/0/retries"
	startswith(v.msg, "Stop and ask the user: waves[0].phases[0] (phase \"reset-token\", wave 0) has failed verification 3 times (retries 3, max_retries 3")
	contains(v.msg, "the user must decide")

	# Two failures: still the orchestrator's to retry.
	two := json.patch(failed_once, [{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 2}])
	count(deny_of(delegate("reset-token", two))) == 0

	# A graph's own max_retries; absent it is 3.
	more := json.patch(third, [{"op": "replace", "path": "/max_retries", "value": 5}])
	count(deny_of(delegate("reset-token", more))) == 0
	codes(deny_of(delegate("reset-token", json.remove(third, ["max_retries"])))) == {"DES-VERIFY-ESCALATE"}
}
