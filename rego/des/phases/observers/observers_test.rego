package des.phases.observers_test

import data.des.phases.observers

good_menu := "How would you like to start?\n\n1. New Project - set up from scratch\n2. Existing Project - analyse this code base\n3. Chat / Explore - ask questions first\n"

state := {"discovery_context": {"completed_at": "2026-01-01T00:00:00Z", "walkthrough_completed": false}}

result(st, sub, prompt, response) := {
	"event": "PostToolUse",
	"tool": "Agent",
	"call": {"subagent_type": sub, "prompt": prompt, "description": ""},
	"response": response,
	"workflow": {"state_file": ".isdlc/state.json", "state": st},
}

done(text) := {"present": true, "text": text}

codes(inp) := c if {
	c := {v.code | some v in observers.warn with input as inp}
}

msgs(inp) := m if {
	m := {v.msg | some v in observers.warn with input as inp}
}

# DES-WALKTHROUGH-MISSING

test_walkthrough_missing if {
	inp := result(state, "discover-orchestrator", "discover", done("Discovery finished."))
	codes(inp) == {"DES-WALKTHROUGH-MISSING"}
	some m in msgs(inp)
	contains(m, "walkthrough_completed (else walkthrough_completed) is false")
	codes(result(state, "Discover_Orchestrator", "x", done(""))) == {"DES-WALKTHROUGH-MISSING"}
}

test_walkthrough_done_or_not_applicable if {
	ok := {"discovery_context": {"walkthrough_completed": true}}
	codes(result(ok, "discover-orchestrator", "x", done("done"))) == set()
	codes(result({}, "discover-orchestrator", "x", done("done"))) == set()
	codes(result({"discovery_context": null}, "discover-orchestrator", "x", done("done"))) == set()
	codes(result(state, "discover-orchestrator", "x", {"present": false, "text": ""})) == set()
	codes(result(state, "general-purpose", "x", done("done"))) == set()
}

test_walkthrough_top_level_fallback if {
	top_done := {"discovery_context": {"walkthrough_completed": null}, "walkthrough_completed": true}
	codes(result(top_done, "discover-orchestrator", "x", done("done"))) == set()
	top_missing := {"discovery_context": {}, "walkthrough_completed": "yes"}
	some m in msgs(result(top_missing, "discover-orchestrator", "x", done("done")))
	contains(m, `is "yes"`)
	absent := {"discovery_context": {}}
	some m2 in msgs(result(absent, "discover-orchestrator", "x", done("done")))
	contains(m2, "is absent")

	# The context's own value wins over the top level.
	own := {"discovery_context": {"walkthrough_completed": false}, "walkthrough_completed": true}
	codes(result(own, "discover-orchestrator", "x", done("done"))) == {"DES-WALKTHROUGH-MISSING"}
}

test_observers_need_no_active_workflow_but_a_state if {
	codes(result(state, "discover-orchestrator", "x", done("d"))) == {"DES-WALKTHROUGH-MISSING"}
	inp := json.patch(result(state, "discover-orchestrator", "x", done("d")), [{"op": "remove", "path": "/workflow"}])
	codes(inp) == set()
}

# DES-DISCOVER-MENU

ok_state := {"discovery_context": {"walkthrough_completed": true}}

test_discover_menu_good if {
	codes(result(ok_state, "discover-orchestrator", "x", done(good_menu))) == set()
	codes(result(ok_state, "general-purpose", "/isdlc discover", done(replace(good_menu, "Chat / Explore", "Explore")))) == set()
}

test_discover_menu_missing_options if {
	menu := "Choose one of these:\n1) New Project\n2) Resume the last session\n3) Quit the whole thing now"
	inp := result(ok_state, "general-purpose", "discover the project", done(menu))
	codes(inp) == {"DES-DISCOVER-MENU"}
	msgs(inp) == {`the discover menu shown to the user lacks "Chat" or "Explore"; lacks "Existing Project"`}
}

test_discover_menu_forbidden_options if {
	menu := concat("", [good_menu, "[4] Scoped Analysis\n[5] auto-detect\n"])
	inp := result(ok_state, "discover-orchestrator", "x", done(menu))
	msgs(inp) == {`the discover menu shown to the user offers "Auto-detect"; offers "Scoped Analysis"`}
}

test_discover_menu_needs_numbered_options_and_length if {
	codes(result(ok_state, "discover-orchestrator", "x", done("Short: 1. Scoped Analysis"))) == set()
	long := "The discovery found a Node.js service with a Postgres database and three APIs."
	codes(result(ok_state, "discover-orchestrator", "x", done(long))) == set()
	codes(result(ok_state, "discover-orchestrator", "x", done(concat("", [long, "\n  **1.** Scoped Analysis"])))) == {"DES-DISCOVER-MENU"}
}

test_discover_menu_only_for_discover_calls if {
	menu := "Choose one of these:\n1. Option A\n2. Option B\n3. Option C of the list\n"
	codes(result(ok_state, "general-purpose", "please discover the bug", done(menu))) == set()
	codes(result(ok_state, "general-purpose", "Discover: the project", done(menu))) == {"DES-DISCOVER-MENU"}
	codes(result(ok_state, "general-purpose", "/isdlc discover", done(menu))) == {"DES-DISCOVER-MENU"}
}

test_team_extends_discover_menu if {
	menu := {"min_length": 10, "numbered_option": "(?m)^\\d+\\.", "required": {"start": ["Start"]}, "forbidden": {}}
	codes(result(ok_state, "discover-orchestrator", "x", done("1. New Project\n2. Other"))) == {"DES-DISCOVER-MENU"} with data.des.phases.discover_menu as menu
	codes(result(ok_state, "discover-orchestrator", "x", done("1. Start\n2. Other"))) == set() with data.des.phases.discover_menu as menu
}

test_observers_only_after_agent_calls if {
	inp := result(state, "discover-orchestrator", "discover", done("1. Scoped Analysis and nothing else in this menu at all"))
	codes(inp) == {"DES-WALKTHROUGH-MISSING", "DES-DISCOVER-MENU"}
	codes(object.union(inp, {"event": "PreToolUse"})) == set()
	codes(object.union(inp, {"tool": "Bash"})) == set()
	codes(object.union(inp, {"tool": "Task"})) == {"DES-WALKTHROUGH-MISSING", "DES-DISCOVER-MENU"}
}

# No workflow state, no iSDLC project: the menu is not judged (des hears
# every project it is installed in).
test_discover_menu_needs_a_state if {
	menu := "Choose one of these:\n1) New Project\n2) Resume the last session\n3) Quit the whole thing now"
	inp := result(ok_state, "discover-orchestrator", "x", done(menu))
	codes(inp) == {"DES-DISCOVER-MENU"}
	codes(json.patch(inp, [{"op": "remove", "path": "/workflow"}])) == set()
	codes(json.patch(inp, [{"op": "replace", "path": "/workflow", "value": {"problem": "not a JSON object"}}])) == set()
}
