package team_test

import data.des.gates.pre_commit

step(doc) := {"step": {"path": "docs/feature/x/steps/01-01.json", "document": doc, "phase_log": "", "phases": []}, "gate2": []}

test_a_step_without_owner_is_denied if {
	"TEAM-OWNER" in {v.code | some v in pre_commit.deny} with input as step({"task_id": "01-01"})
}

test_a_step_with_owner_passes if {
	not "TEAM-OWNER" in {v.code | some v in pre_commit.deny} with input as step({"task_id": "01-01", "owner": "ana"})
}

# The team's origin table entry (des/sections/data.json) sets the level;
# the built-in entries are still there.
test_team_origin_level if {
	data.des.gates.pre_invocation.info.level == "partial" with input as {"prompt": {"validation": "required", "origin": "command:/team:fix", "sections": [], "phase_words": []}}
	data.des.sections.origins["command:/nw:execute"] == "full"
}
