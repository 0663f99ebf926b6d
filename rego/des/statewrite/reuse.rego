# A workflow-state write that starts a workflow under an identity des has
# already seen (package des.statewrite).
#
# des keeps what it saw of a workflow (test runs, the user's replies, the
# subagents that stopped, a person's approvals) under the workflow's
# identity, its type and started_at, as iSDLC names it. A write that
# starts a workflow (the file holds another one, or none) under an
# identity des already holds records of would inherit them: an old
# started_at copied into a new workflow would pass its phases on the old
# workflow's test runs. An orchestrator starts a workflow with the time it
# starts; resuming one leaves the state's active_workflow as it is, which
# is the same workflow, not a start, and so is bringing a workflow back as
# des saw it (ended by mistake and written again, a branch switched back
# to): des remembers the active_workflow contents it saw per identity. Go
# adds input.workflow.evidence (records_seen, first_seen, content_seen:
# the written active_workflow is one des saw) for the written document's
# workflow (progress.rego's facts). The check of what git brings
# (data.des.integrity.sync_refused_codes) refuses the same.
package des.statewrite

# METADATA
# title: A state write starts a workflow des has already seen
# description: Under phase_evidence des, a workflow-state write that starts a workflow (the file held another one, or none) whose type and started_at name a workflow des already holds records of, with an active_workflow des never saw, so that the new workflow would inherit its test runs.
# custom:
#   code: DES-WORKFLOW-REUSED
#   severity: deny
deny contains {
	"code": "DES-WORKFLOW-REUSED",
	"msg": sprintf("%s: this write starts workflow %s, but des already holds records of a workflow of that type and started_at (%d, the first from %s): a new workflow would inherit its test runs", [_path, input.workflow.evidence.workflow, input.workflow.evidence.records_seen, input.workflow.evidence.first_seen]),
	"field": "/active_workflow/started_at",
	"recovery": [sprintf("Start the new workflow with active_workflow.started_at set to the time it starts (now: %s); to go on with the workflow in %s, leave its active_workflow as it is, or bring it back exactly as it was.", [_now, _path])],
} if {
	_judged
	not _same_workflow
	not input.workflow.evidence.content_seen == true
	input.workflow.evidence.records_seen > 0
}

_now := time.format([time.now_ns(), "UTC", "2006-01-02T15:04:05Z07:00"])
