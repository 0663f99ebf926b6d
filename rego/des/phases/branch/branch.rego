# METADATA
# title: Workflow branch guard
# description: |
#   A git commit in a multi-phase workflow: not on a protected branch (main,
#   master) while the workflow's own branch is active and exists, and not on
#   the workflow branch before the last phase. Gathered by the tool_use gate.
#   Input (Bash, PreToolUse; built by Go when the command has a git commit and
#   a workflow state was found): input.workflow as in des.phases, and
#   input.commits[] {dir, branch: {readable, current, detached,
#   workflow_branch_exists}}. An unreadable or detached HEAD gives no opinion.
package des.phases.branch

import data.des.phases.active_workflow
import data.des.phases.current
import data.des.phases.current_field
import data.des.phases.phase_list

_bash if {
	input.tool == "Bash"
	not _after # the commit already ran
}

_after if {
	is_string(input.event)
	startswith(input.event, "PostToolUse")
}

_git_branch := active_workflow.git_branch if is_object(active_workflow.git_branch)

_name(b) := trim_prefix(trim_space(b), "refs/heads/")

_workflow_branch := _name(_git_branch.name) if {
	is_string(_git_branch.name)
	_name(_git_branch.name) != ""
}

# The branch each commit is made on, when it can be read.
_on contains {"dir": object.get(c, "dir", "."), "branch": _name(c.branch.current), "exists": c.branch.workflow_branch_exists == true} if {
	_bash
	some c in input.commits
	not _branchless(c)
	c.branch.readable == true
	not c.branch.detached == true
	is_string(c.branch.current)
	_name(c.branch.current) != ""
}

# Commands that commit no work of their own on the branch (table
# branchless_commands): git commit-tree moves no branch; git merge and
# git pull bring another branch in, as a workflow's finalize merges its
# branch into main while git_branch.status is still "active".
_branchless(c) if data.des.phases.branchless_commands[c.subcommand] == true

_last := phase_list[count(phase_list) - 1]

# Where the commit runs, for messages: nothing for the project root.
_where(dir) := "" if dir in {".", ""}

_where(dir) := sprintf(" in %v", [dir]) if not dir in {".", ""}

# METADATA
# title: Commit on a protected branch
# description: A git commit on a protected branch (main, master) while active_workflow.git_branch.status is active and the workflow branch exists.
# custom:
#   code: DES-BRANCH-PROTECTED
#   severity: deny
deny contains {
	"code": "DES-BRANCH-PROTECTED",
	"msg": sprintf("git commit%s on protected branch %q while the workflow (current phase %q) works on its own branch %q (active_workflow.git_branch.status is %q)", [_where(c.dir), c.branch, current, _workflow_branch, _git_branch.status]),
	"field": "/active_workflow/git_branch/status",
	"recovery": [
		sprintf("Switch to the workflow branch (git checkout %s) and commit there, once the workflow reaches its last phase %q.", [_workflow_branch, _last_text]),
		sprintf("If the workflow branch was merged, set active_workflow.git_branch.status to a value other than %q.", [data.des.phases.active_branch_status]),
	],
} if {
	current
	_git_branch.status == data.des.phases.active_branch_status
	some c in _on
	_protected(c.branch)
	c.branch != _workflow_branch
	c.exists
}

# A protected branch in any case: on a case-insensitive file system (macOS,
# Windows) HEAD naming refs/heads/MAIN commits onto main's ref file.
_protected(b) if {
	some p, on in data.des.phases.protected_branches
	on == true
	lower(p) == lower(b)
}

default _last_text := "(none listed)"

_last_text := _last

# METADATA
# title: Commit on the workflow branch before the last phase
# description: A git commit on the workflow branch (active_workflow.git_branch.name) while the current phase is not the last phase of active_workflow.phases.
# custom:
#   code: DES-BRANCH-INTERMEDIATE
#   severity: deny
deny contains {
	"code": "DES-BRANCH-INTERMEDIATE",
	"msg": sprintf("git commit%s on the workflow branch %q while the current phase is %q (%s), not the last phase %q of active_workflow.phases; the workflow commits its branch in its last phase", [_where(c.dir), c.branch, current, current_field, _last]),
	"field": "/active_workflow/current_phase",
	"recovery": [
		sprintf("Do not commit yet: keep the changes in the working tree and finish phase %q; commit when active_workflow.current_phase is %q.", [current, _last]),
		"Leave the staged changes as they are (git stash is fine) and go on with the current phase.",
	],
} if {
	current
	count(phase_list) > 0
	current != _last
	some c in _on
	c.branch == _workflow_branch
}

default _problem := ""

_problem := input.workflow.problem if is_string(input.workflow.problem)

default _state_file := "the workflow state file"

_state_file := input.workflow.state_file if is_string(input.workflow.state_file)

default _error := "no reason given"

_error := input.workflow.error if is_string(input.workflow.error)

# METADATA
# title: Workflow state unusable
# description: A git commit while the workflow state file exists but is not a JSON object (or cannot be read); the branch guard cannot judge it and DES fails closed.
# custom:
#   code: DES-INTERNAL
#   severity: deny
deny contains {
	"code": "DES-INTERNAL",
	"msg": sprintf("git commit while the workflow state %s is %s (%s): the current phase and the workflow branch cannot be read, so the commit cannot be judged; DES fails closed", [_state_file, _problem, _error]),
	"recovery": [
		sprintf("Repair %s so that it is a JSON object (or restore it from version control), then commit again.", [_state_file]),
	],
} if {
	_problem != ""
	_bash
	is_array(input.commits)
	count(input.commits) > 0
}
