package des.phases.branch_test

import data.des.phases.branch

state := {
	"active_workflow": {
		"phases": ["01-requirements", "06-implementation", "08-code-review"],
		"current_phase": "06-implementation",
		"git_branch": {"name": "feature/REQ-0001-login", "status": "active"},
	},
}

on(name) := {"dir": ".", "branch": {"readable": true, "current": name, "detached": false, "workflow_branch_exists": true}}

commit_in(st, commits) := {"tool": "Bash", "workflow": {"state_file": ".isdlc/state.json", "state": st}, "commits": commits}

commit(name) := commit_in(state, [on(name)])

codes(inp) := c if {
	c := {v.code | some v in branch.deny with input as inp}
}

texts(inp) := t if {
	vs := branch.deny with input as inp
	t := concat("\n", [concat("\n", array.concat([v.msg], v.recovery)) | some v in vs])
}

test_protected_branch if {
	codes(commit("main")) == {"DES-BRANCH-PROTECTED"}
	codes(commit("master")) == {"DES-BRANCH-PROTECTED"}
	t := texts(commit("main"))
	contains(t, `protected branch "main"`)
	contains(t, `current phase "06-implementation"`)
	contains(t, `"feature/REQ-0001-login"`)
	contains(t, "active_workflow.git_branch.status")
	contains(t, "git checkout feature/REQ-0001-login")
	not contains(lower(t), "contract")
}

test_protected_needs_active_status_and_existing_branch if {
	merged := json.patch(state, [{"op": "replace", "path": "/active_workflow/git_branch/status", "value": "merged"}])
	codes(commit_in(merged, [on("main")])) == set()
	gone := object.union(on("main"), {"branch": {"workflow_branch_exists": false}})
	codes(commit_in(state, [gone])) == set()
	codes(commit("develop")) == set()
}

# HEAD naming refs/heads/MAIN writes main's ref on a case-insensitive file
# system: a protected branch counts in any case (a team's entries too).
test_protected_branch_in_any_case if {
	codes(commit("MAIN")) == {"DES-BRANCH-PROTECTED"}
	codes(commit("Master")) == {"DES-BRANCH-PROTECTED"}
	codes(commit("release")) == {"DES-BRANCH-PROTECTED"} with data.des.phases.protected_branches as {"Release": true}
	codes(commit("MAIN")) == set() with data.des.phases.protected_branches as {"main": false}
}

test_team_extends_protected_branches if {
	codes(commit("develop")) == {"DES-BRANCH-PROTECTED"} with data.des.phases.protected_branches as {"main": true, "develop": true}
}

test_intermediate_commit if {
	inp := commit("feature/REQ-0001-login")
	codes(inp) == {"DES-BRANCH-INTERMEDIATE"}
	t := texts(inp)
	contains(t, `workflow branch "feature/REQ-0001-login"`)
	contains(t, `current phase is "06-implementation" (active_workflow.current_phase), not the last phase "08-code-review"`)
	codes(commit("refs/heads/feature/REQ-0001-login")) == {"DES-BRANCH-INTERMEDIATE"}
}

test_commit_in_the_last_phase_passes if {
	last := json.patch(state, [{"op": "replace", "path": "/active_workflow/current_phase", "value": "08-code-review"}])
	codes(commit_in(last, [on("feature/REQ-0001-login")])) == set()
}

test_intermediate_compares_normalised_keys if {
	st := {"active_workflow": {
		"phases": ["12-test-deploy", "14-production"], "current_phase": "13-production",
		"git_branch": {"name": "feature/x", "status": "active"},
	}}
	codes(commit_in(st, [on("feature/x")])) == set()
	st2 := json.patch(st, [{"op": "replace", "path": "/active_workflow/current_phase", "value": "13-test-deploy"}])
	codes(commit_in(st2, [on("feature/x")])) == {"DES-BRANCH-INTERMEDIATE"}
}

test_intermediate_needs_phases if {
	st := json.patch(state, [{"op": "replace", "path": "/active_workflow/phases", "value": []}])
	codes(commit_in(st, [on("feature/REQ-0001-login")])) == set()
}

test_unreadable_or_detached_no_opinion if {
	codes(commit_in(state, [{"dir": ".", "branch": {"readable": false, "current": "", "detached": false, "workflow_branch_exists": false}}])) == set()
	codes(commit_in(state, [{"dir": ".", "branch": {"readable": true, "current": "", "detached": true, "workflow_branch_exists": true}}])) == set()
	codes(commit_in(state, [{"dir": ".", "branch": {"readable": true, "current": "main", "detached": true, "workflow_branch_exists": true}}])) == set()
}

test_one_violation_per_commit if {
	inp := commit_in(state, [on("main"), object.union(on("feature/REQ-0001-login"), {"dir": "sub"})])
	codes(inp) == {"DES-BRANCH-PROTECTED", "DES-BRANCH-INTERMEDIATE"}
	t := texts(inp)
	contains(t, `git commit on protected branch "main"`)
	contains(t, `git commit in sub on the workflow branch`)
}

test_no_workflow_no_opinion if {
	codes({"tool": "Bash", "commits": [on("main")]}) == set()
	codes(commit_in({"current_phase": "06-implementation"}, [on("main")])) == set()
	no_current := json.patch(state, [{"op": "remove", "path": "/active_workflow/current_phase"}])
	codes(commit_in(no_current, [on("main")])) == set()
	no_branch := json.patch(state, [{"op": "remove", "path": "/active_workflow/git_branch"}])
	codes(commit_in(no_branch, [on("main"), on("feature/REQ-0001-login")])) == set()
}

test_not_after_the_call if {
	codes(object.union(commit("main"), {"event": "PostToolUse"})) == set()
	codes(object.union(commit("main"), {"event": "PreToolUse"})) == {"DES-BRANCH-PROTECTED"}
	codes(object.union(commit("main"), {"tool": "Agent"})) == set()
}

test_internal_on_unusable_state if {
	inp := {"tool": "Bash", "workflow": {"state_file": ".isdlc/state.json", "problem": "not_object", "error": "a JSON array"}, "commits": [on("main")]}
	codes(inp) == {"DES-INTERNAL"}
	contains(texts(inp), ".isdlc/state.json is not_object (a JSON array)")
	codes(object.union(inp, {"commits": []})) == set()
	codes({"tool": "Bash", "workflow": {"problem": "unreadable"}, "commits": [on("main")]}) == {"DES-INTERNAL"}
}

# git commit-tree moves no branch, git merge and git pull bring another
# branch in (a workflow's finalize); other commit forms are judged.
test_commit_tree_moves_no_branch if {
	tree := object.union(on("main"), {"subcommand": "commit-tree"})
	codes(commit_in(state, [tree])) == set()
	codes(commit_in(state, [object.union(on("main"), {"subcommand": "merge"})])) == set()
	codes(commit_in(state, [object.union(on("main"), {"subcommand": "pull"})])) == set()
	codes(commit_in(state, [object.union(on("main"), {"subcommand": "cherry-pick"})])) == {"DES-BRANCH-PROTECTED"}
	codes(commit_in(state, [object.union(on("main"), {"subcommand": "commit"})])) == {"DES-BRANCH-PROTECTED"}
}
