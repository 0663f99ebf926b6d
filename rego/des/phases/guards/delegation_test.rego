package des.phases.guards_test

import data.des.phases
import data.des.phases.guards

target_of(inp) := t if {
	t := guards.target with input as inp
}

by_of(inp) := b if {
	b := guards.by with input as inp
}

not_delegation(inp) if {
	guards.delegation == false with input as inp
	not guards.target with input as inp
}

# Rule 1: subagent_type.

test_rule1_agent_table if {
	target_of(agent("software-developer", "")) == "06-implementation"
	by_of(agent("software-developer", "")) == "subagent_type"
	target_of(agent("requirements-analyst", "")) == "01-requirements"
	target_of(agent("quick-scan-agent", "")) == "00-quick-scan"
	target_of(agent("risk-assessor", "")) == "02-impact-analysis"
	target_of(agent("root-cause-identifier", "")) == "02-tracing"
	target_of(agent("solution-architect", "")) == "03-architecture"
	target_of(agent("system-designer", "")) == "04-design"
	target_of(agent("test-strategy-critic", "")) == "05-test-strategy"
	target_of(agent("integration-tester", "")) == "07-testing"
	target_of(agent("qa-engineer", "")) == "08-code-review"
	target_of(agent("security-compliance-auditor", "")) == "09-validation"
	target_of(agent("cicd-engineer", "")) == "10-cicd"
	target_of(agent("environment-builder", "")) == "11-local-testing"
	target_of(agent("deployment-engineer-staging", "")) == "12-test-deploy"
	target_of(agent("release-manager", "")) == "13-production"
	target_of(agent("site-reliability-engineer", "")) == "14-operations"
	target_of(agent("quality-loop-engineer", "")) == "16-quality-loop"
	guards.delegation with input as agent("software-developer", "")
}

test_rule1_normalises_subagent_type if {
	target_of(agent("Software_Developer", "")) == "06-implementation"
	target_of(agent(" SOFTWARE-DEVELOPER ", "")) == "06-implementation"
	phases.agent == "software-developer" with input as agent("Software_Developer", "")
}

test_rule1_agent_aliases if {
	target_of(agent("developer", "")) == "06-implementation"
	target_of(agent("05-software-developer", "")) == "06-implementation"
	target_of(agent("05_software_developer", "")) == "06-implementation"
	target_of(agent("qa", "")) == "08-code-review"
	target_of(agent("QL", "")) == "16-quality-loop"
	target_of(agent("quality-loop", "")) == "16-quality-loop"
	phases.agent == "sdlc-orchestrator" with input as agent("orchestrator", "")
	phases.agent == "sdlc-orchestrator" with input as agent("00-sdlc-orchestrator", "")
}

test_rule1_all_and_setup_agents_never_delegate if {
	# Their prompts name phases and agents; rules 2 and 3 are not tried.
	not_delegation(agent("sdlc-orchestrator", "delegate 06-implementation to software-developer"))
	not_delegation(agent("orchestrator", "<!-- DES-PHASE: 06-implementation -->"))
	not_delegation(agent("skill-manager", "06-implementation"))
	not_delegation(agent("discover-orchestrator", "map 06-implementation"))
	not_delegation(agent("atdd-bridge", "<!-- DES-PHASE: 06-implementation -->"))
}

test_rule1_setup_word_does_not_veto if {
	target_of(agent("software-developer", "status: implement T0002")) == "06-implementation"
	target_of(agent("software-developer", "/isdlc init")) == "06-implementation"
}

test_team_extends_agent_table if {
	table := object.union(data.des.phases.agent_phases, {"frontend-developer": "06-implementation", "software-developer": "setup"})
	target_of(agent("frontend_developer", "")) == "06-implementation" with data.des.phases.agent_phases as table
	not_delegation(agent("software-developer", "")) with data.des.phases.agent_phases as table
	aliases := object.union(data.des.phases.agent_aliases, {"dev": "software-developer"})
	target_of(agent("dev", "")) == "06-implementation" with data.des.phases.agent_aliases as aliases
}

