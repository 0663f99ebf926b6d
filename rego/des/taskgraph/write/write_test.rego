package des.taskgraph.write_test

import data.des.taskgraph.write
import data.des.taskgraph_test.patched
import data.des.taskgraph_test.plan
import data.des.taskgraph_test.with_statuses

path := ".claude/state/active_task_graph.json"

# A write of doc with no graph on disk, and over disk.
fresh(doc) := {"tool": "Write", "writes": [{"path": path, "tool": "Write"}], "task_graph": {"path": path, "document": doc, "schema_errors": []}}

over(disk, doc) := {"tool": "Write", "writes": [{"path": path, "tool": "Write"}], "task_graph": {"path": path, "document": doc, "schema_errors": [], "disk": disk}}

deny_of(inp) := vs if {
	vs := write.deny with input as inp
}

warn_of(inp) := ws if {
	ws := write.warn with input as inp
}

codes(vs) := {v.code | some v in vs}

only(vs, code) := [v | some v in vs; v.code == code]

one(vs, code) := v if {
	[v] := only(vs, code)
}

# --- The plan that passes.

test_valid_plan_passes if {
	count(deny_of(fresh(plan))) == 0
	count(warn_of(fresh(plan))) == 0
	count(deny_of(over(plan, plan))) == 0
}

test_minimal_plan_passes if {
	doc := {"waves": [
		{"phases": [{"phase_id": "a", "type": "implementation"}]},
		{"phases": [{"phase_id": "b", "type": "verification", "verifies_phase_id": "a"}]},
	]}
	count(deny_of(fresh(doc))) == 0
	count(warn_of(fresh(doc))) == 0
}

# --- DES-TASKGRAPH-INVALID

test_unusable_document_is_invalid_only if {
	vs := deny_of({"task_graph": {"path": path, "problem": "invalid_json", "error": "unexpected end of JSON input"}})
	codes(vs) == {"DES-TASKGRAPH-INVALID"}
	v := one(vs, "DES-TASKGRAPH-INVALID")
	contains(v.msg, "not valid JSON (unexpected end of JSON input)")
	contains(v.msg, path)
	v2 := one(deny_of({"task_graph": {"path": path, "problem": "not_object", "error": "an array"}}), "DES-TASKGRAPH-INVALID")
	contains(v2.msg, "not a JSON object")
}

test_schema_errors_one_each_with_pointer if {
	inp := json.patch(fresh(plan), [{"op": "replace", "path": "/task_graph/schema_errors", "value": [
		{"pointer": "/waves/0/phases/1", "msg": "missing property \"type\""},
		{"pointer": "", "msg": "missing property \"waves\""},
	]}])
	vs := only(deny_of(inp), "DES-TASKGRAPH-INVALID")
	{v.field | some v in vs} == {"/waves/0/phases/1", ""}
	some v in vs
	v.field == ""
	contains(v.msg, "the top level: missing property \"waves\"")
}

test_repeated_phase_id if {
	doc := patched([{"op": "replace", "path": "/waves/2/phases/0/phase_id", "value": "reset-token"}])
	v := one(deny_of(fresh(doc)), "DES-TASKGRAPH-INVALID")
	contains(v.msg, "phase_id \"reset-token\" is used by 2 phases (waves[0].phases[0], waves[2].phases[0])")
	v.field == "/waves/2/phases/0/phase_id"
}

test_unknown_dependency_is_invalid if {
	doc := patched([
		{"op": "add", "path": "/waves/2/phases/0/depends_on/-", "value": "reset-sms"},
		{"op": "replace", "path": "/waves/1/phases/1/verifies_phase_id", "value": "reset-mail"},
	])
	vs := deny_of(fresh(doc))
	invalid := only(vs, "DES-TASKGRAPH-INVALID")
	{v.field | some v in invalid} == {"/waves/2/phases/0/depends_on", "/waves/1/phases/1/verifies_phase_id"}
	some v in invalid
	contains(v.msg, "names \"reset-sms\" in depends_on, but the graph has no phase \"reset-sms\"")

	# reset-email lost its verifier.
	codes(vs) == {"DES-TASKGRAPH-INVALID", "DES-TASKGRAPH-UNVERIFIED"}
}

test_wave_id_is_the_position if {
	doc := patched([{"op": "replace", "path": "/waves/1/wave_id", "value": 2}])
	v := one(deny_of(fresh(doc)), "DES-TASKGRAPH-INVALID")
	v.field == "/waves/1/wave_id"
	contains(v.msg, "waves[1].wave_id is 2, but the wave is at position 1")
	count(deny_of(fresh(patched([{"op": "remove", "path": "/waves/1/wave_id"}])))) == 0
	count(deny_of(fresh(patched([{"op": "replace", "path": "/waves/1/wave_id", "value": null}])))) == 0
}

