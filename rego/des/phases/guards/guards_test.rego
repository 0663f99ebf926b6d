package des.phases.guards_test

import data.des.phases.guards

# A delegation to the current, started phase, with a plan: nothing to say.
test_delegation_in_order_passes if {
	deny_codes(agent("software-developer", "Implement T0002")) == set()
	warn_codes(agent("software-developer", "Implement T0002")) == set()
}

# DES-PHASE-OUT-OF-ORDER

test_out_of_order if {
	inp := agent("integration-tester", "run the tests")
	deny_codes(inp) == {"DES-PHASE-OUT-OF-ORDER"}
	t := texts(inp)
	contains(t, `"07-testing"`)
	contains(t, `"06-implementation"`)
	contains(t, "active_workflow.current_phase")
	contains(t, `by subagent_type "integration-tester"`)
	v := [v | some v in guards.deny with input as inp][0]
	v.field == "/active_workflow/current_phase"
}

test_out_of_order_backwards_and_by_marker if {
	inp := agent("general-purpose", "<!-- DES-PHASE: 03-architecture -->")
	deny_codes(inp) == {"DES-PHASE-OUT-OF-ORDER"}
	contains(texts(inp), "DES-PHASE --> marker")
	contains(texts(inp), `To go back: set active_workflow.recovery_action.type to "rollback" and active_workflow.current_phase to "03-architecture" (with active_workflow.current_phase_index 2,`)
	contains(texts(agent("integration-tester", "x")), `To move on: pass "06-implementation"'s gate, then advance one phase at a time: the next phase is "07-testing" (set active_workflow.current_phase to "07-testing", active_workflow.current_phase_index to 6,`)
}

# A later phase is reached one phase at a time: the recovery names the next
# phase, never the target (which would skip the phases between).
test_out_of_order_forward_names_the_next_phase if {
	t := texts(agent("qa-engineer", "review"))
	contains(t, `the next phase is "07-testing"`)
	not contains(t, `current_phase to "08-code-review"`)
	contains(t, `delegate to "08-code-review"'s agents when it is the current phase`)
}

test_out_of_order_phase_outside_the_workflow if {
	inp := agent("security-compliance-auditor", "audit")
	deny_codes(inp) == {"DES-PHASE-OUT-OF-ORDER"}
	contains(texts(inp), `"09-validation" is not one of active_workflow.phases`)
	contains(texts(inp), `"09-validation" is not a phase of this workflow`)
}

test_out_of_order_names_top_level_field_when_read_from_there if {
	st := patched([{"op": "remove", "path": "/active_workflow/current_phase"}])
	inp := agent_in(st, "integration-tester", "x")
	v := [v | some v in guards.deny with input as inp][0]
	v.field == "/current_phase"
	contains(v.msg, "(current_phase)")
}

# DES-PHASE-UNTRACKED

test_untracked_status_pending if {
	st := set("/phases/06-implementation/status", "pending")
	inp := agent_in(st, "software-developer", "x")
	deny_codes(inp) == {"DES-PHASE-UNTRACKED"}
	contains(texts(inp), `Set phases["06-implementation"].status to "in_progress" (and active_workflow.phase_status["06-implementation"]) before delegating`)
	contains(texts(inp), `its status is "pending"`)
	v := [v | some v in guards.deny with input as inp][0]
	v.field == "/phases/06-implementation/status"
}

test_untracked_falls_back_to_phase_status if {
	st := patched([{"op": "remove", "path": "/phases/06-implementation/status"}])
	deny_codes(agent_in(st, "software-developer", "x")) == set()
	st2 := json.patch(st, [{"op": "replace", "path": "/active_workflow/phase_status/06-implementation", "value": "completed"}])
	deny_codes(agent_in(st2, "software-developer", "x")) == {"DES-PHASE-UNTRACKED"}
}

# A completed phase is not set back to in_progress by a plain write (the
# state write guard refuses a status going back): the recovery names the next
# phase, and the retry that makes the redo a write the guard accepts.
test_untracked_completed_recovery_names_retry if {
	st := patched([
		{"op": "replace", "path": "/phases/06-implementation/status", "value": "completed"},
		{"op": "replace", "path": "/active_workflow/phase_status/06-implementation", "value": "completed"},
	])
	inp := agent_in(st, "software-developer", "x")
	deny_codes(inp) == {"DES-PHASE-UNTRACKED"}
	t := texts(inp)
	contains(t, `Phase "06-implementation" is completed: move on to the next phase "07-testing"`)
	contains(t, `active_workflow.recovery_action.type to "retry" in the same write`)
	not contains(t, "before delegating.")
}