test_upgrade_engineer_matches_any_upgrade_phase if {
	st := {
		"active_workflow": {
			"phases": ["15-upgrade-plan", "15-upgrade-execute"], "current_phase": "15-upgrade-plan",
			"current_phase_index": 0, "phase_status": {"15-upgrade-plan": "in_progress"},
		},
		"phases": {"15-upgrade-plan": {"status": "in_progress"}},
	}
	target_of(agent_in(st, "upgrade-engineer", "plan the upgrade")) == "15-upgrade-plan"
	deny_codes(agent_in(st, "upgrade-engineer", "plan the upgrade")) == set()

	st2 := json.patch(st, [
		{"op": "replace", "path": "/active_workflow/current_phase", "value": "15-upgrade-execute"},
		{"op": "replace", "path": "/active_workflow/current_phase_index", "value": 1},
		{"op": "replace", "path": "/active_workflow/phase_status", "value": {"15-upgrade-execute": "in_progress"}},
		{"op": "replace", "path": "/phases", "value": {"15-upgrade-execute": {"status": "in_progress"}}},
	])
	target_of(agent_in(st2, "upgrade-engineer", "")) == "15-upgrade-execute"
	deny_codes(agent_in(st2, "upgrade-engineer", "")) == set()

	# Legacy 16-upgrade-execute is the same phase.
	st3 := json.patch(st2, [{"op": "replace", "path": "/active_workflow/current_phase", "value": "16-upgrade-execute"}])
	deny_codes(agent_in(st3, "upgrade-engineer", "")) == set()

	# Outside an upgrade phase it is out of order.
	target_of(agent("upgrade-engineer", "")) == "15-upgrade"
	deny_codes(agent("upgrade-engineer", "")) == {"DES-PHASE-OUT-OF-ORDER"}
}

# Rule 2: the DES-PHASE marker.

test_rule2_marker if {
	target_of(agent("general-purpose", "<!-- DES-PHASE: 06-implementation -->\nDo it")) == "06-implementation"
	by_of(agent("general-purpose", "<!-- DES-PHASE: 06-implementation -->")) == "marker"
	target_of(agent("general-purpose", "<!--DES-PHASE:07-testing-->")) == "07-testing"
	target_of(agent("general-purpose", "<!--   DES-PHASE  :   07-testing   -->")) == "07-testing"
	target_of(agent("", "<!-- DES-PHASE: 06-implementation -->")) == "06-implementation"
}

test_rule2_marker_beats_text_and_setup_words if {
	target_of(agent("general-purpose", "status <!-- DES-PHASE: 07-testing --> of 06-implementation")) == "07-testing"
	target_of(agent("general-purpose", "/isdlc discover <!-- DES-PHASE: 07-testing -->")) == "07-testing"
}

test_rule2_conflicting_markers_no_delegation if {
	not_delegation(agent("general-purpose", "<!-- DES-PHASE: 06-implementation --> <!-- DES-PHASE: 07-testing --> 06-implementation"))

	# The same phase twice (a legacy key and its new one) is one.
	st := {"active_workflow": {"phases": ["12-test-deploy"], "current_phase": "12-test-deploy"}}
	target_of(agent_in(st, "x", "<!-- DES-PHASE: 13-test-deploy --><!-- DES-PHASE: 12-test-deploy -->")) == "12-test-deploy"
}

test_rule2_task_phase_marker_is_not_a_phase_marker if {
	not_delegation(agent("general-purpose", "<!-- DES-TASK-PHASE: P1 -->"))
}

# Rule 3: text.

test_rule3_phase_key_in_prompt if {
	target_of(agent("general-purpose", "Work on 06-implementation now.")) == "06-implementation"
	by_of(agent("general-purpose", "Work on 06-implementation now.")) == "text"
}

test_rule3_agent_in_description if {
	inp := {"tool": "Task", "call": {"subagent_type": "general-purpose", "prompt": "do the work", "description": "Act as software-developer"}, "workflow": workflow(state)}
	target_of(inp) == "06-implementation"
}