test_current_wave_range if {
	count(only(deny_of(fresh(patched([{"op": "replace", "path": "/current_wave", "value": 3}]))), "DES-TASKGRAPH-INVALID")) == 0
	v := one(deny_of(fresh(patched([{"op": "replace", "path": "/current_wave", "value": 4}]))), "DES-TASKGRAPH-INVALID")
	v.field == "/current_wave"
	contains(v.msg, "current_wave is 4, but the graph has 3 waves")
	codes(deny_of(fresh(patched([{"op": "replace", "path": "/current_wave", "value": -1}])))) == {"DES-TASKGRAPH-INVALID"}
	codes(deny_of(fresh(patched([{"op": "replace", "path": "/current_wave", "value": 1.5}])))) == {"DES-TASKGRAPH-INVALID"}
}

test_tier_outside_the_table if {
	v := one(deny_of(fresh(patched([{"op": "replace", "path": "/tier", "value": 4}]))), "DES-TASKGRAPH-INVALID")
	v.field == "/tier"
	contains(v.msg, "tier is 4; a tier is one of 1, 2, 3")
}

# --- DES-TASKGRAPH-WAVE-MIX (and a verification in its phase's wave)

test_verification_in_the_same_wave if {
	# verify-reset-token moved into wave 0, beside the phase it verifies.
	doc := patched([
		{"op": "add", "path": "/waves/0/phases/-", "value": plan.waves[1].phases[0]},
		{"op": "remove", "path": "/waves/1/phases/0"},
	])
	vs := deny_of(fresh(doc))
	codes(vs) == {"DES-TASKGRAPH-WAVE-MIX", "DES-TASKGRAPH-WAVE-DEPENDENCY", "DES-TASKGRAPH-UNVERIFIED"}
	mix := one(vs, "DES-TASKGRAPH-WAVE-MIX")
	mix.field == "/waves/0/phases"
	contains(mix.msg, "wave 0 (waves[0].phases) mixes implementation phases (\"reset-token\", \"reset-email\") with verification phases (\"verify-reset-token\")")
	dep := one(vs, "DES-TASKGRAPH-WAVE-DEPENDENCY")
	dep.field == "/waves/0/phases/2/verifies_phase_id"
	contains(dep.msg, "names \"reset-token\" in verifies_phase_id, but \"reset-token\" is in wave 0, the same wave")
	un := one(vs, "DES-TASKGRAPH-UNVERIFIED")
	contains(un.msg, "(\"verify-reset-token\" verifies it, but not from a later wave)")
}

test_waves_mixing_types if {
	# An implementation phase in the verification wave, verified in wave 2.
	doc := patched([
		{"op": "add", "path": "/waves/1/phases/-", "value": {"phase_id": "reset-page", "type": "implementation"}},
		{"op": "add", "path": "/waves/2/phases/-", "value": {"phase_id": "verify-reset-page", "type": "verification", "verifies_phase_id": "reset-page"}},
	])
	vs := deny_of(fresh(doc))
	codes(vs) == {"DES-TASKGRAPH-WAVE-MIX"}
	contains(one(vs, "DES-TASKGRAPH-WAVE-MIX").msg, "wave 1")

	# Other types mix freely with either.
	count(deny_of(fresh(patched([{"op": "add", "path": "/waves/1/phases/-", "value": {"phase_id": "docs", "type": "documentation"}}])))) == 0
}

# --- DES-TASKGRAPH-WAVE-DEPENDENCY

test_dependency_on_a_later_wave if {
	doc := patched([{"op": "add", "path": "/waves/0/phases/1/depends_on", "value": ["reset-e2e"]}])
	v := one(deny_of(fresh(doc)), "DES-TASKGRAPH-WAVE-DEPENDENCY")
	v.field == "/waves/0/phases/1/depends_on"
	contains(v.msg, "waves[0].phases[1] (phase \"reset-email\", wave 0) names \"reset-e2e\" in depends_on, but \"reset-e2e\" is in wave 2, a later wave")
}

test_dependency_in_the_same_wave if {
	doc := patched([{"op": "add", "path": "/waves/0/phases/1/depends_on", "value": ["reset-token"]}])
	codes(deny_of(fresh(doc))) == {"DES-TASKGRAPH-WAVE-DEPENDENCY"}

	# Also in a sequential wave, and on itself.
	seq := patched([{"op": "replace", "path": "/waves/0/parallel_execution", "value": false}, {"op": "add", "path": "/waves/0/phases/1/depends_on", "value": ["reset-token"]}])
	codes(deny_of(fresh(seq))) == {"DES-TASKGRAPH-WAVE-DEPENDENCY"}
	self := patched([{"op": "add", "path": "/waves/0/phases/1/depends_on", "value": ["reset-email"]}])
	codes(deny_of(fresh(self))) == {"DES-TASKGRAPH-WAVE-DEPENDENCY"}
}

