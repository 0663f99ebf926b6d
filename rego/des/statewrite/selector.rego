package des.statewrite

# In a monorepo, .isdlc/monorepo.json chooses which project's workflow state
# applies to a call (ISDLC_PROJECT, else the project whose path holds the
# call's directory, else default_project). Rewriting it switches the state
# every phase guard reads as surely as writing the state itself: one Write
# pointing default_project at a forged projects/x/state.json would do. Go
# reports, for a Write or Edit of that file, every place a call can be made
# where the state in effect would change, as
# input.state_selector {path, switches: [{cwd, isdlc_project, from, to,
# from_project, to_project, from_active_workflow}]}.

# METADATA
# title: A monorepo change switches away from an active workflow
# description: A write to .isdlc/monorepo.json changes which workflow state (or project) applies to calls made somewhere, while the state in effect there holds an active workflow.
# custom:
#   code: DES-STATE-SWITCH
#   severity: deny
selector_deny contains {
	"code": "DES-STATE-SWITCH",
	"msg": sprintf("this write to %s would make des read %s instead of %s for calls made in %s%s, while %s holds an active workflow", [input.state_selector.path, _or_none(s.to, s.to_project), _or_none(s.from, s.from_project), _place(s.cwd), _with_env(s), s.from]),
	"field": "",
	"recovery": [
		sprintf("Leave %s as it is while the workflow in %s is active (a new project is fine where no call would move away from %s).", [input.state_selector.path, s.from, s.from]),
		sprintf("To change the monorepo layout, finish or end the active workflow in %s first, or edit %s by hand outside the agent session.", [s.from, input.state_selector.path]),
	],
} if {
	some s in input.state_selector.switches
	s.from_active_workflow == true
}

_or_none(file, project) := sprintf("%s (project %s)", [file, project]) if {
	file != ""
	project != ""
} else := file if {
	file != ""
} else := "no workflow state"

_with_env(s) := sprintf(" with ISDLC_PROJECT=%s", [s.isdlc_project]) if {
	s.isdlc_project != ""
} else := ""

_place(".") := "the project root"

_place(cwd) := cwd if cwd != "."