test_rule3_agent_with_underscores_and_case if {
	target_of(agent("general-purpose", "You are the Software_Developer.")) == "06-implementation"
}

test_rule3_names_inside_longer_tokens_do_not_count if {
	not_delegation(agent("general-purpose", "Implement REQ-0004-advisory-hooks"))
	not_delegation(agent("general-purpose", "Implement REQ-0004-design"))
	not_delegation(agent("general-purpose", "see x06-implementation and 06-implementation-notes"))
	not_delegation(agent("general-purpose", "the qa-engineers meet"))
}

test_rule3_only_phases_of_the_workflow if {
	# 09-validation is not a phase of this workflow.
	not_delegation(agent("general-purpose", "prepare 09-validation"))
}

test_rule3_same_phase_named_twice_is_one_candidate if {
	target_of(agent("general-purpose", "software-developer: implement 06-implementation")) == "06-implementation"
}

test_rule3_several_candidates_none if {
	not_delegation(agent("general-purpose", "software-developer then integration-tester"))
	not_delegation(agent("general-purpose", "06-implementation and 07-testing"))
	not_delegation(agent("general-purpose", "qa-engineer reviews 06-implementation"))
}

test_rule3_all_and_setup_agents_are_not_candidates if {
	target_of(agent("general-purpose", "sdlc-orchestrator asks software-developer")) == "06-implementation"
	not_delegation(agent("general-purpose", "ask the discover-orchestrator"))
}

test_rule3_setup_command_first_word_vetoes if {
	not_delegation(agent("general-purpose", "status of 06-implementation"))
	not_delegation(agent("general-purpose", "/isdlc status 06-implementation"))
	not_delegation(agent("general-purpose", "Discover: software-developer"))
	not_delegation(agent("general-purpose", "  init 06-implementation"))
}

test_rule3_setup_words_inside_the_prompt_do_not_hide_a_delegation if {
	target_of(agent("general-purpose", "software-developer: check the status, then init the module")) == "06-implementation"
	target_of(agent("general-purpose", "Implement 06-implementation; run /isdlc status after")) == "06-implementation"
}

test_team_extends_setup_commands if {
	cmds := object.union(data.des.phases.setup_commands, {"doctor": true})
	not_delegation(agent("general-purpose", "doctor 06-implementation")) with data.des.phases.setup_commands as cmds
}

test_team_switches_a_setup_command_off if {
	cmds := object.union(data.des.phases.setup_commands, {"status": false})
	target_of(agent("general-purpose", "status of 06-implementation")) == "06-implementation" with data.des.phases.setup_commands as cmds
}

test_skill_is_never_a_delegation if {
	not_delegation(skill_in(state, "isdlc", "06-implementation"))
}

# Advancement attempts.

# Phrases are located by their first word rather than scanned for; the
# result is the expression's (phrase_re): whole words, \w being
# [0-9A-Za-z_], any whitespace between words, any case, K (Kelvin sign) and
# ſ (long s) folding to k and s.
claim(text) if guards.completion_claim with input as agent("general-purpose", text)

test_phrases_located_as_the_expression_reads_them if {
	claim("Phase complete")
	claim("the PHASE \t\n COMPLETE.")
	claim("(phase complete)")
	claim("phase complete")
	claim("x phase phase complete")
	claim("phases phase complete")
	claim("phase-complete phase complete")
	claim("GATE-06 ready for gate-06")
	not claim("phase completed")
	not claim("subphase complete")
	not claim("phase_complete")
	not claim("phase complete_x")
	not claim("9phase complete")
	not claim("phasecomplete")
	not claim("phase\u00a0complete") # no-break space is not \s
	claim("mar\u212a as complete") # Kelvin sign: the expression folds it to k
	claim("mark a\u017f complete") # long s
	not claim("\u017fubmit for review") # not a word character: no \b before it
	not claim("mar\u212a as completed")
}

test_phrases_past_many_occurrences if {
	many := concat(" ", ["phases" | some _ in numbers.range(1, 6000)])
	claim(concat(" ", [many, "phase done"]))
	not claim(concat(" ", [many, "phase dune"]))
}