# --- DES-TASKGRAPH-FILE-CONFLICT

test_parallel_file_conflict if {
	doc := patched([{"op": "add", "path": "/waves/0/phases/1/deliverable_manifest/files/-", "value": {"path": "./src/auth/reset_token.py"}}])
	vs := deny_of(fresh(doc))
	codes(vs) == {"DES-TASKGRAPH-FILE-CONFLICT"}
	v := one(vs, "DES-TASKGRAPH-FILE-CONFLICT")
	v.field == "/waves/0/parallel_execution"
	contains(v.msg, "in wave 0 (parallel_execution true), phases \"reset-email\", \"reset-token\" all list \"src/auth/reset_token.py\"")
}

test_no_conflict_when_sequential_or_read_only if {
	doc := patched([
		{"op": "add", "path": "/waves/0/phases/1/deliverable_manifest/files/-", "value": {"path": "src/auth/reset_token.py"}},
		{"op": "replace", "path": "/waves/0/parallel_execution", "value": false},
	])
	count(only(deny_of(fresh(doc)), "DES-TASKGRAPH-FILE-CONFLICT")) == 0

	# Both verifiers of the parallel wave 1 list src/auth/reset_token.py: they write nothing.
	count(only(deny_of(fresh(plan)), "DES-TASKGRAPH-FILE-CONFLICT")) == 0

	# A phase listing a file twice conflicts with nobody.
	twice := patched([{"op": "add", "path": "/waves/0/phases/0/deliverable_manifest/files/-", "value": {"path": "src/auth/reset_token.py"}}])
	count(only(deny_of(fresh(twice)), "DES-TASKGRAPH-FILE-CONFLICT")) == 0
}

test_other_types_write_files if {
	doc := {"waves": [{"parallel_execution": true, "phases": [
		{"phase_id": "readme", "type": "documentation", "deliverable_manifest": {"files": [{"path": "README.md"}]}},
		{"phase_id": "changelog", "type": "documentation", "deliverable_manifest": {"files": [{"path": "README.md"}, {"path": "CHANGELOG.md"}]}},
		{"phase_id": "review", "type": "verification", "deliverable_manifest": {"files": [{"path": "README.md"}]}},
	]}]}
	[v] := only(deny_of(fresh(doc)), "DES-TASKGRAPH-FILE-CONFLICT")
	codes(deny_of(fresh(doc))) == {"DES-TASKGRAPH-FILE-CONFLICT"}
	contains(v.msg, "phases \"changelog\", \"readme\" all list \"README.md\"")
}

# --- DES-TASKGRAPH-UNVERIFIED

test_unverified_implementation if {
	doc := patched([
		{"op": "remove", "path": "/waves/1/phases/1"},
		{"op": "replace", "path": "/waves/2/phases/0/depends_on", "value": ["verify-reset-token"]},
	])
	vs := deny_of(fresh(doc))
	codes(vs) == {"DES-TASKGRAPH-UNVERIFIED"}
	v := one(vs, "DES-TASKGRAPH-UNVERIFIED")
	v.field == "/waves/0/phases/1"
	contains(v.msg, "waves[0].phases[1] (phase \"reset-email\", wave 0) is an implementation phase that no verification phase of a later wave verifies; add a phase with type \"verification\" and verifies_phase_id \"reset-email\" to a wave after 0")
}

test_verified_by_an_earlier_wave_is_unverified if {
	doc := {"waves": [
		{"phases": [{"phase_id": "v", "type": "verification", "verifies_phase_id": "a"}]},
		{"phases": [{"phase_id": "a", "type": "implementation"}]},
	]}
	codes(deny_of(fresh(doc))) == {"DES-TASKGRAPH-UNVERIFIED", "DES-TASKGRAPH-WAVE-DEPENDENCY"}
}

test_team_adds_an_implementation_type if {
	doc := patched([{"op": "add", "path": "/waves/2/phases/-", "value": {"phase_id": "tidy", "type": "refactor"}}])
	count(deny_of(fresh(doc))) == 0
	types := object.union(data.des.taskgraph.implementation_types, {"refactor": true})
	codes(deny_of(fresh(doc))) == {"DES-TASKGRAPH-UNVERIFIED"} with data.des.taskgraph.implementation_types as types
}

# --- DES-TASKGRAPH-DEPTH

depth_of(doc) := only(deny_of(fresh(doc)), "DES-TASKGRAPH-DEPTH")

