# Gate 3, pre-commit.
# Decides whether a step file may be committed (git pre-commit, or a git commit run by an agent).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
# des.commit is asked only when the input holds what it judges: Gate 3's
# phase facts or Gate 2 verdicts (Go always hands both).
package des.gates.pre_commit

deny contains v if some v in data.des.stepfile.deny

deny contains v if {
	_commit_facts
	some v in data.des.commit.deny
}

_commit_facts if input.step.phases

_commit_facts if input.gate2