test_advancement_orchestrator_phrases if {
	guards.advancement with input as agent("sdlc-orchestrator", "Advance to the next phase")
	guards.advancement with input as agent("orchestrator", "Run the GATE check")
	guards.advancement with input as agent("sdlc_orchestrator", "please proceed")
	guards.advancement with input as agent("sdlc-orchestrator", "move to phase 07")
	guards.advancement with input as agent("sdlc-orchestrator", "progress to testing")
	guards.advancement with input as agent("sdlc-orchestrator", "go to the next   phase")
	not guards.advancement with input as agent("sdlc-orchestrator", "the advanced gateway proceeds")
	not guards.advancement with input as agent("sdlc-orchestrator", "summarise the work")
}

test_advancement_needs_the_orchestrator if {
	not guards.advancement with input as agent("general-purpose", "advance to the next phase")
}

test_gate_text_in_a_delegation_is_not_an_advancement if {
	not guards.advancement with input as agent("software-developer", "GATE-06: implement and advance")
	not guards.advancement with input as agent("general-purpose", "<!-- DES-PHASE: 06-implementation --> pass GATE-06")
}

test_skill_advancement if {
	guards.advancement with input as skill_in(state, "isdlc", "advance")
	guards.advancement with input as skill_in(state, "/isdlc", "gate 06")
	guards.advancement with input as skill_in(state, "ISDLC", "  Advance --force")
	not guards.advancement with input as skill_in(state, "isdlc", "status")
	not guards.advancement with input as skill_in(state, "isdlc", "please advance")
	not guards.advancement with input as skill_in(state, "other", "advance")
}

test_team_extends_advance_phrases if {
	phrases := object.union(data.des.phases.advance_phrases, {"ship it": true})
	guards.advancement with input as agent("sdlc-orchestrator", "ship it") with data.des.phases.advance_phrases as phrases
}

# Corridor calls and completion claims.

test_corridor_call if {
	guards.corridor_call with input as agent("general-purpose", "delegate the fix")
	guards.corridor_call with input as agent("general-purpose", "hand off to QA")
	guards.corridor_call with input as agent("sdlc-orchestrator", "declare complete")
	guards.corridor_call with input as agent("general-purpose", "advance")
	guards.corridor_call with input as skill_in(state, "isdlc", "advance")
	not guards.corridor_call with input as agent("general-purpose", "fix the failing test")
	not guards.corridor_call with input as agent("software-developer", "delegate and advance")
}

test_completion_claim if {
	some p, _ in data.des.phases.completion_claim_phrases
	guards.completion_claim with input as agent("general-purpose", sprintf("The %s now.", [upper(replace(p, "{n}", "6"))]))
}

test_completion_claim_phrases_each if {
	every p, _ in data.des.phases.completion_claim_phrases {
		guards.completion_claim with input as agent("general-purpose", sprintf("So: %s.", [replace(p, "{n}", "12")]))
	}
	not guards.completion_claim with input as agent("general-purpose", "phases completed elsewhere")
	not guards.completion_claim with input as agent("software-developer", "phase complete")
}

# iSDLC's own completion patterns (issue 28 (d)); {n} is a number.
test_completion_claim_isdlc_phrases if {
	every text in ["Implementation complete, over to QA", "Testing complete.", "Requirements complete", "Now finalize artifacts", "Phase 6 complete", "PHASE 12 COMPLETE"] {
		guards.completion_claim with input as agent("general-purpose", text)
	}
	not guards.completion_claim with input as agent("general-purpose", "phase six complete")
	not guards.completion_claim with input as agent("general-purpose", "phase {n} complete")
	not guards.completion_claim with input as agent("general-purpose", "the implementation completes the feature")
}

test_who if {
	guards.who == "Agent software-developer" with input as agent("software-developer", "")
	guards.who == "Skill isdlc" with input as skill_in(state, "isdlc", "advance")
	guards.who == "the call" with input as agent("", "x")
}