test_depth_by_tier if {
	# tier 2: reset-token at depth 2 passes; tier 3 needs 3.
	vs := depth_of(patched([{"op": "replace", "path": "/tier", "value": 3}]))
	[v] := vs
	v.field == "/waves/0/phases/0/depth"
	contains(v.msg, "waves[0].phases[0] (phase \"reset-token\", wave 0) is atomic (is_atomic true) with depth 2, below 3, the minimum depth of tier 3 (set by tier)")
	count(depth_of(patched([{"op": "replace", "path": "/tier", "value": 1}]))) == 0
}

no_tier(score) := patched([{"op": "remove", "path": "/tier"}, {"op": "replace", "path": "/complexity_score", "value": score}])

test_depth_by_complexity_score if {
	count(depth_of(no_tier(4))) == 0
	count(depth_of(no_tier(5))) == 0
	count(depth_of(no_tier(15))) == 0
	[v] := depth_of(no_tier(15.5))
	contains(v.msg, "below 3, the minimum depth of tier 3 (from complexity_score 15.5)")
	[_] := depth_of(no_tier(16))

	# A null tier counts as absent.
	count(depth_of(patched([{"op": "replace", "path": "/tier", "value": null}]))) == 0
}

test_depth_default_tier if {
	doc := patched([{"op": "remove", "path": "/tier"}, {"op": "remove", "path": "/complexity_score"}])
	[v] := depth_of(doc)
	contains(v.msg, "tier 3 (the default: the graph sets neither tier nor complexity_score)")
}

test_atomic_phase_without_depth if {
	doc := patched([{"op": "remove", "path": "/waves/0/phases/1/depth"}, {"op": "replace", "path": "/tier", "value": 1}])
	[v] := depth_of(doc)
	contains(v.msg, "is atomic (is_atomic true) with no depth (counted as 0), below 1, the minimum depth of tier 1 (set by tier)")

	# Not atomic: no depth needed.
	count(depth_of(patched([{"op": "remove", "path": "/waves/0/phases/1/depth"}, {"op": "replace", "path": "/waves/0/phases/1/is_atomic", "value": false}]))) == 0
	count(depth_of(patched([{"op": "remove", "path": "/waves/0/phases/1/depth"}, {"op": "replace", "path": "/waves/0/phases/1/is_atomic", "value": null}]))) == 0
}

test_team_changes_tier_tables if {
	doc := patched([{"op": "replace", "path": "/tier", "value": 3}])
	count(depth_of(doc)) == 0 with data.des.taskgraph.tier_min_depth as {"1": 1, "2": 2, "3": 2}
	no_tier := patched([{"op": "remove", "path": "/tier"}])
	[_] := depth_of(no_tier) with data.des.taskgraph.complexity_tiers as {"tier_1_below": 5, "tier_2_up_to": 10}
}

# --- DES-TASKGRAPH-ATOMICITY (warn)

test_atomicity_warnings if {
	doc := patched([
		{"op": "replace", "path": "/waves/0/phases/0/objective", "value": "Create the token model and its repository and the expiry job"},
		{"op": "replace", "path": "/waves/0/phases/0/estimated_minutes", "value": 31},
		{"op": "add", "path": "/waves/0/phases/1/deliverable_manifest/files/-", "value": {"path": "a.py"}},
		{"op": "add", "path": "/waves/0/phases/1/deliverable_manifest/files/-", "value": {"path": "b.py"}},
	])
	ws := warn_of(fresh(doc))
	{w.field | some w in ws} == {"/waves/0/phases/0/objective", "/waves/0/phases/0/estimated_minutes", "/waves/0/phases/1/deliverable_manifest/files"}
	codes(ws) == {"DES-TASKGRAPH-ATOMICITY"}
	some w in ws
	contains(w.msg, "its objective has 11 words (more than 10)")
	count(deny_of(fresh(doc))) == 0
}

test_atomicity_limits_are_inclusive if {
	doc := patched([
		{"op": "replace", "path": "/waves/0/phases/0/objective", "value": "one two three four five six seven eight nine ten"},
		{"op": "replace", "path": "/waves/0/phases/0/estimated_minutes", "value": 30},
		{"op": "add", "path": "/waves/0/phases/1/deliverable_manifest/files/-", "value": {"path": "a.py"}},
	])
	count(warn_of(fresh(doc))) == 0

	# Not atomic: no warning however big.
	big := patched([
		{"op": "replace", "path": "/waves/0/phases/0/estimated_minutes", "value": 300},
		{"op": "replace", "path": "/waves/0/phases/0/is_atomic", "value": false},
	])
	count(warn_of(fresh(big))) == 0
}

# --- DES-TASKGRAPH-TRANSITION

