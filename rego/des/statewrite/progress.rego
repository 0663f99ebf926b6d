# Progress a workflow-state write claims, judged on des's evidence
# (package des.statewrite).
#
# Under the setting phase_evidence "des" (the default), a write to the
# workflow state in effect is judged on what des saw, not on what the write
# says:
#   - a write that moves the workflow past a phase (active_workflow's
#     current_phase or current_phase_index further along active_workflow.phases,
#     a phase's status set to completed, or a workflow started again at a
#     later phase) while des has not seen that phase's tests pass is
#     DES-GATE-BLOCKED, with the numbers the gate blocker gives at a
#     delegation;
#   - a write that changes a value of a phase's test_iteration away from
#     what des derived from the test runs it saw is DES-EVIDENCE-MISMATCH.
# Go adds input.state.document (the whole document the write leaves),
# input.state.workflow_before (the workflow on disk, type@started_at) and
# input.workflow (the workflow facts, with des's evidence of the written
# document's workflow) when the write is to the state in effect. Only the
# test iterations are des's evidence; constitutional validation,
# elicitation and artifacts are judged when the orchestrator advances
# (des.phases.guards), as the state claims them.
package des.statewrite

import data.des.phases
import data.des.phases.guards

_judged if {
	guards.evidence_mode
	input.workflow.state_file == input.state.path
	is_object(input.state.document.active_workflow)
}

_new := input.state.document

default _old := {}

_old := input.workflow.state if is_object(input.workflow.state)

_same_workflow if {
	input.state.workflow_before != ""
	input.state.workflow_before == input.workflow.evidence.workflow
}

_new_list := l if {
	l := phases.phase_list with input.workflow.state as _new
}

_new_current := c if {
	c := phases.current with input.workflow.state as _new
}

_old_current := c if {
	c := phases.current with input.workflow.state as _old
}

_pos(list, p) := [i | some i, q in list; q == p][0]

_int(x) if {
	is_number(x)
	round(x) == x
}

_new_positions contains i if i := _pos(_new_list, _new_current)

_new_positions contains i if {
	i := _new.active_workflow.current_phase_index
	_int(i)
}

# An index past the end of the list says every phase is done, however
# large: a number too large for round() to give back exactly (1e308, which
# iSDLC's JSON.parse reads as a number past any list) is no integer to
# _int, but no less past the end.
_new_positions contains count(_new_list) if {
	i := _new.active_workflow.current_phase_index
	is_number(i)
	i > count(_new_list)
}

_new_pos := max(_new_positions) if count(_new_positions) > 0

# Where the write starts from: the phase the file is at now, for the same
# workflow; the first phase for a workflow the write starts (or starts
# again).
_old_pos := _pos(_new_list, _old_current) if _same_workflow

_old_pos := _new_pos if {
	_same_workflow
	not _pos(_new_list, _old_current)
}

_old_pos := 0 if not _same_workflow

_status(doc, p) := s if {
	s := phases.lookup(doc.phases, p).status
	is_string(s)
}

_status(doc, p) := s if {
	not phases.lookup(doc.phases, p).status
	s := phases.lookup(doc.active_workflow.phase_status, p)
	is_string(s)
}

_done_in(doc, p) if _status(doc, p) == data.des.statewrite.completed_status

_listed_keys(doc) := {phases.norm_phase(k) | some k, _ in object.union(object.get(doc, "phases", {}), object.get(object.get(doc, "active_workflow", {}), "phase_status", {})); phases.is_key(k)}

# METADATA
# title: Phases a workflow-state write moves past
# description: The phases a write to the workflow state leaves behind (passed by the current phase or its index) or marks completed, for the progress rules.
passed contains p if {
	_judged
	some i, p in _new_list
	i >= _old_pos
	i < _new_pos
}

passed contains p if {
	_judged
	some p in _listed_keys(_new)
	_done_in(_new, p)
	not _was_done(p)
}

