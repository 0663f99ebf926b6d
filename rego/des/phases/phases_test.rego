package des.phases_test

import data.des.phases

wf(st) := {"tool": "Agent", "call": {"subagent_type": "Software_Developer", "prompt": "p", "description": "d"}, "workflow": {"state": st}}

active := {
	"current_phase": "01-requirements",
	"active_workflow": {"phases": ["05-test-strategy", "14-production", 7, null, ""], "current_phase": "14-production"},
	"phases": {"14-production": {"status": "pending"}},
}

test_state_and_active_workflow if {
	phases.state == active with input as wf(active)
	phases.active_workflow == active.active_workflow with input as wf(active)
	not phases.state with input as wf("text")
	not phases.active_workflow with input as wf({"active_workflow": []})
}

test_current_phase_normalised_and_stale_top_level_ignored if {
	phases.current == "13-production" with input as wf(active)
	phases.current_field == "active_workflow.current_phase" with input as wf(active)
	top := json.patch(active, [{"op": "replace", "path": "/active_workflow/current_phase", "value": "  "}])
	phases.current == "01-requirements" with input as wf(top)
	phases.current_field == "current_phase" with input as wf(top)
	not phases.current with input as wf({"current_phase": "01-requirements"})
}

test_phase_list_keeps_keys_only if {
	phases.phase_list == ["05-test-strategy", "13-production"] with input as wf(active)
	phases.phase_list == [] with input as wf({"active_workflow": {"phases": "x"}})
}

test_current_doc_and_status if {
	# The legacy key 14-production holds the doc of 13-production.
	phases.current_doc == {"status": "pending"} with input as wf(active)
	phases.current_status == "pending" with input as wf(active)
	phases.status_text == `"pending"` with input as wf(active)

	# The exact key wins; its null status falls back to phase_status, else absent.
	exact := json.patch(active, [{"op": "add", "path": "/phases/13-production", "value": {"status": null}}])
	phases.current_doc == {"status": null} with input as wf(exact)
	phases.current_status == null with input as wf(exact)
	phases.status_text == "absent" with input as wf(exact)
	with_status := json.patch(exact, [{"op": "add", "path": "/active_workflow/phase_status", "value": {"14-production": "in_progress"}}])
	phases.current_status == "in_progress" with input as wf(with_status)
}

test_phase_aliases if {
	phases.norm_phase("13-test-deploy") == "12-test-deploy"
	phases.norm_phase("14-production") == "13-production"
	phases.norm_phase("15-operations") == "14-operations"
	phases.norm_phase("16-upgrade-plan") == "15-upgrade-plan"
	phases.norm_phase("16-upgrade-execute") == "15-upgrade-execute"
	phases.norm_phase(" 06-implementation ") == "06-implementation"
	phases.norm_phase("06-impl") == "06-implementation" with data.des.phases.phase_aliases as {"06-impl": "06-implementation"}
}

test_lookup_prefers_the_exact_key if {
	phases.lookup({"13-test-deploy": 1, "12-test-deploy": 2}, "12-test-deploy") == 2
	phases.lookup({"13-test-deploy": 1, "12-test-deploy": null}, "12-test-deploy") == 1
	not phases.lookup({"a": 1}, "12-test-deploy")
	not phases.lookup("not an object", "a")
}

test_is_key if {
	phases.is_key("a")
	not phases.is_key("  ")
	not phases.is_key(null)
	not phases.is_key(3)
}

test_first_word if {
	phases.first_word("  Status of the build") == "status"
	phases.first_word("/isdlc discover --deep") == "discover"
	phases.first_word("/ISDLC init") == "init"
	phases.first_word("init: set up") == "init"
	phases.first_word("") == ""
	phases.first_word("!isdlc status") == "!isdlc"
	phases.first_word("!isdlc status") == "status" with data.des.phases.command_prefixes as {"!isdlc": true}
	phases.first_word("/isdlc status") == "/isdlc" with data.des.phases.command_prefixes as {"/isdlc": false}
}

test_whole_token if {
	phases.whole_token("run 06-implementation now", "06-implementation")
	phases.whole_token("06-implementation", "06-implementation")
	phases.whole_token("(06-implementation).", "06-implementation")
	phases.whole_token("x06-implementation 06-implementation", "06-implementation")
	not phases.whole_token("x06-implementation 06-implementation_y", "06-implementation")
	not phases.whole_token("req-0004-design", "04-design")
	not phases.whole_token("04-designs", "04-design")
	phases.whole_token("aa aaa aa", "aa")
	not phases.whole_token("aaa", "aa")
	not phases.whole_token("a b", "a b") # a name with a non-token character is never a token
	not phases.whole_token("anything", "")
}

test_first_word_reads_only_the_first_words if {
	phases.first_word(concat(" ", ["discover", concat("", ["x" | some _ in numbers.range(1, 1000)])])) == "discover"
	not phases.first_word("/isdlc  ") # the prefix alone names no command
	phases.first_word("\u00a0Status\tof") == "status"
}

test_has_phrase_whole_words if {
	phases.has_phrase("please Advance now", {"advance": true})
	phases.has_phrase("go to the NEXT\n phase", {"next phase": true})
	not phases.has_phrase("the advanced parts", {"advance": true})
	not phases.has_phrase("nextphase", {"next phase": true})
	phases.has_phrase("check GATE-06", {"gate": true})
	not phases.has_phrase("advance", {"advance": false})
}

test_ptr if {
	phases.ptr(["phases", "06-implementation", "status"]) == "/phases/06-implementation/status"
}

test_call if {
	phases.call_tool with input as wf(active)
	phases.call_tool with input as {"tool": "Task"}
	not phases.call_tool with input as {"tool": "Skill"}
	phases.subagent_type == "Software_Developer" with input as wf(active)
	phases.agent == "software-developer" with input as wf(active)
	phases.prompt == "p" with input as wf(active)
	phases.description == "d" with input as wf(active)
	phases.agent == "sdlc-orchestrator" with input as {"call": {"subagent_type": "Orchestrator"}}
	phases.subagent_type == "" with input as {"call": {"subagent_type": null}}
	phases.prompt == "" with input as {"call": {"prompt": 3}}
	phases.description == "" with input as {}
}