transition_of(disk, doc) := only(deny_of(over(disk, doc)), "DES-TASKGRAPH-TRANSITION")

test_status_transitions_allowed if {
	running := with_statuses(plan, {"reset-token": "in_progress"})
	count(deny_of(over(plan, running))) == 0
	count(transition_of(running, with_statuses(plan, {"reset-token": "completed"}))) == 0
	count(transition_of(running, with_statuses(plan, {"reset-token": "failed"}))) == 0
	failed := with_statuses(plan, {"reset-token": "failed"})
	count(deny_of(over(failed, running))) == 0

	# Unchanged statuses are no transition, whatever they are.
	done := with_statuses(plan, {"reset-token": "completed"})
	count(deny_of(over(done, done))) == 0
}

test_status_transitions_denied if {
	[v] := transition_of(plan, with_statuses(plan, {"reset-token": "completed"}))
	v.field == "/waves/0/phases/0/status"
	contains(v.msg, "waves[0].phases[0] (phase \"reset-token\", wave 0) moves status from \"pending\" to \"completed\"; from \"pending\" it may move only to \"in_progress\"")
	done := with_statuses(plan, {"reset-token": "completed"})
	[back] := transition_of(done, plan)
	contains(back.msg, "from \"completed\" to \"pending\"; \"completed\" is final")
	failed := with_statuses(plan, {"reset-token": "failed"})
	[_] := transition_of(failed, with_statuses(plan, {"reset-token": "completed"}))
	[odd] := transition_of(plan, with_statuses(plan, {"reset-token": "done"}))
	contains(odd.msg, "to \"done\"")
}

test_new_phase_counts_as_pending if {
	doc := patched([{"op": "add", "path": "/waves/2/phases/-", "value": {"phase_id": "docs", "type": "documentation", "status": "completed"}}])
	[v] := transition_of(plan, doc)
	contains(v.msg, "(new to the graph, so it counts as pending)")
	ok := patched([{"op": "add", "path": "/waves/2/phases/-", "value": {"phase_id": "docs", "type": "documentation"}}])
	count(deny_of(over(plan, ok))) == 0
}

test_phase_leaving_the_graph if {
	# A pending phase may go (a re-plan).
	gone := patched([{"op": "remove", "path": "/waves/2/phases/0"}])
	count(transition_of(plan, gone)) == 0

	# One that started may not.
	disk := with_statuses(plan, {"reset-e2e": "in_progress"})
	[v] := transition_of(disk, gone)
	contains(v.msg, "waves[2].phases[0] (phase \"reset-e2e\", wave 2) (status \"in_progress\", retries 0 on disk) is missing from the write")
}

test_new_plan_is_not_compared if {
	disk := with_statuses(plan, {"reset-token": "completed", "reset-email": "completed"})
	doc := json.patch(plan, [{"op": "replace", "path": "/task_id", "value": "profile-page"}])
	count(deny_of(over(disk, doc))) == 0

	# The same task: compared.
	count(transition_of(disk, plan)) == 2
}

test_retries_never_go_down if {
	disk := patched([{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 2}])
	[v] := transition_of(disk, plan)
	v.field == "/waves/0/phases/0/retries"
	contains(v.msg, "has retries 0, but 2 on disk")
	count(transition_of(plan, disk)) == 0
}

test_max_retries_never_goes_up if {
	[v] := transition_of(plan, patched([{"op": "replace", "path": "/max_retries", "value": 10}]))
	v.field == "/max_retries"
	contains(v.msg, "max_retries goes from 3 to 10")

	# Absent on disk means 3.
	no_max := json.remove(plan, ["max_retries"])
	[_] := transition_of(no_max, patched([{"op": "replace", "path": "/max_retries", "value": 4}]))
	count(transition_of(plan, patched([{"op": "replace", "path": "/max_retries", "value": 2}]))) == 0
}

wave0_done := with_statuses(plan, {"reset-token": "completed", "reset-email": "completed"})

at_wave(doc, n) := json.patch(doc, [{"op": "replace", "path": "/current_wave", "value": n}])

test_current_wave_advances_when_the_wave_is_complete if {
	# No DES-TASKGRAPH-TRANSITION (the order is right); DES-GRAPH-WAVE-MOVED
	# says that only des's wave sync moves it.
	count(transition_of(wave0_done, at_wave(wave0_done, 1))) == 0
	codes(deny_of(over(wave0_done, at_wave(wave0_done, 1)))) == {"DES-GRAPH-WAVE-MOVED"}

	# One write may complete the last phase and advance.
	running := with_statuses(plan, {"reset-token": "completed", "reset-email": "in_progress"})
	count(transition_of(running, at_wave(wave0_done, 1))) == 0
}