# A write that leaves the phase the file is at for one that is not earlier
# in the workflow's phases as the file lists them passes it too, however it
# lists the phases: dropping the phase from active_workflow.phases,
# reordering them, or moving to a phase the list does not hold.
passed contains p if {
	_judged
	_same_workflow
	p := _old_current
	not _new_current == p
	not _back_from(p)
}

_old_list := l if {
	l := phases.phase_list with input.workflow.state as _old
}

_back_from(p) if _pos(_old_list, _new_current) < _pos(_old_list, p)

_was_done(p) if {
	_same_workflow
	_done_in(_old, p)
}

# The document as if p were its current phase: the gate blocker's view of p.
_at(p) := json.patch(_new, [{"op": "add", "path": "/active_workflow/current_phase", "value": p}])

_unmet_tests contains [p, u] if {
	some p in passed
	us := guards.unmet with input.workflow.state as _at(p)
	some u in us
	u.kind == "test_iteration"
}

# METADATA
# title: A state write moves past a phase des has not seen pass
# description: Under phase_evidence des, a workflow-state write that moves the workflow past a phase, marks it completed or starts the workflow again at a later phase, while des has not seen the phase's tests pass.
# custom:
#   code: DES-GATE-BLOCKED
#   severity: deny
deny contains {
	"code": "DES-GATE-BLOCKED",
	"msg": sprintf("%s: this write moves the workflow past phase %q, but %s", [_path, p, u.msg]),
	"field": u.field,
	"recovery": [
		u.recovery,
		sprintf("Until then keep phase %q the current phase (and not completed) in %s.", [p, _path]),
	],
} if {
	some [p, u] in _unmet_tests
}

# des's value of key in phase p's test iterations: the derived value, the
# value of no run at all when des saw none (data.des.statewrite.evidence_none),
# null when des derived none.
_seen(p, key) := v if {
	ti := input.workflow.evidence.test_iteration[p]
	v := object.get(ti, key, null)
}

_seen(p, key) := object.get(data.des.statewrite.evidence_none, key, null) if not input.workflow.evidence.test_iteration[p]

_disk_ti(key) := t if {
	t := _old.phases[key].iteration_requirements.test_iteration
	is_object(t)
}

default _disk_ti(_) := {}

_json(x) := json.marshal(x) if x != null

_json(x) := "absent" if x == null

_mismatches contains [key, k, v, seen] if {
	_judged
	some key, doc in _new.phases
	t := doc.iteration_requirements.test_iteration
	is_object(t)
	some k in data.des.statewrite.evidence_claims
	v := t[k]
	v != object.get(_disk_ti(key), k, null)
	seen := _seen(phases.norm_phase(key), k)
	v != seen
}

_evidence_text(key) := t if {
	t := guards.phase_test_evidence with input.workflow.state as _at(phases.norm_phase(key))
}

# METADATA
# title: A state write's test iterations differ from des's evidence
# description: Under phase_evidence des, a workflow-state write changes a value of a phase's test_iteration to one that differs from what des derived from the test runs it saw.
# custom:
#   code: DES-EVIDENCE-MISMATCH
#   severity: deny
deny contains {
	"code": "DES-EVIDENCE-MISMATCH",
	"msg": sprintf("%s: phases[%q].iteration_requirements.test_iteration.%s is %s in this write, but des's evidence says %s (%s)", [_path, key, k, _json(v), _json(seen), _evidence_text(key)]),
	"field": sprintf("/phases/%s/iteration_requirements/test_iteration/%s", [_escape(key), k]),
	"recovery": [
		sprintf("Keep phases[%q].iteration_requirements.test_iteration as des wrote it: re-read %s and leave its values; des writes them from the test runs it sees.", [key, _path]),
		"To change what des sees, run the tests with Bash; `des-hook evidence` lists the runs des saw.",
	],
} if {
	some [key, k, v, seen] in _mismatches
}

_escape(s) := replace(replace(s, "~", "~0"), "/", "~1")