test_untracked_null_status_is_absent if {
	st := patched([
		{"op": "replace", "path": "/phases/06-implementation/status", "value": null},
		{"op": "replace", "path": "/active_workflow/phase_status", "value": null},
	])
	inp := agent_in(st, "software-developer", "x")
	deny_codes(inp) == {"DES-PHASE-UNTRACKED"}
	contains(texts(inp), "its status is absent")
}

test_untracked_phases_status_wins_over_phase_status if {
	st := set("/active_workflow/phase_status/06-implementation", "pending")
	deny_codes(agent_in(st, "software-developer", "x")) == set()
}

# DES-PLAN-MISSING

no_plan := {"exists": false, "candidates": ["docs/isdlc/tasks.md", ".isdlc/tasks.md"]}

test_plan_missing if {
	inp := json.patch(agent("software-developer", "x"), [{"op": "replace", "path": "/workflow/plan", "value": no_plan}])
	deny_codes(inp) == {"DES-PLAN-MISSING"}
	contains(texts(inp), "docs/isdlc/tasks.md, .isdlc/tasks.md")
	contains(texts(inp), `"06-implementation"`)
}

test_plan_not_needed_in_early_phases if {
	every p, _ in data.des.phases.early_phases {
		st := {"active_workflow": {"phases": [p], "current_phase": p, "phase_status": {p: "in_progress"}}}
		inp := {"tool": "Agent", "call": {"subagent_type": "x", "prompt": sprintf("<!-- DES-PHASE: %s -->", [p]), "description": ""}, "workflow": {"state": st, "plan": no_plan}}
		deny_codes(inp) == set()
	}
}

test_plan_unknown_gives_no_opinion if {
	inp := json.patch(agent("software-developer", "x"), [{"op": "remove", "path": "/workflow/plan"}])
	deny_codes(inp) == set()
}

test_plan_missing_only_on_delegation if {
	inp := json.patch(agent("general-purpose", "look around"), [{"op": "replace", "path": "/workflow/plan", "value": no_plan}])
	deny_codes(inp) == set()
}

test_team_extends_early_phases if {
	inp := json.patch(agent("software-developer", "x"), [{"op": "replace", "path": "/workflow/plan", "value": no_plan}])
	deny_codes(inp) == set() with data.des.phases.early_phases as {"06-implementation": true}
}

# DES-PLAN-FORMAT

with_plan(plan) := json.patch(agent("software-developer", "x"), [{"op": "replace", "path": "/workflow/plan", "value": plan}])

plan_warnings(plan) := {v.msg | some v in guards.warn with input as with_plan(plan)}

test_plan_format_good_plan if {
	warn_codes(with_plan(plan_ok)) == set()
}

test_plan_format_only_v2 if {
	plan := object.union(plan_ok, {"format": "", "sections": []})
	warn_codes(with_plan(plan)) == set()
}

test_plan_format_only_in_implementation if {
	st := patched([
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "07-testing"},
		{"op": "replace", "path": "/phases/07-testing/status", "value": "in_progress"},
	])
	plan := object.union(plan_ok, {"sections": []})
	inp := json.patch(agent_in(st, "integration-tester", "x"), [{"op": "replace", "path": "/workflow/plan", "value": plan}])
	warn_codes(inp) == set()
}

test_plan_format_no_implementation_section if {
	plan := object.union(plan_ok, {"sections": [plan_ok.sections[0]]})
	ws := plan_warnings(plan)
	count(ws) == 1
	some w in ws
	contains(w, "has no implementation section")
	contains(w, `"Phase 05: Test Strategy"`)
	contains(w, "docs/isdlc/tasks.md")
}

test_plan_format_section_titles if {
	every title in ["Phase 06: Implementation", "PHASE 6 - Build", "06 Implementation", "Implementation tasks"] {
		plan := object.union(plan_ok, {"sections": [{"title": title, "line": 1, "tasks": [{"id": "T1", "files": ["a"], "traces": true}]}]})
		warn_codes(with_plan(plan)) == set()
	}
}

test_plan_format_no_files_no_traces if {
	sec := {"title": "Phase 06: Implementation", "line": 7, "tasks": [{"id": "T0002", "line": 9, "files": [], "traces": false, "blocked_by": []}, {"id": "T0003"}]}
	ws := plan_warnings(object.union(plan_ok, {"sections": [sec]}))
	count(ws) == 2
	some w1 in ws
	contains(w1, "no `files:` lines")
	some w2 in ws
	contains(w2, "no `| traces:` annotation")
}