test_current_wave_does_not_advance_early if {
	half := with_statuses(plan, {"reset-token": "completed", "reset-email": "in_progress"})
	[v] := transition_of(half, at_wave(half, 1))
	v.field == "/current_wave"
	contains(v.msg, "current_wave moves from 0 to 1 while wave 0 is not done: reset-email (in_progress)")
}

test_current_wave_moves_one_wave_at_a_time if {
	[skip] := transition_of(wave0_done, at_wave(wave0_done, 2))
	contains(skip.msg, "current_wave moves from 0 to 2; it moves only to the next wave (1)")
	[back] := transition_of(at_wave(wave0_done, 1), wave0_done)
	contains(back.msg, "current_wave moves from 1 to 0")

	# No current_wave on either side is wave 0.
	count(deny_of(over(json.remove(plan, ["current_wave"]), plan))) == 0
}

test_no_disk_no_transition if {
	count(only(deny_of(fresh(at_wave(with_statuses(plan, {"reset-token": "completed"}), 1))), "DES-TASKGRAPH-TRANSITION")) == 0
	count(deny_of({"task_graph": {"path": path, "document": plan, "disk": null}})) == 0
}

test_team_changes_the_transition_table if {
	table := object.union(data.des.taskgraph.status_transitions, {"failed": {"pending": true}})
	failed := with_statuses(plan, {"reset-token": "failed"})
	count(transition_of(failed, plan)) == 1
	count(transition_of(failed, plan)) == 0 with data.des.taskgraph.status_transitions as table
}

# --- Tables a team changes with its own data.

test_team_changes_the_default_tier if {
	doc := patched([{"op": "remove", "path": "/tier"}, {"op": "remove", "path": "/complexity_score"}])
	count(depth_of(doc)) == 0 with data.des.taskgraph.default_tier as 2
}

test_team_changes_atomicity_limits if {
	ws := warn_of(fresh(plan)) with data.des.taskgraph.atomicity as {"max_objective_words": 4, "max_files": 1, "max_estimated_minutes": 20}
	{w.field | some w in ws} == {
		"/waves/0/phases/0/objective", "/waves/0/phases/1/objective",
		"/waves/0/phases/0/deliverable_manifest/files", "/waves/0/phases/1/deliverable_manifest/files",
		"/waves/0/phases/1/estimated_minutes",
	}
}

test_team_adds_a_verification_type if {
	doc := patched([{"op": "replace", "path": "/waves/1/phases/1/type", "value": "review"}])
	codes(deny_of(fresh(doc))) == {"DES-TASKGRAPH-UNVERIFIED"}
	types := object.union(data.des.taskgraph.verification_types, {"review": true})
	count(deny_of(fresh(doc))) == 0 with data.des.taskgraph.verification_types as types
}

test_team_adds_a_read_only_type if {
	doc := {"waves": [{"parallel_execution": true, "phases": [
		{"phase_id": "a", "type": "audit", "deliverable_manifest": {"files": [{"path": "x"}]}},
		{"phase_id": "b", "type": "audit", "deliverable_manifest": {"files": [{"path": "x"}]}},
	]}]}
	codes(deny_of(fresh(doc))) == {"DES-TASKGRAPH-FILE-CONFLICT"}
	types := object.union(data.des.taskgraph.read_only_types, {"audit": true})
	count(deny_of(fresh(doc))) == 0 with data.des.taskgraph.read_only_types as types
}

# --- Escaping DES-VERIFY-ESCALATE and DES-TASKGRAPH-UNVERIFIED by a write.

# reset-token failed verification max_retries (3) times: des set it back to
# pending with retries 3; its verifier stands failed; current_wave is 1.
escalated := json.patch(plan, [
	{"op": "replace", "path": "/current_wave", "value": 1},
	{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 3},
	{"op": "replace", "path": "/waves/0/phases/1/status", "value": "completed"},
	{"op": "add", "path": "/waves/1/phases/0/status", "value": "failed"},
	{"op": "add", "path": "/waves/1/phases/1/status", "value": "completed"},
])

test_escalated_phase_cannot_be_replaced_by_a_new_plan if {
	doc := json.patch(plan, [{"op": "replace", "path": "/task_id", "value": "password-reset-2"}])
	[v] := transition_of(escalated, doc)
	v.field == "/task_id"
	contains(v.msg, "reset-token")
	contains(v.msg, "the user decides")
}

test_escalated_phase_cannot_leave_or_be_renamed if {
	# Renamed: the old id leaves the graph, the new one starts at retries 0.
	doc := json.patch(escalated, [
		{"op": "replace", "path": "/waves/0/phases/0/phase_id", "value": "reset-token-2"},
		{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 0},
		{"op": "replace", "path": "/waves/1/phases/0/verifies_phase_id", "value": "reset-token-2"},
	])
	vs := transition_of(escalated, doc)
	some v in vs
	contains(v.msg, "is missing from the write")

	# A phase that failed verification once has run: it is history too.
	once := json.patch(plan, [{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 1}])
	gone := json.patch(once, [
		{"op": "remove", "path": "/waves/1/phases/0"},
		{"op": "remove", "path": "/waves/0/phases/0"},
	])
	[_] := transition_of(once, gone)
}

test_escalated_phase_and_its_verifier_keep_their_status if {
	# The orchestrator walks the escalated phase to completed itself ...
	walk := json.patch(escalated, [{"op": "add", "path": "/waves/0/phases/0/status", "value": "in_progress"}])
	[v] := transition_of(escalated, walk)
	v.field == "/waves/0/phases/0/status"
	contains(v.msg, "the user decides")

	# ... or its failed verifier.
	rerun := with_statuses(escalated, {"verify-reset-token": "in_progress"})
	[w] := transition_of(escalated, rerun)
	w.field == "/waves/1/phases/0/status"

	# Below max_retries the verifier runs again.
	two := json.patch(escalated, [{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 2}])
	count(transition_of(two, with_statuses(two, {"verify-reset-token": "in_progress"}))) == 0

	# The user raises max_retries by hand: no longer escalated.
	count(transition_of(json.patch(escalated, [{"op": "replace", "path": "/max_retries", "value": 5}]), walk)) == 0 with data.des.taskgraph.defaults.max_retries as 3
}

test_started_phase_keeps_its_type_and_target if {
	# An implementation that ran cannot become another type to need no verification.
	done := with_statuses(plan, {"reset-token": "completed", "reset-email": "completed"})
	doc := json.patch(done, [{"op": "replace", "path": "/waves/0/phases/0/type", "value": "documentation"}])
	[v] := transition_of(done, doc)
	v.field == "/waves/0/phases/0/type"

	# Nor a verification that ran another type or another target.
	vdone := with_statuses(done, {"verify-reset-token": "failed"})
	retarget := json.patch(vdone, [{"op": "replace", "path": "/waves/1/phases/0/verifies_phase_id", "value": "reset-email"}])
	[w] := only(transition_of(vdone, retarget), "DES-TASKGRAPH-TRANSITION")
	w.field == "/waves/1/phases/0/verifies_phase_id"

	# A pending phase that never ran is still a plan: it may change.
	count(transition_of(plan, json.patch(plan, [{"op": "replace", "path": "/waves/2/phases/0/type", "value": "testing"}]))) == 0
}

# --- Evidence: DES-GRAPH-STATUS-UNSEEN, -PLAN-FINISHED, -WAVE-MOVED, -RETRIES-RESET

with_evidence(inp, ev) := json.patch(inp, [{"op": "add", "path": "/task_graph/evidence", "value": ev}])

seen(phases) := {"known": true, "max_retries": 3, "phases": phases}

rec(status, retries) := {"status": status, "retries": retries, "matched_by": "phase_id", "recorded_id": "reset-token", "agent": "coder", "at": "2026-11-29T04:00:00Z"}

running := with_statuses(plan, {"reset-token": "in_progress"})

test_status_unseen_self_walked if {
	# The main agent walks its own phase: no run of it in des's record.
	v := one(deny_of(over(running, with_statuses(plan, {"reset-token": "completed"}))), "DES-GRAPH-STATUS-UNSEEN")
	v.field == "/waves/0/phases/0/status"
	contains(v.msg, "moves status from \"in_progress\" to \"completed\", but des saw no subagent run of \"reset-token\" end")
	contains(v.msg, "with the line \"Phase ID: reset-token\" in the prompt; des marks it completed")
	failed := one(deny_of(over(running, with_statuses(plan, {"reset-token": "failed"}))), "DES-GRAPH-STATUS-UNSEEN")
	contains(failed.msg, "to \"failed\"")

	# des's record says the run ended failed: completed is still unseen.
	wrong := one(deny_of(with_evidence(over(running, with_statuses(plan, {"reset-token": "completed"})), seen({"reset-token": rec("failed", 0)}))), "DES-GRAPH-STATUS-UNSEEN")
	contains(wrong.msg, "ended \"failed\" at 2026-11-29T04:00:00Z, not \"completed\"")

	# escalated is des's to say, too.
	esc := [v | some v in deny_of(over(running, with_statuses(plan, {"reset-token": "escalated"}))); v.code == "DES-GRAPH-STATUS-UNSEEN"]
	count(esc) == 1
}