test_plan_format_cycle if {
	sec := {"title": "Phase 06: Implementation", "tasks": [
		{"id": "T1", "files": ["a"], "traces": true, "blocked_by": ["T3"]},
		{"id": "T2", "files": ["b"], "traces": true, "blocked_by": ["T1"]},
		{"id": "T3", "files": ["c"], "traces": true, "blocked_by": ["T2", "T9"]},
		{"id": "T4", "files": ["d"], "traces": true, "blocked_by": ["T1"]},
	]}
	ws := plan_warnings(object.union(plan_ok, {"sections": [sec]}))
	ws == {"docs/isdlc/tasks.md (format v2.0, current phase \"06-implementation\") its blocked_by graph has a cycle through T1, T2, T3"}
}

# The cycle search walks from forward edges only (id order): cycles in any
# id order, two at once, a task listed twice (its blocked_by merged), tasks
# reached from a cycle but not on it, and none when every edge points back.
task(id, deps) := {"id": id, "files": ["a"], "traces": true, "blocked_by": deps}

test_plan_format_cycles_in_any_order if {
	sec := {"title": "Phase 06: Implementation", "tasks": [
		task("T9", ["T10"]), task("T10", ["T11"]), task("T11", ["T9"]), # T10 < T9 as strings
		task("A", ["B"]), task("B", []), task("B", ["A"]), # B listed twice
		task("C", ["A"]), task("D", ["C"]), task("E", ["E0"]),
	]}
	ws := plan_warnings(object.union(plan_ok, {"sections": [sec]}))
	ws == {"docs/isdlc/tasks.md (format v2.0, current phase \"06-implementation\") its blocked_by graph has a cycle through A, B, T10, T11, T9"}
	back := {"title": "Phase 06: Implementation", "tasks": [task("T0003", ["T0002", "T0001"]), task("T0002", ["T0001"]), task("T0001", [])]}
	plan_warnings(object.union(plan_ok, {"sections": [back]})) == set()
}

test_plan_format_self_cycle if {
	sec := {"title": "Implementation", "tasks": [{"id": "T1", "files": ["a"], "traces": true, "blocked_by": ["T1"]}]}
	count(plan_warnings(object.union(plan_ok, {"sections": [sec]}))) == 1
}

test_plan_format_only_on_delegation if {
	plan := object.union(plan_ok, {"sections": []})
	inp := json.patch(agent("general-purpose", "look around"), [{"op": "replace", "path": "/workflow/plan", "value": plan}])
	warn_codes(inp) == set()
}

# DES-INTERNAL

broken := {"state_file": ".isdlc/state.json", "problem": "invalid_json", "error": "unexpected end of JSON input"}

test_internal_on_unusable_state if {
	inp := {"tool": "Agent", "call": {"subagent_type": "software-developer", "prompt": "x", "description": ""}, "workflow": broken}
	deny_codes(inp) == {"DES-INTERNAL"}
	t := texts(inp)
	contains(t, ".isdlc/state.json is invalid_json (unexpected end of JSON input)")
	contains(t, `"06-implementation"`)
}

test_internal_only_for_rule1_delegations if {
	deny_codes({"tool": "Agent", "call": {"subagent_type": "general-purpose", "prompt": "06-implementation", "description": ""}, "workflow": broken}) == set()
	deny_codes({"tool": "Agent", "call": {"subagent_type": "sdlc-orchestrator", "prompt": "advance", "description": ""}, "workflow": broken}) == set()
	deny_codes({"tool": "Agent", "call": {"subagent_type": "x", "prompt": "<!-- DES-PHASE: 06-implementation -->", "description": ""}, "workflow": broken}) == set()
	deny_codes({"tool": "Skill", "call": {"skill": "isdlc", "args": "advance"}, "workflow": broken}) == set()
}

test_internal_defaults_in_message if {
	inp := {"tool": "Agent", "call": {"subagent_type": "software-developer"}, "workflow": {"problem": "not_object"}}
	contains(texts(inp), "the workflow state file is not_object (no reason given)")
}

# No message says "the contract".
test_messages_never_say_contract if {
	inputs := [
		agent("integration-tester", "x"),
		agent_in(set("/phases/06-implementation/status", "pending"), "software-developer", "x"),
		json.patch(agent("software-developer", "x"), [{"op": "replace", "path": "/workflow/plan", "value": no_plan}]),
		{"tool": "Agent", "call": {"subagent_type": "software-developer"}, "workflow": broken},
	]
	every inp in inputs {
		t := texts(inp)
		t != ""
		not contains(lower(t), "contract")
	}
}