test_status_seen_is_allowed if {
	# The write repeats what des's sync recorded (a stale copy written back).
	inp := with_evidence(over(running, with_statuses(plan, {"reset-token": "completed"})), seen({"reset-token": rec("completed", 0)}))
	count(deny_of(inp)) == 0

	# Unchanged finished statuses are no claim: the disk already says so.
	done := with_statuses(plan, {"reset-token": "completed"})
	count(deny_of(over(done, done))) == 0

	# Editing a description or adding a pending phase is fine.
	edited := json.patch(done, [{"op": "replace", "path": "/description", "value": "new words"}])
	count(deny_of(over(done, edited))) == 0
}

test_plan_finished if {
	# A new plan (no disk) with a finished phase.
	v := one(deny_of(fresh(with_statuses(plan, {"reset-token": "completed"}))), "DES-GRAPH-PLAN-FINISHED")
	contains(v.msg, "the write starts a plan (no graph on disk) with waves[0].phases[0] (phase \"reset-token\", wave 0) \"completed\"")

	# Another task_id over the disk.
	renamed := json.patch(with_statuses(plan, {"reset-token": "completed"}), [{"op": "replace", "path": "/task_id", "value": "T-2"}])
	r := one(deny_of(over(plan, renamed)), "DES-GRAPH-PLAN-FINISHED")
	contains(r.msg, "task_id \"T-2\"")

	# current_wave past an open wave.
	w := one(deny_of(fresh(at_wave(plan, 1))), "DES-GRAPH-PLAN-FINISHED")
	w.field == "/current_wave"
	contains(w.msg, "at current_wave 1, but wave 0 is not complete: reset-token (pending), reset-email (pending)")

	# All pending at wave 0: fine.
	count(deny_of(fresh(plan))) == 0
}

test_renamed_plan_keeps_recorded_statuses if {
	# A renamed plan may carry the phases des finished, at the wave after them.
	ev := seen({"reset-token": rec("completed", 0), "reset-email": json.patch(rec("completed", 0), [{"op": "replace", "path": "/recorded_id", "value": "reset-email"}])})
	renamed := json.patch(at_wave(wave0_done, 1), [{"op": "replace", "path": "/task_id", "value": "T-2"}])
	count(deny_of(with_evidence(over(wave0_done, renamed), ev))) == 0
}

test_wave_moved if {
	v := one(deny_of(over(wave0_done, at_wave(wave0_done, 1))), "DES-GRAPH-WAVE-MOVED")
	v.field == "/current_wave"
	contains(v.msg, "current_wave moves from 0 to 1 in a write; only des's wave sync moves it")
	contains(v.msg, "on disk now: reset-token (completed), reset-email (completed)")
	codes(deny_of(over(at_wave(wave0_done, 1), wave0_done))) == {"DES-TASKGRAPH-TRANSITION", "DES-GRAPH-WAVE-MOVED"}
}

test_retries_reset_across_task_ids if {
	# des counted 3 failed verifications of reset-token; the plan renamed
	# starts it at 0 again.
	renamed := json.patch(plan, [{"op": "replace", "path": "/task_id", "value": "T-2"}])
	inp := with_evidence(over(plan, renamed), seen({"reset-token": rec("pending", 3)}))
	v := one(deny_of(inp), "DES-GRAPH-RETRIES-RESET")
	v.field == "/waves/0/phases/0/retries"
	contains(v.msg, "has retries 0, but des counted 3 failed verifications of it (reset-token)")

	# Matched by content under another id.
	by_content := json.patch(rec("pending", 2), [{"op": "replace", "path": "/matched_by", "value": "content"}, {"op": "replace", "path": "/recorded_id", "value": "old-id"}])
	c := one(deny_of(with_evidence(fresh(plan), seen({"reset-token": by_content}))), "DES-GRAPH-RETRIES-RESET")
	contains(c.msg, "(old-id, the same phase by its content under another phase_id)")

	# Keeping them is fine.
	kept := json.patch(renamed, [{"op": "replace", "path": "/waves/0/phases/0/retries", "value": 3}])
	count(only(deny_of(with_evidence(over(plan, kept), seen({"reset-token": rec("pending", 3)}))), "DES-GRAPH-RETRIES-RESET")) == 0

	# max_retries raised in a new plan.
	raised := json.patch(renamed, [{"op": "replace", "path": "/max_retries", "value": 10}])
	m := one(deny_of(with_evidence(over(plan, raised), seen({"reset-email": rec("pending", 0)}))), "DES-GRAPH-RETRIES-RESET")
	m.field == "/max_retries"
}

test_unknown_evidence_sees_nothing if {
	inp := with_evidence(over(running, with_statuses(plan, {"reset-token": "completed"})), {"known": false, "error": "bad record"})
	codes(deny_of(inp)) == {"DES-GRAPH-STATUS-UNSEEN"}
}
